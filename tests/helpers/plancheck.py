"""Every real teardown and pr-cleanup a test runs is first planned: the plan is what it then did.

When the check is on (:data:`MODE_ENV`, or a test module that opts in), the
helpers that run the CLI (:func:`helpers.repos.run_cli`, :func:`helpers.faults.run`)
run a real ``teardown`` or ``pr-cleanup`` twice: first the same argv with
``--dry-run --json``, whose steps are the plan, then the command as the test
asked, whose output the test sees unchanged. The real run keeps the steps it ran
in each repo's topic record (``last_run``); they must be the plan, step by step:
the same steps, the same outcome, and the same detail and code wherever the
plan needed no action (an action's detail is the dry run's ``would …``). The
exit code is the plan's too.

Where the comparison cannot apply, a test says why with
``@pytest.mark.no_plan_check("…why…")``, or around one run with
``with unplanned("…why…")`` (a fault injected into git or the filesystem the
plan cannot foresee, another process changing the state between the two runs).
A pr-cleanup of a branch no topic's record names keeps no record: with ``--json``
the steps it printed are compared instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# "all": every test module runs the check; unset: only the modules listed in conftest.py.
MODE_ENV = "TEAM_ROUTER_TEST_PLAN_CHECK"
COMMANDS = ("teardown", "pr-cleanup")
PLANNED = ("repos", "steps")  # the JSON keys that hold a teardown's and a pr-cleanup's steps
# The wording that marks an action a dry run stops before: its detail says what it would do.
CONDITIONAL = re.compile(r"(^|[:;] )(\d+ )?would ")  # "1 would be removed" too
# Exit codes of a run something stopped part-way (the crash seam, SIGKILL, a signal): it did
# not execute its whole plan, so there is nothing whole to compare.
STOPPED = frozenset({137, -9, 130, 143, 129, -15, -2, -1})


@dataclass(slots=True)
class Setting:
    """The running test's choice: check or not, and why not."""

    on: bool = False
    skip: str = ""


current = Setting()
# How many real runs were checked against their plan, and skipped (with why), in this process.
tally: dict[str, int] = {"checked": 0}


@contextlib.contextmanager
def unplanned(reason: str) -> Iterator[None]:
    """The runs inside are not compared with a plan, for ``reason`` (a fault the plan cannot
    foresee, made for this run alone)."""
    before = current.skip
    current.skip = reason
    try:
        yield
    finally:
        current.skip = before


def command_of(args: Sequence[str]) -> str | None:
    """The command of a CLI argv (past ``-C PATH``), or None."""
    rest = list(args)
    while rest and rest[0] == "-C":
        rest = rest[2:]
    return rest[0] if rest else None


def wanted(args: Sequence[str]) -> bool:
    """A real teardown or pr-cleanup (not its dry run, not its help) while the check is on."""
    if not current.on or command_of(args) not in COMMANDS:
        return False
    return not any(a in ("--dry-run", "--help", "-h") for a in args)


def count(outcome: str) -> None:
    tally[outcome] = tally.get(outcome, 0) + 1


def checked(
    args: Sequence[str],
    cwd: Path | None,
    plan: Callable[[list[str]], tuple[int, str]],
    act: Callable[[], Any],
) -> Any:
    """``act()`` (the real run: a result with ``code`` and ``out``), planned first by
    ``plan(dry_argv)`` (its exit code and stdout) and compared with what it recorded.
    Returns what ``act`` returned, untouched."""
    if current.skip:
        count(f"skipped: {current.skip}")
        return act()
    if "--abandon" in args and "--yes" not in args:
        # The run waits for the user's answer (or refuses without a terminal to ask on): no
        # plan knows the answer, and its dry run does not ask.
        count("skipped: --abandon without --yes asks the user first")
        return act()
    where = Path(cwd) if cwd is not None else Path.cwd()
    if command_of(args) == "teardown":
        fetched_as_the_run_does(where, args)
    dry_code, dry_out = plan([*args, "--dry-run", "--json"])
    try:
        dry = json.loads(dry_out)
    except ValueError:
        dry = None
    records = _records(command_of(args), dry, where) if isinstance(dry, dict) else {}
    before = {name: _stamp(path) for name, (path, _) in records.items()}
    real = act()
    code = real.code
    if code in STOPPED:
        count("skipped: the run was stopped part-way")
        return real
    assert dry_code == code, (
        f"planned exit {dry_code}, ran exit {code}: {args}\nplan: {dry_out}\nran: {real.out}"
    )
    if isinstance(dry, dict) and dry.get("blockers"):
        refused_as_planned(args, dry, real)
        return real
    if not isinstance(dry, dict) or not any(isinstance(dry.get(k), list) for k in PLANNED):
        count("refused before any step was planned: the exit code compared")
        return real
    if not records:
        ran = _steps_printed(args, real)
        if ran is None:
            count("skipped: no topic record keeps the run's steps (a branch of no topic)")
            return real
        # A branch of no topic keeps no record: the steps the run printed are what it did.
        assert_same("", dry["steps"], ran)
        count("checked")
        return real
    for name, (path, planned) in records.items():
        if _stamp(path) == before[name]:
            continue  # the run wrote nothing here (refused as a whole: nothing ran)
        ran = _last_run(path)
        assert ran is not None and ran["command"] == command_of(args), (name, ran)
        assert_same(name, planned, ran["steps"])
    count("checked")
    return real


# teardown's options that take a value (the target is the first word that is neither).
VALUED = frozenset({"--wait", "--line-timeout", "-C"})


def target_of(args: Sequence[str]) -> str | None:
    rest = list(args)
    while rest and rest[0] == "-C":
        rest = rest[2:]
    words = iter(rest[1:])
    for word in words:
        if word in VALUED:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def fetched_as_the_run_does(cwd: Path, args: Sequence[str]) -> None:
    """What a real teardown does first, before its plan: fetch origin in every repo of the
    topic. Its dry run does not (it changes nothing), so the plan is made from what the real
    run will see."""
    from router.topic.scope import resolve_topic

    target = target_of(args)
    if target is None:
        return
    try:
        scope = resolve_topic(cwd, target)
    except Exception:
        return  # refused before any repo is known: the same refusal twice
    for t in scope.repos:
        if t.repo is not None and t.repo.git.has_remote("origin"):
            t.repo.git.fetch("origin")


def assert_same(where: str, planned: list[dict[str, Any]], ran: list[dict[str, Any]]) -> None:
    """The plan's steps are the ones run: same names in order, same outcome, and the same
    reason, detail and code wherever the plan's detail is not an action's ``would …`` (an
    action's reason is what it finds as it acts: a test may change the world meanwhile).

    A step the record keeps holds its reason's payload too (``why``): the reason it printed.
    """
    assert [s["name"] for s in planned] == [s["name"] for s in ran], (where, planned, ran)
    for plan, kept in zip(planned, ran, strict=True):
        done = {k: v for k, v in kept.items() if k != "why"}
        if "why" in kept:
            assert kept["why"]["reason"] == done["reason"], (where, kept)
        assert plan["outcome"] == done["outcome"], (where, plan, done)
        if not CONDITIONAL.search(plan["detail"]):
            assert plan == done, (where, plan, done)


def _records(
    command: str | None, dry: dict[str, Any], cwd: Path
) -> dict[str, tuple[Path, list[dict[str, Any]]]]:
    """Where the real run records its steps, per repo: the record's path and the planned steps."""
    from router.topic import state

    if command == "teardown":
        from router.topic.scope import resolve_topic

        if not isinstance(dry.get("id"), str) or not isinstance(dry.get("repos"), list):
            return {}
        try:
            scope = resolve_topic(cwd, dry["id"])
        except Exception:
            return {}
        planned = {r["name"]: r["steps"] for r in dry["repos"]}
        return {
            t.name: (state.record_path(t.repo.common_dir, scope.id), planned[t.name])
            for t in scope.repos
            if t.repo is not None and t.name in planned
        }
    from router.topic.workspace import primary_clone

    if not isinstance(dry.get("branch"), str) or not isinstance(dry.get("steps"), list):
        return {}
    try:
        common = primary_clone(cwd).common_dir
    except Exception:
        return {}
    topic = state.topic_of_branch(common, dry["branch"])
    if topic is None:
        return {}
    return {"": (state.record_path(common, topic), dry["steps"])}


def refused_as_planned(args: Sequence[str], dry: dict[str, Any], real: Any) -> None:
    """A plan its blockers refused (pr-cleanup's): the real run refuses with the same error
    and, with ``--json``, names the same blockers."""
    ran = _printed(args, real)
    if ran is None:
        count("refused as planned: the exit code compared")
        return
    assert (ran.get("blockers"), ran.get("error")) == (dry["blockers"], dry["error"]), (dry, ran)
    count("refused as planned: its blockers compared")


def _printed(args: Sequence[str], real: Any) -> dict[str, Any] | None:
    """What a pr-cleanup run printed with ``--json`` (None: not asked for, or not JSON)."""
    if command_of(args) != "pr-cleanup" or "--json" not in args:
        return None
    try:
        data = json.loads(real.out)
    except (AttributeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _steps_printed(args: Sequence[str], real: Any) -> list[dict[str, Any]] | None:
    """The steps a pr-cleanup run printed with ``--json`` (None: not asked for, or no steps)."""
    data = _printed(args, real)
    steps = data.get("steps") if data is not None else None
    return steps if isinstance(steps, list) and steps else None


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _last_run(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ran = data.get("last_run") if isinstance(data, dict) else None
    return ran if isinstance(ran, dict) else None


def process_plan(argv: Callable[..., list[str]], cwd: Path, env: dict[str, str]):
    """A dry run as a process of its own, in the environment the real one gets."""

    def plan(args: list[str]) -> tuple[int, str]:
        full = {**os.environ, **env}
        full.pop("TEAM_ROUTER_CRASH_AT", None)
        proc = subprocess.run(
            argv(*args, cwd=cwd),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            env=full,
            check=False,
            timeout=300,
        )
        return proc.returncode, proc.stdout

    return plan
