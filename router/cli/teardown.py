"""``teardown``, ``sweep``, ``local-state`` and ``restore``: taking a topic apart without losing work."""

from __future__ import annotations

from router import interrupt
from router.cli.output import emit_result, line_echo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def teardown_cmd(
    cwd: Path,
    *,
    target: str,
    integrate: bool,
    force: bool,
    dry_run: bool,
    remove_reused: bool,
    line_timeout: float,
    wait: float,
    as_json: bool,
) -> int:
    from router.teardown.teardown import teardown

    with interrupt.deferred():
        return emit_result(
            "teardown",
            as_json,
            lambda: teardown(
                cwd,
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


def sweep_cmd(
    cwd: Path, *, host_worktrees: bool, force: bool, dry_run: bool, wait: float, as_json: bool
) -> int:
    if host_worktrees:
        from router.host.worktrees import sweep_host_worktrees

        return emit_result(
            "sweep",
            as_json,
            lambda: sweep_host_worktrees(
                cwd, dry_run=dry_run, wait=wait, echo=line_echo(as_json), force=force
            ),
            _host_sweep_text,
        )
    from router.teardown.sweep import sweep_repo

    return emit_result(
        "sweep", as_json, lambda: sweep_repo(cwd, dry_run=dry_run, force=force), _sweep_text
    )


def local_state_cmd(
    cwd: Path, *, target: str, line_timeout: float, dry_run: bool, wait: float, as_json: bool
) -> int:
    from router.teardown.localstate import local_state_for_topic

    with interrupt.deferred():
        return emit_result(
            "local-state",
            as_json,
            lambda: local_state_for_topic(
                cwd,
                target,
                line_timeout=line_timeout,
                wait=wait,
                echo=line_echo(as_json),
                dry_run=dry_run,
            ),
            _local_text,
        )


def restore_cmd(cwd: Path, *, target: str, repo: str | None, wait: float, as_json: bool) -> int:
    from router.teardown.restore import restore_topic

    with interrupt.deferred():
        return emit_result(
            "restore",
            as_json,
            lambda: restore_topic(cwd, target, repo=repo, wait=wait),
            _restore_text,
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
    # Here, not at the top: a teardown's words load while its first gits run.
    from router.teardown.wording import in_words

    lines = [f"{'would sweep' if result.dry_run else 'swept'}: {p}" for p in result.swept]
    lines += [f"  {in_words(note)}" for snapped in result.snapshotted for note in snapped.notes]
    lines += [line for kept in result.kept for line in _kept_lines(kept, result.dry_run)]
    lines += [f"could not remove {p}: {in_words(error)}" for p, error in result.failed]
    if result.live:
        # Said so a user who counts the directories is not left wondering about the rest.
        worktrees = "worktree" if result.live == 1 else "worktrees"
        lines.append(f"left alone: {result.live} live {worktrees} (registered with git)")
    if result.no_residue:
        lines.append(f"no residue under {result.root}/.claude/worktrees")
    return "\n".join(lines)


def _local_text(result) -> str:
    lines = []
    for report in result.reports:
        lines.append(f"{report.repo}: {report.summary()}")
        lines += temp_lines(report.temp_paths, indent="  ")
    return "\n".join(lines)


def _restore_text(result) -> str:
    from router.cli.create import submodules_line

    lines = []
    for r in result.repos:
        lines.append(f"{r.name}: {r.status}: {r.detail}")
        if r.submodules:
            lines.append(submodules_line("  ", r.submodules))
    if result.interrupted:
        lines.append(f"{result.error['message']} [interrupted]")
    return "\n".join(lines)


# -- text ---------------------------------------------------------------------


def teardown_text(result) -> str:
    if result.dry_run:
        head = "Plan (dry run, nothing changed)"
    elif result.refusal is not None:
        head = "Refused (nothing was removed in any repo); the plan"
    else:
        head = "Teardown"
    lines = [f"{head} of {result.id}"]
    for repo in result.repos:
        lines.append(f"{repo.name}  {repo.worktree or '(no worktree)'}")
        if result.refusal is not None:
            lines += _refused_lines(repo, dry_run=result.dry_run)
        else:
            lines += step_lines(repo.steps, width=15, dry_run=result.dry_run)
        if repo.local_state is not None:
            lines += temp_lines(repo.local_state.temp_paths, indent="    ")
    # A dry run's last lines are the real run's, in the conditional.
    lines += [f"{'would sweep' if result.dry_run else 'swept'}: {p}" for p in result.swept]
    lines += [line for kept in result.kept for line in _kept_lines(kept, result.dry_run)]
    if result.refusal is not None:
        blockers = [s for r in result.repos for s in r.steps if s.outcome == "refused"]
        refused = "would be refused" if result.dry_run else "refused"
        lines.append(
            f"teardown of {result.id} {refused}: {len(blockers)} refused step(s) above; fix "
            "each, then run it again"
        )
        return "\n".join(lines)
    if not result.swept and not result.kept:
        lines.append("no residue found")
    return "\n".join(lines)


def _refused_lines(repo, *, dry_run: bool) -> list[str]:
    """A refused repo's blockers, then one line for the steps not done, each of which
    follows with what it would do once the refusal is cleared (its plan)."""
    blockers = [s for s in repo.steps if s.stopped]
    lines = step_lines(blockers, width=15, dry_run=dry_run)
    rest = [p for s, p in zip(repo.steps, repo.planned, strict=True) if not s.stopped]
    if not rest:
        return lines
    # The code the held-back steps' reasons name (the error's), not the first in step order.
    where = f"{repo.refused_by} here" if repo.refused_by else "another repo"
    refused = "would be refused" if dry_run else "refused"
    skipped = "would be skipped" if dry_run else "skipped"
    column = len("would be refused ") if dry_run else len("refused ")
    lines.append(
        f"  {'the rest':<15} {skipped:<{column}} not done: teardown {refused} ({where}); "
        "once it is not, each would go as follows:"
    )
    return lines + ["  " + line for line in step_lines(rest, width=15, dry_run=True)]


def step_lines(steps, *, width: int, dry_run: bool) -> list[str]:
    """One line per step: name, outcome, detail. A dry run's outcome is the real run's,
    in the conditional (``would be done``): nothing was done."""
    from router.teardown.steps import conditional

    outcomes = [conditional(s.outcome) if dry_run else str(s.outcome) for s in steps]
    column = len("would be refused ") if dry_run else len("refused ")
    return [
        f"  {s.name:<{width}} {o:<{column}} {s.detail}"
        for s, o in zip(steps, outcomes, strict=True)
    ]


def _kept_lines(kept, dry_run: bool) -> list[str]:
    """A residue kept (a dry run: would be), and the first 20 of its files."""
    head = f"{'would keep' if dry_run else 'kept'} ({kept.reason}): {kept.path}"
    shown = [head, *(f"    {f}" for f in kept.files[:20])]
    if len(kept.files) > 20:
        shown.append(f"    ... and {len(kept.files) - 20} more (--json lists them all)")
    return shown


def temp_lines(temp_paths, *, indent: str) -> list[str]:
    return [f"{indent}temp path {t.path}: {t.said}{_why(t)}" for t in temp_paths]


def _why(temp) -> str:
    if not temp.check:
        return ""
    return f" ({temp.check}: {temp.detail})" if temp.detail else f" ({temp.check})"
