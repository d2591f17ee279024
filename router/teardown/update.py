"""Step 5, update-default: bring the primary clone's default branch up to origin's,
and prune origin's deleted branch; what cannot move is left to the user.
"""

from __future__ import annotations

import os

from router import git as g
from router.git import GitError, StatusReport
from router.reasons import Reason, Why
from router.records import replace
from router.teardown.primary import (
    follow_submodules,
    primary_state,
    submodule_left_behind,
    why_primary_busy,
)
from router.teardown.steps import (
    Decision,
    NotDone,
    Step,
    StepResult,
    done,
    failed,
    not_done,
    settled,
    skipped,
)
from router.topic import state
from router.topic.workspace import DefaultBranch, Repo


def update_decision(
    repo: Repo,
    default: DefaultBranch | None,
    *,
    rebase: bool = True,
    has_origin: bool,
    known: tuple[StatusReport, str | None] | None = None,
    at_origin: bool = False,
    fresh: bool = False,
    fetched: bool = True,
) -> Decision:
    """Whether the default branch moves in the primary clone, or why it stays.

    It moves (``git pull --rebase``, or ``--ff-only``) only in a clean primary
    on it; never a merge commit, and a pull that stops is aborted so the
    primary clone is left clean. ``known``: the primary's status and branch as
    this command's own last change left them (a cherry-pick onto the default
    branch), not read again. ``at_origin``: this command fetched moments ago
    and the local default branch was then at origin's tip, so a pull has
    nothing to bring (our own picks, if any, already sit on that tip).
    ``fresh``: that fetch succeeded moments ago, so ``origin/<default>`` is
    origin's tip: a branch behind it is fast-forwarded there without a pull
    fetching the same commits again (a branch with commits of its own is
    still pulled). ``fetched``: this command fetched origin at all (a
    teardown's dry run does not): the words say which tip was judged.
    """
    name = Step.UPDATE_DEFAULT
    if default is None:
        return settled(skipped(name, Why(Reason.UNKNOWN_DEFAULT)))
    behind = left_behind(repo, default) if known is None else None
    if behind is not None:
        # An earlier run of ours moved the branch and was stopped before its
        # submodules followed: they follow first, and the primary is judged after.
        status, current, paths = behind
        clean = replace(status, tracked=tuple(p for p in status.tracked if p not in paths))
        after = update_decision(
            repo,
            default,
            rebase=rebase,
            has_origin=has_origin,
            known=(clean, current),
            at_origin=at_origin,
            fresh=fresh,
            fetched=fetched,
        )
        return _following(repo, paths, after)
    if not has_origin:
        return settled(skipped(name, Why(Reason.NO_ORIGIN)))
    if at_origin:
        return settled(_already_at_origin(default, fetched=fetched))
    busy, _ = why_primary_busy(repo, default, known)
    if busy is not None:
        return settled(_fetched_only(busy, fetched=fetched, fresh=fresh))
    return _pull(repo, default, rebase=rebase, fresh=fresh, fetched=fetched)


def _pull(
    repo: Repo, default: DefaultBranch, *, rebase: bool, fresh: bool, fetched: bool
) -> Decision:
    """The pull that moves the default branch (a dry run says what it would bring)."""
    return Decision(
        act=lambda: _pull_default(repo, default, rebase=rebase, fresh=fresh),
        plan=lambda: _planned_pull(repo, default, rebase=rebase, fresh=fresh, fetched=fetched),
    )


def _already_at_origin(default: DefaultBranch, *, fetched: bool) -> StepResult:
    """The default branch already holds origin's tip: nothing for a pull to bring."""
    # Not fetched (a dry run): the real run fetches first, and judges origin's tip then.
    current = Why(Reason.UP_TO_DATE, default=default.name, flag=fetched, planned=not fetched)
    return done(Step.UPDATE_DEFAULT, current)


def _fetched_only(busy: Why, *, fetched: bool, fresh: bool) -> StepResult:
    """The primary clone is busy (``busy`` says why): the default branch is not moved."""
    why = Why(Reason.BUSY, parts=(busy,), flag=fresh, planned=not fetched)
    return skipped(Step.UPDATE_DEFAULT, why)


def _following(repo: Repo, paths: list[str], after: Decision) -> Decision:
    """Check the submodules at ``paths`` out at the commits the branch records, then ``after``."""
    followed = Why(Reason.SUBMODULES_FOLLOWED, items=tuple(paths), path=str(repo.primary))

    def act() -> StepResult:
        try:
            g.submodule_update(repo.git, paths)
        except GitError as exc:
            failed_ = replace(followed, reason=Reason.SUBMODULES_FAILED, text=exc.first_line)
            return skipped(Step.UPDATE_DEFAULT, failed_)
        result = after.resolve(dry_run=False)
        return replace(result, why=result.why.after(followed))

    def plan() -> StepResult:
        result = after.resolve(dry_run=True)
        planned = replace(followed, planned=True)
        return replace(result, why=result.why.after(planned))

    return Decision(act=act, plan=plan)


def left_behind(
    repo: Repo, default: DefaultBranch
) -> tuple[StatusReport, str | None, list[str]] | None:
    """The primary's status and branch, and the submodules a move of the branch left behind.

    None when there are none: no ``.gitmodules``, the primary on another branch,
    or no changed submodule clean inside and at a commit the branch recorded
    before (:func:`submodule_left_behind`).
    """
    if not os.path.lexists(repo.primary / ".gitmodules"):
        return None
    status, current = primary_state(repo)
    if current != default.name:
        return None
    paths = [p for p in status.tracked if submodule_left_behind(repo, p)]
    return (status, current, paths) if paths else None


def _pull_default(repo: Repo, default: DefaultBranch, *, rebase: bool, fresh: bool) -> StepResult:
    """Bring the default branch in the (clean, checked-out) primary clone up to origin's."""
    name = Step.UPDATE_DEFAULT
    moved = g.fast_forward(repo.git, default.remote_ref) if fresh and default.remote_ref else None
    if moved is g.FastForward.CURRENT:
        return done(name, Why(Reason.UP_TO_DATE, default=default.name, flag=True))
    if moved is g.FastForward.MOVED:
        moved_to = Why(Reason.UPDATED, default=default.name)
        return done(name, moved_to.noting(*_followed(repo)))
    try:
        g.pull(repo.git, "origin", default.name, rebase=rebase)
    except GitError as exc:
        if rebase:
            g.rebase_abort(repo.git)
        own = _own_commits(repo, default) if not rebase else 0
        why = Why(Reason.PULL_FAILED, default=default.name, flag=rebase, count=own)
        why = replace(why, text=exc.first_line, path=str(repo.primary))
        return failed(name, why, exc.code)
    # The primary was clean before the pull: a gitlink the pulled commits moved
    # would otherwise leave its submodule behind and the primary dirty.
    pulled = Why(Reason.UPDATED, default=default.name, command=_pull_command(rebase), flag=rebase)
    return done(name, pulled.noting(*_followed(repo)))


def _followed(repo: Repo) -> tuple[Why, ...]:
    """The submodules a move of the default branch left behind, checked out (said after it)."""
    followed = follow_submodules(repo)
    return (followed,) if followed is not None else ()


def _planned_pull(
    repo: Repo, default: DefaultBranch, *, rebase: bool, fresh: bool, fetched: bool
) -> StepResult:
    """What :func:`_pull_default` would do, read from the refs as they are (a dry run)."""
    name, d = Step.UPDATE_DEFAULT, default.name
    local, remote = default.local_ref, default.remote_ref
    pull = Why(Reason.UPDATED, default=d, command=_pull_command(rebase), planned=True)
    if local is None or remote is None or not fresh:
        return done(name, pull)
    if repo.git.is_ancestor(remote, local):
        return done(name, Why(Reason.UP_TO_DATE, default=d, flag=fetched, planned=True))
    own = repo.git.count_commits(f"{remote}..{local}")
    if not own:
        return done(name, Why(Reason.UPDATED, default=d, planned=True))
    # Its own commits and origin's change the same lines (a rebase stops), or --ff-only
    # cannot move it: the real run leaves the branch to the user, as the plan must say.
    stops = rebase and repo.git.merge_tree(remote, local) is None
    if rebase and not stops:
        return done(name, replace(pull, count=own))
    left = Why(Reason.PULL_FAILED, default=d, flag=rebase, count=own, path=str(repo.primary))
    return failed(name, replace(left, planned=True))


def _pull_command(rebase: bool) -> str:
    return f"git pull {'--rebase' if rebase else '--ff-only'}"


def _own_commits(repo: Repo, default: DefaultBranch) -> int:
    """Commits of the local default branch that origin's lacks (0 when either ref is missing)."""
    if default.local_ref is None or default.remote_ref is None:
        return 0
    try:
        return repo.git.count_commits(f"{default.remote_ref}..{default.local_ref}")
    except GitError:
        return 0


def left_earlier(record: state.TopicRecord | None, name: Step, why: Why) -> StepResult | None:
    """``name`` when an earlier run left it to the user (its record says so): not tried again.

    Tried again it would fail the same way (the default branch has not moved
    for the user yet) and report the same failure on every rerun. "not done"
    keeps it out of the record's done steps: it stays left.
    """
    mark = record.teardown if record is not None else None
    if mark is None or name not in mark.left:
        return None
    return not_done(skipped(name, why), NotDone.LEFT)


def prune_origin(repo: Repo, branch: str, *, tracking: bool) -> Why:
    """``git remote prune origin`` when origin no longer has ``branch``; a note saying what happened.

    A merge that deleted the branch on origin leaves ``refs/remotes/origin/<branch>``
    behind, and it keeps every commit of the branch reachable. ``remote prune``
    drops only refs whose branch origin no longer has, so running it while that
    ref exists is safe, and whether it dropped the ref tells if origin still has
    the branch. ``tracking``: that ref exists (as this command read it).
    """
    if not tracking:
        return Why(Reason.NOTHING_TO_PRUNE, branch=branch)
    try:
        pruned = g.remote_prune_refs(repo.git, "origin")
    except GitError as exc:
        return Why(Reason.PRUNE_FAILED, branch=branch, text=exc.first_line)
    if f"origin/{branch}" in pruned:
        return Why(Reason.PRUNED, branch=branch)
    return Why(Reason.NOT_PRUNED, branch=branch)
