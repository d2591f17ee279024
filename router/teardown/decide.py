"""What each step of a repo's teardown does, decided from its facts and the steps before it.

Each decision is a pure reading of the plan and the outcomes so far (as they
went or, in a dry run, as they would go): the dry run reports it, the real run
carries it out, so the two cannot disagree.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from router.errors import ErrorCode
from router.git import StatusReport
from router.reasons import Reason, Why
from router.records import record, replace
from router.teardown.blockers import worktree_blocker
from router.teardown.branch import delete_branch, verify_gone
from router.teardown.facts import RepoPlan, TeardownOptions, recreated
from router.teardown.integrate import integrate_commits
from router.teardown.localstate import LocalStateJob, LocalStateReport, local_state_step
from router.teardown.plan_dir import plan_dir_decision
from router.teardown.proof import Integration
from router.teardown.record import TopicRef, local_state_ran, mark_done
from router.teardown.remove import finish_blocker, gone_with, removal_started, remove_worktree
from router.teardown.steps import (
    Decision,
    Outcome,
    Step,
    StepResult,
    StepRun,
    acting,
    noting,
    refused,
    settled,
    skipped,
)
from router.teardown.sweep import Runs, SweepResult, sweep_step
from router.teardown.unshipped import artifact_files
from router.teardown.update import left_earlier, prune_origin, update_decision
from router.topic import journal, state, worktreelock
from router.topic.scope import RepoTarget, TopicScope
from router.topic.workspace import Repo, find_worktree


def _with_prune(result: StepResult, repo: Repo, plan: RepoPlan) -> StepResult:
    if not plan.has_origin or plan.default is None:
        return result
    if not plan.reachable:
        return noting(result, Why(Reason.UNREACHABLE))
    return noting(result, prune_origin(repo, plan.target.branch, tracking=plan.tracking))


@record(frozen=False)
class RepoRun:
    """One repo's teardown between its seven git steps and its local state (steps accrue)."""

    plan: RepoPlan
    repo: Repo
    runner: StepRun
    # The topic whose record journals the steps (None: a branch no record names, pr-cleanup's).
    topic: TopicRef | None = None
    sweep: SweepResult | None = None
    local: LocalStateReport | None = None

    def outcome(self, name: str) -> Outcome | None:
        """The outcome of step ``name`` so far in this run: as done, or (dry run) as planned."""
        return next((s.outcome for s in self.runner.steps if s.name == name), None)


# Each step of a repo decides once, from the plan and the steps before it (as they went
# or, in a dry run, as they would go), what it does: the dry run reports that decision,
# the real run carries it out. (name, decide, guarded: a stopped guarding step holds it back.)
Decide = Callable[[RepoRun, TopicScope, TeardownOptions], Decision]


def _earlier(plan: RepoPlan) -> state.TopicRecord | None:
    """The repo's record as the steps read it: without an earlier teardown's marks once forgotten."""
    record = plan.target.record
    if record is None or not recreated(plan):
        return record
    return journal.as_new_run(record)


def _decide_integrate(run: RepoRun, scope: TopicScope, opts: TeardownOptions) -> Decision:
    plan, repo = run.plan, run.repo
    name, branch = Step.INTEGRATE, plan.target.branch
    if plan.tip is None:
        return settled(skipped(name, Why(Reason.BRANCH_GONE, branch=branch)))
    if plan.kept_branch and not opts.integrate:
        return settled(_kept_integrate(plan))
    found, default = plan.found, plan.default
    if found is None or default is None:
        return settled(
            refused(
                name,
                ErrorCode.NO_DEFAULT_BRANCH,
                Why(Reason.NO_DEFAULT_BRANCH, path=str(repo.primary)),
            )
        )
    if found.empty:
        return settled(skipped(name, Why(Reason.EMPTY, branch=branch)))
    if found.proof is not None:
        return settled(skipped(name, Why(Reason.MERGED, branch=branch, parts=(found.proof.why,))))
    if not found.missing:
        return settled(skipped(name, Why(Reason.INTEGRATED, branch=branch, default=default.name)))
    commits = tuple(c[:12] for c in found.missing)
    count = len(commits)
    if opts.integrate:
        return acting(
            lambda: integrate_commits(
                repo,
                branch,
                default,
                found.missing,
                topic=run.topic,
                committer_known=plan.committer_known,
            ),
            name,
            Why(Reason.PICKED, count=count, default=default.name),
        )
    missing = Why(
        Reason.UNINTEGRATED, branch=branch, default=default.name, count=count, items=commits
    )
    if opts.force:
        # --force without --integrate: the commits are snapshotted, not applied.
        forced = replace(missing, reason=Reason.UNINTEGRATED_FORCED)
        return settled(skipped(name, forced))
    return settled(refused(name, ErrorCode.UNINTEGRATED_COMMITS, missing))


def decide_remove(run: RepoRun, scope: TopicScope, opts: TeardownOptions) -> Decision:
    plan, repo, topic = run.plan, run.repo, run.topic
    name, worktree = Step.REMOVE, plan.worktree
    if worktree is None:
        return settled(skipped(name, Why(Reason.NO_WORKTREE, branch=plan.target.branch)))
    if plan.on_primary:
        return settled(skipped(name, Why(Reason.PRIMARY_CLONE, path=str(worktree))))
    if plan.kept_worktree:
        return settled(skipped(name, plan.kept_worktree))

    def remove() -> StepResult:
        result, _ = remove_worktree(
            repo,
            worktree,
            plan.target.branch,
            force=opts.force,
            entries=list(plan.entries),
            topic=topic,
            proven_clean=plan.status_read and not plan.status.dirty,
            again=opts.again,
        )
        return _with_copies(result, plan)

    if plan.removing and topic is not None:
        # A removal of ours a kill interrupted, registered or not: finished from its journal.
        started = removal_started(repo, topic, worktree)
        blocker = finish_blocker(repo, worktree, started, again=opts.again) if started else None
        if blocker is not None:
            return settled(blocker)
        return acting(remove, name, Why(Reason.FINISHED, path=str(worktree)))
    if plan.foreign:
        return settled(skipped(name, plan.foreign))
    if not plan.registered:
        there = os.path.lexists(worktree)
        return settled(skipped(name, Why(Reason.NOT_REGISTERED, path=str(worktree), flag=there)))
    entry = find_worktree(list(plan.entries), worktree)
    if not opts.force and entry is not None and worktreelock.locked_by_other(entry):
        # Another tool's lock refuses the removal (teardown's plan refuses it as a whole first).
        return settled(worktree_blocker(worktree, entry, StatusReport()))  # type: ignore[arg-type]
    in_worktree = [a for a in plan.unshipped if a.checkout == worktree]
    snap = opts.force and bool(plan.status.dirty or in_worktree)
    held = artifact_files(in_worktree) if snap else ()
    removal = Why(Reason.REMOVED, path=str(worktree), flag=snap, items=held)
    return acting(remove, name, removal.noting(*gone_with(plan.nested), *_copies(plan)))


def decide_branch(run: RepoRun, scope: TopicScope, opts: TeardownOptions) -> Decision:
    plan, repo = run.plan, run.repo
    name, branch = Step.BRANCH, plan.target.branch
    if plan.kept_branch:
        return settled(skipped(name, plan.kept_branch))
    if plan.tip is None:
        return settled(skipped(name, Why(Reason.ALREADY_GONE, branch=branch)))
    holder = _still_checked_out(run)
    if holder is not None:
        # git refuses to delete a branch some checkout has: said before it is asked.
        return settled(
            skipped(name, Why(Reason.PRIMARY_HOLDS, branch=branch))
            if holder == 0
            else skipped(
                name, Why(Reason.CHECKED_OUT, branch=branch, path=str(plan.entries[holder].path))
            )
        )
    # The plan's judgement holds, and after our own pick we know the new one:
    # every missing commit of the plan's tip is now on the default branch. Either
    # is used only while the branch still points at the plan's tip (delete_branch
    # reads the tip again: another process may have moved the branch since).
    picked = run.outcome(Step.INTEGRATE) is Outcome.DONE
    found = Integration(None, ()) if picked else plan.found
    known = (plan.tip, found) if found else None

    def delete() -> StepResult:
        return delete_branch(
            repo, branch, plan.default, force=opts.force, known=known, config=plan.config
        )

    if found is None or found.integrated:
        return acting(delete, name, Why(Reason.DELETED, branch=branch))
    if opts.force:
        return acting(delete, name, Why(Reason.DELETED, branch=branch, flag=True))
    unintegrated = Why(Reason.HOLDS_UNINTEGRATED, branch=branch, count=len(found.missing))
    return settled(refused(name, ErrorCode.UNINTEGRATED_COMMITS, unintegrated))


def _still_checked_out(run: RepoRun) -> int | None:
    """Which checkout of the plan's worktree list (0: the primary) still has the branch once
    the remove step has done its part; None: none."""
    plan = run.plan
    removed = plan.worktree if run.outcome(Step.REMOVE) is Outcome.DONE else None
    for index, entry in enumerate(plan.entries):
        if entry.branch != plan.target.branch:
            continue
        if removed is not None and index and find_worktree([entry], removed) is not None:
            continue
        return index
    return None


def decide_verify_gone(run: RepoRun, scope: TopicScope, opts: TeardownOptions) -> Decision:
    plan, repo = run.plan, run.repo
    name, worktree = Step.VERIFY_GONE, plan.worktree
    if worktree is None:
        return settled(skipped(name, Why(Reason.NOTHING_TO_RECHECK, branch=plan.target.branch)))
    if plan.kept_worktree:
        return settled(skipped(name, Why(Reason.WORKTREE_KEPT)))
    if plan.on_primary:
        return settled(skipped(name, Why(Reason.PRIMARY_CLONE, path=str(worktree))))
    if plan.foreign:
        return settled(skipped(name, Why(Reason.STILL_REGISTERED, path=str(worktree))))
    runs = _runs(run, scope, opts)
    return acting(
        lambda: verify_gone(repo, worktree, runs, again=opts.again),
        name,
        Why(Reason.GONE, path=str(worktree)),
    )


def decide_update(run: RepoRun, scope: TopicScope, opts: TeardownOptions) -> Decision:
    plan, repo = run.plan, run.repo
    default = plan.default.name if plan.default else "the default branch"
    left = left_earlier(
        _earlier(plan),
        Step.UPDATE_DEFAULT,
        Why(Reason.LEFT_EARLIER, default=default, path=str(repo.primary)),
    )
    if left is not None:
        return settled(left)
    update = update_decision(
        repo,
        plan.default,
        rebase=opts.rebase,
        has_origin=plan.has_origin,
        known=_after_pick(repo, plan, picked=run.outcome(Step.INTEGRATE) is Outcome.DONE),
        at_origin=plan.default_at_origin,
        fresh=plan.reachable,
        fetched=opts.fetched,
    )
    if not (plan.has_origin and plan.default is not None and opts.prune_with_update):
        return update  # no origin to prune either
    # Whatever the default branch does, origin's ref of the branch is pruned once origin lacks it.
    return Decision(
        act=lambda: _with_prune(update.resolve(dry_run=False), repo, plan),
        plan=lambda: _with_planned_prune(update.resolve(dry_run=True), plan),
    )


def decide_plan_dir(run: RepoRun, scope: TopicScope, opts: TeardownOptions) -> Decision:
    if not scope.id:
        branch = run.plan.target.branch
        return settled(skipped(Step.PLAN_DIR, Why(Reason.NOT_A_TOPIC, branch=branch)))
    if not run.plan.target.is_home:
        return settled(skipped(Step.PLAN_DIR, Why(Reason.NOT_HOME)))
    plan = run.plan
    return plan_dir_decision(
        run.repo, scope.id, force=opts.force, shipped=plan.shipped, again=opts.again
    )


def _decide_sweep(run: RepoRun, scope: TopicScope, opts: TeardownOptions) -> Decision:
    plan = run.plan
    # A dry run's remove step has not taken the worktree yet (one a kill left
    # half-removed is no registered worktree), nor its verify-gone step the directory a late
    # writer made where the worktree was: not residue, it goes first, as in the real run.
    goes = Outcome.DONE in (run.outcome(Step.REMOVE), run.outcome(Step.VERIFY_GONE))
    leaving = (plan.worktree,) if plan.worktree is not None and goes else ()

    runs = _runs(run, scope, opts)

    def sweep_now(dry_run: bool) -> StepResult:
        result, run.sweep = sweep_step(run.repo, dry_run=dry_run, leaving=leaving, runs=runs)
        return result

    return Decision(act=lambda: sweep_now(False), plan=lambda: sweep_now(True))


def _runs(run: RepoRun, scope: TopicScope, opts: TeardownOptions) -> Runs:
    """What lets a run's artifacts left in a directory git no longer knows go (verify-gone,
    sweep): the topic's own run shipped (its pr.md, seen before its worktree went), or
    --force, which snapshots them first."""
    shipped = frozenset({scope.id}) if run.plan.shipped else frozenset()
    return Runs(run.repo.primary, shipped, opts.force, run.repo)


def decide_local_state(run: RepoRun, scope: TopicScope, opts: TeardownOptions) -> Decision:
    plan, repo = run.plan, run.repo
    target = plan.target
    # Read now (another run may just have run it), unless the topic was created again.
    if scope.id and not recreated(plan) and local_state_ran(repo.common_dir, scope.id):
        return settled(skipped(Step.LOCAL_STATE, Why(Reason.ALREADY_RAN, topic=scope.id)))
    job = _local_job(repo, target, plan, scope, opts)

    def plan_it() -> StepResult:
        result, run.local = local_state_step(job, dry_run=True)
        return result

    def run_it() -> StepResult:
        result, run.local = local_state_step(job, echo=opts.echo)
        if run.local.interrupted:
            return result  # not recorded: the rerun runs the step again
        # Recorded at once, failed lines or not: a rerun (or a run killed after
        # this point) must not run the lines again. This run reports the
        # failure; `team-router local-state` is how to run them again on purpose.
        if run.topic is not None:
            mark_done(
                repo.common_dir,
                run.topic.id,
                Step.LOCAL_STATE,
                repo_name=run.topic.repo_name,
                branch=target.branch,
            )
        return result

    return Decision(act=run_it, plan=plan_it)


GIT_STEPS: tuple[tuple[Step, Decide, bool], ...] = (
    (Step.INTEGRATE, _decide_integrate, False),
    (Step.REMOVE, decide_remove, True),
    (Step.BRANCH, decide_branch, True),
    (Step.VERIFY_GONE, decide_verify_gone, True),
    (Step.UPDATE_DEFAULT, decide_update, False),
    (Step.PLAN_DIR, decide_plan_dir, True),
    (Step.SWEEP, _decide_sweep, False),
)


def _kept_integrate(plan: RepoPlan) -> StepResult:
    missing = len(plan.found.missing) if plan.found and not plan.found.integrated else 0
    branch = plan.target.branch
    return skipped(
        Step.INTEGRATE,
        Why(Reason.KEPT_UNMERGED, branch=branch, count=missing)
        if missing
        else Why(Reason.KEPT_BRANCH, branch=branch),
    )


def _copies(plan: RepoPlan) -> tuple[Why, ...]:
    """The note naming the ``.worktreeinclude`` copies the removal deletes, if any."""
    return (plan.copies,) if plan.copies is not None else ()


def _with_copies(result: StepResult, plan: RepoPlan) -> StepResult:
    if result.outcome is not Outcome.DONE:
        return result
    return noting(result, *_copies(plan))


def _with_planned_prune(result: StepResult, plan: RepoPlan) -> StepResult:
    """A dry run's update-default: origin's ref of the branch is pruned too, once origin lacks it."""
    branch = plan.target.branch
    note = (
        Why(Reason.PRUNED, branch=branch, planned=True)
        if plan.tracking
        else Why(Reason.NOTHING_TO_PRUNE, branch=branch)
    )
    return noting(result, note)


def _after_pick(
    repo: Repo, plan: RepoPlan, *, picked: bool
) -> tuple[StatusReport, str | None] | None:
    """The primary as our cherry-pick left it (clean, on the default branch); None: read it.

    The pick began on a clean primary on the default branch (re-checked right
    before it) and succeeded, so that is still its state as far as this
    command changed it. A change by someone else since is git's to refuse:
    ``pull --rebase --no-autostash`` will not run over uncommitted changes,
    and no git command overwrites untracked files. With a ``.gitmodules`` the
    pick may have moved submodules, so the primary is read again.
    """
    if not picked or plan.default is None or os.path.lexists(repo.primary / ".gitmodules"):
        return None
    return StatusReport(), plan.default.name


def _local_job(
    repo: Repo, target: RepoTarget, plan: RepoPlan, scope: TopicScope, opts: TeardownOptions
) -> LocalStateJob:
    worktree = None if plan.on_primary or plan.foreign or plan.kept_worktree else plan.worktree
    return LocalStateJob(
        target.name,
        repo.git,
        repo.primary,
        plan.default,
        target.branch,
        worktree,
        temp_paths=scope.temp_paths if target.is_home else None,
        timeout=opts.line_timeout,
        declaration=plan.declaration,
        protected=scope.repo_paths(),
    )
