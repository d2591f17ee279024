"""Local state a branch provisioned: ``.teamteardown`` and recorded temp paths (DESIGN §12).

``.teamteardown`` is read only from the default branch, never from the
working tree or the finished branch: otherwise a pull request could make its
own clean-up run code on the machine. Its lines are the one place team-router
runs a shell, on purpose, verbatim. Running them is not git, so it happens
here rather than in :mod:`router.git`.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from router import interrupt
from router.git import (
    Git,
    GitPlace,
    first_blob,
    git_place,
    repository_above,
    repository_below,
)
from router.progress import Echo, LineRelay
from router.topic.workspace import DefaultBranch

DECLARATION = ".teamteardown"
DEFAULT_LINE_TIMEOUT = 120.0
KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL of a timed-out line
# Seconds to keep relaying a line's output after its shell exited: enough for
# what is already in the pipe, never a wait on a child that still holds it.
DRAIN_GRACE = 0.5
POLL_INTERVAL = 0.05  # seconds between looks at the shell while its pipes stay open


class LineOutcome(StrEnum):
    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"
    INTERRUPTED = "interrupted"  # a signal stopped the command: its process group was killed


class TempOutcome(StrEnum):
    REMOVED = "removed"
    MISSING = "missing"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class TempResult:
    path: str
    outcome: TempOutcome
    check: str = ""  # the check that refused it
    detail: str = ""  # what it found: the repository, the .git entry

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"path": self.path, "outcome": str(self.outcome)}
        if self.check:
            data["check"] = self.check
        if self.detail:
            data["detail"] = self.detail
        return data


@dataclass(frozen=True, slots=True)
class Declaration:
    source: str | None  # "origin/main" or "main"; None when nothing is declared
    lines: tuple[str, ...]
    note: str


@dataclass(frozen=True, slots=True)
class LocalStateReport:
    """One repo's local-state run."""

    repo: str
    declaration: Declaration
    commands: tuple[CommandResult, ...] = ()
    temp_paths: tuple[TempResult, ...] = ()
    notes: tuple[str, ...] = ()
    interrupted: bool = False  # a signal: lines after it did not run, temp paths were not removed

    @property
    def ok(self) -> bool:
        return (
            not self.interrupted
            and all(c.outcome is LineOutcome.OK for c in self.commands)
            and all(t.outcome is not TempOutcome.REFUSED for t in self.temp_paths)
        )

    def summary(self) -> str:
        parts = [self.declaration.note]
        if self.commands:
            bad = [c for c in self.commands if c.outcome is not LineOutcome.OK]
            parts.append(f"{len(self.commands) - len(bad)}/{len(self.commands)} lines ok")
        parts += list(self.notes)
        if self.temp_paths:
            counts: dict[str, int] = {}
            for t in self.temp_paths:
                counts[str(t.outcome)] = counts.get(str(t.outcome), 0) + 1
            parts.append("temp paths: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
        return "; ".join(parts)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.repo,
            "source": self.declaration.source,
            "declared": self.declaration.source is not None,
            "note": self.declaration.note,
            "commands": [c.to_json() for c in self.commands],
            "temp_paths": [t.to_json() for t in self.temp_paths],
            "notes": list(self.notes),
            "interrupted": self.interrupted,
        }


# -- the declaration --------------------------------------------------------------


def read_declaration(
    git: Git, default: DefaultBranch | None, pinned: str | None = None
) -> Declaration:
    """``.teamteardown`` from origin/<default>, else (origin has no such branch) the local one.

    Never the local default branch while origin has one: ``teardown --integrate``
    cherry-picks the finished branch onto the local default branch, and a
    ``.teamteardown`` among those commits must not run by being cleaned up.
    ``pinned``: the default branch commit an integrating teardown read it from
    (the topic's record keeps it); once the picks are in, the branch itself no
    longer names a safe source, so it is read there.
    """
    if default is None:
        return Declaration(None, (), "no default branch known — nothing declared")
    if pinned is not None:
        sources = {f"{pinned}:{DECLARATION}": f"{default.name} at {pinned[:12]}"}
    elif default.remote_ref is not None:
        sources = {f"{default.remote_ref}:{DECLARATION}": f"origin/{default.name}"}
    elif default.local_ref is not None:
        sources = {f"{default.local_ref}:{DECLARATION}": default.name}
    else:
        sources = {}
    found = first_blob(git, list(sources))
    if found is None:
        where = f"{default.name} at {pinned[:12]}" if pinned else default.name
        return Declaration(None, (), f"no {DECLARATION} on {where} — nothing declared")
    label = sources[found[0]]
    lines = parse_declaration(found[1])
    return Declaration(label, lines, f"{DECLARATION} on {label}: {len(lines)} line(s)")


def parse_declaration(text: str) -> tuple[str, ...]:
    """The lines to run: ``#`` at column 0 and blank lines are skipped, the rest verbatim."""
    return tuple(line for line in text.splitlines() if line.strip() and not line.startswith("#"))


# -- running lines ------------------------------------------------------------------


def run_lines(
    lines: Iterable[str],
    *,
    root: Path,
    branch: str,
    worktree: Path | None,
    timeout: float = DEFAULT_LINE_TIMEOUT,
    echo: Echo | None = None,
    repo: str = "",
) -> list[CommandResult]:
    """Run each line with ``sh -c`` from ``root``; a failure never stops the next line.

    A signal that stops the command (Ctrl-C, SIGTERM, SIGHUP: :mod:`router.interrupt`)
    does: no line starts after it, and the running one's process group is killed.
    """
    env = {
        **os.environ,
        "TEAM_REPO_ROOT": str(root),
        "TEAM_BRANCH": branch,
        "TEAM_WORKTREE": str(worktree) if worktree else "",
    }
    results = []
    for line in lines:
        if interrupt.received():
            break
        if echo is not None:
            echo(f"{f'[{repo}] ' if repo else ''}$ {line}")
        result = run_line(line, cwd=root, env=env, timeout=timeout, repo=repo)
        if echo is not None:
            echo(f"{f'[{repo}] ' if repo else ''}  -> {result.label}")
        results.append(result)
    return results


def run_line(
    line: str,
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    repo: str = "",
) -> CommandResult:
    """One line in its own process group, stdin from /dev/null, output relayed to our stderr.

    Its own session, so a timeout kills every process the line started, not
    only the shell; stdin from /dev/null, so a line that reads stdin cannot
    swallow anything; output to stderr, so ``--json`` keeps stdout clean.
    Output goes through pipes we own rather than our own stdout/stderr: a
    child the line leaves behind (``cmd &``, ``setsid cmd &``) would otherwise
    keep our caller's pipes open, and a caller reading them to EOF (an agent
    host) would wait for that child long after team-router exited.
    """
    try:
        proc = subprocess.Popen(
            ["sh", "-c", line],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError:
        return CommandResult(line, LineOutcome.FAILED, 127, repo)
    output = _Output(proc, f"[{repo}] " if repo else "")
    try:
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


class _Output:
    """A line's stdout and stderr pipes, copied to our stderr a whole line at a time."""

    def __init__(self, proc: subprocess.Popen[bytes], prefix: str = "") -> None:
        self.proc = proc
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
            else:
                self.relays[key.fd].end()
                self.selector.unregister(key.fd)


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


# -- temp paths --------------------------------------------------------------------


def temp_root() -> str:
    """``${TMPDIR:-/tmp}`` with trailing slashes stripped."""
    value = os.environ.get("TMPDIR") or "/tmp"
    return value.rstrip("/") or "/"


def check_temp_path(path: str, root: str) -> str:
    """The check that refuses ``path`` (empty when it may be removed)."""
    if not os.path.isabs(path):
        return "not-absolute"
    if ".." in path.split("/"):
        return "dotdot"
    clean = path.rstrip("/")
    if clean != os.path.normpath(clean):
        # "$TMPDIR/." names the temp dir itself (pathlib drops the "."): a path
        # must be written plainly to be judged, never normalized into another one.
        return "not-normalized"
    root = os.path.normpath(root)
    if root == "/" or not os.path.isabs(root) or os.path.realpath(root) == "/":
        # A TMPDIR that is, or links to, the root would put every path under it.
        return "tmpdir-unusable"
    if not clean.startswith(root + "/"):
        return "outside-tmpdir"
    # Every component below the temp root, the path itself included, must be a
    # real directory or file: a link could point anywhere on the machine.
    rel = clean[len(root) + 1 :].split("/")
    current = root
    for part in rel:
        if not part or part == ".":
            continue
        current = f"{current}/{part}"
        if os.path.islink(current):
            return "symlink"
    return ""


def remove_temp_paths(
    paths: Iterable[str], *, dry_run: bool = False, protected: Iterable[Path] = ()
) -> list[TempResult]:
    """Remove each recorded path that passes every check; ``protected``: the topic's repos."""
    root = temp_root()
    guarded = tuple(os.path.realpath(p) for p in protected)
    return [_remove_temp_path(path, root, guarded, dry_run=dry_run) for path in paths]


def _remove_temp_path(
    path: str, root: str, guarded: tuple[str, ...], *, dry_run: bool
) -> TempResult:
    check = check_temp_path(path, root)
    if check:
        return TempResult(path, TempOutcome.REFUSED, check)
    clean = path.rstrip("/")
    if not os.path.lexists(clean):
        return TempResult(path, TempOutcome.MISSING)
    in_git = check_not_git(clean, guarded)
    if in_git is not None:
        return TempResult(path, TempOutcome.REFUSED, *in_git)
    error = None if dry_run else _delete(clean, root)
    if error:
        return TempResult(path, TempOutcome.REFUSED, error)
    return TempResult(path, TempOutcome.REMOVED)


def check_not_git(path: str, guarded: tuple[str, ...]) -> tuple[str, str] | None:
    """(check, what it found) when ``path`` is, holds or lies in a repository; else None.

    A recorded temp path is text anyone could write: with the workspace under
    the temp dir it can name a primary clone, a sibling repo or a worktree,
    and rmtree would take its .git, stash and branches with it.
    """
    real = os.path.realpath(path)
    for repo in guarded:
        if real == repo or repo.startswith(real + "/") or real.startswith(repo + "/"):
            return "topic-repo", repo
    directory = path if os.path.isdir(path) else os.path.dirname(path)
    place = git_place(Path(directory))
    if place is not GitPlace.OUTSIDE:
        return str(place), directory
    # Git opens neither: a .git it cannot follow above is still a repository's work tree.
    broken = repository_above(Path(directory))
    if broken is not None:
        return str(GitPlace.UNKNOWN), str(broken)
    if directory != path:
        return None  # a file outside every repository holds nothing
    try:
        found = repository_below(Path(path))
    except OSError as exc:
        return "git-unknown", f"cannot read {exc.filename}: {exc.strerror}"
    return ("contains-git", str(found)) if found is not None else None


def _delete(path: str, root: str) -> str | None:
    """Remove ``path`` (checked: below ``root``, no link in it) without following a link.

    Each directory below the temp root is opened with O_NOFOLLOW from the one
    above it and the last entry removed relative to that: a directory swapped
    for a link after the checks (the temp dir is shared) makes the removal
    fail, never reach where the link points.
    """
    parts = path[len(os.path.normpath(root)) + 1 :].split("/")
    flags = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
    fds: list[int] = []
    try:
        fds.append(os.open(os.path.normpath(root), flags))
        for part in parts[:-1]:
            fds.append(os.open(part, flags | os.O_NOFOLLOW, dir_fd=fds[-1]))
        name = parts[-1]
        mode = os.stat(name, dir_fd=fds[-1], follow_symlinks=False).st_mode
        if stat.S_ISLNK(mode):
            return "symlink"
        if stat.S_ISDIR(mode):
            shutil.rmtree(name, dir_fd=fds[-1])  # refuses a link put in its place meanwhile
        else:
            os.unlink(name, dir_fd=fds[-1])
    except FileNotFoundError:
        return None
    except OSError as exc:
        if check_temp_path(path, root) == "symlink":
            return "symlink"  # a component became a link after the checks
        return f"remove-failed: {exc.strerror}"
    finally:
        for fd in fds:
            os.close(fd)
    return None


# -- one repo ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LocalStateJob:
    repo: str
    git: Git  # anchored at the primary root
    root: Path
    default: DefaultBranch | None
    branch: str
    worktree: Path | None
    temp_paths: tuple[str, ...] | None = None  # None: this repo records none (not home)
    timeout: float = DEFAULT_LINE_TIMEOUT
    declaration: Declaration | None = (
        None  # read earlier (teardown: before it integrates); else now
    )
    # The topic's primary clones, worktrees and git dirs: never removed as temp
    # paths, whether git still recognises them or not.
    protected: tuple[Path, ...] = ()
    declared_at: str | None = None  # the record's pin (see read_declaration)


def run_local_state(
    job: LocalStateJob,
    *,
    echo: Echo | None = None,
    dry_run: bool = False,
) -> LocalStateReport:
    """Run one repo's declaration and (home only) remove its recorded temp paths."""
    decl = job.declaration or read_declaration(job.git, job.default, job.declared_at)
    commands: list[CommandResult] = []
    if dry_run:
        notes = [f"would run: {line}" for line in decl.lines]
    else:
        notes = []
        commands = run_lines(
            decl.lines,
            root=job.root,
            branch=job.branch,
            worktree=job.worktree,
            timeout=job.timeout,
            echo=echo,
            repo=job.repo,
        )
    temps: list[TempResult] = []
    interrupted = bool(interrupt.received())
    if interrupted:
        finished = sum(c.outcome is not LineOutcome.INTERRUPTED for c in commands)
        left = len(decl.lines) - finished
        notes.append(f"interrupted: {left} line(s) not run to the end; temp paths not removed")
    elif job.temp_paths is not None:
        if job.temp_paths:
            temps = remove_temp_paths(job.temp_paths, dry_run=dry_run, protected=job.protected)
        else:
            notes.append("no temp paths recorded")
    return LocalStateReport(
        job.repo, decl, tuple(commands), tuple(temps), tuple(notes), interrupted
    )
