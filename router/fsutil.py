"""Files on disk, asked without git: what a directory holds, and deleting exactly that.

Only the standard library and records: the sweep, the run's artifacts and the
snapshots all list a directory's files the same way.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from router.records import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

UNREADABLE = "/ (unreadable: "  # an unreadable folder's entry: ``<folder>/ (unreadable: <why>)``

# Opening a folder of a tree being deleted: never through a link (a folder swapped for
# a link to elsewhere after it was listed fails to open instead of being entered).
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@record
class Tree:
    """What a directory holds, as listed once: its files and its folders (relative).

    ``files``: every non-directory entry, sorted, with each folder that could
    not be read listed as ``<folder>/ (unreadable: <why>)`` (it may hold
    anything). ``folders``: every folder below (parents first), the unreadable
    ones too. ``stamps`` (when asked for): each file's :func:`file_stamp` as listed, which
    :func:`remove_listed` checks before it deletes the file.
    """

    files: tuple[str, ...]
    folders: tuple[str, ...]
    stamps: dict[str, FileStamp] | None = field(default=None, compare=False, repr=False)


# A file's inode, size and change time: a write in place changes the time (and maybe the
# size), a file written beside and renamed over it is another inode.
FileStamp = tuple[int, int, int]


def file_stamp(st: os.stat_result) -> FileStamp:
    return (st.st_ino, st.st_size, st.st_ctime_ns)


def files_under(path: Path, *, raise_unreadable: bool = False) -> tuple[str, ...]:
    """Every non-directory entry below ``path`` (relative, sorted); links are not followed.

    A folder that cannot be read may hold anything, so it never reads as empty:
    it is listed as an entry of its own (``<folder>/ (unreadable: <why>)``), which
    keeps whatever asks "is anything here?" from deleting it on a guess; with
    ``raise_unreadable`` the OSError is raised instead, for a caller that must
    say the folder could not be inspected rather than count it as a file.
    """
    return tree_under(path, raise_unreadable=raise_unreadable).files


def tree_under(path: Path | str, *, raise_unreadable: bool = False, stamped: bool = False) -> Tree:
    """The files and folders below ``path``, read once (see :class:`Tree`).

    Relative names are built as the walk goes down (no ``relpath`` per entry),
    and a ``DirEntry``'s type comes from the directory listing itself: no
    ``stat`` per entry on a filesystem that gives it. ``stamped``: each file's
    :func:`file_stamp` too (one ``lstat`` each), for a deletion that must find them unchanged.
    """
    found: list[str] = []
    folders: list[str] = []
    stamps: dict[str, FileStamp] | None = {} if stamped else None
    stack = [("", os.fspath(path))]  # (relative prefix ending in "/", or "" at the top; path)
    while stack:
        rel, current = stack.pop()
        try:
            with os.scandir(current) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(rel + entry.name)
                        stack.append((f"{rel}{entry.name}/", entry.path))
                    else:
                        found.append(rel + entry.name)
                        if stamps is not None:
                            stamps[rel + entry.name] = _stamp_of(entry)
        except OSError as exc:
            if raise_unreadable:
                raise
            found.append(f"{rel[:-1] or '.'}{UNREADABLE}{exc.strerror})")
    found.sort()
    return Tree(tuple(found), tuple(folders), stamps)


def _stamp_of(entry: os.DirEntry[str]) -> FileStamp:
    """The entry's stamp; one gone since it was listed has none any file matches."""
    try:
        return file_stamp(entry.stat(follow_symlinks=False))
    except OSError:
        return (-1, -1, -1)


def is_unreadable(entry: str) -> bool:
    """True for the entry :func:`files_under` lists for a folder it could not read."""
    return UNREADABLE in entry and entry.endswith(")")


def remove_listed(
    path: Path,
    files: Iterable[str],
    folders: Iterable[str],
    *,
    each: Callable[[], None] | None = None,
    stamps: dict[str, FileStamp] | None = None,
) -> None:
    """Delete ``files`` (relative, in the order given), then ``folders`` (deepest first),
    then ``path`` itself: exactly what was listed, never what was not.

    Each folder is opened from its parent without following a link, and each
    entry removed through that folder's descriptor: a folder swapped for a link
    since the listing fails to open, and a folder with another filesystem (or a
    bind mount) on it is not entered (``EXDEV``, raised: what is mounted there
    lives elsewhere too), so nothing outside ``path`` is reached. An
    entry added since the listing is left, and the folder holding it then fails
    to go (``ENOTEMPTY``, raised). One already gone is skipped. Raises the first
    other ``OSError``, its ``filename`` the full path. ``each``: called after each
    file is deleted (where a caller's crash seam stops it between two deletions).
    ``stamps``: each file's :func:`file_stamp` as it was listed (judged, copied into a
    snapshot): a file written or replaced since is not deleted, and the deletion stops
    there (:data:`CHANGED`, raised), its newer content kept.
    """
    with _Opened(path) as opened:
        for rel in files:
            parent, _, name = rel.rpartition("/")
            if stamps is not None:
                _unchanged(opened, parent, name, stamps.get(rel))
            _unlink(opened, parent, name, rmdir=False)
            if each is not None:
                each()
        for rel in sorted(folders, reverse=True):  # "a/b/c" before "a/b" before "a"
            parent, _, name = rel.rpartition("/")
            _unlink(opened, parent, name, rmdir=True)
        # Removed while still open here: the folder is freed (on a ``discard`` mount, its
        # block discarded, a wait on the disk) when the descriptor closes, not while the
        # kernel holds the lock of its parent, which every directory removed beside it shares.
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(path)


CHANGED = "changed since it was judged; not deleted"  # the strerror of such a file's OSError


def _unchanged(opened: _Opened, parent: str, name: str, listed: FileStamp | None) -> None:
    """Raise unless ``parent/name`` is as it was listed (or gone: nothing left to lose)."""
    try:
        now = file_stamp(os.stat(name, dir_fd=opened.folder(parent), follow_symlinks=False))
    except FileNotFoundError:
        return
    if now != listed:
        raise OSError(errno.ESTALE, CHANGED, os.path.join(opened.top, parent, name))


def _unlink(opened: _Opened, parent: str, name: str, *, rmdir: bool) -> None:
    """Remove ``parent/name`` through the descriptor of ``parent``; gone already is fine."""
    try:
        fd = opened.folder(parent)
    except FileNotFoundError:
        return  # its folder is gone, and it with it
    try:
        if rmdir:
            os.rmdir(name, dir_fd=fd)
        else:
            os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, os.path.join(opened.top, parent, name)) from exc


class _Opened:
    """The folders of one tree opened on the way down, without following links: the chain
    from the top to the folder last asked for stays open, so siblings reuse their parent's."""

    __slots__ = ("_chain", "_mount", "top")

    def __init__(self, top: Path) -> None:
        self.top = os.fspath(top)
        self._chain: list[tuple[str, int]] = []  # (relative folder, its descriptor), top first
        self._mount: tuple[int, int | None] = (0, None)

    def __enter__(self) -> _Opened:
        fd = os.open(self.top, _FOLDER)
        self._chain.append(("", fd))
        self._mount = _mount_of(fd)
        return self

    def __exit__(self, *exc: object) -> None:
        for _, fd in self._chain:
            os.close(fd)
        self._chain.clear()

    def folder(self, rel: str) -> int:
        """The descriptor of ``rel`` ("" for the top), opened from its parent's if need be."""
        chain = self._chain
        while len(chain) > 1 and not (rel == chain[-1][0] or rel.startswith(chain[-1][0] + "/")):
            os.close(chain.pop()[1])
        done = chain[-1][0]
        if done == rel:
            return chain[-1][1]
        for part in rel[len(done) + 1 if done else 0 :].split("/"):
            name = f"{chain[-1][0]}/{part}" if chain[-1][0] else part
            try:
                fd = os.open(part, _FOLDER, dir_fd=chain[-1][1])
            except OSError as exc:  # ELOOP or ENOTDIR: a link, or no folder any more
                raise OSError(exc.errno, exc.strerror, os.path.join(self.top, name)) from exc
            if _mount_of(fd) != self._mount:
                os.close(fd)
                why = "a filesystem is mounted there; what it holds is not deleted"
                raise OSError(errno.EXDEV, why, os.path.join(self.top, name))
            chain.append((name, fd))
        return chain[-1][1]


def _mount_of(fd: int) -> tuple[int, int | None]:
    """The device and the kernel's mount id of the folder open as ``fd`` (None without /proc).

    A bind mount of the tree's own filesystem has the same device: only the mount id
    tells that deleting in it would delete the files where they were bound from.
    """
    mount_id = None
    with contextlib.suppress(OSError, ValueError):
        info = os.open(f"/proc/self/fdinfo/{fd}", os.O_RDONLY | os.O_CLOEXEC)
        try:
            text = os.read(info, 4096)
        finally:
            os.close(info)
        at = text.find(b"mnt_id:")
        if at >= 0:
            mount_id = int(text[at + 7 :].split(None, 1)[0])
    return os.fstat(fd).st_dev, mount_id
