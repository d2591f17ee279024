"""Error codes, exit codes and the error types every command maps to the JSON envelope."""

from __future__ import annotations

import errno
from enum import IntEnum, StrEnum

from router.ioerror import describe_io

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any  # annotations only: importing typing costs ~3 ms


class ExitCode(IntEnum):
    """How a command ends (DESIGN §13); a signal's is :meth:`for_signal`."""

    OK = 0  # done, also "already done", also with warnings and fallbacks
    REFUSED = 1  # refused or failed: a safety refusal, a git failure, a lock timeout
    BAD_INPUT = 2  # usage, an invalid id or branch, a malformed repos.md, no plan dir
    UNEXPECTED = 3  # a bug: one line names the log file holding its traceback

    @staticmethod
    def for_signal(signum: int) -> int:
        """128 + the signal's number, as a shell reports a command a signal stopped (Ctrl-C: 130)."""
        return 128 + signum


class ErrorCode(StrEnum):
    """Every error code a command can report, with the exit code it ends the command with.

    A code is the envelope's ``error.code``, a step's ``code`` (teardown,
    pr-cleanup) or a repo's ``reason`` (``new``, ``worktrees``); its value is
    the word the user sees. Skills and briefs may name only these
    (tests/test_agents.py checks both directions).
    """

    exit_code: int

    def __new__(cls, value: str, exit_code: int = ExitCode.REFUSED) -> ErrorCode:
        member = str.__new__(cls, value)
        member._value_ = value
        member.exit_code = exit_code
        return member

    # bad input: usage, an invalid id or branch, a malformed repos.md, no plan dir (exit 2)
    USAGE = "usage", ExitCode.BAD_INPUT
    INVALID_ID = "invalid-id", ExitCode.BAD_INPUT
    INVALID_BRANCH = "invalid-branch", ExitCode.BAD_INPUT
    INVALID_TARGET = "invalid-target", ExitCode.BAD_INPUT
    INVALID_VALUE = "invalid-value", ExitCode.BAD_INPUT
    INVALID_SESSION = "invalid-session", ExitCode.BAD_INPUT
    REPOS_MD = "repos-md", ExitCode.BAD_INPUT
    NO_PLAN_DIR = "no-plan-dir", ExitCode.BAD_INPUT
    NO_TOPIC = "no-topic", ExitCode.BAD_INPUT
    NO_REPO = "no-repo", ExitCode.BAD_INPUT
    NO_SUCH_PROCESS = "no-such-process", ExitCode.BAD_INPUT
    DEMO_DIR = "demo-dir", ExitCode.BAD_INPUT
    # refused or failed: a safety refusal, a git failure, a lock timeout (exit 1)
    NOT_A_REPO = "not-a-repo"
    NO_ROOT_COMMIT = "no-root-commit"
    NO_DEFAULT_BRANCH = "no-default-branch"
    DEFAULT_BRANCH_WORKTREE = "default-branch-worktree"
    PATH_TAKEN = "path-taken"
    HALF_MADE_WORKTREE = "half-made-worktree"
    BRANCH_CHECKED_OUT = "branch-checked-out"
    STRICT_FAILED = "strict-failed"
    ISOLATION_FAILED = "isolation-failed"
    SETUP_FAILED = "setup-failed"
    ADD_FAILED = "add-failed"
    VERIFY_FAILED = "verify-failed"
    DIRTY_WORKTREE = "dirty-worktree"
    LOCKED_WORKTREE = "locked-worktree"
    UNINTEGRATED_COMMITS = "unintegrated-commits"
    UNSHIPPED_RUN = "unshipped-run"
    CONFLICT = "conflict"
    PRIMARY_BUSY = "primary-busy"
    RESIDUE_KEPT = "residue-kept"
    PLAN_DIR_KEPT = "plan-dir-kept"
    PLAN_DIR_SYMLINK = "plan-dir-symlink"
    PROTECTED_BRANCH = "protected-branch"
    NOT_MERGED = "not-merged"
    NO_MERGED_PR = "no-merged-pr"
    UNKNOWN_BRANCH = "unknown-branch"
    STACK_KEPT = "stack-kept"
    FORK_PR = "fork-pr"
    GH_UNAVAILABLE = "gh-unavailable"
    CONFIRMATION_REQUIRED = "confirmation-required"
    NOT_CONFIRMED = "not-confirmed"
    LOCKED = "locked"
    HELD = "held"
    NO_SNAPSHOT = "no-snapshot"
    SNAPSHOT_FAILED = "snapshot-failed"
    GIT_FAILED = "git-failed"
    IO_ERROR = "io-error"
    DEMO_FAILED = "demo-failed"
    GIT_LOCKED = "git-locked"
    NESTED_WORK = "nested-work"
    NO_IDENTITY = "no-identity"
    REMOVAL_INTERRUPTED = "removal-interrupted"
    REMOVAL_BLOCKED = "removal-blocked"
    NOT_MOUNTED = "not-mounted"
    STEP_FAILED = "step-failed"
    STEP_REFUSED = "step-refused"
    LOCAL_STATE_FAILED = "local-state-failed"
    SWEEP_FAILED = "sweep-failed"
    RESTORE_REFUSED = "restore-refused"
    DESIGN_NOT_REVISED = "design-not-revised"
    PR_RECORDED = "pr-recorded"
    NO_DESIGN = "no-design"
    NO_PLAN = "no-plan"
    NOTHING_BUILT = "nothing-built"
    # a secondary repo the containment check refused: only ever a repo's `reason` in
    # `new` and `worktrees`, whose command still exits 0
    CONTAINMENT = "containment"
    MISSING = "missing"
    DUPLICATE = "duplicate"
    # a home repo that stays in its main tree, which holds other work (a repo's `reason`)
    IN_PLACE = "in-place"
    # stopped by a signal: 128 + its number (Ctrl-C 130, SIGTERM 143, SIGHUP 129); the
    # member carries Ctrl-C's, an Interrupted error its own signal's
    INTERRUPTED = "interrupted", ExitCode.for_signal(2)
    # a bug: its traceback is in a log file the message names (router.cli.crashlog)
    UNEXPECTED = "unexpected", ExitCode.UNEXPECTED


class RouterError(Exception):
    """An expected failure: a stable ``code``, a one-line message naming the fix.

    The code says how the command ends: ``RouterError(ErrorCode.LOCKED, ...)``
    is a :class:`Refusal` (exit 1), ``RouterError(ErrorCode.INVALID_ID, ...)`` a
    :class:`BadInput` (exit 2), so ``except BadInput`` catches every bad-input
    code whichever raise site named it.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> RouterError:
        if cls is RouterError:
            code = args[0] if args else kwargs["code"]
            cls = BadInput if code.exit_code == ExitCode.BAD_INPUT else Refusal
        return super().__new__(cls)

    def __init__(
        self, code: ErrorCode, message: str, *, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        # Extra JSON keys a refusal still reports (for example the per-repo plan).
        self.details = details or {}

    @property
    def exit_code(self) -> int:
        return self.code.exit_code


class Refusal(RouterError):
    """Refused or failed: safety refusal, git failure, lock timeout (exit 1)."""


class BadInput(RouterError):
    """Bad input: usage, invalid id or branch, malformed repos.md (exit 2)."""


class Interrupted(RouterError):
    """Stopped by a signal (Ctrl-C, SIGTERM, SIGHUP); running the command again resumes.

    Exit 128 + the signal's number, as a shell reports it: 130 for Ctrl-C.
    """

    def __init__(
        self, message: str, *, details: dict[str, Any] | None = None, signum: int = 2
    ) -> None:
        super().__init__(ErrorCode.INTERRUPTED, message, details=details)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return ExitCode.for_signal(self.signum)


class ToolFailed(Exception):
    """An outside program (git) failed where no step expected it.

    The CLI turns it into one error line (``code``, ``first_line``) without
    knowing which program it was. One killed by a signal that stops commands
    never gets here: :mod:`router.interrupt` stops the command instead.
    """

    returncode: int

    @property
    def code(self) -> ErrorCode:
        raise NotImplementedError

    @property
    def first_line(self) -> str:
        raise NotImplementedError

    @property
    def fix(self) -> str:
        """What the user does about it: run again (a transient failure), unless the program says otherwise."""
        return (
            "run the same command again, and if it fails the same way, `git status` in that "
            "repo shows what needs repair"
        )

    @property
    def said(self) -> str:
        """The one line a refusal says: what failed, then the fix (once: a first line that
        names its own fix, such as a git lock file's, has no second one)."""
        return f"{self.first_line}; {self.fix}" if self.fix else self.first_line


def io_error(exc: OSError, *, where: str = "") -> RouterError:
    """Where an OSError becomes a command's error: ``io-error``, naming the operation and the path.

    ``where``: the repo it happened in, when the command works in several.
    """
    prefix = f"{where}: " if where else ""
    return RouterError(ErrorCode.IO_ERROR, f"{prefix}{describe_io(exc)}; {_io_fix(exc)}")


def _io_fix(exc: OSError) -> str:
    """What to do about an I/O error.

    A path that is not there (ENOENT) was there a moment before: the command
    had just found it (a half-made worktree it was judging, a directory it was
    copying into or scanning) and another process removed it under it, as a
    concurrent or killed ``git worktree add``/``remove`` cleaning up does.
    Space and permissions have nothing to do with that; waiting for git does.
    """
    if exc.errno == errno.ENOENT:
        return (
            "it vanished while this command was working on it: another process (git) is still "
            "working there; run the command again once it finishes"
        )
    return "check space and permissions"


def error_json(code: ErrorCode, message: str) -> dict[str, str]:
    """The envelope's ``error`` object (DESIGN §13): every ``ok: false`` result carries one."""
    return {"code": code, "message": message}
