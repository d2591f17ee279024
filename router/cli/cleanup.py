"""``pr-cleanup``: after a merge (or an explicit abandon), take one branch apart."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from router import interrupt
from router.cli.app import (
    DryRun,
    JsonFlag,
    LineTimeout,
    RemoveReused,
    WaitOption,
    app,
    cwd_of,
    emit,
)
from router.cli.early import CLI_DEFAULT_LINE_TIMEOUT, CLI_DEFAULT_WAIT, step_lines
from router.cli.output import line_echo
from router.errors import RouterError


def _confirm(target: str | None, abandon: bool, yes: bool, dry_run: bool) -> bool | None:
    """True (--yes or a yes at the prompt), False (declined), None (no terminal to ask on)."""
    if not abandon or yes or dry_run:
        return True
    if not sys.stdin.isatty():
        return None  # never prompt when stdin is not a terminal
    what = target or "the checked-out branch"
    return typer.confirm(
        f"Abandon {what}: close its PR(s), force-remove its worktree (after a snapshot) and delete "
        "the branch here and on origin?",
        default=False,
        err=True,
    )


@app.command("pr-cleanup")
def pr_cleanup_cmd(
    ctx: typer.Context,
    target: Annotated[
        str | None,
        typer.Argument(
            metavar="[TARGET]",
            help="PR number, PR URL, or branch; default: the branch checked out here.",
        ),
    ] = None,
    abandon: Annotated[
        bool,
        typer.Option(
            "--abandon", help="The work is abandoned: close the PR(s), delete without a merge."
        ),
    ] = False,
    delete_remote: Annotated[
        bool, typer.Option("--delete-remote", help="Also delete the branch on origin.")
    ] = False,
    reclaim: Annotated[
        bool,
        typer.Option(
            "--reclaim",
            help="After the prune: expire unreachable reflog entries and gc --prune=now (repo-wide).",
        ),
    ] = False,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            help="Confirm --abandon without a prompt; or let the content proof alone stand "
            "when gh knows no merged PR from this repository.",
        ),
    ] = False,
    dry_run: DryRun = False,
    remove_reused: RemoveReused = False,
    line_timeout: LineTimeout = CLI_DEFAULT_LINE_TIMEOUT,
    wait: WaitOption = CLI_DEFAULT_WAIT,
    as_json: JsonFlag = False,
) -> None:
    """After a merge: prove it, then remove the worktree, branches, plan dir and local state."""
    from router.teardown.prcleanup import CleanupResult, pr_cleanup

    cwd = cwd_of(ctx)

    def run() -> CleanupResult:
        try:
            return pr_cleanup(
                cwd,
                target,
                abandon=abandon,
                delete_remote=delete_remote,
                reclaim=reclaim,
                confirmed=_confirm(target, abandon, yes, dry_run),
                yes=yes,
                dry_run=dry_run,
                wait=wait,
                line_timeout=line_timeout,
                echo=line_echo(as_json),
                remove_reused=remove_reused,
            )
        except RouterError as exc:
            # A refusal raised before the plan exists (a dirty primary, a protected
            # branch) still tells a caller it answered a dry run, as the plan's do.
            if dry_run:
                exc.details.setdefault("dry_run", True)
            raise

    with interrupt.deferred():  # a signal stops it at a step boundary, and it reports
        emit("pr-cleanup", as_json, run, _text)


def _text(result) -> str:
    head = "Plan (dry run, nothing changed)" if result.dry_run else "pr-cleanup"
    lines = [f"{head} of {result.branch} ({result.mode})"]
    if result.evidence is not None:
        # The detail says what the content proof found and what gh said, each once.
        ev = result.evidence
        lines.append(f"proof ({ev.content.kind if ev.content else 'none'}): {ev.detail}")
    lines += step_lines(result.steps, width=14, dry_run=result.dry_run)
    if result.interrupted:
        lines.append(f"{result.error['message']} [interrupted]")
    return "\n".join(lines)
