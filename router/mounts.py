"""Mounts and devices: which filesystem a path is on, and which one is missing (one owner).

Everything is read from the kernel's own table (``/proc/self/mountinfo``),
``/etc/fstab`` and ``stat``; nothing here runs a program. A directory whose
filesystem is not mounted looks, from outside, exactly like one that was
deleted: :func:`unmounted_at` is the one rule that tells them apart, and it
errs on "not mounted" (keeping) whenever the evidence is not clear.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path

from router.records import record

MOUNTINFO = "/proc/self/mountinfo"
FSTAB = "/etc/fstab"


def device_of(path: str | os.PathLike[str]) -> int | None:
    """The device number of the filesystem ``path`` (followed) is on; None when it cannot be read."""
    try:
        return os.stat(path).st_dev
    except OSError:
        return None


def same_filesystem(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """True when both exist on one filesystem, so a rename between them cannot fail with EXDEV."""
    dev_a, dev_b = device_of(a), device_of(b)
    return dev_a is not None and dev_a == dev_b


@record
class Mount:
    point: str
    fstype: str


def _unescape(field: str) -> str:
    # The kernel writes space, tab, newline and backslash in a path as \ooo.
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mounts(table: str = MOUNTINFO) -> list[Mount]:
    """Every mount this process sees, in the kernel's order (later ones cover earlier ones)."""
    try:
        with open(table, encoding="utf-8", errors="surrogateescape") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split(" ")
        if len(fields) < 10 or "-" not in fields[6:]:
            continue
        dash = fields.index("-", 6)
        found.append(Mount(_unescape(fields[4]), fields[dash + 1]))
    return found


def mount_points_under(folder: str) -> list[str]:
    """The mount points at or below ``folder`` (a real path), a bind mount of its own
    filesystem included; the table is parsed only when ``folder`` appears in it at all."""
    try:
        with open(MOUNTINFO, "rb") as fh:
            raw = fh.read()
    except OSError:
        return []
    escaped = folder
    for char, code in (("\\", "\\134"), (" ", "\\040"), ("\t", "\\011"), ("\n", "\\012")):
        escaped = escaped.replace(char, code)
    if escaped.encode("utf-8", "surrogateescape") not in raw:
        return []
    below = folder.rstrip("/") + "/"
    return [m.point for m in mounts() if m.point == folder or m.point.startswith(below)]


def is_mount_point(path: str | os.PathLike[str]) -> bool:
    """True when something is mounted at ``path``, a bind mount of its own filesystem included.

    ``os.path.ismount`` compares devices and inodes, so a directory bound
    over itself (same filesystem) does not look like a mount point to it.
    """
    real = os.path.realpath(path)
    return any(m.point == real for m in mounts()) or os.path.ismount(path)


def mount_point_of(path: str | os.PathLike[str]) -> str:
    """The mount point of the filesystem holding ``path`` (its real path; "/" at worst)."""
    real = os.path.realpath(path)
    points = {m.point for m in mounts()}
    for candidate in [real, *map(str, Path(real).parents)]:
        if candidate in points:
            return candidate
    return "/"


def fstab_points(table: str = FSTAB) -> set[str]:
    """Mount points ``/etc/fstab`` names (a disk the system mounts there, mounted now or not)."""
    try:
        with open(table, encoding="utf-8", errors="surrogateescape") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return set()
    points = set()
    for line in lines:
        fields = line.split()
        if len(fields) >= 2 and not fields[0].startswith("#") and fields[1].startswith("/"):
            points.add(os.path.normpath(_unescape(fields[1])))
    return points


def nearest_existing(path: str | os.PathLike[str]) -> Path:
    """``path`` itself, or its closest ancestor that exists."""
    here = Path(os.path.abspath(path))
    while not os.path.exists(here) and here != here.parent:
        here = here.parent
    return here


class Shows(StrEnum):
    """How a filesystem that is not mounted shows (:class:`Unmounted`'s ``shows``)."""

    LINK_MISSING = "link-missing"  # ``at`` links to ``point``, which is missing
    MISSING = "missing"  # ``at`` is missing
    FSTAB = "fstab"  # /etc/fstab mounts a filesystem at ``at``, and none is
    AUTOMOUNT = "automount"  # ``at`` is an automount point its filesystem was not brought to
    EMPTY = "empty"  # ``at`` is an empty directory where the worktree's disk was mounted
    OTHER_DISK = "other-disk"  # ``at`` is on another disk than the worktree's was


@record
class Unmounted:
    """A missing directory whose filesystem is not mounted: where to mount it, and how that shows."""

    point: Path  # where the filesystem that held it belongs
    shows: Shows
    at: Path  # the directory that shows it

    @property
    def why(self) -> str:
        return unmounted_words(self.shows, str(self.at), str(self.point))


def unmounted_words(shows: str, at: str, point: str) -> str:
    """How a filesystem that is not mounted shows, in words: ``<dir> is missing``, ..."""
    if shows == Shows.LINK_MISSING:
        return f"{at} links to {point}, which is missing"
    if shows == Shows.MISSING:
        return f"{at} is missing"
    if shows == Shows.FSTAB:
        return f"/etc/fstab mounts a filesystem at {at}, and none is"
    if shows == Shows.AUTOMOUNT:
        return f"{at} is an automount point its filesystem was not brought to"
    empty = shows == Shows.EMPTY
    shown = "an empty directory" if empty else "a directory on another disk than the worktree's"
    return f"{at} is {shown} where the worktree's disk was mounted"


def unmounted_at(
    path: str | os.PathLike[str], *, lived_on: int | None, guess: bool = True
) -> Unmounted | None:
    """Why the missing ``path`` is taken for a filesystem that is not mounted; None: really gone.

    ``lived_on``: the device the files of ``path`` were on, as far as anything
    recorded it (git's index keeps it for every checked-out file); None when
    nothing did. The rule, erring on "not mounted" (a directory kept that was
    really gone costs a command; one taken for gone costs the work on it):

    - the directory that held ``path`` is missing too: a disk or share
      mounted at or above it is not there;
    - that directory is a mount point ``/etc/fstab`` names and nothing is
      mounted there, or an automount point;
    - the files lived on another device than that directory is on now:
      their filesystem is not mounted there;
    - nothing recorded the device (and ``guess``), and the directory is
      empty: an unmounted mount point looks exactly like that.

    Otherwise the directory that held ``path`` is there, on the filesystem
    ``path`` lived on, and ``path`` is gone from it.
    """
    target = Path(os.path.abspath(path))
    holder = target.parent
    present = nearest_existing(holder)
    if present != holder:
        missing = next(p for p in [holder, *holder.parents] if p.parent == present)
        if os.path.islink(missing):
            link = Path(os.path.join(present, os.readlink(missing)))
            return Unmounted(link, Shows.LINK_MISSING, missing)
        # An empty directory above it is where a disk was most likely mounted.
        return Unmounted(present if _is_empty(present) else missing, Shows.MISSING, missing)
    names = {str(holder), os.path.realpath(holder)}
    if names & fstab_points() and not is_mount_point(holder):
        return Unmounted(holder, Shows.FSTAB, holder)
    if any(m.fstype == "autofs" and m.point in names for m in mounts()):
        return Unmounted(holder, Shows.AUTOMOUNT, holder)
    empty = _is_empty(holder)
    if lived_on is not None:
        here = device_of(holder)
        # git keeps 32 bits of the device number: compare those.
        if here is not None and here & 0xFFFFFFFF == lived_on & 0xFFFFFFFF:
            return None
    elif not (guess and empty):
        return None
    return Unmounted(holder, Shows.EMPTY if empty else Shows.OTHER_DISK, holder)


def _is_empty(folder: Path) -> bool:
    try:
        with os.scandir(folder) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def worktree_unmounted(
    common_dir: str | os.PathLike[str], path: str | os.PathLike[str]
) -> Unmounted | None:
    """Why a linked worktree of the repository whose directory is missing is not gone (None: gone).

    Its registration's index says which device its files were on; with no
    registration left, only a missing parent counts (nothing else is known).
    """
    from router import git as g

    if os.path.lexists(path):
        return None
    admin = g.registration_of(os.fspath(common_dir), os.fspath(path))
    lived_on = g.index_device(os.path.join(admin, "index")) if admin else None
    return unmounted_at(path, lived_on=lived_on, guess=admin is not None)
