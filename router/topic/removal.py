"""The removal journal: what a removal of ours judged, file by file, so it can always be finished.

One journal (the topic record's ``removing``, :class:`router.topic.state.Removal`)
for every directory the router removes after proving it safe: a worktree
proven clean or snapshotted, a plan dir copied and verified. It is written
before anything is deleted and names every file there by identity (device,
inode, mode, size and both kernel stamps). When the removal stops half-way —
a kill, Ctrl-C, a file that cannot be deleted (``chattr +i``, a read-only
mount) — the rerun finishes it from the journal: a file still there is
deleted only while it is exactly one the removal judged; anything written,
moved in or edited since is kept and named.

The stamps are compared for equality, never for order, and no clock is
read: a clock that jumped (an NTP step, a resumed VM, a file server's clock)
decides nothing. The kernel restamps a file's change time on every write,
rename or ``chmod`` and no call can set it back, so an equal stamp on the
same inode is the same untouched file. Reading every byte instead would cost
about ten times the walk on every removal; the content is read only for what
is left after a removal that could not finish (:func:`with_content`), so a
flag cleared or a mount undone since does not make those files look new.
"""

from __future__ import annotations

import base64
import errno
import os
import shutil
import stat
from collections.abc import Callable, Iterable
from enum import StrEnum
from pathlib import Path
from stat import S_ISDIR

from router import git as g
from router import mounts
from router.records import record
from router.topic.state import Judged, Removal


def journal(root: Path, *, content: bool = False) -> Removal:
    """The journal of removing ``root``: every file under it as it is now (``content``: read too)."""
    return Removal(str(root), tuple(_walk(root, content=content)))


def checkout_journal(root: Path, names: Iterable[str], index: g.IndexCopy) -> Removal | None:
    """The journal of removing a checkout proven clean: its index, and the files it does not track.

    ``names``: every file under ``root`` (relative paths, directories left
    out), as a walk just listed them. The index names each tracked file with
    the stat git verified it by and its blob, so only the others (ignored
    files, the ``.git`` file) are looked at here: one ``lstat`` each instead
    of one per file of the checkout. None when the index is not one read here
    (then :func:`journal` names every file).
    """
    tracked = g.index_paths(index)
    if tracked is None:
        return None
    base = os.fspath(root)
    found = []
    for rel in names:
        if rel in tracked:
            continue
        try:
            info = os.lstat(f"{base}/{rel}")
        except OSError:
            continue  # gone already: nothing to judge
        if not S_ISDIR(info.st_mode):
            found.append(_entry_of(rel, info, ""))
    data = base64.b64encode(index.data).decode("ascii")
    return Removal(base, tuple(found), data, index.mtime_ns, index.algorithm)


class _Judge:
    """Whether a file left under a removal's directory is one the removal judged.

    Named in its ``files`` and exactly as it was then; or, for a checkout
    journaled with its index, a file the index tracked that is still the file
    git verified or holds the blob's content. The index is read only when a
    removal has to be finished, never when one goes through.
    """

    def __init__(self, removal: Removal) -> None:
        self.named = {f.path: f for f in removal.files}
        self.index: g.IndexCopy | None = None
        self.tracked: dict[str, g.IndexEntry] = {}
        if removal.index:
            try:
                data = base64.b64decode(removal.index, validate=True)
            except ValueError:
                return  # not readable: what it tracked is kept
            index = g.IndexCopy(data, removal.index_mtime_ns, removal.index_hash)
            tracked = g.index_entries(index)
            if tracked is not None:
                self.index, self.tracked = index, tracked

    def __call__(self, rel: str, full: str) -> bool:
        entry = self.named.get(rel)
        if entry is not None:
            return is_judged(entry, full)
        indexed = self.tracked.get(rel)
        return indexed is not None and g.is_indexed_file(full, indexed, self.index)  # type: ignore[arg-type]

    def paths(self) -> list[str]:
        """Every file the removal judged was there: named, or tracked where git looks (not a
        sparse checkout's left-out files, nor one git was told to assume unchanged)."""
        watched = [p for p, e in self.tracked.items() if e.watched and p not in self.named]
        return [*self.named, *watched]


def _walk(root: Path, *, content: bool) -> list[Judged]:
    # One scandir and one lstat per entry, paths built as strings: a worktree of
    # 2,000 files is journaled on every removal, and os.path.join and
    # namedtuple's own __new__ cost about as much as the lstat.
    found: list[Judged] = []
    pending = [(os.fspath(root), "")]  # (path, relative path)
    while pending:
        path, rel = pending.pop()
        try:
            entries = list(os.scandir(path))
        except OSError:
            continue  # not listed, so not journaled: what is in it is kept
        prefix = f"{rel}/" if rel else ""
        for entry in entries:
            name = prefix + entry.name
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if S_ISDIR(info.st_mode):
                pending.append((entry.path, name))
            else:
                digest = _digest(entry.path, info) if content else ""
                found.append(_entry_of(name, info, digest))
    return found


def _entry_of(rel: str, info: os.stat_result, digest: str) -> Judged:
    fields = (
        rel,
        info.st_dev,
        info.st_ino,
        info.st_mode,
        info.st_size,
        info.st_mtime_ns,
        info.st_ctime_ns,
        digest,
    )
    return _new_tuple(Judged, fields)  # Judged(*fields) without namedtuple's Python __new__


_new_tuple = tuple.__new__


def _digest(path: str, info: os.stat_result) -> str:
    """sha256 of a regular file's bytes or a symlink's target; "" for anything else or unreadable."""
    import hashlib  # here: only a removal journaled file by file reads content (~4 ms to load)

    hasher = hashlib.sha256()
    try:
        if stat.S_ISLNK(info.st_mode):
            hasher.update(os.fsencode(os.readlink(path)))
        elif stat.S_ISREG(info.st_mode):
            with open(path, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    hasher.update(chunk)
        else:
            return ""
    except OSError:
        return ""
    return hasher.hexdigest()


def is_judged(entry: Judged, path: str) -> bool:
    """True while the file at ``path`` is exactly the one ``entry`` journaled."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    kind = stat.S_IFMT(entry.mode)
    if (info.st_dev, info.st_ino, stat.S_IFMT(info.st_mode), info.st_size) != (
        entry.dev,
        entry.ino,
        kind,
        entry.size,
    ):
        return False
    if entry.digest:
        return _digest(path, info) == entry.digest
    return (info.st_mode, info.st_mtime_ns, info.st_ctime_ns) == (
        entry.mode,
        entry.mtime_ns,
        entry.ctime_ns,
    )


def unjudged(root: Path, removal: Removal) -> list[str]:
    """Files under ``root`` that are not what the removal judged (written, moved in or changed since)."""
    judged = _Judge(removal)
    found = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files + [d for d in _dirs if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            if not judged(rel, full):
                found.append(rel)
    return sorted(found)


def began(root: Path, removal: Removal) -> bool:
    """True when some file the removal judged is gone: it deleted something, so it must be finished."""
    return any(not os.path.lexists(os.path.join(root, p)) for p in _Judge(removal).paths())


@record
class Blocked:
    """A path the removal could not delete, and why: :func:`blocked_words` names the fix."""

    path: str  # relative to the directory being removed
    error: str  # the system's error (its strerror)
    kind: str = ""  # what stands in the way (a :class:`BlockedBy`), or only the error
    at: str = ""  # where the fix applies: the mount point, the flagged file


class BlockedBy(StrEnum):
    MOUNT_POINT = "mount-point"  # a filesystem is mounted there (``at``)
    READ_ONLY = "read-only"  # on a read-only filesystem mounted at ``at``
    IMMUTABLE = "immutable"  # ``at`` is immutable or append-only


def blocked_words(error: str, kind: str, at: str) -> str:
    """Why a path could not be deleted, naming what would clear it."""
    if kind == BlockedBy.MOUNT_POINT:
        return f"a mount point ({error}): unmount it (`umount {at}`)"
    if kind == BlockedBy.READ_ONLY:
        return f"on a read-only filesystem mounted at {at}: unmount it or mount it read-write"
    if kind == BlockedBy.IMMUTABLE:
        return (
            f"{error}: {at} is immutable or append-only "
            f"(`lsattr -d {at}` shows it; `chattr -i -a {at}` clears it)"
        )
    return error


def delete_judged(root: Path, removal: Removal) -> tuple[list[str], list[Blocked]]:
    """Delete what is left under ``root``, file by file, only while each is one the removal judged.

    Directories go with ``rmdir``, never a recursive delete: one that holds
    anything the removal did not judge stays. Returns the files kept (not
    judged) and what could not be deleted.
    """
    judged = _Judge(removal)
    kept: list[str] = []
    blocked: list[Blocked] = []
    for dirpath, dirs, files in os.walk(root, topdown=False):
        links = [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]
        for name in files + links:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            if not judged(rel, full):
                kept.append(rel)
                continue
            try:
                os.unlink(full)
            except FileNotFoundError:
                continue
            except OSError as exc:
                blocked.append(why_not_deleted(rel, full, exc))
        for name in [d for d in dirs if d not in links]:
            _remove_dir(Path(dirpath, name), root, blocked)
    _remove_dir(root, root, blocked)
    return sorted(kept), blocked


def _remove_dir(path: Path, root: Path, blocked: list[Blocked]) -> None:
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST) or _holds_anything(path):
            return  # it holds what was kept or blocked, which is named already
        blocked.append(why_not_deleted(os.path.relpath(path, root), str(path), exc))


def _holds_anything(path: Path) -> bool:
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is not None
    except OSError:
        return False


def why_not_deleted(rel: str, path: str, exc: OSError) -> Blocked:
    """Why ``path`` (``rel`` in the directory being removed) could not be deleted."""
    error = exc.strerror or str(exc)
    if exc.errno == errno.EBUSY and mounts.is_mount_point(path):
        return Blocked(rel, error, BlockedBy.MOUNT_POINT, path)
    if exc.errno == errno.EROFS:
        return Blocked(rel, error, BlockedBy.READ_ONLY, mounts.mount_point_of(path))
    if exc.errno == errno.EPERM:
        flagged = [p for p in (path, os.path.dirname(path)) if _immutable(p)]
        if flagged:
            return Blocked(rel, error, BlockedBy.IMMUTABLE, flagged[0])
    return Blocked(rel, error)


_FS_IOC_GETFLAGS = 0x80086601  # Linux, 64-bit: _IOR('f', 1, long)
_IMMUTABLE_OR_APPEND = 0x10 | 0x20  # FS_IMMUTABLE_FL | FS_APPEND_FL


def _immutable(path: str) -> bool:
    """True when the filesystem says ``path`` is immutable or append-only (False when it cannot say)."""
    import array
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        flags = array.array("l", [0])
        fcntl.ioctl(fd, _FS_IOC_GETFLAGS, flags, True)
        return bool(flags[0] & _IMMUTABLE_OR_APPEND)
    except OSError:
        return False
    finally:
        os.close(fd)


def with_content(root: Path, removal: Removal) -> Removal:
    """The journal of what is still there of it, content read: a removal that could not finish.

    Only files still exactly as judged stay in it; reading their content now
    lets the rerun know them after what blocked them is cleared (``chattr
    -i`` and a remount both restamp the change time).
    """
    judged = _Judge(removal)
    kept = []
    for rel in [*judged.named, *(p for p in judged.tracked if p not in judged.named)]:
        full = os.path.join(root, rel)
        entry = judged.named.get(rel)
        if entry is not None and entry.digest:
            if os.path.lexists(full):
                kept.append(entry)
            continue
        if judged(rel, full):
            kept.append(_entry_of(rel, os.lstat(full), _digest(full, os.lstat(full))))
    return Removal(removal.path, tuple(kept))


SHOWN_BLOCKED = 5  # the paths that could not be deleted a message names before "and N more"


def described(blocked: list[Blocked]) -> str:
    """``a.txt (Operation not permitted: ...); sub (a mount point ...)``, the first five of them."""
    shown = "; ".join(
        f"{b.path} ({blocked_words(b.error, b.kind, b.at)})" for b in blocked[:SHOWN_BLOCKED]
    )
    more = f"; and {len(blocked) - SHOWN_BLOCKED} more" if len(blocked) > SHOWN_BLOCKED else ""
    return shown + more


# -- moving a directory across filesystems: copy, verify, then remove ----------------------


@record
class Moved:
    """Where a directory move ended: ``done`` when ``dst`` holds it whole; why not, or what was kept."""

    done: bool
    warning: str = ""


def staging_of(dst: Path) -> Path:
    """Where a copy to ``dst`` is made before it is put in place (same filesystem as ``dst``)."""
    return dst.with_name(f".{dst.name}.copying")


def move_dir(
    src: Path,
    dst: Path,
    *,
    pending: Removal | None,
    mark: Callable[[Removal | None], None],
    crash: Callable[[str], None] = lambda step: None,
) -> Moved:
    """Move the directory ``src`` to ``dst``, across filesystems too, resumable after a kill.

    On one filesystem it is a rename. Across two (``.claude/worktrees`` on
    its own disk) a rename fails with EXDEV, so: copy into a staging
    directory beside ``dst``, verify every file's content, journal ``src``
    (``mark``, the removal journal) with the content it verified, rename the
    copy into place, then delete ``src`` through the journal. ``pending``: a
    journal of removing ``src`` that an earlier, killed move left; the move
    then resumes from where it stopped. ``crash``: the test seam between stages.
    """
    if pending is not None and os.path.realpath(pending.path) == os.path.realpath(src):
        return _resume(src, dst, pending, mark)
    if os.path.lexists(dst):
        return Moved(False, f"{dst} is in the way")
    if mounts.same_filesystem(src, dst.parent):
        os.rename(src, dst)
        return Moved(True)
    staging = staging_of(dst)
    left = _discard_copy(staging, src)
    if left:
        return Moved(
            False, f"{staging} holds files that are not a copy of {src}: {', '.join(left[:5])}"
        )
    try:
        _copy_tree(src, staging)
    except OSError as exc:
        _discard_copy(staging, src)
        return Moved(
            False,
            f"copying it to {dst} failed ({exc.strerror or exc} writing {exc.filename}); "
            "nothing was moved",
        )
    source = journal(src, content=True)
    if not _same_content(source, journal(staging, content=True)):
        _discard_copy(staging, src)
        return Moved(False, f"{src} changed while it was copied to {dst}; nothing was moved")
    mark(source)
    crash("plan-dir-copied")
    return _resume(src, dst, source, mark, crash=crash)


def _resume(
    src: Path,
    dst: Path,
    source: Removal,
    mark: Callable[[Removal | None], None],
    crash: Callable[[str], None] = lambda step: None,
) -> Moved:
    """Put the verified copy in place (if it is not yet), then delete ``src`` through its journal."""
    staging = staging_of(dst)
    if os.path.isdir(staging) and _is_empty_dir(dst):
        os.rmdir(dst)  # made empty by a rerun's setup before it resumed the move
    if not os.path.lexists(dst):
        if not os.path.isdir(staging) or not _same_content(source, journal(staging, content=True)):
            # The copy is not whole: src is untouched and stays where it is.
            mark(None)
            _discard_copy(staging, src)
            return Moved(False, f"the copy of {src} at {staging} was not whole; nothing was moved")
        os.rename(staging, dst)
    crash("plan-dir-placed")
    missing = _not_held(dst, source)
    if missing:
        # The original goes only while the copy in place holds every file of it.
        mark(None)
        return Moved(
            True,
            f"{src} was copied to {dst}, but {', '.join(missing[:5])} there differ from the "
            f"original, so {src} is kept: compare the two, then delete {src} by hand",
        )
    kept, blocked = delete_judged(src, source) if os.path.lexists(src) else ([], [])
    if blocked:
        mark(with_content(src, source))
        return Moved(
            True, f"{src} was copied to {dst}, but cannot be deleted: {described(blocked)}"
        )
    mark(None)
    if kept:
        return Moved(
            True,
            f"{src} was moved to {dst}, and {', '.join(kept[:5])} written to {src} since were kept "
            "there: move them into the new plan dir",
        )
    return Moved(True)


def _is_empty_dir(path: Path) -> bool:
    return os.path.isdir(path) and not os.path.islink(path) and not _holds_anything(path)


def _not_held(dst: Path, source: Removal) -> list[str]:
    """Files of the journal that ``dst`` does not hold with the same content (written there since is fine)."""
    missing = []
    for entry in source.files:
        path = os.path.join(dst, entry.path)
        try:
            info = os.lstat(path)
        except OSError:
            missing.append(entry.path)
            continue
        if (
            stat.S_IFMT(info.st_mode) != stat.S_IFMT(entry.mode)
            or _digest(path, info) != entry.digest
        ):
            missing.append(entry.path)
    return missing


def _same_content(a: Removal, b: Removal) -> bool:
    """Both journals name the same files with the same content (identity aside: a copy is new)."""

    def content(removal: Removal) -> dict[str, tuple[int, str]]:
        return {f.path: (stat.S_IFMT(f.mode), f.digest) for f in removal.files}

    return content(a) == content(b)


def _discard_copy(staging: Path, src: Path) -> list[str]:
    """Delete a (partial) copy of ``src`` at ``staging``; what is not a copy of it is kept, named."""
    if not os.path.lexists(staging):
        return []
    copied = journal(staging, content=True)
    original = {f.path: f.digest for f in journal(src, content=True).files}
    ours = Removal(
        str(staging),
        tuple(
            f
            for f in copied.files
            if (f.digest and original.get(f.path) == f.digest) or _cut_short(staging, src, f)
        ),
    )
    kept, _blocked = delete_judged(staging, ours)
    return kept


def _cut_short(staging: Path, src: Path, entry: Judged) -> bool:
    """The copy of a file a kill or a full disk stopped part-way: a prefix of the original's bytes."""
    copy, original = staging / entry.path, src / entry.path
    try:
        if not stat.S_ISREG(entry.mode) or entry.size > os.path.getsize(original):
            return False
        with open(copy, "rb") as a, open(original, "rb") as b:
            return a.read() == b.read(entry.size)
    except OSError:
        return False


def _copy_tree(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` (made here): files with their modes and times, symlinks as links.

    Stops at the first error, raised with the path it was writing
    (``shutil.copytree`` collects errors as text, losing both).
    """
    os.mkdir(dst)
    for dirpath, dirs, files in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        target = os.path.normpath(os.path.join(dst, rel))
        for name in list(dirs):
            here = os.path.join(dirpath, name)
            if os.path.islink(here):
                dirs.remove(name)
                files.append(name)
            else:
                os.mkdir(os.path.join(target, name))
        for name in files:
            here, there = os.path.join(dirpath, name), os.path.join(target, name)
            if os.path.islink(here):
                os.symlink(os.readlink(here), there)
            else:
                try:
                    shutil.copy2(here, there)
                except OSError as exc:
                    exc.filename = exc.filename if exc.filename == there else there
                    raise
