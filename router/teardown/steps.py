"""What a teardown step is and how it went: :class:`Step`, :class:`Outcome`,
:class:`StepResult`, the :class:`Decision` a step makes before it acts, and
:class:`StepRun`, which runs steps in order (a stopped guarding step holds back
the ones after it).

Each step lives in its own module (:mod:`~router.teardown.integrate`,
:mod:`~router.teardown.remove`, :mod:`~router.teardown.branch` with verify-gone,
:mod:`~router.teardown.update`, :mod:`~router.teardown.plan_dir`, the sweep and
local-state steps beside their mechanisms) and returns a :class:`StepResult`
(outcome ``done``, ``skipped``, ``refused`` or ``failed`` and a :class:`~router.reasons.Why`,
its reason, which :mod:`~router.teardown.wording` says in words) after
checking the world again, so running one twice, or after a crash, finishes the
job instead of repeating it. :mod:`router.teardown.teardown` runs them over every
repo of a topic (plan first, then act); ``pr-cleanup`` reuses them for one branch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import StrEnum

from router import interrupt
from router.errors import ErrorCode, error_json
from router.git import GitError
from router.ioerror import describe_io
from router.reasons import Reason, Why
from router.records import field, record, replace
from router.teardown.factwords import name_some as name_some  # the steps' import of it
from router.teardown.wording import in_words
from router.topic import state


class Step(StrEnum):
    """The steps of teardown (DESIGN §9, in their order) and pr-cleanup's own."""

    INTEGRATE = "integrate"
    REMOVE = "remove"
    BRANCH = "branch"
    VERIFY_GONE = "verify-gone"
    UPDATE_DEFAULT = "update-default"
    PLAN_DIR = "plan-dir"
    SWEEP = "sweep"
    LOCAL_STATE = "local-state"
    # pr-cleanup's
    CLOSE_PRS = "close-prs"
    SNAPSHOT = "snapshot"
    REMOTE_BRANCH = "remote-branch"
    STACK = "stack"
    PRUNE = "prune"
    RECLAIM = "reclaim"


STEPS = (
    Step.INTEGRATE,
    Step.REMOVE,
    Step.BRANCH,
    Step.VERIFY_GONE,
    Step.UPDATE_DEFAULT,
    Step.PLAN_DIR,
    Step.SWEEP,
    Step.LOCAL_STATE,
)
# Steps whose stop is the user's to resolve, never a failure of the command: a
# default branch that cannot move is reported and left as it was (DESIGN §9, §11).
LEFT_TO_USER = frozenset({Step.UPDATE_DEFAULT})


class Outcome(StrEnum):
    DONE = "done"
    SKIPPED = "skipped"
    REFUSED = "refused"
    FAILED = "failed"


class NotDone(StrEnum):
    """Why a step that had work to do did not do it: a rerun does it, so the record does not
    count it among the done steps (a step skipped for good, as already done or kept, has none)."""

    INTERRUPTED = "interrupted"  # a signal stopped the run before or during the step
    HELD_BACK = "held-back"  # a guarding step before it stopped
    REFUSED = "refused"  # the teardown was refused as a whole: nothing was removed
    LEFT = "left"  # an earlier run left it to the user, who has not finished it yet


@record
class StepResult:
    name: Step
    outcome: Outcome
    why: Why  # the reason: what the detail says, as a value
    code: ErrorCode | None = None  # the refusal's error code (dirty-worktree, conflict, ...)
    not_done: NotDone | None = None  # why it had work left that it did not do
    # The refs holding the work the step removed, if any: a worktree's or branch's snapshot
    # (refs/team-router/snapshots/...), or a run's plan dir (refs/team-router/plan-dirs/<id>).
    snapshots: tuple[str, ...] = ()

    @property
    def detail(self) -> str:
        """The reason in words (text output, JSON ``detail``, the record): rendered, never parsed."""
        return in_words(self.why)

    @property
    def reason(self) -> Reason:
        """The reason as a fixed word (JSON ``reason``)."""
        return self.why.reason

    @property
    def finished(self) -> bool:
        """Done, or skipped for good (already done, kept): the record counts it done."""
        return self.outcome is Outcome.DONE or (
            self.outcome is Outcome.SKIPPED and self.not_done is None
        )

    @property
    def stopped(self) -> bool:
        return self.outcome in {Outcome.REFUSED, Outcome.FAILED}

    @property
    def left_to_user(self) -> bool:
        """Stopped at what the user finishes (the record keeps it as left, not as failed)."""
        return self.stopped and self.name in LEFT_TO_USER

    @property
    def blocks(self) -> bool:
        """Stopped, and the command failed for it (exit 1)."""
        return self.stopped and not self.left_to_user

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "name": self.name,
            "outcome": str(self.outcome),
            "reason": str(self.reason),
            "detail": self.detail,
        }
        if self.code:
            data["code"] = self.code
        return data


def last_run(command: str, steps: Iterable[StepResult]) -> state.LastRun:
    """The steps a run took, for its record: what a rerun, ``status`` and a person read back."""
    return state.LastRun(
        command,
        tuple(
            state.RanStep(
                s.name,
                str(s.outcome),
                s.detail,
                str(s.code) if s.code else "",
                why=s.why,
            )
            for s in steps
        ),
    )


def conditional(outcome: Outcome) -> str:
    """An outcome as a dry run words it: what the real run would report (``would be skipped``)."""
    return "would fail" if outcome is Outcome.FAILED else f"would be {outcome}"


def stopped_error(
    steps: Iterable[tuple[str, StepResult]], *, dry_run: bool = False
) -> dict[str, str] | None:
    """DESIGN §13's ``error`` for steps (``(where, step)``) that stopped: the first one, and how many more.

    A step left to the user (a default branch left as it was) is a warning, never the error.
    A dry run's error is the real run's, in the conditional.
    """
    stopped = [(where, s) for where, s in steps if s.blocks]
    if not stopped:
        return None
    where, step = stopped[0]
    more = f" (and {len(stopped) - 1} more stopped step(s))" if len(stopped) > 1 else ""
    outcome = conditional(step.outcome) if dry_run else str(step.outcome)
    return error_json(
        step.code
        or (ErrorCode.STEP_REFUSED if step.outcome is Outcome.REFUSED else ErrorCode.STEP_FAILED),
        f"{where + ': ' if where else ''}{step.name} {outcome}: {step.detail}{more}",
    )


def stopped_at(steps: Iterable[StepResult]) -> str | None:
    """Where a signal stopped a run of steps: ``at branch, after integrate, remove`` (None: it did not).

    What is done is named, the step it stopped at (and every one after it) is left.
    """
    steps = list(steps)
    at = next((n for n, s in enumerate(steps) if s.not_done is NotDone.INTERRUPTED), None)
    if at is None:
        return None
    finished = [s.name for s in steps[:at] if s.outcome is Outcome.DONE]
    after = f"after {', '.join(finished)}" if finished else "before any step was done"
    return f"at {steps[at].name}, {after}"


@record
class Decision:
    """What one step will do, decided once: the dry run reports it, the real run carries it out.

    Either ``result``, the step settled without acting (skipped as already done,
    kept, refused: both runs report exactly this), or ``act``, the action the real
    run takes and reports, with ``plan``, the dry run's words for it (its detail
    says ``would …``; its outcome is the one the action reports when the world
    stays as the plan found it).
    """

    result: StepResult | None = None
    act: Callable[[], StepResult] | None = None
    plan: Callable[[], StepResult] | None = None

    def resolve(self, *, dry_run: bool) -> StepResult:
        if self.result is not None:
            return self.result
        assert self.act is not None and self.plan is not None
        return self.plan() if dry_run else self.act()


def settled(result: StepResult) -> Decision:
    """A step decided without acting: the dry run and the real run both report ``result``."""
    return Decision(result=result)


def acting(
    act: Callable[[], StepResult], name: Step, what: Why, outcome: Outcome = Outcome.DONE
) -> Decision:
    """A step that acts: the real run calls ``act``; the dry run reports ``what`` it would do
    (in its planned words: the reason the real run then reports)."""
    why = replace(what, planned=True)
    return Decision(act=act, plan=lambda: StepResult(name, outcome, why))


def not_done(result: StepResult, why: NotDone) -> StepResult:
    """``result``, marked as work a rerun still does (``why``)."""
    return replace(result, not_done=why)


def done(name: Step, why: Why) -> StepResult:
    return StepResult(name, Outcome.DONE, why)


def done_with(name: Step, why: Why, *refs: str) -> StepResult:
    """Done, naming the snapshot refs (if any) that hold the work the step removed."""
    return StepResult(name, Outcome.DONE, why, snapshots=tuple(r for r in refs if r))


def skipped(name: Step, why: Why) -> StepResult:
    return StepResult(name, Outcome.SKIPPED, why)


def refused(name: Step, code: ErrorCode, why: Why) -> StepResult:
    return StepResult(name, Outcome.REFUSED, why, code)


def failed(name: Step, why: Why, code: ErrorCode | None = None) -> StepResult:
    return StepResult(name, Outcome.FAILED, why, code)


def noting(result: StepResult, *notes: Why) -> StepResult:
    """``result`` with ``notes`` said after its reason."""
    return replace(result, why=result.why.noting(*notes))


def _stopped_step(started: bool) -> Why:
    """Why a step a signal stopped (``started``: part-way through it) or kept from starting is
    not done: the signal that stopped the command."""
    return Why(Reason.STOPPED, signal=interrupt.received() or interrupt.SIGINT, flag=started)


def git_failed(name: Step, command: str, exc: GitError) -> StepResult:
    """A step git could not do (``command``, as the words name it; "" for any git command); a
    git lock file in the way is named with its fix (``git-locked``)."""
    return failed(name, Why(Reason.GIT_FAILED, command=command, text=exc.first_line), exc.code)


@record(frozen=False)
class StepRun:
    """Steps as they happen: a stopped guarding step holds back the guarded ones after it.

    An unexpected git or filesystem failure becomes that step's ``failed``
    outcome, never a traceback.
    """

    guarding: frozenset[Step]
    crash_seam: bool = False  # call state.crash_point before each step (teardown's steps)
    steps: list[StepResult] = field(default_factory=list)
    held: StepResult | None = None
    # A dry run: each step's decision is reported, none acted on; the same steps, in
    # the same order, held back by the same refusals as the real run's.
    dry_run: bool = False

    @property
    def interrupted(self) -> bool:
        return any(s.not_done is NotDone.INTERRUPTED for s in self.steps)

    def decide(
        self, name: Step, decision: Callable[[], Decision], *, guarded: bool = True
    ) -> StepResult:
        """Run step ``name`` as ``decision`` decides it: acted on, or (dry run) reported."""
        return self.step(name, lambda: decision().resolve(dry_run=self.dry_run), guarded=guarded)

    def step(
        self, name: Step, action: Callable[[], StepResult], *, guarded: bool = True
    ) -> StepResult:
        if self.crash_seam and not self.dry_run:
            state.crash_point(name)
        # After a signal (router.interrupt) no step starts, and the one under way
        # stops at its next git call: what it did is as a kill would leave it.
        result = interrupt.unless_stopped(
            lambda: self._attempt(name, action, guarded=guarded),
            lambda _, started: not_done(
                (failed if started else skipped)(name, _stopped_step(started)), NotDone.INTERRUPTED
            ),
        )
        self.steps.append(result)
        if self.held is None and result.stopped and name in self.guarding:
            self.held = result
        return result

    def _attempt(
        self, name: Step, action: Callable[[], StepResult], *, guarded: bool
    ) -> StepResult:
        if guarded and self.held is not None:
            failed_ = self.held.outcome is Outcome.FAILED
            held = Why(Reason.HELD_BACK, step=self.held.name, flag=failed_)
            return not_done(skipped(name, held), NotDone.HELD_BACK)
        try:
            return action()
        except GitError as exc:
            return git_failed(name, "", exc)
        except OSError as exc:
            return failed(name, Why(Reason.IO_FAILED, text=describe_io(exc)), ErrorCode.IO_ERROR)
