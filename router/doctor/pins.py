"""Doctor's check of the pins that keep what worktrees' submodules borrow from the primary.

A worktree's submodule git dir borrows the primary's objects; a ref in the
primary's git dir of that submodule (:func:`router.git.borrow_pin`) keeps
them from its ``git gc``, and removing the worktree drops it. A worktree
removed by git alone (``git worktree remove``), or a removal killed once git
had removed it, leaves its pins: harmless (they keep objects a gc could have
pruned), listed here, and dropped by the repair. A live worktree's submodule
git dir that borrows with no pin (made by an earlier version), or whose HEAD
or branches moved onto commits of the primary's that no pin keeps yet (the
commands a pipeline runs pin them at their next run), is listed too, and the
repair pins what they stand on.

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


def unpinned_borrow_problems(repo: Repo) -> list[Problem]:
    """Live worktrees' submodule git dirs that borrow with no pin in the primary, or whose
    HEAD or branches stand on commits of the primary's no pin keeps, each with the repair
    that pins them."""
    found = []
    pins_of: dict[Path, dict[str, str] | None] = {}
    for admin in g.worktree_admin_dirs(str(repo.common_dir)):
        for borrowed in g.borrowed_sources(Path(admin)):
            if borrowed.source not in pins_of:
                try:
                    pins_of[borrowed.source] = g.borrow_pins(borrowed.source)
                except GitError:
                    pins_of[borrowed.source] = None  # unreadable: not judged here
            pins = pins_of[borrowed.source]
            if pins is None:
                continue
            detail: str | None = (
                f"borrows objects from {borrowed.source}, and no ref there keeps them (made "
                "by an earlier version): the primary's `git gc` may prune what its checkout "
                f"stands on; `team-router doctor --repair` pins it ({borrowed.pin})"
            )
            if any(ref.startswith(borrowed.prefix) for ref in pins):
                detail = _unkept_detail(borrowed)
            if detail is None:
                continue
            finding = new_finding(repo, Kind.UNPINNED_BORROW, borrowed.borrower, detail, None)
            found.append(Problem(finding, _pin(borrowed)))
    return found


def _unkept_detail(borrowed: g.Borrowed) -> str | None:
    """Why ``borrowed``'s HEAD or branches are not all kept by its pins; None when they are."""
    try:
        unkept = g.unkept(borrowed)
    except GitError as exc:
        return (
            f"git cannot walk what its HEAD and branches reach ({exc.first_line}): objects "
            f"borrowed from {borrowed.source} may be gone already; "
            f"`git -C {borrowed.borrower} fsck` names them"
        )
    if not unkept:
        return None
    return (
        f"its HEAD or branches stand on {_described(unkept)} of {borrowed.source}, which no pin "
        "there keeps: the primary's `git gc` may prune them once its own refs let go; "
        f"`team-router doctor --repair` pins them ({borrowed.prefix}kept/...)"
    )


def _described(unkept: g.Unkept) -> str:
    """``3f2a9c1d0b7e, 91c0e2aa4b7d and 2 tree(s) or file(s) its own commits took from others``."""
    parts = [", ".join(oid[:12] for oid in unkept.commits)] if unkept.commits else []
    if unkept.trees or unkept.blobs:
        count = len(unkept.trees) + len(unkept.blobs)
        parts.append(f"{count} tree(s) or file(s) its own commits took from other commits")
    return " and ".join(parts)


def _pin(borrowed: g.Borrowed) -> Fix:
    def fix() -> str:
        if not borrowed.borrower.is_dir():
            raise NotSafe("its worktree was removed meanwhile")
        try:
            unpinned = not g.borrow_pins(borrowed.source, borrowed.pin)
            pinned = g.pin_borrower(borrowed) if unpinned else None
            kept = g.keep_borrowed(borrowed)
        except GitError as exc:
            raise NotSafe(
                f"git cannot read its HEAD or branches ({exc.first_line}): "
                f"`git -C {borrowed.borrower} fsck` names what is missing"
            ) from None
        if pinned is None and not kept:
            if not g.borrow_pins(borrowed.source, borrowed.prefix):
                raise NotSafe(f"{borrowed.source} has none of the commits its HEAD stands on")
            return "its pins keep it already"
        first = g.Unkept((pinned,)) if pinned else g.Unkept()
        both = g.Unkept(first.commits + kept.commits, kept.trees, kept.blobs)
        return f"pinned {_described(both)}"

    return fix
