"""Step 6, plan-dir: remove the run's untracked ``docs/plans/<id>/`` from the primary
clone (a run that fell back to it), snapshotting an unshipped run's artifacts first.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from router.errors import ErrorCode
from router.reasons import Reason, Why
from router.records import replace
from router.teardown.blockers import nested_blocker
from router.teardown.nested import survey_directory
from router.teardown.snapshot import SnapshotFailed, snapshot_plan_dir
from router.teardown.steps import (
    Decision,
    Outcome,
    Step,
    StepResult,
    acting,
    done,
    done_with,
    failed,
    noting,
    refused,
    settled,
    skipped,
)
from router.teardown.unshipped import (
    RunArtifacts,
    artifact_files,
    run_artifacts,
    unshipped,
    unshipped_why,
)
from router.topic.runs import PLANS_DIR, plan_dir_link
from router.topic.workspace import Repo


def plan_dir_decision(
    repo: Repo,
    topic_id: str,
    *,
    force: bool = False,
    shipped: bool = False,
    again: str = "teardown",
) -> Decision:
    """Whether ``docs/plans/<id>/`` in the primary clone goes (untracked, holding no other
    repository's work), or why it stays.

    The artifacts of a run that has not shipped (it fell back to the primary
    clone) refuse ``unshipped-run`` unless ``force``, which first writes them to
    their own snapshot ref; ``shipped``: the command found the run's ``pr.md``
    before (in its worktree, gone by now); ``again`` is the command a refusal names.
    """
    name = Step.PLAN_DIR
    rel = Path(PLANS_DIR, topic_id)
    path = repo.primary / rel
    if not os.path.lexists(path):
        return settled(skipped(name, Why(Reason.NO_PLAN_DIR, path=rel.as_posix())))
    kept = _why_kept(repo, topic_id, rel, path)
    if kept is not None:
        return settled(kept)
    run = unshipped([run_artifacts(repo.primary, topic_id)], shipped=shipped)
    if run and not force:
        why = unshipped_why(topic_id, run, command=again)
        return settled(refused(name, ErrorCode.UNSHIPPED_RUN, why))
    removal = Why(Reason.REMOVED_UNTRACKED, path=str(path), items=artifact_files(run))
    return acting(lambda: _remove(repo, topic_id, path, run), name, removal)


def artifacts_at_stake(
    repo: Repo, topic_id: str, removed: Path | None, *, shipped: bool
) -> tuple[StepResult, list[RunArtifacts]]:
    """The plan-dir step as it would go (forced), and the artifacts of a run that has not shipped
    that a teardown or pr-cleanup would delete: in the worktree its remove step takes
    (``removed``), and in the primary clone when the plan-dir step would remove them there."""
    step = plan_dir_decision(repo, topic_id, force=True).resolve(dry_run=True)
    checkouts = [removed] if removed is not None else []
    checkouts += [repo.primary] if step.outcome is Outcome.DONE else []
    return step, unshipped((run_artifacts(c, topic_id) for c in checkouts), shipped=shipped)


def _why_kept(repo: Repo, topic_id: str, rel: Path, path: Path) -> StepResult | None:
    """Why the plan dir at ``path`` stays (not plain, reached through a symlink, tracked,
    holding another repository's work), or None when it is ours to remove."""
    name, where = Step.PLAN_DIR, str(path)
    if path.is_symlink() or not path.is_dir():
        return refused(name, ErrorCode.PLAN_DIR_KEPT, Why(Reason.NOT_PLAIN, path=where))
    link = plan_dir_link(str(repo.primary), topic_id)
    if link is not None:
        # git ls-files does not see past an untracked symlinked docs/ or docs/plans/:
        # what lies behind it is somewhere else on the machine, never ours to delete.
        linked = Why(Reason.SYMLINKED, path=where, items=(str(link),))
        return refused(name, ErrorCode.PLAN_DIR_KEPT, linked)
    tracked = repo.git.ls_files(rel.as_posix() + "/")
    if tracked is None:
        unknown = Why(Reason.UNTRACKED_UNKNOWN, path=str(rel))
        return refused(name, ErrorCode.PLAN_DIR_KEPT, unknown)
    if tracked:
        return skipped(name, Why(Reason.TRACKED, path=str(rel), count=len(tracked)))
    # A plan dir in the primary clone (the run fell back to it) is no worktree:
    # no earlier step looked for a repository someone cloned into it.
    try:
        nested = survey_directory(path)
    except OSError as exc:
        unread = Why(Reason.UNREADABLE, path=where, text=str(exc.filename))
        return refused(name, ErrorCode.PLAN_DIR_KEPT, unread)
    blocker = nested_blocker(path, nested, again="the same command", step=name, what="the plan dir")
    if blocker is not None:
        return noting(blocker, Why(Reason.PLAN_DIR_KEPT))
    return None


def _remove(repo: Repo, topic_id: str, path: Path, run: list[RunArtifacts]) -> StepResult:
    """Remove the plan dir, an unshipped run's artifacts written to their snapshot ref first."""
    name = Step.PLAN_DIR
    snap = None
    if run:
        try:
            snap = snapshot_plan_dir(repo, topic_id)
        except SnapshotFailed as exc:
            failure = Why(Reason.SNAPSHOT_FAILED, parts=(exc.why,), flag=True)
            return refused(name, exc.code, failure)
    try:
        shutil.rmtree(path)
    except OSError as exc:
        return failed(name, Why(Reason.REMOVE_FAILED, path=str(path), text=str(exc.strerror)))
    if snap is None:
        return done(name, Why(Reason.REMOVED_UNTRACKED, path=str(path)))
    held = Why(Reason.REMOVED_UNTRACKED, path=str(path), ref=snap.ref, commit=snap.commit)
    return done_with(name, replace(held, items=snap.files), snap.ref)
