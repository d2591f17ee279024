"""Origin's branch after a pr-cleanup (DESIGN §11): deleted only on request (or abandoning)
and only when nothing is lost, then its stale remote-tracking ref pruned."""

from __future__ import annotations

from router import git as g
from router.errors import ErrorCode
from router.git import GitError
from router.reasons import Reason, Why
from router.teardown.cleanup_survey import CleanupOptions, Mode, Survey
from router.teardown.merged import Evidence
from router.teardown.proof import merge_proof
from router.teardown.steps import (
    Decision,
    Outcome,
    Step,
    StepResult,
    acting,
    done,
    failed,
    refused,
    settled,
    skipped,
)
from router.teardown.update import prune_origin
from router.topic.workspace import Repo


def remote_decision(
    repo: Repo, found: Survey, opts: CleanupOptions, evidence: Evidence | None
) -> Decision:
    """Whether origin's branch goes: only on request (or abandoning), and only when nothing is lost."""
    name = Step.REMOTE_BRANCH
    if found.remote_error is not None:
        unknown = Why(Reason.ORIGIN_UNKNOWN, parts=(found.remote_error,))
        return settled(skipped(name, unknown))
    tip = found.remote_tip
    if tip is None:
        return settled(skipped(name, Why(Reason.REMOTE_GONE, branch=found.branch)))
    if not (opts.delete_remote or opts.mode is Mode.ABANDONED):
        return settled(skipped(name, Why(Reason.REMOTE_KEPT, branch=found.branch, commit=tip)))
    problem = _remote_loss(repo, found, opts.mode, evidence)
    if problem:
        return settled(
            refused(
                name,
                ErrorCode.UNINTEGRATED_COMMITS,
                Why(Reason.REMOTE_UNINTEGRATED, branch=found.branch, parts=(problem,)),
            )
        )

    def delete() -> StepResult:
        try:
            g.push_delete(repo.git, "origin", found.branch, expect=tip)
        except GitError as exc:
            kept = Why(Reason.REMOTE_DELETE_FAILED, branch=found.branch, text=exc.first_line)
            return failed(name, kept, exc.code)
        return done(name, Why(Reason.REMOTE_DELETED, branch=found.branch, commit=tip))

    return acting(delete, name, Why(Reason.REMOTE_DELETED, branch=found.branch, commit=tip))


def _remote_loss(repo: Repo, found: Survey, mode: Mode, evidence: Evidence | None) -> Why | None:
    """Why deleting origin's branch would lose work, or None when it would lose nothing."""
    tip = found.remote_tip or ""
    if repo.git.rev_parse(tip) is None:
        return Why(Reason.REMOTE_NOT_FETCHED, commit=tip)
    if mode is Mode.MERGED:
        if evidence is not None and evidence.merged and tip == evidence.subject:
            return None
        if merge_proof(repo.git, tip, found.default.best_ref) is None:
            return Why(Reason.REMOTE_NOT_MERGED, commit=tip)
        return None
    from router.teardown.snapshot import read_snapshot

    snap = read_snapshot(repo.git, found.branch)
    keepers = [c for c in (found.plan.tip, snap.commit if snap else None) if c]
    if any(tip == c or repo.git.is_ancestor(tip, c) for c in keepers):
        return None
    return Why(Reason.REMOTE_AHEAD, commit=tip, branch=found.branch)


def remote_gone(found: Survey, result: StepResult) -> bool | None:
    if found.remote_error is not None:
        return None
    if found.remote_tip is None:
        return True
    return result.outcome is Outcome.DONE


def decide_prune(repo: Repo, branch: str, remote_gone: bool | None, deleted: bool) -> Decision:
    """teardown's ``prune_origin``, once origin (asked directly) has no such branch.

    ``deleted``: this run deletes origin's branch (or, in a dry run, would), and with it
    the remote-tracking ref: nothing is left to prune then.
    """
    name = Step.PRUNE
    tracking = f"refs/remotes/origin/{branch}"
    nothing = skipped(name, Why(Reason.NOTHING_TO_PRUNE, branch=branch))
    if remote_gone is None:
        return settled(skipped(name, Why(Reason.ORIGIN_UNKNOWN)))
    if not remote_gone:
        return settled(skipped(name, Why(Reason.NOT_PRUNED, branch=branch, flag=True)))
    if not repo.git.existing_refs([tracking]):
        return settled(nothing)

    def prune() -> StepResult:
        note = prune_origin(repo, branch, tracking=True)
        if repo.git.existing_refs([tracking]):
            return failed(name, note.noting(Why(Reason.TRACKING_STAYS, branch=branch)))
        return done(name, note)

    if deleted:
        # Only a fetch refspec that does not map the branch keeps the ref after the push.
        return Decision(
            act=lambda: prune() if repo.git.existing_refs([tracking]) else nothing,
            plan=lambda: nothing,
        )
    return acting(prune, name, Why(Reason.PRUNED, branch=branch, flag=True))
