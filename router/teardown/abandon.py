"""``pr-cleanup --abandon`` (DESIGN §11): the branch's tip kept in a snapshot ref, and every
branch stacked on it snapshotted and deleted, here and on origin."""

from __future__ import annotations

from router.errors import ErrorCode, Refusal
from router.github import GitHub, PullRequest, Unavailable
from router.names import Branch, protected_reason
from router.reasons import Reason, Why
from router.records import replace
from router.teardown.branch import delete_branch
from router.teardown.cleanup_checks import checked_out
from router.teardown.cleanup_survey import CleanupOptions, Survey, survey
from router.teardown.remote import remote_decision
from router.teardown.steps import (
    Decision,
    Step,
    StepResult,
    acting,
    done,
    refused,
    settled,
    skipped,
)
from router.topic.workspace import DefaultBranch, Repo


def decide_snapshot(repo: Repo, found: Survey) -> Decision:
    if found.plan.tip is None:
        return settled(skipped(Step.SNAPSHOT, Why(Reason.NOTHING_TO_KEEP, branch=found.branch)))
    return acting(
        lambda: _snapshot_branch(repo, found),
        Step.SNAPSHOT,
        Why(Reason.TIP_KEPT, branch=found.branch),
    )


def _snapshot_branch(repo: Repo, found: Survey) -> StepResult:
    """Abandoned commits stay recoverable: the tip goes to the snapshot ref unless one covers it."""
    from router.teardown.snapshot import SnapshotFailed, covers, read_snapshot, snapshot_branch

    tip = repo.git.rev_parse(f"refs/heads/{found.branch}") if found.plan.tip else None
    if tip is None:
        return skipped(Step.SNAPSHOT, Why(Reason.NOTHING_TO_KEEP, branch=found.branch))
    snap = read_snapshot(repo.git, found.branch)
    if not covers(repo.git, snap, tip):
        try:
            snap = snapshot_branch(repo, found.branch, tip)
        except SnapshotFailed as exc:
            failure = Why(Reason.SNAPSHOT_FAILED, parts=(exc.why,), branch=found.branch)
            return refused(Step.SNAPSHOT, exc.code, failure)
    kept = Why(Reason.TIP_KEPT, branch=found.branch, ref=snap.ref, commit=snap.commit)  # type: ignore[union-attr]
    return done(Step.SNAPSHOT, kept)


def _stacked_heads(
    found: Survey, closing: list[PullRequest] | None, hub: GitHub | Unavailable
) -> list[Branch] | None:
    """The branches of the PRs stacked on this one (this repo's heads only), children first."""
    if isinstance(hub, Unavailable) or closing is None:
        return None
    heads = [p.head_ref for p in closing if p.same_repo(hub.slug) and p.head_ref != found.branch]
    return [Branch(h) for h in dict.fromkeys(heads)]  # validated by prs_to_close


def decide_stack(
    repo: Repo,
    found: Survey,
    opts: CleanupOptions,
    closing: list[PullRequest] | None,
    hub: GitHub | Unavailable,
) -> Decision:
    """Abandoning a stack deletes every branch of the chain, with the same snapshot rule (§11)."""
    heads = _stacked_heads(found, closing, hub)
    if heads is None:
        return settled(skipped(Step.STACK, Why(Reason.STACK_UNKNOWN)))
    if not heads:
        return settled(skipped(Step.STACK, Why(Reason.NO_STACK)))

    def act() -> StepResult:
        return _abandon_stack(repo, heads, found, opts)

    # What keeps a stacked branch is known before anything is tried (protected, checked out):
    # the plan says which stay, as the run will, and the others are still abandoned.
    whys = {h: _kept(repo, h, found.default)[1] for h in heads}
    kept = [_stack_kept(h, w) for h, w in whys.items() if w is not None and _stays(w)]
    if not kept:
        return acting(act, Step.STACK, Why(Reason.STACK_DELETED, items=tuple(heads)))
    staying = {w.branch for w in kept}
    going = tuple(h for h in heads if h not in staying)
    planned = Why(Reason.STACK_KEPT, items=going, parts=tuple(kept), planned=True)
    return Decision(
        act=act,
        plan=lambda: refused(Step.STACK, ErrorCode.STACK_KEPT, planned),
    )


def _abandon_stack(
    repo: Repo, heads: list[Branch], found: Survey, opts: CleanupOptions
) -> StepResult:
    deleted, gone, kept = [], [], []
    for head in heads:
        why = _abandon_branch(repo, head, found.default, opts)
        if why is GONE:
            gone.append(head)
        elif why is not None:
            kept.append(_stack_kept(head, why))
        else:
            deleted.append(head)
    stack = Why(Reason.STACK_DELETED, items=tuple(deleted), others=tuple(gone))
    if kept:
        some_kept = replace(stack, reason=Reason.STACK_KEPT, parts=tuple(kept))
        return refused(Step.STACK, ErrorCode.STACK_KEPT, some_kept)
    return done(Step.STACK, stack)


# _abandon_branch: nothing of that branch was here nor on origin (never said: counted gone).
GONE = Why(Reason.ALREADY_GONE)


def _stays(why: Why | None) -> bool:
    return why is not None and why is not GONE


def _stack_kept(branch: Branch, why: Why) -> Why:
    return Why(Reason.STACK_BRANCH_KEPT, branch=branch, inner=(why,))


def _kept(repo: Repo, branch: Branch, default: DefaultBranch) -> tuple[Survey | None, Why | None]:
    """A stacked branch as found, and why it stays before anything is tried (None when it
    goes, :data:`GONE` when nothing of it is left): protected, or checked out somewhere."""
    if protected_reason(branch, default.name) is not None:
        return None, Why(Reason.PROTECTED_BRANCH, branch=branch, default=default.name)
    try:
        child = survey(repo, branch, ask_remote=True)
    except Refusal as exc:
        return None, Why(Reason.NOT_SURVEYED, text=exc.message)
    busy = checked_out(child)
    if busy is not None:
        return child, busy.why
    if child.plan.tip is None and child.remote_tip is None and child.entry is None:
        return child, GONE
    if child.entry is not None:
        return child, Why(Reason.STACK_CHECKED_OUT, branch=branch, path=str(child.entry.path))
    return child, None


def _abandon_branch(
    repo: Repo, branch: Branch, default: DefaultBranch, opts: CleanupOptions
) -> Why | None:
    """Snapshot, then delete one stacked branch locally and on origin; why it stays, or None."""
    child, why = _kept(repo, branch, default)
    if why is not None or child is None:
        return why
    for step in (
        _snapshot_branch(repo, child),
        delete_branch(repo, child.branch, child.default, force=True),
        remote_decision(repo, child, opts, None).resolve(dry_run=False),
    ):
        if step.stopped:
            return step.why
    return None
