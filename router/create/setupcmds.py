"""The ``setup-commands`` stage of creation (DESIGN §7): what runs, decided (running: setuprun).

The file is read and its lines run by :mod:`router.declared`'s rules, as
``.teamteardown``'s are: only from the default branch (never the topic's
branch, which a pull request controls: checking it out must not run its
code), one ``sh -c`` per line, stdin from /dev/null, a timeout per line. Here
the lines run in the new worktree, and a failed line stops the ones after it:
setup lines build on each other. Each line that succeeded is recorded at once,
so a rerun (after a failure, a kill, a timeout) runs the failed and unrun
lines and never one that succeeded. A failure is a warning, never a removal:
the worktree is complete and verified before the first line runs.

This half is on every creation's path, so it stays light: with no
``.worktreesetup`` on the default branch, nothing else is imported or started.
"""

from __future__ import annotations

import os
from collections import Counter
from enum import StrEnum
from pathlib import Path

from router.records import field, record
from router.topic import journal
from router.topic.workspace import default_branch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.git import Git
    from router.progress import Echo
    from router.topic.record import TopicRecord

SETUP_FILE = ".worktreesetup"
STEP = "setup-commands"  # the creation step, in the record once no line is left to run
LOG_DIR = "setup"  # under <common git dir>/team-router/: <topic id>.log
# The record's setup_state: lines are left (pending, failed), or none is (done, none).
PENDING, FAILED, DONE, NONE = "pending", "failed", "done", "none"


class SetupStatus(StrEnum):
    DONE = "done"  # every declared line succeeded (in this run or earlier ones)
    FAILED = "failed"  # a line failed, timed out or was interrupted; the rest did not run
    SKIPPED = "skipped"  # --no-setup, or a checkout this run did not make
    NONE = "none"  # the default branch declares no .worktreesetup


@record
class SetupOptions:
    """How ``new`` and ``worktrees`` were asked to run the stage."""

    run: bool = True  # False: --no-setup
    line_timeout: float | None = None  # None: router.declared's default
    echo: Echo | None = None  # where each line is announced; None: stderr


@record
class SetupReport:
    """One repo's setup stage, as the create report shows it."""

    status: SetupStatus
    lines: int = 0  # lines the default branch declares (0 when not read)
    done: int = 0  # of them, done in this worktree (by this run and earlier ones)
    ran: int = 0  # lines this run started
    exit: int | None = None  # the failed line's exit code (None: timeout, interrupted)
    line: str | None = None  # the line that failed
    outcome: str = ""  # its outcome: "failed (exit 3)", "timeout", "interrupted"
    log: str | None = None  # where this run kept the lines' output
    note: str = ""  # why it was skipped, or where the file was read

    @property
    def worth_saying(self) -> bool:
        """The text report names the stage when this run ran a line, or one is failed."""
        return self.ran > 0 or self.status is SetupStatus.FAILED

    @property
    def label(self) -> str:
        return self.outcome if self.status is SetupStatus.FAILED else str(self.status)

    def summary(self) -> str:
        """``setup: done (3 lines)`` and the like, for the text report."""
        text = f"setup: {self.label}"
        if self.status is SetupStatus.FAILED:
            text += f" at `{self.line}` ({self.done}/{self.lines} done)"
        elif self.status is SetupStatus.DONE:
            text += f" ({self.lines} line{'s' if self.lines != 1 else ''}, {self.ran} run now)"
        elif self.note:
            text += f" ({self.note})"
        return text + (f"; log: {self.log}" if self.log else "")

    def to_json(self) -> dict[str, object]:
        return {
            "status": str(self.status),
            "lines": self.lines,
            "done": self.done,
            "ran": self.ran,
            "exit": self.exit,
            "line": self.line,
            "outcome": self.outcome or None,
            "log": self.log,
            "note": self.note,
        }


@record
class SetupPlan:
    """What the stage does in one worktree, decided before its creation is recorded."""

    report: SetupReport | None  # the answer when no line is left to run
    lines: tuple[str, ...] = ()  # every declared line
    done: tuple[str, ...] = ()  # those done already
    source: str = ""  # where the file was read: "origin/main"
    fields: dict[str, object] = field(default_factory=dict)  # record fields to save with it

    @property
    def steps(self) -> tuple[str, ...]:
        """Creation steps done with the record: this one when nothing is left to run."""
        return (STEP,) if self.fields.get("setup_state") in {DONE, NONE} else ()


def plan_setup(
    git: Git,
    record: TopicRecord | None,
    *,
    fresh: bool,
    options: SetupOptions,
    default_checkout: Path | None = None,
) -> SetupPlan:
    """Decide the stage: ``fresh`` when this run made the worktree (its checkout is new).

    A worktree made earlier runs only what its own creation left to run (a
    failed line, a kill); one made before this stage existed, or reused, runs
    nothing: its setup is its owner's. ``default_checkout``: a worktree whose
    branch this run cut at the default branch's commit, so its files are that
    commit's.
    """
    if not options.run:
        return SetupPlan(SetupReport(SetupStatus.SKIPPED, note="--no-setup"))
    if record is not None and STEP in record.steps and not fresh:
        n = len(record.setup_done)
        status = SetupStatus.NONE if record.setup_state == NONE else SetupStatus.DONE
        return SetupPlan(SetupReport(status, lines=n, done=n))
    resuming = any(
        p.operation in {journal.Operation.CREATE, journal.Operation.SETUP}
        for p in journal.pending(record)
    )
    if not fresh and not resuming:
        return SetupPlan(SetupReport(SetupStatus.SKIPPED, note="not a worktree this run made"))
    done = () if fresh or record is None else record.setup_done
    nothing: dict[str, object] = {"setup_done": (), "setup_state": NONE}
    if default_checkout is not None and not os.path.lexists(default_checkout / SETUP_FILE):
        # The default branch's own checkout lacks the file: so does the branch, and no git
        # process is spent to learn it (the usual case). The file found there is never
        # what runs: the lines are read from the default branch itself.
        note = f"no {SETUP_FILE} on the default branch — nothing declared"
        return SetupPlan(SetupReport(SetupStatus.NONE, note=note), fields=nothing)
    from router.declared import read_declared  # the running side's, loaded only when needed

    declared = read_declared(git, SETUP_FILE, default_branch(git))
    if declared.source is None:
        return SetupPlan(SetupReport(SetupStatus.NONE, note=declared.note), fields=nothing)
    lines = declared.lines
    left = lines_left(lines, done)
    if not left:
        n = len(lines)
        report = SetupReport(SetupStatus.DONE, lines=n, done=n, note=declared.note)
        return SetupPlan(report, lines, done, fields={"setup_done": done, "setup_state": DONE})
    fields: dict[str, object] = {"setup_done": done, "setup_state": PENDING}
    return SetupPlan(None, lines, done, declared.source, fields)


def lines_left(lines: tuple[str, ...], done: tuple[str, ...]) -> tuple[str, ...]:
    """``lines`` without those recorded done: each done line spares one occurrence of it.

    By text, not position: a ``.worktreesetup`` changed on the default branch
    between two runs still never runs again a line that succeeded here.
    """
    spare = Counter(done)
    left = []
    for line in lines:
        if spare[line]:
            spare[line] -= 1
        else:
            left.append(line)
    return tuple(left)
