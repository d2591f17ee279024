"""``teardown``, ``sweep``, ``local-state`` and ``restore``: taking a topic apart without losing work."""

from __future__ import annotations

from typing import Annotated

import typer

from router import interrupt
from router.cli.app import (
    DryRun,
    JsonFlag,
    LineTimeout,
    RemoveReused,
    RequiredTargetArg,
    WaitOption,
    app,
    cwd_of,
    emit,
)
from router.cli.early import (
    CLI_DEFAULT_LINE_TIMEOUT,
    CLI_DEFAULT_WAIT,
    file_lines,
    teardown_text,
    temp_lines,
)
from router.cli.output import line_echo


@app.command("teardown")
def teardown_cmd(
    ctx: typer.Context,
    target: RequiredTargetArg,
    integrate: Annotated[
        bool,
        typer.Option(
            "--integrate", help="Cherry-pick unintegrated commits onto the default branch."
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Remove work that exists nowhere else, after writing a snapshot ref."
        ),
    ] = False,
    dry_run: DryRun = False,
    remove_reused: RemoveReused = False,
    line_timeout: LineTimeout = CLI_DEFAULT_LINE_TIMEOUT,
    wait: WaitOption = CLI_DEFAULT_WAIT,
    as_json: JsonFlag = False,
) -> None:
    """Tear a topic down in every repo: integrate, remove, delete, update, sweep, local state."""
    from router.teardown.topic import teardown

    with interrupt.deferred():
        emit(
            "teardown",
            as_json,
            lambda: teardown(
                cwd_of(ctx),
                target,
                integrate=integrate,
                force=force,
                dry_run=dry_run,
                remove_reused=remove_reused,
                wait=wait,
                line_timeout=line_timeout,
                echo=line_echo(as_json),
            ),
            teardown_text,
        )


@app.command("sweep")
def sweep_cmd(
    ctx: typer.Context,
    host_worktrees: Annotated[
        bool,
        typer.Option(
            "--host-worktrees",
            help="First remove the worktrees Claude Code asked for (claude --worktree, "
            "isolated subagents) that hold nothing: clean, no commits of their own, no "
            "artifacts, no live session holding them.",
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Also remove residue holding the artifacts of a run that has not shipped, "
            "after writing them to a snapshot ref (`restore <id>` brings them back).",
        ),
    ] = False,
    dry_run: DryRun = False,
    wait: WaitOption = CLI_DEFAULT_WAIT,
    as_json: JsonFlag = False,
) -> None:
    """Remove residue under .claude/worktrees/ that git no longer knows; keep and list the rest."""
    if host_worktrees:
        from router.host.worktrees import sweep_host_worktrees

        emit(
            "sweep",
            as_json,
            lambda: sweep_host_worktrees(
                cwd_of(ctx), dry_run=dry_run, wait=wait, echo=line_echo(as_json), force=force
            ),
            _host_sweep_text,
        )
        return
    from router.teardown.sweep import sweep_repo

    emit(
        "sweep",
        as_json,
        lambda: sweep_repo(cwd_of(ctx), dry_run=dry_run, force=force),
        _sweep_text,
    )


def _host_sweep_text(result) -> str:
    lines = []
    for host in result.host_worktrees:
        lines.append(f"{host.outcome}: {host.worktree or '(no worktree)'} ({host.id})")
        lines.append(f"  {host.detail}")
    if not result.host_worktrees:
        lines.append("no worktrees Claude Code asked for")
    return "\n".join([*lines, _sweep_text(result.residue)])


def _sweep_text(result) -> str:
    lines = [f"{'would sweep' if result.dry_run else 'swept'}: {p}" for p in result.swept]
    lines += [f"  {note}" for snapped in result.snapshotted for note in snapped.notes]
    for kept in result.kept:
        lines.append(f"kept ({kept.reason}): {kept.path}")
        lines += file_lines(kept.files)
    lines += [f"could not remove {p}: {error}" for p, error in result.failed]
    if result.no_residue:
        lines.append(f"no residue under {result.root}/.claude/worktrees")
    return "\n".join(lines)


@app.command("local-state")
def local_state_cmd(
    ctx: typer.Context,
    target: RequiredTargetArg,
    line_timeout: LineTimeout = CLI_DEFAULT_LINE_TIMEOUT,
    dry_run: DryRun = False,
    wait: WaitOption = CLI_DEFAULT_WAIT,
    as_json: JsonFlag = False,
) -> None:
    """Run each repo's .teamteardown (from its default branch) and remove recorded temp paths."""
    from router.teardown.topic import local_state_for_topic

    with interrupt.deferred():
        emit(
            "local-state",
            as_json,
            lambda: local_state_for_topic(
                cwd_of(ctx),
                target,
                line_timeout=line_timeout,
                wait=wait,
                echo=line_echo(as_json),
                dry_run=dry_run,
            ),
            _local_text,
        )


def _local_text(result) -> str:
    lines = []
    for report in result.reports:
        lines.append(f"{report.repo}: {report.summary()}")
        lines += temp_lines(report.temp_paths, indent="  ", dry_run=result.dry_run)
    return "\n".join(lines)


@app.command("restore")
def restore_cmd(
    ctx: typer.Context,
    target: Annotated[
        str,
        typer.Argument(
            metavar="TARGET",
            help="Topic id or plan dir, or a branch that is no topic (one pr-cleanup --abandon "
            "snapshotted).",
        ),
    ],
    repo: Annotated[
        str | None, typer.Option("--repo", metavar="NAME", help="Only this repo of the topic.")
    ] = None,
    wait: WaitOption = CLI_DEFAULT_WAIT,
    as_json: JsonFlag = False,
) -> None:
    """Recreate a topic's worktree(s) from the snapshot a forced teardown wrote."""
    from router.teardown.topic import restore_topic

    with interrupt.deferred():
        emit(
            "restore",
            as_json,
            lambda: restore_topic(cwd_of(ctx), target, repo=repo, wait=wait),
            _restore_text,
        )


def _restore_text(result) -> str:
    lines = [f"{r.name}: {r.status}: {r.detail}" for r in result.repos]
    if result.interrupted:
        lines.append(f"{result.error['message']} [interrupted]")
    return "\n".join(lines)
