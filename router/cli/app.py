"""The typer app: parse, call one core function, render text or JSON, map errors to exits.

No git and no file logic lives here. Command modules beside it in ``router/cli/``
register themselves on :data:`app` and import their core lazily, so
``--help`` and simple commands start fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperArgument
from typer.exceptions import TyperException

from router import __version__, interrupt
from router.cli import output
from router.cli.early import start_dir
from router.errors import BadInput, RouterError


def _usage_metavar(self: TyperArgument, ctx: Any, *, usage: bool = False) -> str:
    """A required argument as every message and document writes it: ``TARGET``, not ``{TARGET}``.

    typer (0.2x) wraps a required argument's metavar in braces in usage lines;
    an optional one keeps its ``[TARGET]``.
    """
    var = _typer_metavar(self, ctx, usage=usage)
    if usage and self.required and var.startswith("{") and var.endswith("}"):
        return var[1:-1]
    return var


_typer_metavar = TyperArgument.make_metavar
TyperArgument.make_metavar = _usage_metavar  # type: ignore[method-assign]

app = typer.Typer(
    name="team-router",
    help=(
        "Isolated git worktrees, durable records and lossless teardown for multi-repo "
        "coding-agent pipelines. Every command takes --json (the worktree hooks speak the "
        "host's protocol instead)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

JsonFlag = Annotated[
    bool, typer.Option("--json", help="Print exactly one JSON object on stdout, nothing else.")
]
# The topic a command acts on: optional (the newest topic by default) or required.
TargetArg = Annotated[
    str | None,
    typer.Argument(
        metavar="[TARGET]",
        help="Topic id or plan dir; default: this worktree's topic, else the newest run.",
    ),
]
RequiredTargetArg = Annotated[str, typer.Argument(metavar="TARGET", help="Topic id or plan dir.")]
WaitOption = Annotated[
    float,
    typer.Option(
        "--wait",
        min=0,
        metavar="SECONDS",
        help="Seconds to wait for another run holding the topic's lock.",
    ),
]
# The removing commands' shared options (teardown, pr-cleanup, sweep).
DryRun = Annotated[bool, typer.Option("--dry-run", help="Print the plan; change nothing.")]
LineTimeout = Annotated[
    float,
    typer.Option(
        "--line-timeout",
        min=0.1,
        metavar="S",
        help="Seconds each .teamteardown line may run before its process group is killed.",
    ),
]
RemoveReused = Annotated[
    bool,
    typer.Option(
        "--remove-reused",
        help="Also remove a checkout and delete a branch team-router did not create "
        "(`new` reused them); without it they are kept.",
    ),
]


def path_value(raw: str) -> Path:
    """A path option's value; an empty one is a usage error, never the current directory.

    ``Path("")`` is ``Path(".")``: without this check ``-C ""`` or ``--dir ""`` (an
    unset shell variable) would quietly act on wherever the command was started.
    """
    if not raw:
        raise typer.BadParameter(
            "the path is empty; pass a path (`.` is the current directory) or leave the option out"
        )
    return Path(raw)


@dataclass(frozen=True, slots=True)
class Ctx:
    cwd: Path


def cwd_of(ctx: typer.Context) -> Path:
    obj = ctx.find_root().obj
    return obj.cwd if isinstance(obj, Ctx) else Path.cwd()


def _version(value: bool) -> None:
    if value:
        print(f"team-router {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    ctx: typer.Context,
    directory: Annotated[
        Path | None,
        typer.Option("-C", metavar="PATH", parser=path_value, help="Run as if started in PATH."),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    if directory is not None and not directory.is_dir():
        raise BadInput("usage", f"-C {directory}: no such directory; pass an existing directory")
    ctx.obj = Ctx(cwd=start_dir(directory))


# -- output -----------------------------------------------------------------------


def emit(
    command: str,
    as_json: bool,
    work: Callable[[], Any],
    text: Callable[[Any], str],
) -> None:
    """Run ``work`` and print its envelope (:func:`router.cli.output.emit_result`); exit with its code."""
    raise typer.Exit(output.emit_result(command, as_json, work, text))


# -- running -----------------------------------------------------------------------


def _register(command: str = "") -> None:
    """Import the command modules needed for ``command`` (all of them when unknown).

    Imported for their side effect: each module adds its commands to ``app``.
    """
    import importlib

    from router.cli.commands import modules_for

    for name in modules_for(command):
        importlib.import_module(f"router.cli.{name}")


def run(args: list[str]) -> int:
    """Run the app on ``args`` and return the exit code (usage errors included)."""
    _register(_command_name(args))
    # The command's own first two words, never two words further on: `new hook
    # session-start` (a description left unquoted) is a usage error, not a hook.
    hook = next((h for h in _HOST_HOOKS if _words(args)[:2] == ["hook", h]), "")
    if hook:
        return _host_hook(args, hook, *_HOST_HOOKS[hook])
    return output.guarded(_command_name(args), "--json" in args, lambda: _run_app(args))


def _run_app(args: list[str]) -> int:
    try:
        result = app(args=args, prog_name="team-router", standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except TyperException as exc:
        return _usage_error(args, exc)
    return result if isinstance(result, int) else 0


# The hooks on the host's path (DESIGN §14), with what a failure to run them means and
# the exit that tells the host so, whatever their arguments: session-start is advice
# and never stops the host (0); a worktree-remove that did not run removed nothing,
# and the host must never tell its session "removed" while the worktree stays (1).
_HOST_HOOKS = {
    "session-start": ("no notice", 0),
    "worktree-remove": ("nothing was removed", 1),
}


def _host_hook(args: list[str], hook: str, outcome: str, failed: int) -> int:
    """``hook session-start`` / ``hook worktree-remove`` the entry point left to the app.

    Both are on the host's path: a ``-C`` that names no directory or an option
    they do not know leaves stdout empty, says why in one line on stderr (never
    a traceback), and exits ``failed``. The hook itself chooses its exit code
    (``worktree-remove``'s says whether the worktree is kept).
    """

    def note(message: str) -> int:
        print(f"team-router: hook {hook}: {message}; {outcome}", file=sys.stderr)
        return failed

    try:
        with interrupt.handled():
            # Not standalone: click returns the code of the hook's typer.Exit.
            result = app(args=args, prog_name="team-router", standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except TyperException as exc:
        return note(_usage_message(args, exc))
    except RouterError as exc:
        return note(f"{exc.message} [{exc.code}]")
    except (Exception, KeyboardInterrupt, interrupt.Stopped) as exc:
        return note(f"stopped ({exc.__class__.__name__})")
    return result if isinstance(result, int) else 0


def _usage_error(args: list[str], exc: TyperException) -> int:
    code = getattr(exc, "exit_code", 2)
    ctx = getattr(exc, "ctx", None)
    path = ctx.command_path if ctx is not None else "team-router"
    # A group run without its subcommand "fails" with the group's help as message.
    only_help = type(exc).__name__ == "NoArgsIsHelpError"
    message = f"{path} needs a command" if only_help else _usage_message(args, exc)
    if "--json" in args:
        error = RouterError("usage", f"{message.rstrip('.')}; see `{path} --help`")
        error.exit_code = code
        output.fail(_command_name(args), True, error)
    elif only_help:
        print(exc.format_message(), file=sys.stderr)
    else:
        print(f"team-router: {message}", file=sys.stderr)
        print(f"Try '{path} --help' for help.", file=sys.stderr)
    return code


# What team-router itself takes before the command; every other option is a command's.
BEFORE_THE_COMMAND = "before the command team-router takes only -C DIR, --version and --help"


def _usage_message(args: list[str], exc: TyperException) -> str:
    """click's message, or, for an option on the wrong side of the command, where it goes."""
    ctx = getattr(exc, "ctx", None)
    option = getattr(exc, "option_name", "")
    # By name: typer carries its own copy of click, whose module path is private.
    if type(exc).__name__ != "NoSuchOption" or ctx is None:
        return exc.format_message()
    if ctx.parent is None:
        return _before_the_command(args, option, ctx) or (
            f"No such option: {option}; {BEFORE_THE_COMMAND}"
        )
    if option == "-C":
        return _after_the_command(args) or exc.format_message()
    return exc.format_message()


def _before_the_command(args: list[str], option: str, ctx: Any) -> str | None:
    """``--json status``: the same line with the command's own options after the command."""
    commands = ctx.command.list_commands(ctx)
    at = next((n for n, a in enumerate(args) if a in commands and args[n - 1 : n] != ["-C"]), None)
    if at is None:
        if not any(option in _options_of(ctx, name) for name in commands):
            return None
        return f"{option} goes after the command: `team-router COMMAND {option}` ({BEFORE_THE_COMMAND})"
    options = _options_of(ctx, args[at])
    if option not in options:
        return None
    kept: list[str] = []
    moved: list[str] = []
    head = args[:at]
    while head:
        arg, head = head[0], head[1:]
        if arg == "-C" and head:
            kept += [arg, head[0]]
            head = head[1:]
        elif arg in ("--version", "--help", "-h"):
            kept.append(arg)
        else:
            moved += _as_written_after(arg, options)  # its value, if it takes one: the next word
    rest = args[at:]
    end = rest.index("--") if "--" in rest else len(rest)
    fixed = ["team-router", *kept, *rest[:end], *moved, *rest[end:]]
    return (
        f"{option} is an option of `{_command_path(ctx, rest)}`, so it goes after the command: "
        f"`{_shell_line(fixed)}` ({BEFORE_THE_COMMAND})"
    )


def _command_path(ctx: Any, words: list[str]) -> str:
    """``status``, or a group's ``hook session-start`` (its second word, when it names one)."""
    command = ctx.command.get_command(ctx, words[0])
    sub = _words(words[1:])[:1]
    if hasattr(command, "list_commands") and sub and sub[0] in command.list_commands(ctx):
        return f"{words[0]} {sub[0]}"
    return words[0]


# How click reads a flag's value, when one is forced on it (``--json=0``): false.
_FALSE_WORDS = frozenset({"0", "false", "f", "no", "n", "off", ""})


def _as_written_after(arg: str, options: dict[str, bool]) -> list[str]:
    """``arg`` as it is written after the command: a flag given a value loses it.

    ``--json=1`` moved as it was is refused in turn (the flag takes no value):
    the flag alone says the same, and ``--json=0`` asked for no flag at all.
    """
    name, eq, value = arg.partition("=")
    if not (eq and options.get(name)):
        return [arg]
    return [] if value.strip().lower() in _FALSE_WORDS else [name]


def _options_of(ctx: Any, name: str) -> dict[str, bool]:
    """Every option the command ``name`` takes (its subcommands' included): is it a flag?"""
    command = ctx.command.get_command(ctx, name)
    found: dict[str, bool] = {}
    pending = [command] if command is not None else []
    while pending:
        current = pending.pop()
        for param in current.params:
            if param.param_type_name == "option":
                found.update(dict.fromkeys(param.opts + param.secondary_opts, param.is_flag))
        if hasattr(current, "list_commands"):  # a group: hook, record
            pending += [current.get_command(ctx, sub) for sub in current.list_commands(ctx)]
    return found


def _after_the_command(args: list[str]) -> str | None:
    """``status -C DIR``: -C belongs to team-router itself, before the command."""
    words = _words(args)
    start = args.index(words[0]) if words else len(args)
    at = args.index("-C", start) if "-C" in args[start:] else -1
    if at < 0 or at + 1 >= len(args):
        return None
    fixed = ["team-router", "-C", args[at + 1], *args[:at], *args[at + 2 :]]
    return f"-C goes before the command: `{_shell_line(fixed)}`"


def _shell_line(words: list[str]) -> str:
    import shlex

    return shlex.join(words)


def _words(args: list[str]) -> list[str]:
    """The positional words of ``args`` (the command path first), -C's value left out."""
    words: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "-C":
            skip = True
        elif not arg.startswith("-"):
            words.append(arg)
    return words


def _command_name(args: list[str]) -> str:
    words = _words(args)
    return words[0] if words else ""
