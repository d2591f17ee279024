"""Local state a branch provisioned: ``.teamteardown`` and recorded temp paths (DESIGN §12).

``.teamteardown`` is read and run by :mod:`router.declared`'s rules (only from
the default branch, never the working tree or the finished branch); here, a
failed line never stops the lines after it, and they run from the primary root.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable
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
)
from router.errors import ErrorCode, ExitCode, error_json
from router.git import Git, GitPlace, forget, git_place, repository_above, repository_below
from router.progress import Echo
from router.reasons import Reason, Why
from router.records import field, record, replace
from router.teardown.factwords import temp_said
from router.teardown.primary import is_primary_clone
from router.teardown.steps import NotDone, Outcome, Step, StepResult, not_done, skipped
from router.teardown.wording import in_words
from router.topic import state
from router.topic.scope import resolve_topic
from router.topic.workspace import DefaultBranch, default_branch

DECLARATION = ".teamteardown"


class TempOutcome(StrEnum):
    REMOVED = "removed"
    MISSING = "missing"
    REFUSED = "refused"


@record
class TempResult:
    path: str
    outcome: TempOutcome
    check: str = ""  # the check that refused it
    detail: str = ""  # what it found: the repository, the .git entry
    # A dry run's: ``outcome`` is what the real run would give, nothing was removed.
    planned: bool = False

    @property
    def said(self) -> str:
        """The outcome in words, in the conditional when planned: every text says it so."""
        return temp_said(self.outcome, planned=self.planned)

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"path": self.path, "outcome": str(self.outcome)}
        if self.check:
            data["check"] = self.check
        if self.detail:
            data["detail"] = self.detail
        if self.planned:
            data["planned"] = True
        return data


@record
class LocalStateReport:
    """One repo's local-state run."""

    repo: str
    declaration: Declaration
    commands: tuple[CommandResult, ...] = ()
    temp_paths: tuple[TempResult, ...] = ()
    notes: tuple[Why, ...] = ()
    interrupted: bool = False  # a signal: lines after it did not run, temp paths were not removed

    @property
    def ok(self) -> bool:
        return (
            not self.interrupted
            and all(c.outcome is LineOutcome.OK for c in self.commands)
            and all(t.outcome is not TempOutcome.REFUSED for t in self.temp_paths)
        )

    def summary(self) -> str:
        return "; ".join(map(in_words, self.summary_parts()))

    def summary_parts(self) -> tuple[Why, ...]:
        """What :meth:`summary` says, as facts: the declaration, how its lines went, the
        notes, how the temp paths went (each removed at once, so planned alike)."""
        parts = [self.declaration.why()]
        if self.commands:
            parts.append(Why(Reason.LINES_RUN, items=tuple(str(c.outcome) for c in self.commands)))
        parts += self.notes
        if self.temp_paths:
            outcomes = tuple(str(t.outcome) for t in self.temp_paths)
            parts.append(Why(Reason.TEMP_PATHS, items=outcomes, flag=self.temp_paths[0].planned))
        return tuple(parts)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.repo,
            "source": self.declaration.source,
            "declared": self.declaration.source is not None,
            "note": self.declaration.note,
            "commands": [c.to_json() for c in self.commands],
            "temp_paths": [t.to_json() for t in self.temp_paths],
            "notes": [in_words(n) for n in self.notes],
            "interrupted": self.interrupted,
        }


# -- the declaration --------------------------------------------------------------


def read_declaration(
    git: Git, default: DefaultBranch | None, pinned: str | None = None
) -> Declaration:
    """``.teamteardown`` as :func:`router.declared.read_declared` reads a declaration.

    ``pinned``: the default branch commit an integrating teardown read it from
    (the topic's record keeps it); once ``teardown --integrate`` cherry-picked
    the finished branch onto the local default branch, the branch itself no
    longer names a safe source, so it is read there.
    """
    return read_declared(git, DECLARATION, default, pinned)


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
    env = line_env(root=root, branch=branch, worktree=worktree)
    results = []
    for line in lines:
        if interrupt.received():
            break
        announce(echo, repo, f"$ {line}")
        result = run_line(line, cwd=root, env=env, timeout=timeout, repo=repo)
        forget()  # the line may have changed any repository: git is asked afresh after it
        announce(echo, repo, f"  -> {result.label}")
        results.append(result)
    return results


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
    return [
        replace(_remove_temp_path(path, root, guarded, dry_run=dry_run), planned=dry_run)
        for path in paths
    ]


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


@record
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
    notes: list[Why] = []
    if dry_run:
        notes = [Why(Reason.WOULD_RUN, text=line) for line in decl.lines]
    else:
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
        notes.append(Why(Reason.LINES_LEFT, count=left))
    elif job.temp_paths is not None:
        if job.temp_paths:
            temps = remove_temp_paths(job.temp_paths, dry_run=dry_run, protected=job.protected)
        else:
            notes.append(Why(Reason.NO_TEMP_PATHS))
    return LocalStateReport(
        job.repo, decl, tuple(commands), tuple(temps), tuple(notes), interrupted
    )


def local_state_step(
    job: LocalStateJob, *, echo: Echo | None = None, dry_run: bool = False
) -> tuple[StepResult, LocalStateReport]:
    """Run the repo's local state, or (``dry_run``) say what would run, with the same outcome.

    Nothing declared and no temp path is ``skipped`` in both; a temp path the
    checks refuse fails both.
    """
    report = run_local_state(job, echo=echo, dry_run=dry_run)
    if report.interrupted:
        # "not done": the record does not count it, so a rerun runs the step again.
        signal = interrupt.received() or interrupt.SIGINT
        why = Why(Reason.STOPPED, signal=signal, parts=report.summary_parts())
        stopped = skipped(Step.LOCAL_STATE, why)
        return not_done(stopped, NotDone.INTERRUPTED), report
    outcome = Outcome.DONE if report.ok else Outcome.FAILED
    if report.declaration.source is None and not report.temp_paths:
        return skipped(
            Step.LOCAL_STATE, Why(Reason.NOTHING_DECLARED, parts=report.summary_parts())
        ), report
    ran = Why(Reason.RAN, parts=report.summary_parts(), planned=dry_run)
    return StepResult(Step.LOCAL_STATE, outcome, ran), report


@record
class LocalStateResult:
    id: str
    reports: tuple[LocalStateReport, ...]
    warnings: list[str] = field(default_factory=list)
    dry_run: bool = False
    interrupted: int = 0  # the signal that stopped it (router.interrupt): no line started after it

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return ExitCode.for_signal(self.interrupted)
        return ExitCode.OK if all(r.ok for r in self.reports) else ExitCode.REFUSED

    @property
    def error(self) -> dict[str, str] | None:
        """What made ``ok`` false: the lines that failed and the temp paths refused (§13)."""
        if self.interrupted:
            return interrupt.interrupted_error(self.interrupted, "the lines after it did not run")
        if self.exit_code == 0:
            return None
        bad = [
            f"{r.repo}: `{c.line}` {c.label}"
            for r in self.reports
            for c in r.commands
            if c.outcome is not LineOutcome.OK
        ] + [
            f"{r.repo}: temp path {t.path} {t.outcome} ({t.check})"
            for r in self.reports
            for t in r.temp_paths
            if t.outcome is TempOutcome.REFUSED
        ]
        return error_json(ErrorCode.LOCAL_STATE_FAILED, "; ".join(bad))

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "commands": [c.to_json() for r in self.reports for c in r.commands],
            "temp_paths": [t.to_json() for r in self.reports for t in r.temp_paths],
            "repos": [r.to_json() for r in self.reports],
            "dry_run": self.dry_run,
        }


def local_state_for_topic(
    cwd: Path,
    target: str,
    *,
    line_timeout: float = DEFAULT_LINE_TIMEOUT,
    wait: float = state.DEFAULT_WAIT,
    echo: Echo | None = None,
    dry_run: bool = False,
) -> LocalStateResult:
    """DESIGN §12 alone: every repo's ``.teamteardown`` and the topic's recorded temp paths."""
    scope = resolve_topic(cwd, target)
    reports = []
    with state.held_lock(scope.home.common_dir, scope.id, wait=wait):
        for t in scope.repos:
            if interrupt.received():
                break
            if t.repo is None:
                continue
            worktree = (
                t.worktree
                if t.worktree
                and not is_primary_clone(t.repo, t.worktree, t.repo.git.worktree_list())
                else None
            )
            job = LocalStateJob(
                t.name,
                t.repo.git,
                t.repo.primary,
                default_branch(t.repo.git),
                t.branch,
                worktree,
                temp_paths=scope.temp_paths if t.is_home else None,
                timeout=line_timeout,
                protected=scope.repo_paths(),
                declared_at=t.record.declared_at if t.record else None,
            )
            reports.append(run_local_state(job, echo=echo, dry_run=dry_run))
    signum = interrupt.received()
    return LocalStateResult(scope.id, tuple(reports), list(scope.warnings), dry_run, signum)
