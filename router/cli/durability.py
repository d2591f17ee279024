"""``hold``, ``release`` and ``doctor``: holders and consistency checks (DESIGN §10)."""

from __future__ import annotations

import contextlib
from typing import Annotated

import typer

from router import interrupt
from router.cli.app import JsonFlag, TargetArg, WaitOption, app, cwd_of, emit
from router.cli.early import CLI_DEFAULT_WAIT

PidOption = Annotated[
    int | None,
    typer.Option(
        "--pid",
        min=1,
        metavar="PID",
        help="The holding process; default: the session that runs team-router (its parent, "
        "past any `sh -c` wrapper).",
    ),
]
SessionOption = Annotated[
    str | None, typer.Option("--session", metavar="ID", help="The host's session id.")
]


@app.command("hold")
def hold_cmd(
    ctx: typer.Context,
    target: TargetArg = None,
    pid: PidOption = None,
    session: SessionOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Register a session as a holder of the topic: teardown keeps it while the session lives."""
    from router.topic.hold import hold

    emit("hold", as_json, lambda: hold(cwd_of(ctx), target, pid=pid, session=session), _hold_text)


@app.command("release")
def release_cmd(
    ctx: typer.Context,
    target: TargetArg = None,
    pid: PidOption = None,
    session: SessionOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Drop a session's holder of the topic (matching --pid and/or --session)."""
    from router.topic.hold import release_topic

    emit(
        "release",
        as_json,
        lambda: release_topic(cwd_of(ctx), target, pid=pid, session=session),
        _hold_text,
    )


def _hold_text(result) -> str:
    from router.topic.holders import describe

    done = ", ".join(describe(h) for h in result.holders) or "nobody"
    live = ", ".join(describe(h) for h in result.live) or "none"
    return f"{result.id}: {result.action} {done}\nlive holders: {live}"


@app.command("doctor")
def doctor_cmd(
    ctx: typer.Context,
    repair: Annotated[
        bool,
        typer.Option("--repair", help="Fix what is safe to fix, only for paths team-router owns."),
    ] = False,
    wait: WaitOption = CLI_DEFAULT_WAIT,
    as_json: JsonFlag = False,
) -> None:
    """Report records, worktrees, branches, locks and holders that disagree with git."""
    from router.doctor import doctor

    # Repairs stop at the next one on a signal, and the findings say which were made.
    with interrupt.deferred() if repair else contextlib.nullcontext():
        emit("doctor", as_json, lambda: doctor(cwd_of(ctx), repair=repair, wait=wait), _doctor_text)


def _doctor_text(result) -> str:
    where = ", ".join(str(r) for r in result.repos)
    if not result.findings:
        return f"No problems found in {where}."
    lines = [f"Checked {where}:"]
    for finding in result.findings:
        mark = " [repaired]" if finding.repaired else ""
        lines.append(f"  {finding.kind}: {finding.path}{mark}")
        lines.append(f"      {finding.detail}")
    if not result.repair:
        lines.append("Run `team-router doctor --repair` to fix what is safe to fix.")
    if result.interrupted:
        lines.append(f"{result.error['message']} [interrupted]")
    return "\n".join(lines)
