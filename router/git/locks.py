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
    found = sorted(common_dir.glob("*.lock")) + sorted(common_dir.glob("worktrees/*/*.lock"))
    found += sorted(common_dir.glob("sequencer/*.lock"))
    refs = common_dir / "refs"
    if refs.is_dir():
        found += sorted(refs.rglob("*.lock"))
    return found


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
