"""``demo``: a narrated multi-repo run on throw-away repositories."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from router.cli.app import JsonFlag, app, cwd_of, emit, path_value


@app.command("demo")
def demo_cmd(
    ctx: typer.Context,
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            metavar="D",
            parser=path_value,
            help="Build the demo repos under D instead of the temp dir.",
        ),
    ] = None,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the demo repos afterwards (to look around).")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Build three sibling repos and walk one topic from `new` to teardown, narrating each step."""
    from router.demo import run_demo

    base = None if directory is None else cwd_of(ctx) / directory
    say = _quiet if as_json else _say
    emit("demo", as_json, lambda: run_demo(base=base, keep=keep, say=say), _demo_text)


def _say(line: str) -> None:
    from router.cli.output import write_out

    write_out(line)


def _quiet(line: str) -> None:
    return None


def _demo_text(result) -> str:
    where = f"kept in {result.root}" if result.kept else "the demo's repos were removed"
    return f"\nDone: {len(result.steps)} steps, exit 0; {where}."
