"""The result envelope: text or one JSON object, and the exit code.

Every command prints through here, so each answers in one shape.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable

from router import interrupt
from router.errors import (
    ErrorCode,
    ExitCode,
    Interrupted,
    RouterError,
    ToolFailed,
    error_json,
    io_error,
)
from router.ioerror import describe_io

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any  # annotations only: importing typing costs ~3 ms


def write_out(text: str) -> None:
    """``text`` and a newline on stdout, flushed; a reader gone or no stdout at all is not an error.

    ``team-router next --json | head -c 1`` closes the pipe mid-answer, and a
    closed terminal (SIGHUP) fails every write (EIO): the rest is dropped
    (stdout then points at /dev/null, so the exit's own flush does not fail
    either) and the command keeps its exit code. With fd 1 closed (``>&-``)
    Python has no ``sys.stdout``: there is nowhere to write.
    """
    out = sys.stdout
    if out is None:
        return
    try:
        out.write(text + "\n")
        out.flush()
    except (OSError, ValueError):
        silence_stdout()


def silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def warn(message: str) -> None:
    write_err(f"warning: {message}")


def write_err(text: str) -> None:
    """``text`` on stderr; a closed terminal or pipe there is not an error (nobody can read it)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(text, file=sys.stderr, flush=True)


def emit_result(
    command: str, as_json: bool, work: Callable[[], Any], text: Callable[[Any], str]
) -> int:
    """Run ``work``; print its result as text or one JSON envelope; return the exit code.

    ``work`` returns an object with ``to_json()``, ``warnings`` and optionally
    ``exit_code``; a RouterError becomes ``ok: false`` with its code.
    """
    try:
        result = work()
    except RouterError as exc:
        fail(command, as_json, exc)
        return exc.exit_code
    except OSError as exc:
        # A full disk or a permission problem: one line naming what and where, no traceback.
        error = io_error(exc)
        fail(command, as_json, error)
        return error.exit_code
    warnings = list(getattr(result, "warnings", []) or [])
    code = int(getattr(result, "exit_code", ExitCode.OK) or ExitCode.OK)
    if as_json:
        payload = {
            "ok": code == ExitCode.OK,
            "command": command,
            **result.to_json(),
            "warnings": warnings,
        }
        failure = getattr(result, "error", None)
        if failure is not None:
            payload["error"] = failure
        write_out(json_text(payload))
    else:
        for message in warnings:
            warn(message)
        rendered = text(result)
        if rendered:
            write_out(rendered)
        failure = getattr(result, "error", None) if code else None
        if failure is not None:
            # The one place a result's failure is named: a command's text shows what
            # happened, and this line gives the code, as for a refusal raised early.
            error_line(failure["code"], failure["message"])
    return code


def json_text(value: Any) -> str:
    """``json.dumps(value, indent=2, default=str)``'s text (imported only to write JSON)."""
    from router.cli.jsontext import dumps

    return dumps(value)


def fail(command: str, as_json: bool, exc: RouterError) -> None:
    if as_json:
        write_out(json_text(_failed(command, exc.code, exc.message, exc.details)))
    else:
        # Warnings gathered before the refusal (a repo that fell back to its main tree)
        # are the --json envelope's `warnings`: text says them too, before the error.
        for message in exc.details.get("warnings", []):
            warn(message)
        error_line(exc.code, exc.message)


def _failed(
    command: str, code: ErrorCode, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The JSON envelope of a command that failed before it had a result to report."""
    details = details or {}
    return {
        "ok": False,
        "command": command,
        **details,
        "warnings": list(details.get("warnings", [])),
        "error": error_json(code, message),
    }


def error_line(code: str, message: str) -> None:
    """A failure in human output: its message and, in brackets, its code (README, DESIGN §13)."""
    write_err(f"team-router: {message} [{code}]")


def guarded(command: str, as_json: bool, run: Callable[[], int]) -> int:
    """``run()``'s exit code; whatever escaped it as one error, never a traceback.

    The one place a command's exceptions become exit codes (DESIGN §13): a
    RouterError its code's (1 refused or failed, 2 bad input); Ctrl-C, SIGTERM
    and SIGHUP the one way of :mod:`router.interrupt`, 128 + the signal's
    number; any other exception is a bug, exit 3 (:func:`unexpected`).
    """
    with interrupt.handled():
        try:
            return run()
        except RouterError as exc:
            fail(command, as_json, exc)
            return exc.exit_code
        except (KeyboardInterrupt, interrupt.Stopped) as exc:
            error = interrupted(interrupt.signum_of(exc))
            fail(command, as_json, error)
            return error.exit_code
        except ToolFailed as exc:
            # A git no step expected to fail: one line, never a traceback.
            failure = RouterError(exc.code, exc.said)
            fail(command, as_json, failure)
            return failure.exit_code
        except Exception as exc:
            return unexpected(command, as_json, exc)


def unexpected(command: str, as_json: bool, exc: Exception) -> int:
    """A bug: one line naming the log file that holds its traceback (exit 3), never a traceback.

    With --json the line is the envelope's error, code ``unexpected``. A log
    that cannot be written is named with why, and the traceback follows on
    stderr instead: a bug report must not lose it.
    """
    message, trace = logged(exc)
    if as_json:
        write_out(json.dumps(_failed(command, ErrorCode.UNEXPECTED, message), indent=2))
    else:
        write_err(f"team-router: {message}")
    if trace:
        write_err(trace)
    return ErrorCode.UNEXPECTED.exit_code


def logged(exc: Exception) -> tuple[str, str]:
    """A bug's one-line message, its traceback written to a log file the message names.

    The second item is the report to print on stderr after the message, when the
    log could not be written ("" when it was).
    """
    from router.cli import crashlog

    what = crashlog.summary(exc)
    try:
        path = crashlog.write(exc)
    except (OSError, RuntimeError) as err:
        why = describe_io(err) if isinstance(err, OSError) else str(err)
        message = (
            f"unexpected error: {what}; the traceback could not be written ({why}), so it "
            "follows on stderr; please report it"
        )
        return message, crashlog.report(exc).rstrip("\n")
    return f"unexpected error: {what}; the traceback is in {path}; please report it", ""


def interrupted(signum: int) -> Interrupted:
    """The error of a command a signal stopped before it had anything to report."""
    return Interrupted(
        f"interrupted ({interrupt.name(signum)}); run the same command again to finish",
        signum=signum,
    )


# -- long-running commands -------------------------------------------------------


def line_echo(as_json: bool) -> Callable[[str], None]:
    """Where a ``.teamteardown`` line is announced: stderr under --json, else stdout."""
    stream_name = "stderr" if as_json else "stdout"

    def echo(message: str) -> None:
        from router.progress import write_line

        write_line(getattr(sys, stream_name), message)

    return echo
