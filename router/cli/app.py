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

from router import __version__
from router.cli import output
from router.cli.main import start_dir
from router.cli.parse import command_words as _words
from router.errors import ErrorCode, ExitCode, RouterError


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
        raise typer.Exit(ExitCode.OK)


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
        raise RouterError(
            ErrorCode.USAGE, f"-C {directory}: no such directory; pass an existing directory"
        )
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


def run_app(args: list[str]) -> int:
    """Run the app on ``args`` and return the exit code (usage errors included)."""
    _register(_command_name(args))
    return output.guarded(_command_name(args), "--json" in args, lambda: _run_app(args))


def _run_app(args: list[str]) -> int:
    try:
        result = app(args=args, prog_name="team-router", standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except TyperException as exc:
        return _usage_error(args, exc)
    return result if isinstance(result, int) else ExitCode.OK


def _usage_error(args: list[str], exc: TyperException) -> int:
    code = getattr(exc, "exit_code", ExitCode.BAD_INPUT)
    ctx = getattr(exc, "ctx", None)
    path = ctx.command_path if ctx is not None else "team-router"
    # A group run without its subcommand "fails" with the group's help as message.
    only_help = type(exc).__name__ == "NoArgsIsHelpError"
    message = f"{path} needs a command" if only_help else _usage_message(args, exc)
    if "--json" in args:
        error = RouterError(ErrorCode.USAGE, f"{message.rstrip('.')}; see `{path} --help`")
        output.fail(_command_name(args), True, error)
    elif only_help:
        print(exc.format_message(), file=sys.stderr)
    else:
        print(f"team-router: {message}", file=sys.stderr)
        print(f"Try '{path} --help' for help.", file=sys.stderr)
    return code


def _usage_message(args: list[str], exc: TyperException) -> str:
    """click's message, or, for an option on the wrong side of the command, where it goes."""
    from router.cli import spec
    from router.cli.parse import UsageError
    from router.cli.usage import explain

    ctx = getattr(exc, "ctx", None)
    # By name: typer carries its own copy of click, whose module path is private.
    option = getattr(exc, "option_name", "") if type(exc).__name__ == "NoSuchOption" else ""
    at_root = ctx is None or ctx.parent is None
    node = spec.ROOT if at_root else (spec.ROOT.find(_command_name(args)) or spec.NEW)
    return explain(args, UsageError(exc.format_message(), node, option=option if ctx else ""))


def _command_name(args: list[str]) -> str:
    words = _words(args)
    return words[0] if words else ""
