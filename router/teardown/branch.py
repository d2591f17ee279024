"""Steps 3 and 4, branch and verify-gone: the topic branch is deleted once proven
integrated, then nothing of the worktree or branch is left behind.
"""

from __future__ import annotations

import os
from pathlib import Path

from router import git as g
from router.errors import ErrorCode
from router.git import GitError
from router.reasons import Reason, Why
from router.teardown.primary import is_primary_clone
from router.teardown.proof import Integration, integration
from router.teardown.snapshot import SnapshotFailed, covers, read_snapshot, snapshot_branch
from router.teardown.steps import (
    Step,
    StepResult,
    done,
    done_with,
    failed,
    git_failed,
    refused,
    skipped,
)
from router.teardown.sweep import Kept, Runs, Snapshotted, SweepVerdict, classify, remove_residue
from router.teardown.unshipped import residue_why
from router.topic.workspace import WORKTREES_DIR, DefaultBranch, Repo, find_worktree


def delete_branch(
    repo: Repo,
    branch: str,
    default: DefaultBranch | None,
    *,
    force: bool,
    known: tuple[str, Integration] | None = None,
    config: g.ConfigView | None = None,
) -> StepResult:
    """Delete the branch when its work is integrated or proven merged, or snapshotted under force.

    ``known`` is an earlier (tip, integration) judgement, reused only while
    the branch still points at that tip; ``config`` the repo's config as read
    with it (for the ``branch.<name>`` section the deletion drops).
    """
    name = Step.BRANCH
    if known is not None and config is not None and default is not None:
        judged = _delete_judged(repo, branch, default, known, config)
        if judged is not None:
            return judged
    tip = repo.git.rev_parse(f"refs/heads/{branch}")
    if tip is None:
        return skipped(name, Why(Reason.ALREADY_GONE, branch=branch))
    if known is not None and known[0] == tip:
        found = known[1]
    else:
        found = integration(repo.git, tip, default) if default else Integration(None, (tip,))
    snap = None
    if found.integrated:
        why = Why(Reason.DELETED, branch=branch, parts=(found.why(default.name),))  # type: ignore[union-attr]
    elif not force:
        unintegrated = Why(Reason.HOLDS_UNINTEGRATED, branch=branch, count=len(found.missing))
        return refused(name, ErrorCode.UNINTEGRATED_COMMITS, unintegrated)
    else:
        snap = read_snapshot(repo.git, branch)
        if not covers(repo.git, snap, tip) and g.unique_commits(
            repo.git, tip, except_branch=branch
        ):
            try:
                snap = snapshot_branch(repo, branch, tip)
            except SnapshotFailed as exc:
                failure = Why(Reason.SNAPSHOT_FAILED, parts=(exc.why,), branch=branch)
                return refused(name, exc.code, failure)
        why = Why(Reason.DELETED, branch=branch, flag=True, ref=snap.ref if snap else "")
    try:
        repo.git.branch_delete(branch)
    except GitError as exc:
        # git refuses to delete a branch some worktree has checked out: keep it.
        if "checked out" in exc.stderr or "used by worktree" in exc.stderr:
            held = Why(Reason.CHECKED_OUT, branch=branch, text=exc.first_line)
            return skipped(name, held)
        return git_failed(name, f"git branch -D {branch}", exc)
    return done_with(name, why, snap.ref if snap else "")


def _delete_judged(
    repo: Repo,
    branch: str,
    default: DefaultBranch,
    known: tuple[str, Integration],
    config: g.ConfigView,
) -> StepResult | None:
    """Delete an integrated branch in one process, only while it is still at the judged tip.

    What ``git branch -D`` does, with the tip check made by git in the same
    step as the deletion (``update-ref -d <ref> <tip>``): a commit made on the
    branch since it was judged keeps it. None when this cannot decide (the
    branch moved, or some checkout may have it): the caller judges afresh.
    """
    tip, found = known
    if not found.integrated:
        return None
    checked_out = g.checked_out_branches(str(repo.common_dir))
    if checked_out is None or branch in checked_out:
        return None  # git branch -D decides, and refuses a checked-out branch
    if not repo.git.branch_delete_at(branch, tip):
        return None
    why = Why(Reason.DELETED, branch=branch, parts=(found.why(default.name),))
    # Config already read says whether there is a section: no process when there is none.
    left = repo.git.drop_branch_config(branch) if config.has_section(f"branch.{branch}") else ""
    if left:
        why = why.noting(Why(Reason.CONFIG_KEPT, branch=branch, text=left))
    return done(Step.BRANCH, why)


def verify_gone(
    repo: Repo, path: Path | None, runs: Runs | None = None, *, again: str = "teardown"
) -> StepResult:
    """Re-check a removed path; a late writer's recreation goes only if it is residue.

    ``runs``: as for the sweep, what lets a run's artifacts in it go (by
    default, only a shipped run's); ``again``: the command a refusal names.
    """
    name = Step.VERIFY_GONE
    runs = runs or Runs(repo.primary)
    if path is None:
        return skipped(name, Why(Reason.NO_WORKTREE_RECORDED))
    where = str(path)
    if not os.path.lexists(path):
        return done(name, Why(Reason.GONE, path=where))
    entries = repo.git.worktree_list()
    if is_primary_clone(repo, path, entries):
        return skipped(name, Why(Reason.PRIMARY_CLONE, path=where))
    if find_worktree(entries, path) is not None:
        return skipped(name, Why(Reason.STILL_REGISTERED, path=where))
    if os.path.realpath(path.parent) != os.path.join(os.path.realpath(repo.primary), WORKTREES_DIR):
        return refused(name, ErrorCode.RESIDUE_KEPT, Why(Reason.OUTSIDE, path=where))
    judged = classify(path, {os.path.realpath(e.path) for e in entries}, runs=runs)
    forced = judged.reason is SweepVerdict.UNSHIPPED and runs.force
    if judged.reason is not SweepVerdict.RESIDUE and not forced:
        return _came_back(judged, again)
    outcome = remove_residue(path, runs)  # judged again once moved aside: a writer may be at it
    if isinstance(outcome, Kept):
        return _came_back(outcome, again)
    if isinstance(outcome, Why):
        return failed(name, Why(Reason.CAME_BACK_FAILED, path=where, parts=(outcome,)))
    if isinstance(outcome, Snapshotted):
        return done(name, Why(Reason.CAME_BACK, path=where, flag=True, parts=outcome.notes))
    return done(name, Why(Reason.CAME_BACK, path=where))


def _came_back(kept: Kept, again: str) -> StepResult:
    """verify-gone's refusal of a path that came back holding what is not residue."""
    where = str(kept.path)
    if kept.reason is SweepVerdict.UNSHIPPED:
        residue = residue_why(list(kept.runs), command=again).parts
        why = Why(Reason.CAME_BACK_UNSHIPPED, path=where, parts=residue)
        return refused(Step.VERIFY_GONE, ErrorCode.UNSHIPPED_RUN, why)
    files = tuple(map(str, kept.files))
    why = Why(Reason.CAME_BACK_KEPT, path=where, kind=str(kept.reason), items=files)
    return refused(Step.VERIFY_GONE, ErrorCode.RESIDUE_KEPT, why)
