"""The primary clone: whether it is the checkout a step acts in, and whether it is free.

Integrate and update-default move the default branch in the primary clone, so
both first ask whether something there (a change, an operation under way, a
submodule a move left behind) would be lost or mixed in.
"""

from __future__ import annotations

import os
from pathlib import Path

from router import git as g
from router.git import Git, GitError, StatusReport, WorktreeEntry
from router.reasons import Reason, Why
from router.topic.workspace import DefaultBranch, Repo


def is_primary_clone(repo: Repo, path: Path, entries: list[WorktreeEntry]) -> bool:
    """Decided by git: the first ``worktree list`` entry, or a checkout whose git dir is the common dir."""
    real = os.path.realpath(path)
    if real == str(repo.primary) or (entries and real == os.path.realpath(entries[0].path)):
        return True
    if any(real == os.path.realpath(e.path) for e in entries[1:]):
        return False  # git lists it as a linked worktree
    layout = Git(Path(real)).try_layout() if os.path.isdir(real) else None
    return layout is not None and layout.toplevel == Path(real) and not layout.is_linked_worktree


def primary_state(repo: Repo) -> tuple[StatusReport, str | None]:
    """The primary clone's status and checked-out branch (one git process)."""
    now = g.checkout_state(repo.git)
    return now.status, now.branch


def primary_busy(
    repo: Repo, default: DefaultBranch, now: tuple[StatusReport, str | None] | None = None
) -> Why | None:
    """Why the primary clone cannot take a cherry-pick now, noting the way out (None: it can).

    ``now``: the primary's status and branch, when the caller just read them.
    """
    busy, fix = why_primary_busy(repo, default, now)
    return busy.noting(fix) if busy is not None and fix is not None else busy


def why_primary_busy(
    repo: Repo, default: DefaultBranch, now: tuple[StatusReport, str | None] | None = None
) -> tuple[Why | None, Why | None]:
    """The one answer to "may the primary's default branch move now": (why not, the way out).

    A stopped operation comes first: a cherry-pick with nothing left to commit
    looks clean and on the branch, yet a pull or a pick would drop its state.
    """
    primary = str(repo.primary)
    operation = g.operation_in_progress(repo.common_dir)
    if operation is not None:
        busy = Why(Reason.PRIMARY_OPERATION, path=primary, text=operation)
        return busy, Why(Reason.WAY_OUT_OPERATION, path=primary, text=operation)
    status, current = now if now is not None else primary_state(repo)
    if status.dirty:
        changes = Why(Reason.PRIMARY_CHANGES, items=(*status.tracked, *status.untracked))
        return changes, Why(Reason.WAY_OUT_STASH, path=primary)
    if current != default.name:
        elsewhere = Why(Reason.PRIMARY_ELSEWHERE, branch=current or "", default=default.name)
        back = Why(Reason.WAY_OUT_SWITCH, path=primary, default=default.name)
        return elsewhere, back if default.local_ref is not None else None
    if default.local_ref is None:
        return Why(Reason.PRIMARY_NO_DEFAULT, default=default.name), None
    return None, None


def follow_submodules(repo: Repo) -> Why | None:
    """Check out, in the primary, the submodules a move of its branch left behind (None: none).

    git does not follow a gitlink a cherry-pick or a pull moves: the submodule
    stays at the commit the branch recorded before, and the primary shows it
    changed. Every run that moves the default branch ends here, and every
    update-default step after it decides the same (:func:`router.teardown.update.left_behind`), so a
    rerun after a kill (or after a ``submodule update`` that could not fetch
    yet) finishes what the first run could not. Only a submodule clean inside
    and at a commit the branch used to record is moved: that loses nothing (the
    old commit stays in the branch's history); any other change is left for the
    busy check to name. Without a ``.gitmodules`` there is no submodule git
    could update: nothing to read.
    """
    if not os.path.lexists(repo.primary / ".gitmodules"):
        return None
    status, _ = primary_state(repo)
    behind = tuple(p for p in status.tracked if submodule_left_behind(repo, p))
    if not behind:
        return None
    try:
        g.submodule_update(repo.git, list(behind))
    except GitError as exc:
        primary = str(repo.primary)
        return Why(Reason.SUBMODULES_LEFT, items=behind, path=primary, text=exc.first_line)
    return Why(Reason.SUBMODULES_MOVED, items=behind)


def submodule_left_behind(repo: Repo, path: str) -> bool:
    """The submodule at ``path`` is clean and at a commit its gitlink named before it moved."""
    sub = Git(repo.primary / path)
    if not os.path.lexists(repo.primary / path / ".git"):
        return False  # not an initialised submodule: git shows no such change for one
    try:
        head = sub.head()
        return (
            head is not None
            and not sub.status().dirty
            and head in g.former_gitlinks(repo.git, path)
        )
    except GitError:
        return False
