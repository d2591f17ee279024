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

import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from router import mounts
from router.topic.state import Judged, Removal


def journal(root: Path, *, content: bool = False) -> Removal:
    """The journal of removing ``root``: every file under it as it is now (``content``: read too)."""
    return Removal(str(root), tuple(_walk(root, content=content)))


def _walk(root: Path, *, content: bool) -> list[Judged]:
    found: list[Judged] = []
    pending = [""]
    while pending:
        rel = pending.pop()
        try:
            entries = list(os.scandir(os.path.join(root, rel) if rel else root))
        except OSError:
            continue  # not listed, so not journaled: what is in it is kept
        for entry in entries:
            name = os.path.join(rel, entry.name) if rel else entry.name
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                pending.append(name)
            else:
                digest = _digest(entry.path, info) if content else ""
                found.append(_entry_of(name, info, digest))
    return found


def _entry_of(rel: str, info: os.stat_result, digest: str) -> Judged:
    return Judged(
        rel,
        info.st_dev,
        info.st_ino,
        info.st_mode,
        info.st_size,
        info.st_mtime_ns,
        info.st_ctime_ns,
        digest,
    )


def _digest(path: str, info: os.stat_result) -> str:
    """sha256 of a regular file's bytes or a symlink's target; "" for anything else or unreadable."""
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


def _journaled(removal: Removal) -> dict[str, Judged]:
    return {f.path: f for f in removal.files}


def unjudged(root: Path, removal: Removal) -> list[str]:
    """Files under ``root`` that are not what the removal judged (written, moved in or changed since)."""
    judged = _journaled(removal)
    found = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files + [d for d in _dirs if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            entry = judged.get(rel)
            if entry is None or not is_judged(entry, full):
                found.append(rel)
    return sorted(found)


def began(root: Path, removal: Removal) -> bool:
    """True when some file the removal judged is gone: it deleted something, so it must be finished."""
    return any(not os.path.lexists(os.path.join(root, f.path)) for f in removal.files)


@dataclass(frozen=True, slots=True)
class Blocked:
    """A path the removal could not delete, and why, in words that name the fix."""

    path: str  # relative to the directory being removed
    cause: str


def delete_judged(root: Path, removal: Removal) -> tuple[list[str], list[Blocked]]:
    """Delete what is left under ``root``, file by file, only while each is one the removal judged.

    Directories go with ``rmdir``, never a recursive delete: one that holds
    anything the removal did not judge stays. Returns the files kept (not
    judged) and what could not be deleted.
    """
    judged = _journaled(removal)
    kept: list[str] = []
    blocked: list[Blocked] = []
    for dirpath, dirs, files in os.walk(root, topdown=False):
        links = [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]
        for name in files + links:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            entry = judged.get(rel)
            if entry is None or not is_judged(entry, full):
                kept.append(rel)
                continue
            try:
                os.unlink(full)
            except FileNotFoundError:
                continue
            except OSError as exc:
                blocked.append(Blocked(rel, why_not_deleted(full, exc)))
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
        blocked.append(Blocked(os.path.relpath(path, root), why_not_deleted(str(path), exc)))


def _holds_anything(path: Path) -> bool:
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is not None
    except OSError:
        return False


def why_not_deleted(path: str, exc: OSError) -> str:
    """Why ``path`` could not be deleted, naming what would clear it."""
    reason = exc.strerror or str(exc)
    if exc.errno == errno.EBUSY and mounts.is_mount_point(path):
        return f"a mount point ({reason}): unmount it (`umount {path}`)"
    if exc.errno == errno.EROFS:
        point = mounts.mount_point_of(path)
        return f"on a read-only filesystem mounted at {point}: unmount it or mount it read-write"
    if exc.errno == errno.EPERM:
        flagged = [p for p in (path, os.path.dirname(path)) if _immutable(p)]
        if flagged:
            return (
                f"{reason}: {flagged[0]} is immutable or append-only "
                f"(`lsattr -d {flagged[0]}` shows it; `chattr -i -a {flagged[0]}` clears it)"
            )
    return reason


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
    kept = []
    for entry in removal.files:
        full = os.path.join(root, entry.path)
        if entry.digest or not is_judged(entry, full):
            if entry.digest and os.path.lexists(full):
                kept.append(entry)
            continue
        kept.append(_entry_of(entry.path, os.lstat(full), _digest(full, os.lstat(full))))
    return Removal(removal.path, tuple(kept))


def described(blocked: list[Blocked], limit: int = 5) -> str:
    """``a.txt (Operation not permitted: ...); sub (a mount point ...)``, the first ``limit`` of them."""
    shown = "; ".join(f"{b.path} ({b.cause})" for b in blocked[:limit])
    more = f"; and {len(blocked) - limit} more" if len(blocked) > limit else ""
    return shown + more
