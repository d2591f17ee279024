"""The ``setup-commands`` stage's lines run in a new worktree, in order, each recorded once done.

Loaded only when a ``.worktreesetup`` declares lines left to run (:mod:`router.create.setupcmds`
decides that). A failed line stops the ones after it; a line a SIGKILL left running is
stopped before the rerun runs it again.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from pathlib import Path

from router import interrupt
from router.create.setupcmds import (
    DONE,
    FAILED,
    LOG_DIR,
    PENDING,
    SETUP_FILE,
    STEP,
    SetupOptions,
    SetupPlan,
    SetupReport,
    SetupStatus,
    lines_left,
)
from router.declared import (
    DEFAULT_LINE_TIMEOUT,
    CommandResult,
    Leftover,
    LineOutcome,
    announce,
    group_note,
    line_env,
    noted_group,
    run_line,
    stop_group,
)
from router.progress import write_line
from router.records import record
from router.topic import state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

NOTE_STEP = "note-setup-line"  # the crash seam's name for noting a line's group

# Saves creation steps done and record fields (the pipeline's own save: one view of the record).
Save = Callable[[tuple[str, ...], dict[str, object]], None]


def _save_progress(save: Save, done: list[str], stage: str) -> None:
    """The lines done so far, and the state the stage is left in."""
    save((STEP,) if stage == DONE else (), {"setup_done": tuple(done), "setup_state": stage})


@record
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
        state.crash_point(NOTE_STEP)
        # Best effort: unnoted, a line a SIGKILL leaves running is not stopped by the rerun.
        with contextlib.suppress(OSError):
            state.write_atomic(self.running_path(), f"{group_note(pgid)}\n")

    def stop_leftover(self) -> tuple[Leftover, list[str]]:
        """Stop a line a killed run left running here: the rerun runs it again, never beside it."""
        path = self.running_path()
        try:
            pgid, started = noted_group(path.read_text())
        except (OSError, ValueError):
            return Leftover.NONE, []
        left = stop_group(pgid, started)
        if left is Leftover.RUNNING:
            # Kept noted: the next rerun stops it (or finds it gone) before running anything.
            return left, [
                f"{self.repo}: setup: the line a killed run left running (process group {pgid}) "
                "still runs after SIGTERM and SIGKILL, so no line runs beside it now. Once it is "
                f"gone (`kill -KILL -{pgid}`; a process stuck on a disk goes when the disk "
                "answers), run the same command again"
            ]
        path.unlink(missing_ok=True)
        if left is Leftover.NONE:
            return left, []
        return left, [
            f"{self.repo}: setup: stopped the line a killed run left running (group {pgid})"
        ]


def run_setup(plan: SetupPlan, run: SetupRun, save: Save) -> tuple[SetupReport, list[str]]:
    """Run the lines ``plan`` left, in order, stopping at the first that fails; its warnings."""
    if plan.report is not None:
        return plan.report, []
    left = lines_left(plan.lines, plan.done)
    echo = run.options.echo or _stderr
    path = run.log_path()
    log, warnings = _open_log(path, run)
    leftover, stopping = run.stop_leftover()
    warnings += stopping
    done = list(plan.done)
    result: CommandResult | None = None
    try:
        for line in left:
            if interrupt.received() or leftover is Leftover.RUNNING:
                break
            announce(echo, run.repo, f"$ {line}")
            _log_header(log, f"$ {line}")
            result = run_line(
                line,
                cwd=run.worktree,
                env=line_env(
                    root=run.primary, branch=run.branch, worktree=run.worktree, topic=run.topic
                ),
                timeout=run.options.line_timeout or DEFAULT_LINE_TIMEOUT,
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
