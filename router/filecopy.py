"""Copy a file tree copy-on-write where the filesystem can, never by hard link.

Each regular file is cloned (``ioctl(FICLONE)``: XFS, btrfs, bcachefs share
the blocks until one side writes), else copied in the kernel
(``copy_file_range``, which reflinks on its own where it can), else byte for
byte. A hard link is never made: an edit in one tree would change the other.
Symlinks are copied as links (never followed); modes and times are kept; a
file already at the destination is never overwritten.

A copy is written to an unnamed file (``O_TMPFILE``) that gets its name only
once complete, so a kill leaves no half-written file, and a rerun keeps what
an earlier run finished and redoes the rest. Where the filesystem has no
``O_TMPFILE`` the file is written under a temporary name and renamed.

Only the standard library: creation's ``.worktreeinclude`` copies and
restore's use it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from enum import StrEnum

from router.records import record

FICLONE = 0x40049409  # _IOW(0x94, 9, int) from linux/fs.h
TEMP_SUFFIX = ".team-router-partial"  # the named temp where O_TMPFILE is missing
_CHUNK = 256  # files handed to a worker at a time
# Copy threads. On the 2-core machine measured (bench/bench_copies.py --workers), 2 or 4
# threads were no faster than one: creating the files is the cost, and it is the
# filesystem's (and the CPU's, which other work shares).
WORKERS = 1
# The errors that say "this filesystem (or kernel) cannot do it this way", as
# opposed to a full disk or an unreadable file.
_UNSUPPORTED = frozenset(
    {errno.EOPNOTSUPP, errno.ENOTTY, errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EBADF}
)
_NO_TMPFILE = frozenset({errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT})
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class Method(StrEnum):
    """How a file's data was copied, best first."""

    REFLINK = "reflink"
    COPY_FILE_RANGE = "copy_file_range"
    BYTES = "bytes"


_BEST_FIRST = (Method.REFLINK, Method.COPY_FILE_RANGE, Method.BYTES)


class Placed(StrEnum):
    COPIED = "copied"
    KEPT = "kept"  # already there, the same size and time as the source: an earlier copy
    SKIPPED = "skipped"  # the destination holds something else, or cannot take it safely
    GONE = "gone"  # the source vanished, or is no file nor link
    UNREADABLE = "unreadable"


@record
class TreeCopy:
    """What :func:`copy_tree` did."""

    placed: tuple[str, ...]  # copied now or kept from an earlier copy (sorted)
    files: int  # copied now (links included)
    bytes: int  # of the regular files copied now
    kept: int
    method: Method | None  # None when no file's data was copied
    unreadable: tuple[str, ...] = ()


# -- walking -------------------------------------------------------------------------


def walk_files(root: str, rel_dir: str) -> Iterator[str]:
    """Files and symlinks under ``root/rel_dir`` (relative to ``root``), one scandir walk.

    Links are not followed, and a nested repository (a folder holding ``.git``)
    is left out whole: it is another repository's work, never a copy's.
    """
    stack = [rel_dir.rstrip("/")]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(os.path.join(root, current)) as it:
                entries = list(it)
        except OSError:
            continue  # an unreadable folder is left as it is
        if current != rel_dir.rstrip("/") and any(e.name == ".git" for e in entries):
            continue
        for entry in entries:
            rel = f"{current}/{entry.name}" if current else entry.name
            if entry.is_dir(follow_symlinks=False):
                stack.append(rel)
            elif entry.is_symlink() or entry.is_file(follow_symlinks=False):
                yield rel


# -- copying -------------------------------------------------------------------------


def copy_tree(
    src_root: str,
    dst_root: str,
    paths: Sequence[str],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> TreeCopy:
    """Copy ``paths`` (relative files and links) from ``src_root`` into ``dst_root``.

    ``progress(files, bytes)`` is called from this thread after each batch.
    A full disk or another write failure raises; what was copied stays.
    """
    copier = _Copier(src_root, dst_root)
    try:
        results = copier.run(list(paths), progress, WORKERS)
    finally:
        copier.finish()
    return _tally(results, copier.method)


class _Folder(StrEnum):
    MADE = "made"  # by this run: nothing else is in it
    THERE = "there"  # it was there: a file may be too
    UNUSABLE = "unusable"  # a link or a file is in the way


class _Unsupported(Exception):
    """The settled way failed as unsupported on this file: try the next ones."""


def _settled(method: Method, src: int, dst: int, size: int) -> None:
    try:
        _COPY[method](src, dst, size)
    except OSError as exc:
        if exc.errno not in _UNSUPPORTED or method is Method.BYTES:
            raise
        os.ftruncate(dst, 0)
        os.lseek(src, 0, os.SEEK_SET)
        os.lseek(dst, 0, os.SEEK_SET)
        raise _Unsupported from exc


class _Tally:
    """Running counts for the progress callback."""

    def __init__(self, progress: Callable[[int, int], None] | None) -> None:
        self.progress = progress
        self.files = 0
        self.bytes = 0

    def add(self, done: list[tuple[str, Placed, int]]) -> list[tuple[str, Placed, int]]:
        self.files += len(done)
        self.bytes += sum(size for _rel, _outcome, size in done)
        if self.progress is not None:
            self.progress(self.files, self.bytes)
        return done


def _tally(results: list[tuple[str, Placed, int]], method: Method | None) -> TreeCopy:
    copied = [(rel, size) for rel, outcome, size in results if outcome is Placed.COPIED]
    kept = [rel for rel, outcome, _size in results if outcome is Placed.KEPT]
    return TreeCopy(
        placed=tuple(sorted([rel for rel, _size in copied] + kept)),
        files=len(copied),
        bytes=sum(size for _rel, size in copied),
        kept=len(kept),
        method=method,
        unreadable=tuple(sorted(r for r, o, _s in results if o is Placed.UNREADABLE)),
    )


class _Copier:
    """One tree's copy: the way that works here, and the folders made for it."""

    def __init__(self, src_root: str, dst_root: str) -> None:
        self.src = src_root
        self.dst = dst_root
        self.method: Method | None = None
        self.tmpfile = True  # O_TMPFILE works here, until it is seen not to
        self._dirs: dict[str, _Folder] = {"": _Folder.THERE}
        self._made: list[tuple[str, int]] = []  # folders we made, with the source's mode
        self._lock = threading.Lock()
        self._fds: int | None = None  # /proc/self/fd, to name the unnamed files

    def run(
        self, todo: list[str], progress: Callable[[int, int], None] | None, workers: int
    ) -> list[tuple[str, Placed, int]]:
        results: list[tuple[str, Placed, int]] = []
        tally = _Tally(progress)
        # The first file decides which way this tree copies; the rest follow it.
        first = 0
        while first < len(todo) and self.method is None:
            results += tally.add([self.one(todo[first])])
            first += 1
        chunks = [todo[i : i + _CHUNK] for i in range(first, len(todo), _CHUNK)]
        if len(chunks) <= 1 or workers <= 1:
            for chunk in chunks:
                results += tally.add(self.batch(chunk))
            return results
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for done in pool.map(self.batch, chunks):
                results += tally.add(done)
        return results

    def batch(self, rels: list[str]) -> list[tuple[str, Placed, int]]:
        return [self.one(rel) for rel in rels]

    def one(self, rel: str) -> tuple[str, Placed, int]:
        folder = self._dir_ready(rel.rpartition("/")[0])
        if folder is _Folder.UNUSABLE:
            return rel, Placed.SKIPPED, 0
        src = f"{self.src}/{rel}"
        dst = f"{self.dst}/{rel}"
        there = None
        if folder is _Folder.THERE:  # a folder made by this run holds only this run's copies
            with contextlib.suppress(FileNotFoundError):
                there = os.lstat(dst)
        try:
            if there is not None:
                return rel, _judge_existing(src, dst, there), 0
            outcome, size = self._place(src, dst)
        except FileNotFoundError:
            return rel, Placed.GONE, 0
        return rel, outcome, size

    def _place(self, src: str, dst: str) -> tuple[Placed, int]:
        try:
            fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except PermissionError:
            return Placed.UNREADABLE, 0  # named in a warning; a write that fails still raises
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            return _copy_link(src, dst), 0
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return Placed.GONE, 0
            return self._copy_file(fd, info, dst), info.st_size
        finally:
            os.close(fd)

    def _copy_file(self, src_fd: int, info: os.stat_result, dst: str) -> Placed:
        out, temp = self._create(dst)
        try:
            self._data(src_fd, out, info.st_size)
            os.fchmod(out, stat.S_IMODE(info.st_mode))
            os.utime(out, ns=(info.st_atime_ns, info.st_mtime_ns))
            placed = self._name(out, temp, dst)
        except BaseException:
            if temp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
            raise
        finally:
            os.close(out)
        if placed is None:  # the unnamed file could not be named here: use temp names
            os.lseek(src_fd, 0, os.SEEK_SET)
            return self._copy_file(src_fd, info, dst)
        return Placed.COPIED if placed else Placed.SKIPPED

    def _name(self, fd: int, temp: str | None, dst: str) -> bool | None:
        """Give the finished copy its name; False when something took the name meanwhile.

        None when an unnamed file cannot be linked here (no ``/proc``): the
        copier then uses temp names for it and the files after it.
        """
        try:
            if temp is not None:
                os.rename(temp, dst)
                return True
            # linkat(AT_SYMLINK_FOLLOW) on /proc's name for the fd: the unnamed file gets
            # ``dst`` only if nothing is there (no overwrite), and needs no privilege.
            os.link(str(fd), dst, src_dir_fd=self._proc_fds(), follow_symlinks=True)
            return True
        except FileExistsError:
            return False
        except OSError:
            if temp is not None:
                raise
            self.tmpfile = False
            return None

    def _proc_fds(self) -> int:
        with self._lock:
            if self._fds is None:
                self._fds = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            return self._fds

    def _create(self, dst: str) -> tuple[int, str | None]:
        """A new file for ``dst``'s data: unnamed where the filesystem can, else a temp name."""
        folder = dst.rpartition("/")[0]
        if self.tmpfile:
            try:
                return os.open(folder, os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o600), None
            except OSError as exc:
                if exc.errno not in _NO_TMPFILE:
                    raise
                self.tmpfile = False
        temp = _temp_name(dst)
        try:
            return os.open(temp, _CREATE, 0o600), temp
        except FileExistsError:
            os.unlink(temp)  # a copy an earlier run was killed in: redo it
            return os.open(temp, _CREATE, 0o600), temp

    def _data(self, src: int, dst: int, size: int) -> None:
        """The data, the best way that works; the first file settles the way for the rest."""
        if self.method is not None:
            with contextlib.suppress(_Unsupported):
                return _settled(self.method, src, dst, size)
        start = _BEST_FIRST.index(self.method) + 1 if self.method else 0
        for method in _BEST_FIRST[start:]:
            try:
                _settled(method, src, dst, size)
            except _Unsupported:
                continue
            with self._lock:  # a file that could not go the settled way moves it down
                if self.method is None or _BEST_FIRST.index(method) > _BEST_FIRST.index(
                    self.method
                ):
                    self.method = method
            return

    def _dir_ready(self, rel: str) -> _Folder:
        """Whether ``dst/rel`` is a real folder to write in (made when missing), never a link."""
        ready = self._dirs.get(rel)
        if ready is not None:
            return ready
        parent = self._dir_ready(rel.rpartition("/")[0])
        ready = _Folder.UNUSABLE if parent is _Folder.UNUSABLE else self._make_dir(rel)
        with self._lock:
            self._dirs[rel] = ready
        return ready

    def _make_dir(self, rel: str) -> _Folder:
        target = f"{self.dst}/{rel}"
        try:
            os.mkdir(target, 0o700)
        except FileExistsError:
            # A tracked symlink could point out of the checkout, and a file where
            # the source has a folder wins: write nothing through or over either.
            usable = stat.S_ISDIR(os.lstat(target).st_mode)
            return _Folder.THERE if usable else _Folder.UNUSABLE
        try:
            mode = stat.S_IMODE(os.lstat(f"{self.src}/{rel}").st_mode)
        except OSError:
            mode = 0o755
        with self._lock:
            self._made.append((target, mode))
        return _Folder.MADE

    def finish(self) -> None:
        """Give the folders we made their source's modes (last: a read-only one takes no file)."""
        for target, mode in sorted(self._made, reverse=True):
            with contextlib.suppress(OSError):
                os.chmod(target, mode)
        if self._fds is not None:
            os.close(self._fds)
            self._fds = None


def _judge_existing(src: str, dst: str, there: os.stat_result) -> Placed:
    """KEPT when ``dst`` is an earlier copy of ``src`` (same kind, size, time or target)."""
    info = os.lstat(src)
    if stat.S_ISLNK(info.st_mode) and stat.S_ISLNK(there.st_mode):
        return Placed.KEPT if os.readlink(src) == os.readlink(dst) else Placed.SKIPPED
    same = (
        stat.S_ISREG(info.st_mode)
        and stat.S_ISREG(there.st_mode)
        and (info.st_size, info.st_mtime_ns) == (there.st_size, there.st_mtime_ns)
    )
    return Placed.KEPT if same else Placed.SKIPPED


def _copy_link(src: str, dst: str) -> Placed:
    try:
        os.symlink(os.readlink(src), dst)
    except FileExistsError:
        return Placed.SKIPPED
    return Placed.COPIED


def _temp_name(dst: str) -> str:
    folder, name = os.path.split(dst)
    if len(name) + len(TEMP_SUFFIX) > 255:
        import hashlib

        name = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()
    return os.path.join(folder, name + TEMP_SUFFIX)


def _reflink(src: int, dst: int, _size: int) -> None:
    import fcntl

    fcntl.ioctl(dst, FICLONE, src)


def _copy_file_range(src: int, dst: int, size: int) -> None:
    left = size
    while left > 0:
        n = os.copy_file_range(src, dst, left)
        if n == 0:
            break  # the file shrank meanwhile: what is there is copied
        left -= n


def _bytes(src: int, dst: int, _size: int) -> None:
    while chunk := os.read(src, 1 << 20):
        view = memoryview(chunk)
        while view:
            view = view[os.write(dst, view) :]


_COPY: dict[Method, Callable[[int, int, int], None]] = {
    Method.REFLINK: _reflink,
    Method.COPY_FILE_RANGE: _copy_file_range,
    Method.BYTES: _bytes,
}
