"""A residue directory moved aside while the sweep judges it again (router.teardown.sweep).

The sweep moves each residue directory to ``.team-router-sweeping-<sweep>-<name>``
before its second look and its deletion: a writer going by the path then makes a new
directory rather than writing into the one being deleted. The name says which sweep
moved it, so that one a killed sweep left is given its own name back, and one a
running sweep holds is left to it.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.topic.holders import Holder

SWEEPING = ".team-router-sweeping-"  # a residue directory moved aside to be judged again
_NAME_MAX = 255  # bytes in a file name (Linux's NAME_MAX)
_DIGEST = 16  # hex digits of the whole name's digest that end an aside name cut short


def aside_name(name: str) -> str:
    """``.team-router-sweeping-<pid>@<start time>-<name>``: the sweep that moved it, exactly.

    The pid alone named a process long after the sweep was killed and its pid
    reused, and the directory stayed "claimed" for good. With the process's
    start time (where /proc gives none: the pid alone, the older form) a
    reused pid is told from the sweep, as holders are (DESIGN §10).
    """
    # A name is at most 255 bytes, not characters: cut where the bytes run out (a
    # character cut in two reads back as the same bytes, the filesystem's way), and end in
    # a digest of the whole name: two leftovers alike up to the cut get two aside names.
    whole = os.fsencode(f"{SWEEPING}{_sweeper(os.getpid())}-{name}")
    if len(whole) <= _NAME_MAX:
        return os.fsdecode(whole)
    import hashlib

    digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:_DIGEST]
    return os.fsdecode(whole[: _NAME_MAX - _DIGEST - 1] + f"~{digest}".encode())


@functools.cache
def _sweeper(pid: int) -> str:
    """``<pid>@<start time>`` (or the pid alone) of this process: read once, not per directory."""
    from router.processes import process_start_time

    start = process_start_time(pid)
    return f"{pid}@{start}" if start else str(pid)


def _aside_owner(name: str) -> tuple[Holder, str] | None:
    """The sweep that moved ``name`` aside (as a holder) and the directory's own name.

    Both forms are read: ``<pid>@<start>-<name>`` and the older ``<pid>-<name>``
    (no start time: whether the pid lives is all it says). None: not an aside name.
    """
    from router.topic.holders import Holder

    owner, _, original = name[len(SWEEPING) :].partition("-")
    pid, at, start = owner.partition("@")
    if not pid.isdigit() or not original or (at and not start.isdigit()):
        return None
    return Holder(int(pid), start or None), original


def take_back_aside(base: Path, *, rename: bool) -> list[Path]:
    """Give a directory a killed sweep left moved aside its name back; the ones a live sweep holds.

    A sweep killed between moving a directory aside and deleting it (or
    moving it back) leaves it as ``.team-router-sweeping-<pid>-<name>``: work
    a writer added meanwhile would be kept and listed under a name nobody
    looks for. So the directory gets its own name back when that name is
    free (and was not cut short), and is judged as what it was. One whose
    sweep is still running is that sweep's: returned, to be kept untouched.
    A dry run (``rename`` false) changes no name.
    """
    from router.topic.holders import is_live

    try:
        names = [n for n in os.listdir(base) if n.startswith(SWEEPING)]
    except OSError:
        return []
    held = []
    for name in names:
        found = _aside_owner(name)
        if found is None:
            continue  # not a name remove_residue makes: judged as any other directory
        sweeper, original = found
        if sweeper.pid != os.getpid() and is_live(sweeper):
            held.append(base / name)
        elif rename and len(os.fsencode(name)) < _NAME_MAX:  # else its own name was cut
            with contextlib.suppress(OSError):  # left under its aside name, judged there
                rename_noreplace(base / name, base / original)
    return held


def rename_noreplace(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst``, or raise ``FileExistsError`` when ``dst`` exists.

    ``os.rename`` silently replaces an empty directory: a creation that made
    its empty claim at ``dst`` an instant before would then find our directory
    there, its ``git worktree add`` would fail, and its rollback would delete
    what it took for its own claim. ``renameat2(RENAME_NOREPLACE)`` makes the
    check and the rename one step; where the kernel or filesystem lacks it,
    the check comes just before the rename.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is not None:
        at_fdcwd, noreplace = -100, 1
        if renameat2(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), noreplace) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL):
            raise OSError(err, os.strerror(err), str(src), None, str(dst))
    if os.path.lexists(dst):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(dst))
    os.rename(src, dst)
