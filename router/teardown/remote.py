"""Origin's branch after a pr-cleanup (DESIGN §11): deleted only on request (or abandoning)
and only when nothing is lost, then its stale remote-tracking ref pruned."""

from __future__ import annotations

from router import git as g
from router.errors import ErrorCode
from router.git import GitError
from router.teardown.cleanup_survey import (
    CleanupOptions,
    Mode,
    Survey,
)
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
from router.teardown.wording import in_words
from router.topic.workspace import Repo


def delete_remote(
    repo: Repo, found: Survey, opts: CleanupOptions, evidence: Evidence | None
) -> StepResult:
    return remote_decision(repo, found, opts, evidence).resolve(dry_run=False)


def remote_decision(
    repo: Repo, found: Survey, opts: CleanupOptions, evidence: Evidence | None
) -> Decision:
    """Whether origin's branch goes: only on request (or abandoning), and only when nothing is lost."""
    name = Step.REMOTE_BRANCH
    if not found.remote_known:
        return settled(
            skipped(name, f"origin could not be asked ({found.remote_error}): not touched")
        )
    tip = found.remote_tip
    if tip is None:
        return settled(skipped(name, f"origin has no {found.branch}: already gone"))
    if not (opts.delete_remote or opts.mode is Mode.ABANDONED):
        return settled(
            skipped(
                name,
                f"origin still has {found.branch} ({tip[:12]}); pass --delete-remote to delete it",
            )
        )
    problem = _remote_loss(repo, found, opts.mode, evidence)
    if problem:
        return settled(
            refused(
                name, ErrorCode.UNINTEGRATED_COMMITS, f"origin's {found.branch} is kept: {problem}"
            )
        )

    def delete() -> StepResult:
        try:
            g.push_delete(repo.git, "origin", found.branch, expect=tip)
        except GitError as exc:
            return failed(
                name,
                f"deleting origin's {found.branch} failed ({exc.first_line}); it is kept",
                exc.code,
            )
        return done(name, f"deleted {found.branch} on origin (was {tip[:12]})")

    return acting(delete, name, f"delete {found.branch} on origin (at {tip[:12]})")


def _remote_loss(repo: Repo, found: Survey, mode: Mode, evidence: Evidence | None) -> str:
    """What deleting origin's branch would lose, or empty when nothing."""
    tip = found.remote_tip or ""
    if repo.git.rev_parse(tip) is None:
        return f"it is at {tip[:12]}, which this clone has not fetched"
    if mode is Mode.MERGED:
        if evidence is not None and evidence.merged and tip == evidence.subject:
            return ""
        if merge_proof(repo.git, tip, found.default.best_ref) is None:
            return f"it is at {tip[:12]}, which is not proven merged"
        return ""
    from router.teardown.snapshot import read_snapshot

    snap = read_snapshot(repo.git, found.branch)
    keepers = [c for c in (found.plan.tip, snap.commit if snap else None) if c]
    if any(tip == c or repo.git.is_ancestor(tip, c) for c in keepers):
        return ""
    return f"it is at {tip[:12]}, with commits this clone's {found.branch} and its snapshot lack"


def remote_gone(found: Survey, result: StepResult) -> bool | None:
    if not found.remote_known:
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
    nothing = skipped(name, f"no origin/{branch} ref: nothing to prune")
    if remote_gone is None:
        return settled(skipped(name, "origin could not be asked: not pruned"))
    if not remote_gone:
        return settled(skipped(name, f"origin still has {branch}: {tracking} stays"))
    if not repo.git.existing_refs([tracking]):
        return settled(nothing)

    def prune() -> StepResult:
        note = in_words(prune_origin(repo, branch, tracking=True))
        if repo.git.existing_refs([tracking]):
            return failed(
                name, f"{note}; {tracking} stays and keeps the branch's commits reachable"
            )
        return done(name, note)

    if deleted:
        # Only a fetch refspec that does not map the branch keeps the ref after the push.
        return Decision(
            act=lambda: prune() if repo.git.existing_refs([tracking]) else nothing,
            plan=lambda: nothing,
        )
    return acting(prune, name, f"prune {tracking} once origin has no {branch}")
