"""``new``, ``worktrees`` and ``init``: setting a topic up."""

from __future__ import annotations

from typing import Annotated

import typer

from router.cli.app import JsonFlag, WaitOption, app, cwd_of, emit
from router.cli.early import CLI_DEFAULT_WAIT, new_text, worktrees_text


@app.command("new")
def new_cmd(
    ctx: typer.Context,
    description: Annotated[
        str, typer.Argument(metavar="DESCRIPTION", help="What the topic builds, in a few words.")
    ],
    ticket: Annotated[
        str | None,
        typer.Option("--ticket", metavar="T", help="Ticket id: the id becomes <T>-<slug>."),
    ] = None,
    topic_id: Annotated[
        str | None, typer.Option("--id", metavar="ID", help="Use ID verbatim (validated).")
    ] = None,
    date: Annotated[
        str | None,
        typer.Option("--date", metavar="D", help="Date prefix YYYY-MM-DD instead of today."),
    ] = None,
    fix: Annotated[
        bool,
        typer.Option(
            "--fix", help="A bug fix: QUESTION, PLAN, IMPLEMENT, PR (no research or design)."
        ),
    ] = False,
    wait: WaitOption = CLI_DEFAULT_WAIT,
    as_json: JsonFlag = False,
) -> None:
    """WORKTREE phase: derive the topic id, create the home worktree and the plan dir."""
    from router.create.topic import new_topic

    track = "fix" if fix else None
    emit(
        "new",
        as_json,
        lambda: new_topic(
            cwd_of(ctx),
            description,
            ticket=ticket,
            topic_id=topic_id,
            date=date,
            wait=wait,
            track=track,
        ),
        new_text,
    )


@app.command("worktrees")
def worktrees_cmd(
    ctx: typer.Context,
    plan_dir: Annotated[
        str | None,
        typer.Argument(
            metavar="[PLAN_DIR]", help="Plan dir or topic id; default: the newest topic."
        ),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict", help="Any refusal or fallback rolls back this run's worktrees and exits 1."
        ),
    ] = False,
    wait: WaitOption = CLI_DEFAULT_WAIT,
    as_json: JsonFlag = False,
) -> None:
    """Create or reuse every repo's worktree for a topic; write the ## Worktrees section."""
    from router.create.topic import setup_worktrees

    emit(
        "worktrees",
        as_json,
        lambda: setup_worktrees(cwd_of(ctx), plan_dir, strict=strict, wait=wait),
        worktrees_text,
    )


@app.command("init")
def init_cmd(
    ctx: typer.Context,
    allow_agent: Annotated[
        bool,
        typer.Option(
            "--allow-agent",
            help="Let Claude Code run team-router without a prompt: add Bash(team-router:*) "
            "to .claude/settings.local.json (kept out of git status), here and in every other "
            "repo this repo's topics reach (worktrees adds it to repos they reach later).",
        ),
    ] = False,
    allow_everywhere: Annotated[
        bool,
        typer.Option(
            "--allow-agent-everywhere",
            help="Add Bash(team-router:*) to your user settings (~/.claude/settings.json, or "
            "$CLAUDE_CONFIG_DIR/settings.json) instead: every repo on this machine.",
        ),
    ] = False,
    write_examples: Annotated[
        bool,
        typer.Option(
            "--write-examples",
            help="Write .worktreeinclude and .teamteardown.example into the repo (commit them); "
            "by default they go under the git dir and the work tree stays clean.",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Prepare this repo: info/exclude lines; example .worktreeinclude and .teamteardown.example."""
    from router.create.initrepo import prepare_repo

    emit(
        "init",
        as_json,
        lambda: prepare_repo(
            cwd_of(ctx),
            allow_agent=allow_agent,
            allow_everywhere=allow_everywhere,
            write_examples=write_examples,
        ),
        _init_text,
    )


def _init_text(result) -> str:
    from router.create.permission import PERMISSION_RULE

    lines = [f"Prepared {result.repo}:"]
    lines += [f"  {item}" for item in result.actions]
    lines += _plugin_lines(result.plugin_commands)
    if result.allowed_by is None:
        # The settings rule holds in `claude -p` as in a session.
        lines += [
            "",
            f"Let the agent run team-router without a prompt ({PERMISSION_RULE}):",
            "  team-router init --allow-agent             (this repo and those its topics reach)",
            "  team-router init --allow-agent-everywhere  (your user settings: every repo)",
        ]
    return "\n".join(lines)


def _plugin_lines(commands: list[str]) -> list[str]:
    from router.create.initrepo import installed_copy

    if installed_copy():
        head = ["", "Install the Claude Code plugin:"]
    else:
        head = [
            "",
            "This team-router runs from a source checkout: load the Claude Code plugin from it",
            "in each session (a marketplace install would copy the whole checkout, .venv",
            "included; `pipx install` the checkout for a copy whose init prints those lines):",
        ]
    return head + [f"  {cmd}" for cmd in commands]


@app.command("install-hooks")
def install_hooks_cmd(
    uninstall: Annotated[
        bool, typer.Option("--uninstall", help="Remove exactly the hooks this command adds.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the change to the settings; write nothing.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Route Claude Code's own worktrees (claude --worktree, EnterWorktree, isolated agents)
    through team-router: add its WorktreeCreate and WorktreeRemove hooks to your user settings
    (~/.claude/settings.json, or $CLAUDE_CONFIG_DIR/settings.json), leaving every other key.
    Needed only with a client older than 2.1.332 (the plugin's own hooks serve newer ones);
    with both, the plugin's stand aside, so each worktree is handled once."""
    from router.create.hostsettings import install_hooks

    emit(
        "install-hooks",
        as_json,
        lambda: install_hooks(uninstall=uninstall, dry_run=dry_run),
        _install_hooks_text,
    )


def _install_hooks_text(result) -> str:
    lines = [f"{result.settings_file}:"]
    lines += [f"  {item}" for item in result.actions]
    if result.diff:
        lines += ["", result.diff.rstrip("\n")]
    if result.dry_run:
        lines.append("dry run: nothing was written" if result.changed else "dry run: no change")
    elif not result.changed:
        lines.append("no change")
    return "\n".join(lines)
