"""Declared shell lines: a file read from the default branch, each line run with ``sh -c``.

``.teamteardown`` (DESIGN §12) and ``.worktreesetup`` (DESIGN §7) share these
rules. The file is read only from the default branch, never from a working
tree or the topic's branch: otherwise a pull request could make the machine
run its code by being checked out or cleaned up. These lines are the one
place team-router runs a shell, on purpose, verbatim. Running them is not
git, so it happens here rather than in :mod:`router.git`.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from enum import StrEnum
from pathlib import Path

from router import interrupt
from router.git import first_blob
from router.progress import LineRelay
from router.reasons import Reason, Why
from router.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO

    from router.git import Git
    from router.progress import Echo
    from router.topic.workspace import DefaultBranch

DEFAULT_LINE_TIMEOUT = 120.0
KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL of a timed-out line
# Seconds to keep relaying a line's output after its shell exited: enough for
# what is already in the pipe, never a wait on a child that still holds it.
DRAIN_GRACE = 0.5
POLL_INTERVAL = 0.05  # seconds between looks at the shell while its pipes stay open
# Seconds a killed run's leftover group gets to go after SIGKILL: a process in
# uninterruptible sleep (a stuck disk, a frozen cgroup) outlives the signal.
GONE_GRACE = 5.0
# The shell a line runs in first waits for one byte on stdin: its starter notes
# the group before any of the line runs (see :func:`stop_group`), and a starter
# killed before that closes the pipe, so the line never runs unnoted.
_GATE = 'IFS= read -r _ || exit 125; exec sh -c "$1" </dev/null'


class Leftover(StrEnum):
    """What :func:`stop_group` found of a killed run's line."""

    NONE = "none"  # nothing of it was running
    STOPPED = "stopped"  # it ran, and is gone now
    RUNNING = "running"  # it outlived SIGTERM and SIGKILL: it still runs


class LineOutcome(StrEnum):
    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"
    INTERRUPTED = "interrupted"  # a signal stopped the command: its process group was killed


@record
class CommandResult:
    line: str
    outcome: LineOutcome
    exit: int | None  # None when the line timed out or could not start
    repo: str = ""

    @property
    def label(self) -> str:
        return (
            f"failed (exit {self.exit})"
            if self.outcome is LineOutcome.FAILED
            else str(self.outcome)
        )

    def to_json(self) -> dict[str, object]:
        return {"repo": self.repo, "line": self.line, "outcome": self.label, "exit": self.exit}


@record
class Declaration:
    source: str | None  # "origin/main" or "main"; None when nothing is declared
    lines: tuple[str, ...]
    name: str = ""  # the file (``.teamteardown``)
    where: str = ""  # where it was looked for ("": no default branch known)

    @property
    def note(self) -> str:
        return declaration_note(self.name, self.source or self.where, self.found, len(self.lines))

    @property
    def found(self) -> bool:
        return self.source is not None

    def why(self) -> Why:
        """The declaration as a reason's part (DECLARED): said as :attr:`note`."""
        where = self.source or self.where
        return Why(
            Reason.DECLARED, path=self.name, default=where, flag=self.found, count=len(self.lines)
        )


def declaration_note(name: str, where: str, found: bool, count: int) -> str:
    """``.teamteardown on origin/main: 2 line(s)``, or why nothing is declared."""
    if found:
        return f"{name} on {where}: {count} line(s)"
    if where:
        return f"no {name} on {where} — nothing declared"
    return "no default branch known — nothing declared"


# -- the declaration --------------------------------------------------------------


def read_declared(
    git: Git, name: str, default: DefaultBranch | None, pinned: str | None = None
) -> Declaration:
    """File ``name`` from origin/<default>, else (origin has no such branch) the local one.

    Never the local default branch while origin has one: ``teardown --integrate``
    cherry-picks the finished branch onto the local default branch, and a
    declaration among those commits must not run by being cleaned up.
    ``pinned``: a default branch commit to read it at instead (a commit the
    caller resolved from the default branch earlier); once a branch no longer
    names a safe source, the commit does.
    """
    if default is None:
        return Declaration(None, (), name)
    if pinned is not None:
        sources = {f"{pinned}:{name}": f"{default.name} at {pinned[:12]}"}
    elif default.remote_ref is not None:
        sources = {f"{default.remote_ref}:{name}": f"origin/{default.name}"}
    elif default.local_ref is not None:
        sources = {f"{default.local_ref}:{name}": default.name}
    else:
        sources = {}
    found = first_blob(git, list(sources))
    if found is None:
        where = f"{default.name} at {pinned[:12]}" if pinned else default.name
        return Declaration(None, (), name, where)
    label = sources[found[0]]
    lines = parse_declaration(found[1])
    return Declaration(label, lines, name)


def parse_declaration(text: str) -> tuple[str, ...]:
    """The lines to run: ``#`` at column 0 and blank lines are skipped, the rest verbatim."""
    return tuple(line for line in text.splitlines() if line.strip() and not line.startswith("#"))


# -- running lines ------------------------------------------------------------------


def line_env(*, root: Path, branch: str, worktree: Path | None, **more: str) -> dict[str, str]:
    """The environment a declared line runs with: ours, plus the ``TEAM_*`` names of its repo."""
    extra = {f"TEAM_{key.upper()}": value for key, value in more.items()}
    return {
        **os.environ,
        "TEAM_REPO_ROOT": str(root),
        "TEAM_BRANCH": branch,
        "TEAM_WORKTREE": str(worktree) if worktree else "",
        **extra,
    }


def announce(echo: Echo | None, repo: str, text: str) -> None:
    """A line about to run (``$ line``) or its outcome (``  -> ok``), named by its repo."""
    if echo is not None:
        echo(f"{f'[{repo}] ' if repo else ''}{text}")


def run_line(
    line: str,
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    repo: str = "",
    log: BinaryIO | None = None,
    started: Callable[[int], None] | None = None,
) -> CommandResult:
    """One line in its own process group, stdin from /dev/null, output relayed to our stderr.

    Its own session, so a timeout kills every process the line started, not
    only the shell; stdin from /dev/null, so a line that reads stdin cannot
    swallow anything; output to stderr, so ``--json`` keeps stdout clean.
    Output goes through pipes we own rather than our own stdout/stderr: a
    child the line leaves behind (``cmd &``, ``setsid cmd &``) would otherwise
    keep our caller's pipes open, and a caller reading them to EOF (an agent
    host) would wait for that child long after team-router exited. ``log``:
    a file that keeps a copy of the output as it arrives; ``started``: told
    the line's process group before any of the line runs (see :func:`stop_group`).
    """
    try:
        proc = subprocess.Popen(
            ["sh", "-c", _GATE, "sh", line],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError:
        return CommandResult(line, LineOutcome.FAILED, 127, repo)
    output = _Output(proc, f"[{repo}] " if repo else "", log)
    try:
        if started is not None:
            started(proc.pid)
        _open_gate(proc)
        code = output.relay_until_exit(time.monotonic() + timeout)
        if code is None:
            _kill_group(proc)
        output.drain(time.monotonic() + DRAIN_GRACE)
    except BaseException:
        # Stopped at once (a second signal, or a command that does not defer them):
        # the line lives in its own session, which no signal to ours reaches.
        _kill_group(proc)
        raise
    finally:
        output.close()
    if code is None and interrupt.received():
        return CommandResult(line, LineOutcome.INTERRUPTED, None, repo)
    if code is None:
        return CommandResult(line, LineOutcome.TIMEOUT, None, repo)
    outcome = LineOutcome.OK if code == 0 else LineOutcome.FAILED
    return CommandResult(line, outcome, code, repo)


def _open_gate(proc: subprocess.Popen[bytes]) -> None:
    """Let the line's shell run the line (it waits for this byte)."""
    if proc.stdin is None:
        return
    # A shell already gone (a failed exec) has closed the pipe: its exit code says so.
    with contextlib.suppress(OSError):
        proc.stdin.write(b"\n")
    with contextlib.suppress(OSError):
        proc.stdin.close()


class _Output:
    """A line's stdout and stderr pipes, copied to our stderr a whole line at a time."""

    def __init__(
        self, proc: subprocess.Popen[bytes], prefix: str = "", log: BinaryIO | None = None
    ) -> None:
        self.proc = proc
        self.log = log
        self.pipes = [p for p in (proc.stdout, proc.stderr) if p is not None]
        self.selector = selectors.DefaultSelector()
        self.relays = {p.fileno(): LineRelay(prefix) for p in self.pipes}
        for pipe in self.pipes:
            self.selector.register(pipe.fileno(), selectors.EVENT_READ)

    def relay_until_exit(self, deadline: float) -> int | None:
        """Relay until the line's shell exits: its exit code, or None at ``deadline`` or a signal."""
        # While the pipes are open, poll the shell between reads: a child that
        # holds them must not hide the shell's exit. Once both reached EOF,
        # nothing is left to relay and waiting in short steps is enough.
        while True:
            if self.proc.poll() is not None:
                return self.proc.returncode
            if time.monotonic() >= deadline or interrupt.received():
                return None
            step = min(POLL_INTERVAL, max(0.0, deadline - time.monotonic()))
            if self.selector.get_map():
                self._pump(step)
            else:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=step)

    def drain(self, deadline: float) -> None:
        """What is still buffered or still being written, until EOF or ``deadline``."""
        while self.selector.get_map() and time.monotonic() < deadline:
            self._pump(max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        # Closing our read ends is what lets go of the line: a child still
        # holding the write ends gets EPIPE if it writes again, and nobody waits.
        self.selector.close()
        for pipe in self.pipes:
            pipe.close()
        for relay in self.relays.values():
            relay.end()

    def _pump(self, timeout: float) -> None:
        for key, _ in self.selector.select(timeout):
            data = os.read(key.fd, 65536)
            if data:
                self.relays[key.fd].feed(data)
                self._keep(data)
            else:
                self.relays[key.fd].end()
                self.selector.unregister(key.fd)

    def _keep(self, data: bytes) -> None:
        if self.log is None:
            return
        try:
            self.log.write(data)
            self.log.flush()
        except OSError:
            # A full disk must not stop the line: its output still reaches stderr.
            self.log = None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=KILL_GRACE)
    # SIGKILL the group even when the shell itself exited on SIGTERM: a child
    # that ignores SIGTERM would otherwise outlive the timeout.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=KILL_GRACE)


def stop_group(pgid: int, started: str | None = None) -> Leftover:
    """Stop what is left of a line's process group a killed run started, and wait for it to go.

    A line runs in a session of its own, which a SIGKILL of team-router's
    process group does not reach: the line goes on without anyone reading
    it. A rerun that runs the line again stops it first, so the two never
    run at once; a signal is not enough, the group must be gone, so a
    group still running after the bound is answered as such. ``started``: the
    group leader's start time as noted; a group whose id names another process
    now is never signalled (:func:`router.processes.group_running`).
    """
    from router.processes import group_running

    if not group_running(pgid, started):
        return Leftover.NONE
    for signum, grace in ((signal.SIGTERM, KILL_GRACE), (signal.SIGKILL, GONE_GRACE)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signum)
        deadline = time.monotonic() + grace
        while group_running(pgid, started) and time.monotonic() < deadline:
            time.sleep(POLL_INTERVAL)
    return Leftover.RUNNING if group_running(pgid, started) else Leftover.STOPPED


def group_note(pgid: int) -> str:
    """How a line's group is noted: ``<pgid>@<its leader's start time>`` (the pgid alone
    where /proc gives none), read back by :func:`noted_group`."""
    from router.processes import process_start_time

    start = process_start_time(pgid)
    return f"{pgid}@{start}" if start else str(pgid)


def noted_group(note: str) -> tuple[int, str | None]:
    """The group and its leader's start time a :func:`group_note` names (ValueError if none);
    a note of the pgid alone (written before start times were) has no start time."""
    pgid, _, start = note.strip().partition("@")
    return int(pgid or 0), start or None
