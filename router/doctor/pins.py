"""Doctor's check of the pins that keep what worktrees' submodules borrow from the primary.

A worktree's submodule git dir borrows the primary's objects; a ref in the
primary's git dir of that submodule (:func:`router.git.borrow_pin`) keeps
them from its ``git gc``, and removing the worktree drops it. A worktree
removed by git alone (``git worktree remove``), or a removal killed once git
had removed it, leaves its pins: harmless (they keep objects a gc could have
pruned), listed here, and dropped by the repair.

Only the primary's absorbed git dirs (``.git/modules/``) are read: a pin in a
submodule whose ``.git`` is a directory in the primary's checkout is not found.
"""

from __future__ import annotations

import os
from pathlib import Path

from router import git as g
from router.doctor.findings import Fix, Kind, NotSafe, Problem, new_finding
from router.git import GitError
from router.topic.workspace import Repo


def stale_pin_problems(repo: Repo) -> list[Problem]:
    """Pins whose worktree registration is gone, each with the repair that drops it."""
    modules = repo.common_dir / "modules"
    if not modules.is_dir():  # no submodule: no process, no walk
        return []
    from router.teardown.nested import module_git_dirs

    found = []
    for module in module_git_dirs(modules):
        try:
            pins = g.borrow_pins(module)
        except GitError:
            continue  # a git dir git cannot read: its own checks say so
        for ref, commit in sorted(pins.items()):
            borrower = g.pinned_borrower(ref)
            if borrower is None or _registered(repo, borrower):
                continue
            detail = (
                f"{ref} keeps {commit[:12]} for the worktree registered as {borrower!r}, "
                "which is gone: harmless (it keeps objects `git gc` would prune); "
                "`team-router doctor --repair` drops it"
            )
            finding = new_finding(repo, Kind.STALE_BORROW_PIN, module, detail, None)
            found.append(Problem(finding, _drop(repo, module, ref, commit, borrower)))
    return found


def _registered(repo: Repo, borrower: str) -> bool:
    return os.path.lexists(repo.common_dir / "worktrees" / borrower)


def _drop(repo: Repo, module: Path, ref: str, commit: str, borrower: str) -> Fix:
    def fix() -> str:
        # Read again under the repo's lock: a worktree registered under that name
        # since the check pins its own submodules at that ref.
        if _registered(repo, borrower):
            raise NotSafe(f"a worktree is registered as {borrower!r} again: the pin is its own")
        g.drop_borrow_pin(module, ref, commit)  # only while it still names that commit
        return f"dropped {ref}"

    return fix
