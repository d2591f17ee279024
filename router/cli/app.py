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
from typer.exceptions import TyperException

from router import __version__
from router.cli import output
from router.cli.early import start_dir
from router.errors import BadInput, RouterError

app = typer.Typer(
    name="team-router",
    help=(
        "Isolated git worktrees, durable records and lossless teardown for multi-repo "
        "coding-agent pipelines. Every command takes --json."
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
    typer.Argument(metavar="[TARGET]", help="Topic id or plan dir; default: the newest topic."),
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
        Path | None, typer.Option("-C", metavar="PATH", help="Run as if started in PATH.")
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

    def run_app() -> int:
        try:
            result = app(args=args, prog_name="team-router", standalone_mode=False)
        except typer.Exit as exc:
            return exc.exit_code
        except TyperException as exc:
            return _usage_error(args, exc)
        return result if isinstance(result, int) else 0

    return output.guarded(_command_name(args), "--json" in args, run_app)


def _usage_error(args: list[str], exc: TyperException) -> int:
    code = getattr(exc, "exit_code", 2)
    ctx = getattr(exc, "ctx", None)
    path = ctx.command_path if ctx is not None else "team-router"
    # A group run without its subcommand "fails" with the group's help as message.
    only_help = type(exc).__name__ == "NoArgsIsHelpError"
    message = f"{path} needs a command" if only_help else exc.format_message()
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


def _command_name(args: list[str]) -> str:
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg == "-C":
            skip = True
            continue
        if not arg.startswith("-"):
            return arg
    return ""
