"""One repo's teardown carried out: its steps run in order as decided, then its record."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from router.errors import ErrorCode
from router.reasons import Reason, Why
from router.records import record
from router.teardown.decide import GIT_STEPS, Decide, RepoRun, decide_local_state
from router.teardown.facts import RepoPlan, TeardownOptions, recreated
from router.teardown.localstate import LocalStateReport
from router.teardown.record import TopicRef, forget_earlier_teardown, record_steps
from router.teardown.steps import STEPS, Decision, Step, StepResult, StepRun, skipped, stopped_at
from router.teardown.sweep import SweepResult
from router.topic.scope import TopicScope


@record
class TeardownReport:
    name: str
    worktree: Path | None
    steps: tuple[StepResult, ...]
    sweep: SweepResult | None = None
    local_state: LocalStateReport | None = None
    # A refused repo's plan: each step as it would go once every blocker is gone.
    planned: tuple[StepResult, ...] = ()
    # A refused repo's: the code of the refusal that held its other steps back (the
    # teardown error's code, when the refusal is this repo's); None: another repo's.
    # Each held-back step's reason and the text's "the rest" line both name this one.
    refused_by: ErrorCode | None = None

    @property
    def ok(self) -> bool:
        # A default branch that cannot be rebased is reported (a warning), not a
        # failure of the teardown: it is the user's to resolve, and counting it
        # would make every later teardown of the torn-down topic exit 1.
        return not any(s.blocks for s in self.steps)

    @property
    def interrupted(self) -> bool:
        return stopped_at(self.steps) is not None

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "worktree": str(self.worktree) if self.worktree else None,
            "steps": [s.to_json() for s in self.steps],
        }


# A stopped step of these holds back the guarded steps after it (what it guards stays).
GUARDING = frozenset({Step.INTEGRATE, Step.REMOVE, Step.BRANCH})


def teardown_repo(plan: RepoPlan, scope: TopicScope, opts: TeardownOptions) -> TeardownReport:
    """The eight steps in one repo (or, unless ``opts.acts``, what each would do); a refusal
    of a guarding step keeps everything it guards."""
    begun = git_steps(plan, scope, opts)
    return begun if isinstance(begun, TeardownReport) else local_state_last(begun, scope, opts)


def git_steps(plan: RepoPlan, scope: TopicScope, opts: TeardownOptions) -> RepoRun | TeardownReport:
    """Steps 1-7 in one repo: a report at once when the repo cannot be used at all."""
    target = plan.target
    repo = target.repo
    if repo is None:
        return TeardownReport(
            target.name,
            target.worktree,
            tuple(skipped(s, target.unusable or Why(Reason.REPO_UNUSABLE)) for s in STEPS),
        )
    if recreated(plan) and opts.acts:
        forget_earlier_teardown(repo.common_dir, scope.id)
    runner = StepRun(
        frozenset() if opts.refused_plan else GUARDING, crash_seam=True, dry_run=not opts.acts
    )
    begun = RepoRun(plan, repo, runner, TopicRef(scope.id, target.name))
    for name, decide, guarded in GIT_STEPS:
        runner.decide(name, _deciding(decide, begun, scope, opts), guarded=guarded)
    return begun


def _deciding(
    decide: Decide, run: RepoRun, scope: TopicScope, opts: TeardownOptions
) -> Callable[[], Decision]:
    return lambda: decide(run, scope, opts)


def local_state_last(begun: RepoRun, scope: TopicScope, opts: TeardownOptions) -> TeardownReport:
    """Step 8 in one repo, run once every repo of the topic is past step 7, then the record.

    A ``.teamteardown`` line and the temp-path checks then see the topic as the
    teardown leaves it, not another repo's worktree still half there.
    """
    plan, repo = begun.plan, begun.repo
    begun.runner.decide(Step.LOCAL_STATE, lambda: decide_local_state(begun, scope, opts))
    report = TeardownReport(
        plan.target.name, plan.worktree, tuple(begun.runner.steps), begun.sweep, begun.local
    )
    if opts.acts:
        # Kept, marked torn down, so a second run knows the topic and exits 0 (a corrupt record
        # was reported at resolution; it is never overwritten).
        made = (plan.target.name, plan.target.branch)
        record_steps(repo.common_dir, scope.id, "teardown", report.steps, made=made)
    return report
