"""What the topic's record says of its teardown: the steps done. The pick or removal a
run was in the middle of when it stopped is the journal's (router.topic.journal).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from router.records import record
from router.teardown.steps import STEPS, NotDone, StepResult, last_run
from router.topic import journal, state
from router.topic.state import Picking


@record
class TopicRef:
    """The topic whose record (in each repo's common git dir) marks that repo's teardown."""

    id: str
    repo_name: str  # the repo's name in the topic, for a record made afresh


def pending_pick(common_dir: Path, topic: TopicRef) -> Picking | None:
    """The cherry-pick of ours the journal marks as running (one a kill interrupted)."""
    record = state.read_record_or_none(common_dir, topic.id)
    pick = journal.find(record, journal.Operation.INTEGRATE)
    return record.integrating if pick is not None and record is not None else None


def local_state_ran(common_dir: Path, topic_id: str) -> bool:
    """The topic's record says its local state already ran (read now: another run may just have)."""
    record = state.read_record_or_none(common_dir, topic_id)
    mark = record.teardown if record else None
    return mark is not None and "local-state" in mark.done


def torn_down(record: state.TopicRecord | None) -> bool:
    """The record says a teardown of the topic finished (every step, every repo it ran in)."""
    return record is not None and record.torn_down


def forget_earlier_teardown(common_dir: Path, topic_id: str) -> None:
    """Drop what an earlier teardown recorded, once the topic has a worktree again.

    An id torn down and then created again keeps its record, and with it the
    earlier teardown's steps; its new worktree shows that they describe another
    run. (Local state runs only after the worktree is gone, so a crash-resumed
    teardown never finds both.)
    """
    record = state.read_record_or_none(common_dir, topic_id)
    if record is None or record.teardown is None:
        return
    journal.end_op(common_dir, topic_id, journal.Operation.TEARDOWN)


def mark_done(common_dir: Path, topic_id: str, step: str, *, repo_name: str, branch: str) -> None:
    """Add ``step`` to the record's teardown steps at once (a record is made if there is none)."""

    journal.teardown_done(common_dir, topic_id, [step], STEPS, made=(repo_name, branch))


def record_steps(
    common_dir: Path,
    topic_id: str,
    command: str,
    steps: Sequence[StepResult],
    *,
    made: tuple[str, str] | None = None,
    **also: object,
) -> None:
    """Mark the record with a teardown's or pr-cleanup's steps, so a rerun of either command
    skips what is done: the steps finished, those left to the user, whether nothing is left
    (``complete``), and the run as it went (what ``status`` and a person read back)."""
    journal.teardown_done(
        common_dir,
        topic_id,
        [s.name for s in steps if s.name in STEPS and s.finished],
        STEPS,
        complete=run_complete(steps),
        # A step a signal stopped is the rerun's to finish, never the user's: recorded as
        # left, the rerun would skip it (a default branch never updated).
        left=[s.name for s in steps if s.left_to_user and not stopped_by_signal(s)],
        made=made,
        last_run=last_run(command, steps),
        **also,
    )


def run_complete(steps: Sequence[StepResult]) -> bool:
    """Nothing is left of the run: no step failed, and no signal stopped it part-way.

    The one rule for both commands: a run a signal stopped between steps (or in one
    the user would otherwise finish) is under way, and ``status``, ``phase`` and
    ``doctor`` say so until a rerun finishes it.
    """
    return not any(s.blocks or stopped_by_signal(s) for s in steps)


def stopped_by_signal(step: StepResult) -> bool:
    return step.not_done is NotDone.INTERRUPTED
