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
from router.teardown.steps import name_some
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
) -> str:
    """Why the primary clone cannot take a cherry-pick now, with the command that clears it ("" when it can).

    ``now``: the primary's status and branch, when the caller just read them.
    """
    busy, fix = why_primary_busy(repo, default, now)
    return f"{busy}; {fix}" if fix else busy


def why_primary_busy(
    repo: Repo, default: DefaultBranch, now: tuple[StatusReport, str | None] | None = None
) -> tuple[str, str]:
    """The one answer to "may the primary's default branch move now": (why not, the fix).

    A stopped operation comes first: a cherry-pick with nothing left to commit
    looks clean and on the branch, yet a pull or a pick would drop its state.
    """
    operation = g.operation_in_progress(repo.common_dir)
    if operation is not None:
        return f"a {operation} is in progress there", _sequence_ways_out(repo, operation)
    status, current = now if now is not None else primary_state(repo)
    busy = busy_reason(status, current, default)
    if busy and status.dirty:
        return (
            busy,
            f"commit or stash them (`git -C {repo.primary} stash push --include-untracked`)",
        )
    if busy and current != default.name and default.local_ref is not None:
        return busy, f"switch back with `git -C {repo.primary} switch {default.name}`"
    return busy, ""


def busy_reason(status: StatusReport, current: str | None, default: DefaultBranch) -> str:
    if status.dirty:
        return f"it has uncommitted changes ({name_some(status.tracked + status.untracked)})"
    if current != default.name:
        return f"it is on {current or 'a detached HEAD'}, not {default.name}"
    if default.local_ref is None:
        return f"it has no local {default.name}"
    return ""


def _sequence_ways_out(repo: Repo, operation: str) -> str:
    """The commands that end a stopped ``operation``, the one that keeps its commits included.

    A cherry-pick or revert sequence can be left without its ``*_HEAD`` (a
    conflict committed by hand, or a git killed as it finished): ``--abort``
    then rewinds every commit the sequence made, ``--quit`` keeps them.
    """
    cmd = f"git -C {repo.primary} {operation}"
    if operation == "bisect":
        return f"end it with `{cmd} reset`"
    if operation in {"cherry-pick", "revert"}:
        return (
            f"finish it (`{cmd} --continue`), end it keeping the commits it made "
            f"(`{cmd} --quit`), or undo it (`{cmd} --abort`)"
        )
    return f"finish it, or undo it with `{cmd} --abort`"


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
