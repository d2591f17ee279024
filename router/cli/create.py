"""``new``, ``worktrees``, ``init`` and ``install-hooks``: setting a topic (and a repo) up."""

from __future__ import annotations

from router.cli.output import emit_result

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any


def new_cmd(
    cwd: Path,
    *,
    description: str,
    ticket: str | None,
    topic_id: str | None,
    date: str | None,
    fix: bool,
    no_setup: bool,
    line_timeout: float,
    wait: float,
    as_json: bool,
    sparse: tuple[str, ...] | None = None,
) -> int:
    from router.create.fetch import start_early

    # The fetch from origin runs while the creation pipeline loads (~50 ms of imports).
    fetch = start_early(cwd, description, ticket=ticket, topic_id=topic_id, date=date)
    try:
        from router.create.setupcmds import SetupOptions
        from router.create.topic import new_topic

        track = "fix" if fix else None
        setup = SetupOptions(run=not no_setup, line_timeout=line_timeout)
        return emit_result(
            "new",
            as_json,
            lambda: new_topic(
                cwd,
                description,
                ticket=ticket,
                topic_id=topic_id,
                date=date,
                wait=wait,
                track=track,
                sparse=_sparse_option(sparse),
                setup=setup,
                fetch=fetch,
            ),
            new_text,
        )
    finally:
        if fetch is not None:
            fetch.result()  # waited for however the command ended (at once when it was)


def _sparse_option(values: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """``--sparse``'s directories, checked; None when not given (the whole tree)."""
    from router.errors import ErrorCode, RouterError
    from router.names import BadSparseDir, sparse_dirs

    if values is None:
        return None
    try:
        dirs = sparse_dirs(values)
    except BadSparseDir as exc:
        raise RouterError(ErrorCode.USAGE, f"--sparse: {exc}") from None
    if not dirs:
        raise RouterError(ErrorCode.USAGE, "--sparse names no directory; name one, or leave it out")
    return dirs


def worktrees_cmd(
    cwd: Path,
    *,
    plan_dir: str | None,
    strict: bool,
    no_setup: bool,
    line_timeout: float,
    wait: float,
    as_json: bool,
) -> int:
    from router.create.setupcmds import SetupOptions
    from router.create.topic import setup_worktrees

    setup = SetupOptions(run=not no_setup, line_timeout=line_timeout)
    return emit_result(
        "worktrees",
        as_json,
        lambda: setup_worktrees(cwd, plan_dir, strict=strict, wait=wait, setup=setup),
        worktrees_text,
    )


def init_cmd(
    cwd: Path, *, allow_agent: bool, allow_everywhere: bool, write_examples: bool, as_json: bool
) -> int:
    from router.create.initrepo import prepare_repo

    return emit_result(
        "init",
        as_json,
        lambda: prepare_repo(
            cwd,
            allow_agent=allow_agent,
            allow_everywhere=allow_everywhere,
            write_examples=write_examples,
        ),
        _init_text,
    )


def install_hooks_cmd(cwd: Path, *, uninstall: bool, dry_run: bool, as_json: bool) -> int:
    from router.create.hostsettings import install_hooks

    return emit_result(
        "install-hooks",
        as_json,
        lambda: install_hooks(uninstall=uninstall, dry_run=dry_run),
        _install_hooks_text,
    )


def new_text(result: Any) -> str:
    home = result.home
    base = f" from {home.base[:12]}" if home.base else ""
    if home.base and home.on_existing_branch:
        base = f" on its existing branch at {home.base[:12]}"
    where = home.worktree or home.path
    lines = [
        f"Topic {result.topic.id} (branch {result.branch})",
        f"home: {home.status} {where}{base}",
        f"Artifact directory: {result.plan_dir}",
    ]
    if home.sparse:
        lines.insert(2, f"  sparse: {', '.join(home.sparse)} (only these directories checked out)")
    if home.reason:
        lines.insert(2, f"  reason: {home.reason}: {home.message}")
    if home.copied is not None:
        lines.insert(2, f"  .worktreeinclude: {home.copied.line()}")
    if home.submodules:  # the stage before the copy: its line comes first
        lines.insert(2, submodules_line("  ", home.submodules))
    if home.setup is not None and home.setup.worth_saying:
        lines.insert(len(lines) - 1, f"  {home.setup.summary()}")  # last: it ran last
    return "\n".join(lines)


def worktrees_text(result: Any) -> str:
    lines = [f"Topic {result.topic.id} ({result.mode}-repo)"]
    width = max(len(r.name) for r in result.repos)
    for r in result.repos:
        where = r.worktree or r.path
        why = f"  [{r.reason}: {r.message}]" if r.reason else ""
        cone = f"  (sparse: {', '.join(r.sparse)})" if r.sparse else ""
        lines.append(f"  {r.name:<{width}}  {r.status:<8}  {where}{cone}{why}")
        if r.submodules:
            lines.append(submodules_line(f"  {'':<{width}}  ", r.submodules))
        if r.copied is not None:
            lines.append(f"  {'':<{width}}  .worktreeinclude: {r.copied.line()}")
        if r.setup is not None and r.setup.worth_saying:
            lines.append(f"  {'':<{width}}  {r.setup.summary()}")
    if result.mode == "multi":
        lines.append(
            "repos.md ## Worktrees " + ("updated" if result.repos_md_updated else "unchanged")
        )
    return "\n".join(lines)


def submodules_line(indent: str, outcomes: Any) -> str:
    """``submodules: lib checked-out at 3f2a9c1d0b7e; vendor/x failed (why)``."""
    return f"{indent}submodules: " + "; ".join(o.said() for o in outcomes)


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
