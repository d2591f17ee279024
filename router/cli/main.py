"""Running one argument list: parse it (:mod:`router.cli.parse`), then help, a usage
error, or the command's handler, with the exit code.

Every command goes this one way, the session-start hook and the commands agents
run at every phase included: it imports the declarations, the reader, and the
one handler module the command names; help and usage errors import their
writers only when they are needed.
"""

from __future__ import annotations

import sys

from router.cli.parse import HelpAsked, NoCommand, Parsed, UsageError, VersionAsked, parse
from router.cli.parse import command_words as _words

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

# The error types are imported where they are used, never at the top: the
# session-start hook's path (every session start) never meets one unless it fails,
# and creating the error-code enum (~70 members) costs it ~4 ms. Every other
# command reports through router.cli.output, which imports them.

# The hooks on the host's path (DESIGN §14), with what a failure to run them means and
# the name of the exit that tells the host so (:class:`router.errors.ExitCode`),
# whatever their arguments: session-start is advice and never stops the host (OK); a
# worktree-remove that did not run removed nothing, and the host must never tell its
# session "removed" while the worktree stays (REFUSED).
HOST_HOOKS = {
    "session-start": ("no notice", "OK"),
    "worktree-remove": ("nothing was removed", "REFUSED"),
}


def run(args: list[str]) -> int:
    """Run ``args`` (the words after ``team-router``) and return the exit code."""
    words = _words(args)
    # The command's own first two words, never two words further on: `new hook
    # session-start` (a description left unquoted) is a usage error, not a hook.
    hook = words[1] if words[:1] == ["hook"] and words[1:2] and words[1] in HOST_HOOKS else ""
    if hook:
        return _host_hook(args, hook, *HOST_HOOKS[hook])
    from router.cli.output import guarded

    command = words[0] if words else ""
    return guarded(command, "--json" in args, lambda: _run(args))


def _run(args: list[str]) -> int:
    try:
        parsed = parse(args, _root_checks)
    except (HelpAsked, NoCommand, VersionAsked, UsageError) as exc:
        return _answer(args, exc)
    return _call(parsed)


def _root_checks(directory: Path | None) -> None:
    """``-C``: an existing directory (checked once the command is known, before its arguments)."""
    if directory is not None and not directory.is_dir():
        from router.errors import ErrorCode, RouterError

        raise RouterError(
            ErrorCode.USAGE, f"-C {directory}: no such directory; pass an existing directory"
        )


def _call(parsed: Parsed) -> int:
    """The command's handler, given the directory it runs in and its values by name."""
    handler = _handler(parsed)
    return int(handler(_place(parsed), **parsed.values))


def _place(parsed: Parsed) -> Path | None:
    """Where the command runs: -C's directory or the current one; as given, when it asks."""
    return parsed.directory if parsed.command.as_given else start_dir(parsed.directory)


def _handler(parsed: Parsed) -> Callable[..., int]:
    module, _, function = parsed.command.handler.partition(":")
    # __import__ rather than importlib.import_module: importing importlib brings
    # `warnings` along (~1 ms on the session-start hook's path).
    name = f"router.cli.{module}"
    __import__(name)
    return getattr(sys.modules[name], function)  # type: ignore[no-any-return]


def _answer(args: list[str], exc: Exception) -> int:
    """What the CLI says when it runs no command: help, the version, or a usage error."""
    from router.cli.output import write_err, write_out
    from router.errors import ExitCode

    if isinstance(exc, VersionAsked):
        from router import __version__

        write_out(f"team-router {__version__}")
        return ExitCode.OK
    from router.cli.helptext import help_text

    if isinstance(exc, HelpAsked):
        write_out(help_text(exc.node))
        return ExitCode.OK
    if isinstance(exc, NoCommand):
        if "--json" in args:
            return _refuse_usage(args, f"{_path(exc.node)} needs a command", exc.node)
        write_err(help_text(exc.node))
        return ExitCode.BAD_INPUT
    assert isinstance(exc, UsageError)
    from router.cli.usage import explain

    return _refuse_usage(args, explain(args, exc), exc.node)


def _refuse_usage(args: list[str], message: str, node: object) -> int:
    from router.cli.output import fail, write_err
    from router.errors import ErrorCode, ExitCode, RouterError

    path = _path(node)
    if "--json" in args:
        words = _words(args)
        fail(
            words[0] if words else "",
            True,
            RouterError(ErrorCode.USAGE, f"{message.rstrip('.')}; see `{path} --help`"),
        )
    else:
        # The code in brackets, as every other refusal's text ends (JSON has it as error.code).
        write_err(f"team-router: {message.rstrip('.')} [{ErrorCode.USAGE}]")
        write_err(f"Try '{path} --help' for help.")
    return ExitCode.BAD_INPUT


def _path(node: object) -> str:
    from router.cli.helptext import command_path

    return command_path(node)  # type: ignore[arg-type]


def _host_hook(args: list[str], hook: str, outcome: str, failed: str) -> int:
    """``hook session-start`` / ``hook worktree-remove``, on the host's path.

    A ``-C`` that names no directory or an option they do not know leaves stdout
    empty, says why in one line on stderr (never a traceback), and exits with
    the code ``failed`` names. The hook itself chooses its exit code
    (``worktree-remove``'s says whether the worktree is kept).
    """
    from router import interrupt

    def note(message: str) -> int:
        from router.errors import ExitCode

        print(f"team-router: hook {hook}: {message}; {outcome}", file=sys.stderr)
        return ExitCode[failed]

    try:
        parsed = parse(args, _root_checks)
    except (HelpAsked, VersionAsked) as exc:
        return _answer(args, exc)
    except UsageError as exc:
        from router.cli.usage import explain

        return note(explain(args, exc))
    except Exception as exc:
        refusal = _hook_refusal(exc)
        if refusal is None:
            raise  # a bug in reading the command line: exit 3, as for every command
        return note(refusal)
    # Loaded before its signal handling: a Ctrl-C while the hook still loads is the
    # console entry point's (exit 130), as for every command.
    handler = _handler(parsed)
    try:
        with interrupt.handled():
            return int(handler(_place(parsed), **parsed.values))
    except (KeyboardInterrupt, interrupt.Stopped) as exc:
        return note(f"stopped ({exc.__class__.__name__})")
    except Exception as exc:
        refusal = _hook_refusal(exc)
        if refusal is not None:
            return note(refusal)
        # A bug: its traceback goes to the log the line names; the exit stays the one
        # the host reads (the hook protocol), not 3.
        from router.cli.output import logged, write_err

        message, trace = logged(exc)
        code = note(message)
        if trace:
            write_err(trace)
        return code


def _hook_refusal(exc: Exception) -> str | None:
    """A refusal's message and code, as a host hook says it; None for any other exception."""
    from router.errors import RouterError  # loaded already when one was raised

    return f"{exc.message} [{exc.code}]" if isinstance(exc, RouterError) else None


def start_dir(directory: Path | None) -> Path:
    """The directory a command runs in: ``-C``'s, else the current one (absolute)."""
    import os
    from pathlib import Path

    try:
        base = Path.cwd() if directory is None else directory
    except OSError:
        from router.errors import ErrorCode, RouterError

        raise RouterError(
            ErrorCode.NOT_A_REPO,
            "the current directory no longer exists; cd to a repository or pass -C",
        ) from None
    return Path(os.path.abspath(base))
