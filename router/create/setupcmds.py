"""The ``setup-commands`` stage of creation (DESIGN §7): ``.worktreesetup`` run in a new worktree.

The file is read and its lines run by :mod:`router.declared`'s rules, as
``.teamteardown``'s are: only from the default branch (never the topic's
branch, which a pull request controls: checking it out must not run its
code), one ``sh -c`` per line, stdin from /dev/null, a timeout per line. Here
the lines run in the new worktree, and a failed line stops the ones after it:
setup lines build on each other. Each line that succeeded is recorded at once,
so a rerun (after a failure, a kill, a timeout) runs the failed and unrun
lines and never one that succeeded. A failure is a warning, never a removal:
the worktree is complete and verified before the first line runs.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from router import interrupt
from router.declared import (
    DEFAULT_LINE_TIMEOUT,
    CommandResult,
    Declaration,
    LineOutcome,
    announce,
    line_env,
    read_declared,
    run_line,
    stop_group,
)
from router.git import Git
from router.progress import Echo, write_line
from router.topic import state
from router.topic.workspace import default_branch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

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


@dataclass(frozen=True, slots=True)
class SetupOptions:
    """How ``new`` and ``worktrees`` were asked to run the stage."""

    run: bool = True  # False: --no-setup
    line_timeout: float = DEFAULT_LINE_TIMEOUT
    echo: Echo | None = None  # where each line is announced; None: stderr


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
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
    record: state.TopicRecord | None,
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
    resuming = record is not None and (record.creating or record.setup_state in {PENDING, FAILED})
    if not fresh and not resuming:
        return SetupPlan(SetupReport(SetupStatus.SKIPPED, note="not a worktree this run made"))
    done = () if fresh or record is None else record.setup_done
    if default_checkout is not None and not os.path.lexists(default_checkout / SETUP_FILE):
        # The default branch's own checkout lacks the file: so does the branch, and no git
        # process is spent to learn it (the usual case). The file found there is never
        # what runs: the lines are read from the default branch itself.
        declared = Declaration(
            None, (), f"no {SETUP_FILE} on the default branch — nothing declared"
        )
    else:
        declared = read_declared(git, SETUP_FILE, default_branch(git))
    if declared.source is None:
        nothing: dict[str, object] = {"setup_done": (), "setup_state": NONE}
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


# -- running ----------------------------------------------------------------------

# Saves creation steps done and record fields (the pipeline's own save: one view of the record).
Save = Callable[[tuple[str, ...], dict[str, object]], None]


def _save_progress(save: Save, done: list[str], stage: str) -> None:
    """The lines done so far, and the state the stage is left in."""
    save((STEP,) if stage == DONE else (), {"setup_done": tuple(done), "setup_state": stage})


@dataclass(frozen=True, slots=True)
class SetupRun:
    """Where the stage runs one repo's lines."""

    repo: str  # its name in the topic
    primary: Path
    common_dir: Path
    worktree: Path
    branch: str
    topic: str
    options: SetupOptions

    def log_path(self) -> Path:
        return state.state_root(self.common_dir) / LOG_DIR / f"{self.topic}.log"

    def running_path(self) -> Path:
        """The process group of the line running now (kept while it runs)."""
        return state.state_root(self.common_dir) / LOG_DIR / f"{self.topic}.running"

    def note_running(self, pgid: int) -> None:
        # Best effort: unnoted, a line a SIGKILL leaves running is not stopped by the rerun.
        with contextlib.suppress(OSError):
            state.write_atomic(self.running_path(), f"{pgid}\n")

    def stop_leftover(self) -> list[str]:
        """Stop a line a killed run left running here: the rerun runs it again, never beside it."""
        path = self.running_path()
        try:
            pgid = int(path.read_text().strip() or 0)
        except (OSError, ValueError):
            return []
        stopped = stop_group(pgid)
        path.unlink(missing_ok=True)
        if not stopped:
            return []
        return [f"{self.repo}: setup: stopped the line a killed run left running (group {pgid})"]


def run_setup(plan: SetupPlan, run: SetupRun, save: Save) -> tuple[SetupReport, list[str]]:
    """Run the lines ``plan`` left, in order, stopping at the first that fails; its warnings."""
    if plan.report is not None:
        return plan.report, []
    left = lines_left(plan.lines, plan.done)
    echo = run.options.echo or _stderr
    path = run.log_path()
    log, warnings = _open_log(path, run)
    warnings += run.stop_leftover()
    done = list(plan.done)
    result: CommandResult | None = None
    try:
        for line in left:
            if interrupt.received():
                break
            announce(echo, run.repo, f"$ {line}")
            _log_header(log, f"$ {line}")
            result = run_line(
                line,
                cwd=run.worktree,
                env=line_env(
                    root=run.primary, branch=run.branch, worktree=run.worktree, topic=run.topic
                ),
                timeout=run.options.line_timeout,
                repo=run.repo,
                log=log,
                started=run.note_running,
            )
            run.running_path().unlink(missing_ok=True)
            announce(echo, run.repo, f"  -> {result.label}")
            _log_header(log, f"-> {result.label}")
            if result.outcome is not LineOutcome.OK:
                break
            done.append(line)
            try:
                _save_progress(save, done, DONE if len(done) == len(plan.lines) else PENDING)
            except OSError as exc:
                # Unrecorded, a rerun would run it again: better stop here and say so.
                warnings.append(f"{run.repo}: setup: cannot record `{line}` as done ({exc})")
                result = CommandResult(line, LineOutcome.INTERRUPTED, None, run.repo)
                break
    finally:
        if log is not None:
            log.close()
    return _outcome(plan, run, done, result, path if log is not None else None, save, warnings)


def _outcome(
    plan: SetupPlan,
    run: SetupRun,
    done: list[str],
    result: CommandResult | None,
    log: Path | None,
    save: Save,
    warnings: list[str],
) -> tuple[SetupReport, list[str]]:
    ran = len(done) - len(plan.done) + (result is not None and result.outcome is not LineOutcome.OK)
    common = {
        "lines": len(plan.lines),
        "done": len(done),
        "ran": ran,
        "log": str(log) if log else None,
    }
    if len(done) == len(plan.lines):
        return SetupReport(SetupStatus.DONE, note=plan.source, **common), warnings  # type: ignore[arg-type]
    if result is None or result.outcome is LineOutcome.OK:
        # A signal before the next line: nothing failed, the rest is left to the rerun.
        result = CommandResult(left_line(plan, done), LineOutcome.INTERRUPTED, None, run.repo)
    elif result.outcome is not LineOutcome.INTERRUPTED:
        with contextlib.suppress(OSError):  # "pending" resumes the same way
            _save_progress(save, done, FAILED)
    report = SetupReport(
        SetupStatus.FAILED,
        exit=result.exit,
        line=result.line,
        outcome=result.label,
        note=plan.source,
        **common,  # type: ignore[arg-type]
    )
    where = f"; its output is in {log}" if log else ""
    warnings.append(
        f"{run.repo}: setup: {result.label} at `{result.line}` (.worktreesetup on "
        f"{plan.source}, {len(done)}/{len(plan.lines)} lines done); the worktree "
        f"{run.worktree} is kept{where}. Fix the line on the default branch or what it "
        "needs, then run the same command again: it runs that line and the ones after it"
    )
    return report, warnings


def left_line(plan: SetupPlan, done: list[str]) -> str:
    """The first line not done yet."""
    return lines_left(plan.lines, tuple(done))[0]


def _open_log(path: Path, run: SetupRun) -> tuple[BinaryIO | None, list[str]]:
    """The log, appended to (one per topic and repo, kept across reruns); None when unwritable."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        log = path.open("ab")
    except OSError as exc:
        return None, [f"{run.repo}: setup: cannot keep a log at {path} ({exc.strerror})"]
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    _log_header(log, f"# {stamp} {SETUP_FILE} in {run.worktree} ({run.branch})")
    return log, []


def _log_header(log: BinaryIO | None, text: str) -> None:
    if log is None:
        return
    try:
        log.write(text.encode("utf-8", "surrogateescape") + b"\n")
        log.flush()
    except OSError:
        pass  # a full disk: the line still runs, its output still reaches stderr


def _stderr(text: str) -> None:
    write_line(sys.stderr, text)
