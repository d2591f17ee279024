"""The error types every command maps to the JSON envelope and an exit code."""

from __future__ import annotations

import errno

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any  # annotations only: importing typing costs ~3 ms


class RouterError(Exception):
    """An expected failure: a stable ``code``, a one-line message naming the fix."""

    exit_code = 1

    def __init__(self, code: str, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        # Extra JSON keys a refusal still reports (for example the per-repo plan).
        self.details = details or {}


class Refusal(RouterError):
    """Refused or failed: safety refusal, git failure, lock timeout (exit 1)."""

    exit_code = 1


class Interrupted(RouterError):
    """Stopped by a signal (Ctrl-C, SIGTERM, SIGHUP); running the command again resumes.

    Exit 128 + the signal's number, as a shell reports it: 130 for Ctrl-C.
    """

    exit_code = 130

    def __init__(
        self, message: str, *, details: dict[str, Any] | None = None, signum: int = 2
    ) -> None:
        super().__init__("interrupted", message, details=details)
        self.exit_code = 128 + signum


class BadInput(RouterError):
    """Bad input: usage, invalid id or branch, malformed repos.md (exit 2)."""

    exit_code = 2


# Every error code a command can report: as ``error.code`` of the JSON envelope, as a
# step's ``code`` (teardown, pr-cleanup), or as a repo's ``reason`` (worktrees). Skills
# and briefs may name only these (tests/test_agents.py checks both directions).
class ToolFailed(Exception):
    """An outside program (git) failed where no step expected it.

    The CLI turns it into one error line (``code``, ``first_line``) without
    knowing which program it was. One killed by a signal that stops commands
    never gets here: :mod:`router.interrupt` stops the command instead.
    """

    returncode: int

    @property
    def code(self) -> str:
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


CODES = frozenset(
    {
        # bad input (exit 2)
        "usage",
        "invalid-id",
        "invalid-branch",
        "invalid-target",
        "invalid-value",
        "invalid-session",
        "repos-md",
        "no-plan-dir",
        "no-topic",
        "no-repo",
        "no-such-process",
        "demo-dir",
        # refused or failed (exit 1)
        "not-a-repo",
        "no-root-commit",
        "no-default-branch",
        "default-branch-worktree",
        "path-taken",
        "half-made-worktree",
        "branch-checked-out",
        "strict-failed",
        "isolation-failed",
        "setup-failed",
        "add-failed",
        "verify-failed",
        "dirty-worktree",
        "locked-worktree",
        "unintegrated-commits",
        "unshipped-run",
        "conflict",
        "primary-busy",
        "residue-kept",
        "plan-dir-kept",
        "plan-dir-symlink",
        "protected-branch",
        "not-merged",
        "no-merged-pr",
        "unknown-branch",
        "stack-kept",
        "fork-pr",
        "gh-unavailable",
        "confirmation-required",
        "not-confirmed",
        "locked",
        "held",
        "no-snapshot",
        "snapshot-failed",
        "git-failed",
        "io-error",
        "demo-failed",
        "git-locked",
        "nested-work",
        "no-identity",
        "removal-interrupted",
        "removal-blocked",
        "not-mounted",
        "step-failed",
        "step-refused",
        "local-state-failed",
        "sweep-failed",
        "restore-refused",
        "design-not-revised",
        "pr-recorded",
        "no-design",
        "no-plan",
        "nothing-built",
        # Ctrl-C (exit 130)
        "interrupted",
        # a secondary repo refused by the containment check (worktrees `reason`)
        "containment",
        "missing",
        "duplicate",
    }
)


# The attribute an OSError carries the operation in (see io_operation).
_OPERATION = "team_router_operation"


class io_operation:  # lowercase: it is used as a context manager, as contextlib's are
    """Inside, an OSError names ``operation`` and ``path`` where the system named neither.

    A write or fsync to a full disk fails on a file descriptor: its OSError
    has no file name. The one place that knows both is the code doing the
    I/O, so it says them here, and :func:`describe_io` reads them back.
    """

    __slots__ = ("operation", "path")

    def __init__(self, operation: str, path: object) -> None:
        self.operation = operation
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, _tb: object) -> None:
        # The error goes on as it is (its type included), only named.
        if isinstance(exc, OSError):
            if exc.filename is None:
                exc.filename = str(self.path)
            if not getattr(exc, _OPERATION, ""):
                setattr(exc, _OPERATION, self.operation)


def describe_io(exc: OSError) -> str:
    """The one wording of an I/O error: ``writing /path: No space left on device``.

    The operation is the one :class:`io_operation` named (``accessing`` when
    the code doing the I/O said none), the path git's or the system's (both
    paths of a rename).
    """
    operation = getattr(exc, _OPERATION, "") or "accessing"
    paths = " -> ".join(str(p) for p in (exc.filename, exc.filename2) if p is not None)
    reason = exc.strerror or str(exc)
    return f"{operation} {paths}: {reason}" if paths else f"{operation}: {reason}"


def io_error(exc: OSError, *, where: str = "") -> Refusal:
    """Where an OSError becomes a command's error: ``io-error``, naming the operation and the path.

    ``where``: the repo it happened in, when the command works in several.
    """
    prefix = f"{where}: " if where else ""
    return Refusal("io-error", f"{prefix}{describe_io(exc)}; {_io_fix(exc)}")


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


def error_json(code: str, message: str) -> dict[str, str]:
    """The envelope's ``error`` object (DESIGN §13): every ``ok: false`` result carries one."""
    return {"code": code, "message": message}
