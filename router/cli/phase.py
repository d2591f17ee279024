"""``phase``, ``next``, ``status``, ``record ...`` and ``hook session-start``.

No ``from __future__ import annotations`` here: typer needs the parameter
types as objects, and evaluating string annotations (``eval`` of each one)
costs every invocation of the CLI several milliseconds.
"""

from pathlib import Path
from typing import Annotated

import typer

from router.cli.app import (
    JsonFlag,
    RequiredTargetArg,
    TargetArg,
    WaitOption,
    app,
    cwd_of,
    emit,
    path_value,
)
from router.cli.early import CLI_DEFAULT_WAIT, next_text, phase_text

BodyFile = Annotated[
    Path | None,
    typer.Option(
        "--body-file",
        metavar="F",
        parser=path_value,
        help="Markdown to keep as the record's body ('-': stdin).",
    ),
]


@app.command("phase")
def phase_cmd(ctx: typer.Context, target: TargetArg = None, as_json: JsonFlag = False) -> None:
    """Where an interrupted run resumes: the first phase whose evidence is missing."""
    from router.phase.infer import phase_report

    emit("phase", as_json, lambda: phase_report(cwd_of(ctx), target), phase_text)


@app.command("next")
def next_cmd(
    ctx: typer.Context,
    target: TargetArg = None,
    until: Annotated[
        str | None,
        typer.Option(
            "--until",
            metavar="PHASE",
            help="Stop once the run is past PHASE (its gate passed): step 'until'.",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """The phase to run next, with its brief: what to produce, where, and which gate decides."""
    from router.phase.brief import next_report

    emit("next", as_json, lambda: next_report(cwd_of(ctx), target, until=until), next_text)


@app.command("status")
def status_cmd(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Every topic of the home repo: where it resumes and, per repo, its worktree, whether it
    is dirty, and how many commits it is ahead of the default branch."""
    from router.phase.status import render_table, topics_status

    emit("status", as_json, lambda: topics_status(cwd_of(ctx)), render_table)


# -- record -------------------------------------------------------------------------

record_app = typer.Typer(
    help="Write a gate record into the topic's plan dir (verdict, tests, verify, review, pr, temp).",
    no_args_is_help=True,
)
app.add_typer(record_app, name="record")


def _record_text(result) -> str:
    if result.existing:
        return f"{result.path} already lists {result.value}"
    lines = [f"Recorded {result.kind} {result.value}: {result.path}"]
    for tip in result.tips:
        state = "pushed" if tip.pushed else "not pushed"
        at = tip.tip[:12] if tip.tip else "no branch"
        lines.append(f"  {tip.name}: {tip.branch} at {at}, {tip.ahead} commit(s), {state}")
    return "\n".join(lines)


@record_app.command("verdict")
def record_verdict_cmd(
    ctx: typer.Context,
    target: RequiredTargetArg,
    value: Annotated[
        str,
        typer.Argument(
            metavar="VERDICT",
            help='APPROVE, "REQUEST CHANGES" or COMMENT (case and spacing do not matter).',
        ),
    ],
    body_file: BodyFile = None,
    wait: WaitOption = CLI_DEFAULT_WAIT,
    as_json: JsonFlag = False,
) -> None:
    """Record the design review's verdict as design-review-<n>.md (n = highest + 1)."""
    from router.phase.gates import record_verdict

    emit(
        "record",
        as_json,
        lambda: record_verdict(cwd_of(ctx), target, value, body_file=body_file, wait=wait),
        _record_text,
    )


@record_app.command("review")
def record_review_cmd(
    ctx: typer.Context,
    target: RequiredTargetArg,
    value: Annotated[
        str, typer.Argument(metavar="VERDICT", help="PASS or FAIL (case does not matter).")
    ],
    body_file: BodyFile = None,
    wait: WaitOption = CLI_DEFAULT_WAIT,
    as_json: JsonFlag = False,
) -> None:
    """Record the implementation review's aggregate verdict as review-<n>.md."""
    from router.phase.gates import record_review

    emit(
        "record",
        as_json,
        lambda: record_review(cwd_of(ctx), target, value, body_file=body_file, wait=wait),
        _record_text,
    )


@record_app.command("tests")
def record_tests_cmd(
    ctx: typer.Context,
    target: RequiredTargetArg,
    value: Annotated[
        str,
        typer.Argument(
            metavar="VERDICT",
            help="RED (the new tests fail by assertion, the static checks pass) or BROKEN.",
        ),
    ],
    body_file: BodyFile = None,
    wait: WaitOption = CLI_DEFAULT_WAIT,
    as_json: JsonFlag = False,
) -> None:
    """Record the test-first gate the orchestrator ran as tests-<n>.md (RED moves IMPLEMENT
    on to its slices)."""
    from router.phase.gates import record_tests

    emit(
        "record",
        as_json,
        lambda: record_tests(cwd_of(ctx), target, value, body_file=body_file, wait=wait),
        _record_text,
    )


@record_app.command("verify")
def record_verify_cmd(
    ctx: typer.Context,
    target: RequiredTargetArg,
    value: Annotated[
        str,
        typer.Argument(metavar="VERDICT", help="PASS or FAIL: every repo's declared checks."),
    ],
    body_file: BodyFile = None,
    wait: WaitOption = CLI_DEFAULT_WAIT,
    as_json: JsonFlag = False,
) -> None:
    """Record the verifier's result (format, lint, types, build, tests of every repo) as
    verify-<n>.md."""
    from router.phase.gates import record_verify

    emit(
        "record",
        as_json,
        lambda: record_verify(cwd_of(ctx), target, value, body_file=body_file, wait=wait),
        _record_text,
    )


@record_app.command("pr")
def record_pr_cmd(
    ctx: typer.Context,
    target: RequiredTargetArg,
    url: Annotated[
        str | None,
        typer.Argument(metavar="[URL]", help="The PR's http(s) URL (or pass --local)."),
    ] = None,
    local: Annotated[
        bool,
        typer.Option(
            "--local",
            help="No PR: record every repo's branch tip, pushed or not (the run is finished).",
        ),
    ] = False,
    repo_name: Annotated[
        str | None,
        typer.Option(
            "--repo",
            metavar="NAME",
            help="The repo whose PR this is, as repos.md names it (default: home).",
        ),
    ] = None,
    wait: WaitOption = CLI_DEFAULT_WAIT,
    as_json: JsonFlag = False,
) -> None:
    """Record an opened PR's URL in pr.md (one per repo: --repo), or with --local the branch
    tips of work kept without a PR (the run is SHIPPED from then on)."""
    from router.phase.gates import record_pr

    emit(
        "record",
        as_json,
        lambda: record_pr(cwd_of(ctx), target, url, local=local, repo_name=repo_name, wait=wait),
        _record_text,
    )


@record_app.command("temp")
def record_temp_cmd(
    ctx: typer.Context,
    target: RequiredTargetArg,
    path: Annotated[
        str, typer.Argument(metavar="PATH", help="Absolute path of a temp file or dir.")
    ],
    wait: WaitOption = CLI_DEFAULT_WAIT,
    as_json: JsonFlag = False,
) -> None:
    """Append an absolute temporary path to temp-paths, for teardown to remove."""
    from router.phase.gates import record_temp

    emit("record", as_json, lambda: record_temp(cwd_of(ctx), target, path, wait=wait), _record_text)


# -- hook ---------------------------------------------------------------------------

hook_app = typer.Typer(help="Agent-host hooks (Claude Code).", no_args_is_help=True)
app.add_typer(hook_app, name="hook")


@hook_app.command("session-start")
def hook_session_start_cmd(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """SessionStart: read the host's JSON on stdin; print the recovery notice as one JSON
    object, or nothing when there is no topic to resume. Always exits 0."""
    # The console entry point answers `hook session-start` without loading the
    # CLI; this command serves --help and callers that pass -C.
    from router.host.sessionstart import session_start

    raise typer.Exit(session_start(str(cwd_of(ctx))))


@hook_app.command("worktree-create")
def hook_worktree_create_cmd(ctx: typer.Context, wait: WaitOption = CLI_DEFAULT_WAIT) -> None:
    """WorktreeCreate: read the host's JSON on stdin (name, cwd); make or find that worktree
    through the creation pipeline and print its absolute path, the only line on stdout. No
    worktree: exit 1 (or 2 for a bad payload) with one line on stderr, and the host stops.
    Without cwd in the payload: CLAUDE_PROJECT_DIR, then -C."""
    import os
    import sys

    from router.create.hostsettings import answered_by_settings
    from router.host.sessionstart import read_payload
    from router.host.worktrees import worktree_create

    settings = answered_by_settings("WorktreeCreate", dict(os.environ))
    if settings is not None:
        # Exit 0 and no path: the client takes the path the settings' hook prints.
        print(f"team-router: the WorktreeCreate hook in {settings} makes it", file=sys.stderr)
        raise typer.Exit(0)

    def work():
        environ = {"CLAUDE_PROJECT_DIR": str(cwd_of(ctx)), **os.environ}
        return worktree_create(read_payload(sys.stdin), environ, wait=wait)

    # Hook protocol, not --json: stdout carries the path alone; warnings and
    # failures go to stderr (emit's text mode does exactly that).
    emit("hook", False, work, lambda result: str(result.home.worktree))


# The exit of `hook worktree-remove` that tells the host the worktree stays (DESIGN §14).
KEPT_EXIT = 1


@hook_app.command("worktree-remove")
def hook_worktree_remove_cmd(wait: WaitOption = CLI_DEFAULT_WAIT) -> None:
    """WorktreeRemove: read the host's JSON on stdin (worktree_path); remove that worktree and
    its branch when that loses nothing, else keep it; sweep residue; say what happened on
    stderr. Exits 1 exactly when the worktree stays, so the host never says "removed"."""
    import os
    import sys

    from router.create.hostsettings import answered_by_settings
    from router.errors import RouterError, ToolFailed
    from router.host.sessionstart import read_payload
    from router.host.worktrees import worktree_remove

    def echo(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    # Only what the host says locates the repo (never this process's directory):
    # a removal must not act on whatever repository the hook happened to start in.
    environ = dict(os.environ)
    settings = answered_by_settings("WorktreeRemove", environ)
    if settings is not None:
        # Not 0: the client reports "removed" when any of its remove hooks exits 0,
        # so only the settings' hook, which acted, may say so.
        echo(f"team-router: the WorktreeRemove hook in {settings} answers for this removal")
        raise typer.Exit(1)
    try:
        result = worktree_remove(read_payload(sys.stdin), environ, wait=wait, echo=echo)
    except RouterError as exc:
        echo(f"team-router: {exc.message} [{exc.code}]")
        raise typer.Exit(KEPT_EXIT) from None
    except (OSError, ToolFailed) as exc:
        # Whatever went wrong, nothing was removed past a step that proved it safe.
        echo(f"team-router: worktree-remove stopped ({exc}); what is left was kept")
        raise typer.Exit(KEPT_EXIT) from None
    for message in result.warnings:
        echo(f"warning: {message}")
    echo(result.line())
    # The pinned client (2.1.332) answers a non-zero exit with "Exited worktree but
    # could not remove it. It is kept at ...", and exit 0 with "Exited and removed".
    raise typer.Exit(KEPT_EXIT if result.stays else 0)
