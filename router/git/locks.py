"""git's lock files left in a repository's git dir, and the warning that names them."""

from __future__ import annotations

import os
from pathlib import Path


def left_locks(common_dir: Path) -> list[Path]:
    """git lock files in a repo's git dir: each one a git that is running now, or one killed.

    Looked for where git's ref, index, worktree and cherry-pick commands put them
    (the git dir itself, ``refs/``, each ``worktrees/<name>/``, ``sequencer/``), not in ``objects/``
    (large, and its ``maintenance.lock`` only makes auto-maintenance skip).
    """
    # Read with os.scandir: pathlib's glob builds a pattern and a path object per
    # directory it passes, and every creation looks here once per repo. The same
    # entries as ``glob("*.lock")``, ``glob("worktrees/*/*.lock")``,
    # ``glob("sequencer/*.lock")`` and ``(refs).rglob("*.lock")``, in the same order.
    top = str(common_dir)
    found = sorted(_locks_in(top))
    found += sorted(
        lock for admin in _dirs_in(os.path.join(top, "worktrees")) for lock in _locks_in(admin)
    )
    found += sorted(_locks_in(os.path.join(top, "sequencer")))
    found += sorted(_locks_under(os.path.join(top, "refs")))
    return found


def _dir_entries(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []  # as glob: no such folder (or one it may not read) holds nothing


def _locks_in(folder: str) -> list[Path]:
    """The entries of ``folder`` named ``*.lock`` (any kind, as glob's match)."""
    return [Path(e.path) for e in _dir_entries(folder) if e.name.endswith(".lock")]


def _dirs_in(folder: str) -> list[str]:
    """The directories in ``folder``, a symlink to one included (as glob's ``*/``)."""
    return [e.path for e in _dir_entries(folder) if _is_dir(e, follow=True)]


def _locks_under(folder: str) -> list[Path]:
    """``*.lock`` entries in ``folder`` and every directory below it, not through a
    symlink (as ``rglob``)."""
    found = _locks_in(folder)
    for entry in _dir_entries(folder):
        if _is_dir(entry, follow=False):
            found += _locks_under(entry.path)
    return found


def _is_dir(entry: os.DirEntry[str], *, follow: bool) -> bool:
    try:
        return entry.is_dir(follow_symlinks=follow)
    except OSError:
        return False


def left_lock_warnings(name: str, primary: Path, common_dir: Path) -> list[str]:
    """One warning for each git lock file left in repo ``name`` (:func:`left_locks`), with the fix.

    A git killed mid-command (a Ctrl-C, a kill of the whole run) leaves its
    lock behind, and every later git command that needs it fails. team-router
    never removes one (it cannot tell a killed git from a running one), so it
    says where they are. A lock a live process holds open is a git at work
    (another topic's checkout, say), never named: removing it would break that git.
    """
    from router.processes import processes_using

    locks = left_locks(common_dir)
    held = (processes_using([os.path.realpath(lock) for lock in locks]) or {}) if locks else {}
    return [
        f"{name}: {lock} is a git lock file; if no git command is running in "
        f"{primary}, remove it (a killed git left it behind)"
        for lock in locks
        if os.path.realpath(lock) not in held
    ]
