"""The early path: ``new``, ``worktrees`` and ``teardown`` without typer.

Importing typer alone costs more than most answers (DESIGN §15); ``worktrees``
and ``teardown`` run across
every repo of a topic, where typer's start-up is time all of them wait for.
The console entry point sends an argument list here only when typer would
read it the same way (:func:`early_command`): ``-C`` with an existing
directory first, one target at most, ``--json``, ``new``'s ``--id``,
``--ticket`` and ``--date``, ``worktrees --strict``, and ``teardown <target>``
with its flags that take no value. Anything else
(``--help``, a second target, another option) goes to the typer app. Both
print through :mod:`router.cli.output`, so the bytes and the exit code are
the same whichever path answered.
"""

from __future__ import annotations

import os
from collections import namedtuple
from pathlib import Path

from router import interrupt
from router.cli.main import start_dir
from router.cli.output import emit_result, guarded, line_echo
from router.cli.spec import CLI_DEFAULT_LINE_TIMEOUT, CLI_DEFAULT_WAIT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any  # annotations only: importing typing costs ~3 ms

# command -> (least and most positional arguments, whether --json is required,
# the other flags it takes, the options it takes that take a value)
_SHAPES = {
    "new": (1, 1, False, (), ("--id", "--ticket", "--date")),
    "worktrees": (0, 1, False, ("--strict",), ()),
    "teardown": (1, 1, False, ("--integrate", "--force", "--dry-run", "--remove-reused"), ()),
}
# One command the early path answers, as the typer app would have read it: -C's
# directory, and the command's flags but --json (a namedtuple: a dataclass
# would import dataclasses on --help's path, typing.NamedTuple typing).
EarlyCall = namedtuple(
    "EarlyCall",
    ["command", "target", "as_json", "directory", "flags", "values"],
    defaults=(None, (), ()),
)


def early_command(args: list[str]) -> EarlyCall | None:
    """What to run when the early path may answer ``args``, else None (the typer app answers).

    ``-C DIR`` may come first, naming an existing directory (anything else
    about it is the app's to report). An option's value is the next argument,
    given once and not starting with ``-`` (``--id=X`` and the like are the app's).
    """
    directory = None
    if args[:1] == ["-C"] and len(args) > 1 and not args[1].startswith("-"):
        if not os.path.isdir(args[1]):
            return None
        directory, args = Path(args[1]), args[2:]
    if not args or args[0] not in _SHAPES:
        return None
    least, most, needs_json, others, valued = _SHAPES[args[0]]
    flags: list[str] = []
    values: dict[str, str] = {}
    positional: list[str] = []
    rest = args[1:]
    while rest:
        arg, rest = rest[0], rest[1:]
        if arg in valued:
            if arg in values or not rest or rest[0].startswith("-"):
                return None
            values[arg], rest = rest[0], rest[1:]
        elif arg.startswith("-"):
            flags.append(arg)
        else:
            positional.append(arg)
    given = set(flags)
    if (
        len(given) != len(flags)
        or not given <= {"--json", *others}
        or not least <= len(positional) <= most
        or (needs_json and "--json" not in given)
    ):
        return None
    target = positional[0] if positional else None
    return EarlyCall(
        args[0],
        target,
        "--json" in given,
        directory,
        tuple(given - {"--json"}),
        tuple(values.items()),
    )


def run_early(call: EarlyCall) -> int:
    """Answer one command the way the typer app would: same output, same exit code."""
    command, target, as_json = call.command, call.target, call.as_json

    def run() -> int:
        cwd = start_dir(call.directory)
        if command == "new":
            from router.create.topic import new_topic

            options = dict(call.values)
            return emit_result(
                command,
                as_json,
                lambda: new_topic(
                    cwd,
                    target,  # new takes exactly one
                    ticket=options.get("--ticket"),
                    topic_id=options.get("--id"),
                    date=options.get("--date"),
                    wait=CLI_DEFAULT_WAIT,
                ),
                new_text,
            )
        if command == "worktrees":
            from router.create.topic import setup_worktrees

            strict = "--strict" in call.flags
            return emit_result(
                command,
                as_json,
                lambda: setup_worktrees(cwd, target, strict=strict, wait=CLI_DEFAULT_WAIT),
                worktrees_text,
            )
        return _teardown(call, cwd)

    return guarded(command, as_json, run)


def _teardown(call: Any, cwd: Path) -> int:
    from router.teardown.topic import teardown

    with interrupt.deferred():
        return emit_result(
            "teardown",
            call.as_json,
            lambda: teardown(
                cwd,
                call.target,
                integrate="--integrate" in call.flags,
                force="--force" in call.flags,
                dry_run="--dry-run" in call.flags,
                remove_reused="--remove-reused" in call.flags,
                wait=CLI_DEFAULT_WAIT,
                line_timeout=CLI_DEFAULT_LINE_TIMEOUT,
                echo=line_echo(call.as_json),
            ),
            teardown_text,
        )


# -- text -------------------------------------------------------------------------


def new_text(result) -> str:
    home = result.home
    base = f" from {home.base[:12]}" if home.base else ""
    where = home.worktree or home.path
    lines = [
        f"Topic {result.topic.id} (branch {result.branch})",
        f"home: {home.status} {where}{base}",
        f"Artifact directory: {result.plan_dir}",
    ]
    if home.reason:
        lines.insert(2, f"  reason: {home.reason}: {home.message}")
    return "\n".join(lines)


def worktrees_text(result: Any) -> str:
    lines = [f"Topic {result.topic.id} ({result.mode}-repo)"]
    width = max(len(r.name) for r in result.repos)
    for r in result.repos:
        where = r.worktree or r.path
        why = f"  [{r.reason}: {r.message}]" if r.reason else ""
        lines.append(f"  {r.name:<{width}}  {r.status:<8}  {where}{why}")
    if result.mode == "multi":
        lines.append(
            "repos.md ## Worktrees " + ("updated" if result.repos_md_updated else "unchanged")
        )
    return "\n".join(lines)


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
            lines += temp_lines(repo.local_state.temp_paths, indent="    ", dry_run=result.dry_run)
    # A dry run's last lines are the real run's, in the conditional.
    lines += [f"{'would sweep' if result.dry_run else 'swept'}: {p}" for p in result.swept]
    for kept in result.kept:
        lines.append(f"{'would keep' if result.dry_run else 'kept'} ({kept.reason}): {kept.path}")
        lines += file_lines(kept.files)
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
    where = f"{blockers[0].code} here" if blockers else "another repo"
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


def file_lines(files, limit: int = 20) -> list[str]:
    shown = [f"    {f}" for f in files[:limit]]
    if len(files) > limit:
        shown.append(f"    ... and {len(files) - limit} more (--json lists them all)")
    return shown


def temp_lines(temp_paths, *, indent: str, dry_run: bool = False) -> list[str]:
    would = "would be " if dry_run else ""
    return [f"{indent}temp path {t.path}: {would}{t.outcome}{_why(t)}" for t in temp_paths]


def _why(temp) -> str:
    if not temp.check:
        return ""
    return f" ({temp.check}: {temp.detail})" if temp.detail else f" ({temp.check})"
