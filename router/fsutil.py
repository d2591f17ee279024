"""Files on disk, asked without git: what a directory holds, and deleting exactly that.

Only the standard library and records: the sweep, the run's artifacts and the
snapshots all list a directory's files the same way.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from pathlib import Path

from router.records import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

UNREADABLE = "/ (unreadable: "  # an unreadable folder's entry: ``<folder>/ (unreadable: <why>)``
MOUNT_POINT = "/ (a filesystem is mounted here)"  # a mount point's entry: ``<folder>/ (a ...)``

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


def is_mounted_on(entry: str) -> bool:
    """True for the entry :func:`open_tree` lists for a folder another filesystem is mounted on."""
    return entry.endswith(MOUNT_POINT)


HELD_FOLDERS = 32  # folders of one tree held open from its listing to its removal, at most


class OpenTree:
    """A directory's tree listed through its folders' descriptors (:func:`open_tree`), which
    stay open until the block ends: ``held``, for :func:`remove_listed` to delete through
    (None for a tree of more than :data:`HELD_FOLDERS` folders, listed by path instead)."""

    __slots__ = ("held", "tree")

    def __init__(self, tree: Tree, held: dict[str, int] | None) -> None:
        self.tree, self.held = tree, held

    def __enter__(self) -> OpenTree:
        return self

    def __exit__(self, *exc: object) -> None:
        _close_all(self.held or {})
        self.held = None


class _TooMany(Exception):
    """More folders than :data:`HELD_FOLDERS` in one tree."""


def open_tree(path: Path | str) -> OpenTree:
    """What ``path`` holds, as :func:`tree_under` lists it, each folder opened once from
    its parent: never through a link, never across a mount point (a bind mount of the
    same filesystem included), which is listed as ``<folder>/ (a filesystem is mounted
    here)``. A folder that cannot be opened so, or read, is listed as unreadable
    (``<folder>/ (unreadable: <why>)``), never taken for empty.

    Each file's :func:`file_stamp` is taken too (``stamps``), for the deletion to check.
    The descriptors stay open for the removal, which then deletes in the very folders
    listed, with no second opening of each (nor a second check of its mount). A tree of
    more folders than :data:`HELD_FOLDERS` is listed by :func:`tree_under` instead, and
    its removal opens its folders as it goes: never a descriptor per folder of a large tree.
    """
    try:
        top = os.open(path, _FOLDER)
    except OSError as exc:  # a link now, or no folder
        return OpenTree(Tree((f".{UNREADABLE}{exc.strerror})",), ()), None)
    found: list[str] = []
    folders: list[str] = []
    stamps: dict[str, FileStamp] = {}
    held = {"": top}
    try:
        pending = [("", top)]
        while pending:
            rel, fd = pending.pop()
            pending += _list_folder(rel, fd, top, (found, folders, stamps), held)
    except _TooMany:
        _close_all(held)
        return OpenTree(tree_under(path, stamped=True), None)
    except BaseException:
        _close_all(held)
        raise
    return OpenTree(Tree(tuple(sorted(found)), tuple(folders), stamps), held)


def _list_folder(
    rel: str,
    fd: int,
    top: int,
    into: tuple[list[str], list[str], dict[str, FileStamp]],
    held: dict[str, int],
) -> list[tuple[str, int]]:
    """List the folder ``rel``, open as ``fd``, ``into`` the files, folders and stamps; each
    folder in it is opened from ``fd`` (on ``top``'s mount) into ``held``, and returned to
    be listed next."""
    found, folders, stamps = into
    prefix = f"{rel}/" if rel else ""
    try:
        with os.scandir(fd) as it:
            entries = [(e.name, e.is_dir(follow_symlinks=False), e) for e in it]
            for name, is_dir, entry in entries:
                if not is_dir:
                    stamps[prefix + name] = _stamp_of(entry)
    except OSError as exc:
        found.append(f"{rel or '.'}{UNREADABLE}{exc.strerror})")
        return []
    below = []
    for name, is_dir, _ in entries:
        if not is_dir:
            found.append(prefix + name)
            continue
        folders.append(prefix + name)
        if len(held) > HELD_FOLDERS:
            raise _TooMany
        try:
            held[prefix + name] = child = _open_below(name, fd, top)
        except OSError as exc:  # a mount point, a link now, or unreadable
            mounted = exc.errno == errno.EXDEV
            found.append(f"{prefix}{name}{MOUNT_POINT if mounted else UNREADABLE}")
            if not mounted:
                found[-1] += f"{exc.strerror})"
            continue
        below.append((prefix + name, child))
    return below


def _close_all(fds: dict[str, int]) -> None:
    for fd in fds.values():
        os.close(fd)


def remove_listed(
    path: Path,
    files: Iterable[str],
    folders: Iterable[str],
    *,
    each: Callable[[], None] | None = None,
    stamps: dict[str, FileStamp] | None = None,
    held: dict[str, int] | None = None,
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
    there (:data:`CHANGED`, raised), its newer content kept. ``held``: the folders'
    descriptors as :func:`open_tree` listed them (the very folders judged, opened so
    already): each entry is removed through them.
    """
    with _Opened(path, held) as opened:
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
    from the top to the folder last asked for stays open, so siblings reuse their parent's.
    Folders already open (``held``, by their relative path) are used as they are."""

    __slots__ = ("_chain", "_held", "top")

    def __init__(self, top: Path, held: dict[str, int] | None = None) -> None:
        self.top = os.fspath(top)
        self._chain: list[tuple[str, int]] = []  # (relative folder, its descriptor), top first
        self._held = held or {}  # not ours to close

    def __enter__(self) -> _Opened:
        fd = self._held.get("")
        self._chain.append(("", os.open(self.top, _FOLDER) if fd is None else fd))
        return self

    def __exit__(self, *exc: object) -> None:
        for rel, fd in self._chain:
            if rel not in self._held:
                os.close(fd)
        self._chain.clear()

    def folder(self, rel: str) -> int:
        """The descriptor of ``rel`` ("" for the top), opened from its parent's if need be."""
        fd = self._held.get(rel)
        if fd is not None:
            return fd
        chain = self._chain
        while len(chain) > 1 and not (rel == chain[-1][0] or rel.startswith(chain[-1][0] + "/")):
            os.close(chain.pop()[1])
        done = chain[-1][0]
        if done == rel:
            return chain[-1][1]
        for part in rel[len(done) + 1 if done else 0 :].split("/"):
            name = f"{chain[-1][0]}/{part}" if chain[-1][0] else part
            try:
                fd = _open_below(part, chain[-1][1], chain[0][1])
            except OSError as exc:  # ELOOP or ENOTDIR: a link, or no folder any more
                if exc.errno == errno.EXDEV:
                    why = "a filesystem is mounted there; what it holds is not deleted"
                    raise OSError(errno.EXDEV, why, os.path.join(self.top, name)) from exc
                raise OSError(exc.errno, exc.strerror, os.path.join(self.top, name)) from exc
            chain.append((name, fd))
        return chain[-1][1]


def _open_below(part: str, parent: int, top: int) -> int:
    """``part`` in the folder open as ``parent``, opened as a folder (never through a link)
    only when it is on the mount of the folder open as ``top``; ``EXDEV`` raised when not.

    Each folder is on its parent's mount, so on the top's: one ``openat2`` call refuses
    to cross a mount point, a bind mount of the same filesystem included. Where the
    kernel lacks it, the folder is opened, then its device and mount id compared with
    the top's.
    """
    fd = open_on_same_mount(part, parent)
    if fd is not None:
        return fd
    fd = os.open(part, _FOLDER, dir_fd=parent)
    if _mount_of(fd) != _mount_of(top):
        os.close(fd)
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))
    return fd


# openat2(2) (Linux 5.6): its number is the same on every architecture, and
# RESOLVE_NO_XDEV refuses any mount point on the way, RESOLVE_NO_SYMLINKS any link.
_SYS_OPENAT2 = 437
_RESOLVE_NO_XDEV, _RESOLVE_NO_SYMLINKS = 0x01, 0x04
_openat2: list[Callable[[int, bytes], int] | None] = []  # made at first use; None: none here


def open_on_same_mount(name: str, dir_fd: int) -> int | None:
    """The folder ``name`` in the folder open as ``dir_fd``, opened (never through a link)
    only when it is on that folder's mount: ``OSError`` ``EXDEV`` when a filesystem is
    mounted there. None where the kernel (or a sandbox's filter) has no ``openat2``:
    the caller then checks the mount itself.

    One system call instead of four (``/proc/self/fdinfo`` opened, read and closed, and an
    ``fstat``) for each folder deleted in.
    """
    if not _openat2:
        _openat2.append(_make_openat2())
    call = _openat2[0]
    if call is None:
        return None
    fd = call(dir_fd, os.fsencode(name))
    if fd >= 0:
        return fd
    err = -fd
    if err in (errno.ENOSYS, errno.EPERM, errno.E2BIG) and not _works(call):
        _openat2[0] = None  # refused by the kernel or a filter, not by this folder
        return None
    raise OSError(err, os.strerror(err))


def _works(call: Callable[[int, bytes], int]) -> bool:
    """True when ``openat2`` opens ``/`` itself: an error for a given folder is then its own."""
    fd = call(-100, b"/")  # AT_FDCWD
    if fd < 0:
        return False
    os.close(fd)
    return True


def _make_openat2() -> Callable[[int, bytes], int] | None:
    """``openat2`` with this module's flags, as ``(dir_fd, name) -> fd or -errno``; None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    class OpenHow(ctypes.Structure):
        _fields_ = (
            ("flags", ctypes.c_uint64),
            ("mode", ctypes.c_uint64),
            ("resolve", ctypes.c_uint64),
        )

    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    how = ctypes.byref(OpenHow(_FOLDER, 0, _RESOLVE_NO_XDEV | _RESOLVE_NO_SYMLINKS))
    size = ctypes.sizeof(OpenHow)

    def call(dir_fd: int, name: bytes) -> int:
        fd = int(syscall(_SYS_OPENAT2, dir_fd, name, how, size))
        return fd if fd >= 0 else -ctypes.get_errno()

    return call


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
