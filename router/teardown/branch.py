"""Steps 3 and 4, branch and verify-gone: the topic branch is deleted once proven
integrated, then nothing of the worktree or branch is left behind.
"""

from __future__ import annotations

import os
from pathlib import Path

from router import git as g
from router.errors import ErrorCode
from router.git import GitError
from router.teardown.primary import is_primary_clone
from router.teardown.proof import Integration, integration
from router.teardown.snapshot import (
    Snapshot,
    SnapshotFailed,
    covers,
    read_snapshot,
    snapshot_branch,
)
from router.teardown.steps import (
    Step,
    StepResult,
    done,
    done_with,
    failed,
    git_failed,
    name_some,
    refused,
    skipped,
)
from router.teardown.sweep import Kept, Runs, Snapshotted, SweepVerdict, classify, remove_residue
from router.teardown.unshipped import residue_message
from router.topic.workspace import WORKTREES_DIR, DefaultBranch, Repo, find_worktree


def delete_branch(
    repo: Repo,
    branch: str,
    default: DefaultBranch | None,
    *,
    force: bool,
    known: tuple[str, Integration] | None = None,
    config: g.ConfigView | None = None,
) -> tuple[StepResult, Snapshot | None]:
    """Delete the branch when its work is integrated or proven merged, or snapshotted under force.

    ``known`` is an earlier (tip, integration) judgement, reused only while
    the branch still points at that tip; ``config`` the repo's config as read
    with it (for the ``branch.<name>`` section the deletion drops).
    """
    name = Step.BRANCH
    if known is not None and config is not None and default is not None:
        judged = _delete_judged(repo, branch, default, known, config)
        if judged is not None:
            return judged, None
    tip = repo.git.rev_parse(f"refs/heads/{branch}")
    if tip is None:
        return skipped(name, f"{branch} is already gone"), None
    if known is not None and known[0] == tip:
        found = known[1]
    else:
        found = integration(repo.git, tip, default) if default else Integration(None, (tip,))
    snap = None
    if found.integrated:
        why = found.reason(default.name)  # type: ignore[union-attr]
    elif not force:
        return refused(
            name,
            ErrorCode.UNINTEGRATED_COMMITS,
            f"{branch} holds {len(found.missing)} commit(s) not on the default branch; kept",
        ), None
    else:
        snap = read_snapshot(repo.git, branch)
        if not covers(repo.git, snap, tip) and g.unique_commits(
            repo.git, tip, except_branch=branch
        ):
            try:
                snap = snapshot_branch(repo, branch, tip)
            except SnapshotFailed as exc:
                return refused(name, exc.code, f"{exc.message}; {branch} is kept"), None
        why = f"--force; its commits stay reachable from {snap.ref}" if snap else "--force"
    try:
        repo.git.branch_delete(branch)
    except GitError as exc:
        # git refuses to delete a branch some worktree has checked out: keep it.
        if "checked out" in exc.stderr or "used by worktree" in exc.stderr:
            return skipped(
                name, f"{branch} is checked out in a worktree ({exc.first_line}): kept"
            ), snap
        return git_failed(name, f"git branch -D {branch} failed", exc), snap
    return done_with(name, f"deleted {branch} ({why})", snap.ref if snap else ""), snap


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
    why = found.reason(default.name)
    # Config already read says whether there is a section: no process when there is none.
    left = repo.git.drop_branch_config(branch) if config.has_section(f"branch.{branch}") else ""
    return done(Step.BRANCH, f"deleted {branch} ({why}){left}")


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
        return skipped(name, "no worktree recorded")
    if not os.path.lexists(path):
        return done(name, f"{path} is gone")
    entries = repo.git.worktree_list()
    if is_primary_clone(repo, path, entries):
        return skipped(name, f"{path} is the primary clone: never removed")
    if find_worktree(entries, path) is not None:
        return skipped(name, f"{path} is still a registered worktree")
    if os.path.realpath(path.parent) != os.path.join(os.path.realpath(repo.primary), WORKTREES_DIR):
        return refused(
            name, ErrorCode.RESIDUE_KEPT, f"{path} came back outside {WORKTREES_DIR}: kept"
        )
    judged = classify(path, {os.path.realpath(e.path) for e in entries}, runs=runs)
    forced = judged.reason is SweepVerdict.UNSHIPPED and runs.force
    if judged.reason is not SweepVerdict.RESIDUE and not forced:
        return _came_back(judged, again)
    outcome = remove_residue(path, runs)  # judged again once moved aside: a writer may be at it
    if isinstance(outcome, Kept):
        return _came_back(outcome, again)
    if isinstance(outcome, str):
        return failed(name, f"{path} came back and could not be removed: {outcome}")
    if isinstance(outcome, Snapshotted):
        return done(
            name,
            f"{path} came back (a late writer) holding the artifacts of a run that has not "
            f"shipped: removed; {'; '.join(outcome.notes)}",
        )
    return done(name, f"{path} came back (a late writer) holding only residue: removed")


def _came_back(kept: Kept, again: str) -> StepResult:
    """verify-gone's refusal of a path that came back holding what is not residue."""
    if kept.reason is SweepVerdict.UNSHIPPED:
        return refused(
            Step.VERIFY_GONE,
            ErrorCode.UNSHIPPED_RUN,
            f"{kept.path} came back; {residue_message(list(kept.runs), command=again)}",
        )
    return refused(
        Step.VERIFY_GONE,
        ErrorCode.RESIDUE_KEPT,
        f"{kept.path} came back ({kept.reason}: {name_some(kept.files)}): kept for you to look at",
    )
