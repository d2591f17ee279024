"""The dry run says what the run does: each step's decision, made once, planned then carried out.

For teardown and pr-cleanup, in states an earlier run left (a rerun, pr-cleanup
run first in a secondary repo, a kill part-way), refused, or skipping steps:
``--dry-run --json`` and then the real run ``--json`` on the same state agree
step by step — the same steps, the same outcome, and the same detail wherever
the decision needed no action (an action's detail is the dry run's conditional,
``would …``); the dry run's last line and error are the real run's in the
conditional.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.fakegh import hide_gh, install_fake_gh, make_github_repo
from helpers.faults import CRASHED, KILLED, finish, git_killer, spawn
from helpers.faults import run as run_process
from helpers.origin import commit_on_origin, merge_on_origin
from helpers.plancheck import unplanned
from helpers.plans import artifact
from helpers.repos import CliResult, commit, git, make_repo, run_cli, status, unlock, write
from helpers.topics import Topic, multi_topic, new_topic, ship, snapshot_of, steps_of

from router.teardown.steps import STEPS

# The wording that marks an action a dry run stops before: its detail says what it would do.
CONDITIONAL = re.compile(r"(^|[:;] )(\d+ )?would ")  # "1 would be removed" too


@pytest.fixture
def no_gh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return hide_gh(tmp_path, monkeypatch)


def declare(repo: Path, log: Path, name: str) -> None:
    """A ``.teamteardown`` on ``repo``'s main (and origin's) appending ``name`` to ``log``."""
    write(repo / ".teamteardown", f'echo {name} >> "{log}"\n')
    git(repo, "add", ".teamteardown")
    git(repo, "commit", "-q", "-m", "declare local state")
    git(repo, "push", "-q", "origin", "main")


def merged_topic(workspace: Path, log: Path) -> Topic:
    """Home ``web`` and secondary ``api``, each declaring local state, with a commit on the
    topic's branch merged on origin; shipped (its pr.md written)."""
    topic = ship(multi_topic(workspace, ("api",)))
    for name, repo in topic.repos.items():
        declare(repo, log, name)
        worktree = topic.worktrees[name]
        commit(worktree, f"{name}.py", "a = 1\n", f"{name} work")
        git(worktree, "push", "-q", "origin", f"{topic.id}:{topic.id}")
        merge_on_origin(repo, topic.id, how="merge")
    return topic


def fetch_all(*repos: Path) -> None:
    """What origin has, in every repo: a teardown's dry run does not fetch, its real run does."""
    for repo in repos:
        git(repo, "fetch", "-q", "origin")


def steps_in(data: dict) -> list[tuple[str, dict]]:
    """Every step of a teardown's or a pr-cleanup's JSON, with its repo's name."""
    if data["command"] == "teardown":
        return [(r["name"], s) for r in data["repos"] for s in r["steps"]]
    return [("", s) for s in data["steps"]]


def assert_planned_as_run(dry: CliResult, real: CliResult) -> None:
    """The dry run's decisions are what the real run did: step by step, the same outcome and
    reason, and the same detail (and code) but where the dry run words an action it stops
    before; the same exit code, and the same error in the conditional."""
    assert dry.json["dry_run"] is True and real.json["dry_run"] is False
    planned, executed = steps_in(dry.json), steps_in(real.json)
    assert [(w, s["name"]) for w, s in planned] == [(w, s["name"]) for w, s in executed]
    for (where, plan), (_, done) in zip(planned, executed, strict=True):
        assert plan["outcome"] == done["outcome"], (where, plan, done)
        if "reason" in done:
            # An action the dry run stops before is planned with the reason it then reports.
            assert plan.get("reason") == done["reason"], (where, plan, done)
        if not CONDITIONAL.search(plan["detail"]):
            assert plan == done, (where, plan, done)
    # A refused pr-cleanup: every blocker it planned is one the real run refused with.
    assert dry.json.get("blockers") == real.json.get("blockers"), (dry.json, real.json)
    if real.json["command"] == "teardown":
        # What the sweep would take and keep is what it then takes and keeps.
        assert (dry.json["swept"], dry.json["kept"]) == (real.json["swept"], real.json["kept"])
    assert dry.code == real.code, (dry.json.get("error"), real.json.get("error"))
    error, planned_error = real.json.get("error"), dry.json.get("error")
    assert (planned_error is None) == (error is None)
    if error is not None:
        assert planned_error["code"] == error["code"]
        if planned_error["message"] != error["message"]:
            # The same refusal, said of a run that has not happened.
            assert " would be refused" in planned_error["message"], planned_error
            assert (
                planned_error["message"].replace(" would be refused", " refused", 1)
                == (error["message"])
            )


def plan_then_run(command: str, target: str, cwd: Path, *flags: str) -> tuple[CliResult, CliResult]:
    dry = run_cli(command, target, "--dry-run", "--json", *flags, cwd=cwd)
    real = run_cli(command, target, "--json", *flags, cwd=cwd)
    return dry, real


# -- every scenario: the dry run plans what the real run then does ------------------------------


def _fresh(topic: Topic, log: Path) -> None:
    pass


def _rerun(topic: Topic, log: Path) -> None:
    first = run_cli("teardown", topic.id, "--json", cwd=topic.home)
    assert first.code == 0, first.out + first.err


def _after_pr_cleanup_in_the_secondary(topic: Topic, log: Path) -> None:
    first = run_cli("pr-cleanup", topic.id, "--json", cwd=topic.repos["api"])
    assert first.code == 0, first.out + first.err
    assert log.read_text() == "api\n"


def _refused(topic: Topic, log: Path) -> None:
    write(topic.worktrees["api"] / "draft.txt", "not committed\n")


def _killed_at(step: str) -> Callable[[Topic, Path], None]:
    def kill(topic: Topic, log: Path) -> None:
        killed = run_process("teardown", topic.id, "--json", cwd=topic.home, crash_at=step)
        assert killed.code == CRASHED, killed.out + killed.err

    return kill


def _unmerged_work(topic: Topic, log: Path) -> None:
    """A commit on api's branch after its merge: --integrate picks it onto main."""
    commit(topic.worktrees["api"], "more.py", "b = 2\n", "more api work")


def _dirty(topic: Topic, log: Path) -> None:
    """An untracked file in api's worktree: --force snapshots it before the removal."""
    write(topic.worktrees["api"] / "draft.txt", "not committed\n")


def _residue(topic: Topic, log: Path) -> None:
    """What late writers left under .claude/worktrees: residue to sweep, and a folder to keep."""
    leftovers = topic.home / ".claude" / "worktrees"
    write(leftovers / "old-topic" / "tmp" / "session.json", "{}\n")
    write(leftovers / "keep-me" / "notes.md", "precious\n")


# scenario -> (what happened before, teardown's flags)
TEARDOWNS: dict[str, tuple[Callable[[Topic, Path], None], tuple[str, ...]]] = {
    "fresh": (_fresh, ()),
    "rerun": (_rerun, ()),
    "after-pr-cleanup-in-a-secondary": (_after_pr_cleanup_in_the_secondary, ()),
    "refused": (_refused, ()),
    "integrate": (_unmerged_work, ("--integrate",)),
    "force": (_dirty, ("--force",)),
    "residue": (_residue, ()),
    **{f"killed-at-{step}": (_killed_at(step), ()) for step in STEPS},
}


def logged(log: Path) -> str:
    return log.read_text() if log.exists() else ""


@pytest.mark.parametrize("scenario", list(TEARDOWNS))
def test_a_teardowns_dry_run_plans_each_step_as_the_run_then_does_it(
    workspace, tmp_path, no_gh, scenario
):
    before, flags = TEARDOWNS[scenario]
    log = tmp_path / "ran.log"
    topic = merged_topic(workspace, log)
    before(topic, log)
    fetch_all(*topic.repos.values())
    ran = logged(log)
    dry = run_cli("teardown", topic.id, "--dry-run", "--json", *flags, cwd=topic.home)
    assert logged(log) == ran  # no line ran
    real = run_cli("teardown", topic.id, "--json", *flags, cwd=topic.home)
    assert_planned_as_run(dry, real)


def _cleanup_topic(workspace: Path, log: Path, *, merge: str | None = "squash") -> Topic:
    """A topic in ``web`` (declaring local state) with a commit pushed to origin, merged
    there (``merge``: how; None: not merged) and its branch deleted on origin."""
    web = make_repo(workspace, "web")
    declare(web, log, "web")
    topic = new_topic(web)
    worktree = topic.worktrees["home"]
    commit(worktree, "limits.py", "LIMIT = 10\n", "add limits")
    git(worktree, "push", "-q", "origin", f"{topic.id}:{topic.id}")
    if merge is not None:
        merge_on_origin(web, topic.id, how=merge)
    return topic


def _cleaned_up(topic: Topic, *flags: str) -> None:
    first = run_cli("pr-cleanup", topic.id, "--json", *flags, cwd=topic.home)
    assert first.code == 0, first.out + first.err


def _kept_on_origin(topic: Topic, tmp_path: Path) -> None:
    """Merged with its branch kept on origin (no auto-delete)."""
    merge_on_origin(topic.home, topic.id, how="merge", delete=False)


def _killed_at_branch(topic: Topic, tmp_path: Path) -> None:
    merge_on_origin(topic.home, topic.id)
    killed = run_process("teardown", topic.id, "--json", cwd=topic.home, crash_at="branch")
    assert killed.code == CRASHED, killed.out + killed.err


def _killed_removing_then_written_to(topic: Topic, tmp_path: Path) -> None:
    """pr-cleanup killed inside ``git worktree remove`` (README.md deleted), then a new file there."""
    merge_on_origin(topic.home, topic.id)
    env = git_killer(
        tmp_path / "killer-bin",
        "worktree remove",
        'for wt; do :; done; rm -f "$wt/README.md"',
        real=False,
    )
    spawned = spawn("pr-cleanup", topic.id, "--json", cwd=topic.home, env=env, new_group=True)
    killed = finish(spawned)
    assert killed.code == KILLED, killed.out + killed.err
    write(topic.worktrees["home"] / "notes.txt", "written after the kill\n")


def _merged(topic: Topic, tmp_path: Path) -> None:
    merge_on_origin(topic.home, topic.id, how="squash")


def _merged_and_cleaned_up(topic: Topic, tmp_path: Path) -> None:
    _merged(topic, tmp_path)
    _cleaned_up(topic)


def _abandoned(topic: Topic, tmp_path: Path) -> None:
    _cleaned_up(topic, "--abandon", "--yes")


# scenario -> (what happened before, pr-cleanup's flags)
CLEANUPS: dict[str, tuple[Callable[[Topic, Path], None], tuple[str, ...]]] = {
    "merged": (_merged, ()),
    "merged-rerun": (_merged_and_cleaned_up, ()),
    "origin-keeps-the-branch": (_kept_on_origin, ()),
    "origin-keeps-the-branch-delete-remote": (_kept_on_origin, ("--delete-remote",)),
    "abandon": (lambda topic, tmp_path: None, ("--abandon", "--yes")),
    "abandon-rerun": (_abandoned, ("--abandon", "--yes")),
    "after-a-teardown-killed-at-branch": (_killed_at_branch, ()),
    "killed-removing-then-written-to": (_killed_removing_then_written_to, ()),
}


@pytest.mark.parametrize("abandon", [False, True], ids=["merged", "abandon"])
def test_a_pr_cleanup_of_a_branch_no_topic_names_is_planned_as_it_runs(
    workspace, tmp_path, no_gh, abandon
):
    """No record keeps such a run's steps: the plan is compared with the steps it printed."""
    web = make_repo(workspace, "web")
    checkout = workspace / "fix-typo"
    git(web, "worktree", "add", "-q", "-b", "fix-typo", str(checkout))
    commit(checkout, "typo.txt", "fixed\n", "fix a typo")
    git(checkout, "push", "-q", "origin", "fix-typo:fix-typo")
    flags = ("--abandon", "--yes") if abandon else ()
    if not abandon:
        merge_on_origin(web, "fix-typo", how="squash")
    dry, real = plan_then_run("pr-cleanup", "fix-typo", web, *flags)
    assert real.code == 0, real.out + real.err
    assert_planned_as_run(dry, real)
    assert not checkout.exists() and "fix-typo" not in git(web, "branch", "--list", "fix-typo")


@pytest.mark.parametrize("scenario", list(CLEANUPS))
def test_a_pr_cleanups_dry_run_plans_each_step_as_the_run_then_does_it(
    workspace, tmp_path, no_gh, scenario
):
    before, flags = CLEANUPS[scenario]
    log = tmp_path / "ran.log"
    topic = _cleanup_topic(workspace, log, merge=None)
    before(topic, tmp_path)
    ran = logged(log)
    dry = run_cli("pr-cleanup", topic.id, "--dry-run", "--json", *flags, cwd=topic.home)
    assert logged(log) == ran  # no line ran
    real = run_cli("pr-cleanup", topic.id, "--json", *flags, cwd=topic.home)
    assert_planned_as_run(dry, real)


# -- each difference, on its own ------------------------------------------------------------------


def test_after_pr_cleanup_in_a_secondary_its_local_state_is_planned_as_already_run(
    workspace, tmp_path, no_gh
):
    log = tmp_path / "ran.log"
    topic = merged_topic(workspace, log)
    first = run_cli("pr-cleanup", topic.id, "--json", cwd=topic.repos["api"])
    assert first.code == 0, first.out + first.err
    fetch_all(*topic.repos.values())
    already = (
        "already ran in an earlier teardown or pr-cleanup of this topic "
        f"(`team-router local-state {topic.id}` runs it again)"
    )
    text = run_cli("teardown", topic.id, "--dry-run", cwd=topic.home)
    assert text.code == 0, text.out + text.err
    assert f"  {'local-state':<15} {'would be skipped':<17} {already}" in text.out.splitlines()
    dry, real = plan_then_run("teardown", topic.id, topic.home)
    expected = {
        "name": "local-state",
        "outcome": "skipped",
        "reason": "already-ran",
        "detail": already,
    }
    assert steps_of(dry.json, "api")["local-state"] == expected
    assert steps_of(real.json, "api")["local-state"] == expected
    assert log.read_text() == "api\nhome\n"  # api's ran once, by pr-cleanup


def test_local_state_with_nothing_declared_is_planned_skipped_as_the_run_skips_it(home_repo):
    topic = new_topic(home_repo)
    dry, real = plan_then_run("teardown", topic.id, home_repo)
    nothing = "no .teamteardown on main — nothing declared; no temp paths recorded"
    expected = {
        "name": "local-state",
        "outcome": "skipped",
        "reason": "nothing-declared",
        "detail": nothing,
    }
    assert steps_of(dry.json, "home")["local-state"] == expected
    assert steps_of(real.json, "home")["local-state"] == expected


def test_a_dry_runs_text_words_each_outcome_in_the_conditional(home_repo, tmp_path):
    declare(home_repo, tmp_path / "ran.log", "web")
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    res = run_cli("teardown", topic.id, "--dry-run", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    line = f'echo web >> "{tmp_path / "ran.log"}"'
    assert res.out.splitlines() == [
        f"Plan (dry run, nothing changed) of {topic.id}",
        f"home  {wt}",
        f"  {'integrate':<15} {'would be skipped':<17} nothing to integrate: {topic.branch} is "
        "empty (nothing on it since it was cut)",
        f"  {'remove':<15} {'would be done':<17} would remove {wt}",
        f"  {'branch':<15} {'would be done':<17} would delete {topic.branch}",
        f"  {'verify-gone':<15} {'would be done':<17} would re-check that {wt} is gone",
        f"  {'update-default':<15} {'would be done':<17} would leave main as it is: it already "
        f"holds origin/main as last fetched; no origin/{topic.branch} ref: nothing to prune",
        f"  {'plan-dir':<15} {'would be skipped':<17} no docs/plans/{topic.id}/ in the primary "
        "clone",
        f"  {'sweep':<15} {'would be skipped':<17} no residue under {wt.parent}",
        f"  {'local-state':<15} {'would be done':<17} .teamteardown on origin/main: "
        f"1 line(s); would run: {line}; no temp paths recorded",
        "no residue found",
    ]
    assert (tmp_path / "ran.log").exists() is False and wt.is_dir()


def test_a_temp_path_with_nothing_declared_is_planned_without_a_line_to_run(home_repo):
    topic = ship(new_topic(home_repo))
    wt = topic.worktrees["home"]
    scratch = Path(os.environ["TMPDIR"]) / "nothing-declared-scratch"
    write(scratch / "x", "x\n")
    write(topic.plan_dir / "temp-paths", f"{scratch}\n")
    dry = run_cli("teardown", topic.id, "--dry-run", cwd=home_repo)
    assert dry.code == 0, dry.out + dry.err
    assert dry.out.splitlines() == [
        f"Plan (dry run, nothing changed) of {topic.id}",
        f"home  {wt}",
        f"  {'integrate':<15} {'would be skipped':<17} nothing to integrate: {topic.branch} is "
        "empty (nothing on it since it was cut)",
        f"  {'remove':<15} {'would be done':<17} would remove {wt}",
        f"  {'branch':<15} {'would be done':<17} would delete {topic.branch}",
        f"  {'verify-gone':<15} {'would be done':<17} would re-check that {wt} is gone",
        f"  {'update-default':<15} {'would be done':<17} would leave main as it is: it already "
        f"holds origin/main as last fetched; no origin/{topic.branch} ref: nothing to prune",
        f"  {'plan-dir':<15} {'would be skipped':<17} no docs/plans/{topic.id}/ in the primary "
        "clone",
        f"  {'sweep':<15} {'would be skipped':<17} no residue under {wt.parent}",
        f"  {'local-state':<15} {'would be done':<17} no .teamteardown on main — nothing "
        "declared; temp paths: 1 would be removed",
        f"    temp path {scratch}: would be removed",
        "no residue found",
    ]
    assert scratch.is_dir() and wt.is_dir()
    real = run_cli("teardown", topic.id, cwd=home_repo)
    assert real.code == 0, real.out + real.err
    done = "no .teamteardown on main — nothing declared; temp paths: 1 removed"
    lines = [line.split(None, 2) for line in real.out.splitlines()]
    assert [x for x in lines if x[0] == "local-state"] == [["local-state", "done", done]]
    assert not scratch.exists()


def test_a_refused_teardowns_dry_run_shows_every_step_and_ends_as_the_refusal_does(workspace):
    topic = ship(multi_topic(workspace, ("api",)))
    api_wt = topic.worktrees["api"]
    write(api_wt / "draft.txt", "not committed\n")
    dry, real = plan_then_run("teardown", topic.id, topic.home)
    assert dry.code == real.code == 1
    # Every other step says what it would do, as the real run's refusal shows it.
    assert_planned_as_run(dry, real)
    assert steps_of(dry.json, "home")["remove"] == {
        "name": "remove",
        "outcome": "skipped",
        "reason": "teardown-refused",
        "detail": f"not done: teardown refused (another repo): would remove "
        f"{topic.worktrees['home']}",
    }
    assert dry.json["error"]["message"] == real.json["error"]["message"].replace(
        " refused,", " would be refused,"
    )
    text = run_cli("teardown", topic.id, "--dry-run", cwd=topic.home)
    real_text = run_cli("teardown", topic.id, cwd=topic.home)
    assert text.out.splitlines()[-1] == (
        f"teardown of {topic.id} would be refused: 1 refused step(s) above; fix each, then run "
        "it again"
    )
    assert real_text.out.splitlines()[-1] == (
        f"teardown of {topic.id} refused: 1 refused step(s) above; fix each, then run it again"
    )
    assert text.err.splitlines()[-1] == real_text.err.splitlines()[-1].replace(
        " refused,", " would be refused,"
    )
    assert (api_wt / "draft.txt").read_text() == "not committed\n"


def test_a_default_branch_left_to_the_user_is_planned_as_left(home_repo):
    topic = new_topic(home_repo)
    commit_on_origin(home_repo, "README.md", "# web, changed on origin\n")
    commit(home_repo, "README.md", "# web, changed here\n", "local edit of the same line")
    fetch_all(home_repo)
    planned = run_cli("teardown", topic.id, "--dry-run", "--json", cwd=home_repo)
    # The pull would stop at the conflict: planned as the failure the run leaves to the user.
    assert steps_of(planned.json, "home")["update-default"] == {
        "name": "update-default",
        "outcome": "failed",
        "reason": "pull-failed",
        "detail": "would fail and be left to you: git pull --rebase origin main would stop at a "
        "conflict (main's 1 commit(s) of its own and origin/main change the same lines); no "
        f"origin/{topic.branch} ref: nothing to prune",
    }
    first = run_cli("teardown", topic.id, "--json", cwd=home_repo)
    assert steps_of(first.json, "home")["update-default"]["outcome"] == "failed"
    dry, real = plan_then_run("teardown", topic.id, home_repo)
    left = {
        "name": "update-default",
        "outcome": "skipped",
        "reason": "left-earlier",
        "detail": "not done: left to you by an earlier run: main could not be updated to "
        f"origin/main; update it yourself (`git -C {home_repo} pull --rebase origin main`)",
    }
    assert steps_of(dry.json, "home")["update-default"] == left
    assert steps_of(real.json, "home")["update-default"] == left


def test_the_topics_worktree_on_another_branch_is_planned_as_kept_by_verify_gone(home_repo):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    git(wt, "switch", "-q", "-c", "spike")
    commit(wt, "spike.txt", "the agent's work\n", "spike")
    dry, real = plan_then_run("teardown", topic.id, home_repo)
    kept = {
        "name": "verify-gone",
        "outcome": "skipped",
        "reason": "still-registered",
        "detail": f"{wt} is still a registered worktree",
    }
    assert steps_of(dry.json, "home")["verify-gone"] == kept
    assert steps_of(real.json, "home")["verify-gone"] == kept
    assert git(wt, "rev-parse", "--abbrev-ref", "HEAD") == "spike"


def test_a_branch_the_primary_clone_has_checked_out_is_planned_as_kept(home_repo):
    topic = ship(new_topic(home_repo))
    wt = topic.worktrees["home"]
    commit(wt, "limits.py", "LIMIT = 10\n", "add limits")
    git(wt, "push", "-q", "origin", f"{topic.id}:{topic.id}")
    merge_on_origin(home_repo, topic.id)
    killed = run_process("teardown", topic.id, "--json", cwd=home_repo, crash_at="branch")
    assert killed.code == CRASHED, killed.err
    assert not wt.exists()
    git(home_repo, "switch", "-q", topic.branch)  # to look at the work, in the primary clone
    fetch_all(home_repo)
    dry, real = plan_then_run("teardown", topic.id, home_repo)
    kept = {
        "name": "branch",
        "outcome": "skipped",
        "reason": "primary-holds",
        "detail": f"{topic.branch} stays while the primary clone holds the work",
    }
    assert steps_of(dry.json, "home")["branch"] == kept
    assert steps_of(real.json, "home")["branch"] == kept
    assert git(home_repo, "rev-parse", "--abbrev-ref", "HEAD") == topic.branch


@pytest.fixture
def half_removed(home_repo: Path):
    """A merged topic whose removal git stopped half-way (a file it could not delete, made
    immutable with ``chattr +i``): git dropped the registration, the file stays, and the
    removal's journal with it. Yields the topic once the file can be deleted again."""
    topic = ship(new_topic(home_repo))
    wt = topic.worktrees["home"]
    commit(wt, "src/limits.py", "LIMIT = 10\n", "add limits")
    git(wt, "push", "-q", "origin", f"{topic.id}:{topic.id}")
    merge_on_origin(home_repo, topic.id)
    target = wt / "src" / "limits.py"
    made = status_of(["chattr", "+i", str(target)])
    if made != 0:
        pytest.skip("chattr +i is not possible on this filesystem")
    try:
        with unplanned("an immutable file, made to stop git's removal half-way"):
            first = run_cli("teardown", topic.id, "--json", cwd=home_repo)
        assert steps_of(first.json, "home")["remove"]["code"] == "removal-blocked", first.out
    finally:
        status_of(["chattr", "-i", str(target)])
    assert sorted(p.name for p in wt.rglob("*")) == ["limits.py", "src"]
    yield topic


def status_of(argv: list[str]) -> int:
    return subprocess.run(argv, capture_output=True, check=False).returncode


def test_a_removal_stopped_half_way_is_planned_as_finished_not_swept(home_repo, half_removed):
    topic, wt = half_removed, half_removed.worktrees["home"]
    dry, real = plan_then_run("teardown", topic.id, home_repo)
    assert steps_of(dry.json, "home")["remove"] == {
        "name": "remove",
        "outcome": "done",
        "reason": "finished",
        "detail": f"would finish removing {wt} (its removal was interrupted)",
    }
    assert steps_of(real.json, "home")["remove"] == {
        "name": "remove",
        "outcome": "done",
        "reason": "finished",
        "detail": f"removed {wt} (finished a removal that was interrupted)",
    }
    # The sweep leaves it to the remove step: no residue, kept nothing, in both.
    nothing = {
        "name": "sweep",
        "outcome": "skipped",
        "reason": "no-residue",
        "detail": f"no residue under {wt.parent}",
    }
    assert steps_of(dry.json, "home")["sweep"] == steps_of(real.json, "home")["sweep"] == nothing
    assert dry.json["kept"] == real.json["kept"] == []
    assert not wt.exists() and status(home_repo) == ""


def test_a_file_written_into_a_half_removed_worktree_is_planned_as_refused(home_repo, half_removed):
    topic, wt = half_removed, half_removed.worktrees["home"]
    write(wt / "notes.txt", "written since\n")
    dry, real = plan_then_run("teardown", topic.id, home_repo)
    refused = steps_of(real.json, "home")["remove"]
    assert refused["outcome"] == "refused" and refused["code"] == "removal-interrupted"
    assert steps_of(dry.json, "home")["remove"] == refused
    assert dry.code == real.code == 1
    assert (wt / "notes.txt").read_text() == "written since\n"


def test_a_pr_cleanups_dry_run_plans_the_verify_gone_step_it_runs(workspace, tmp_path, no_gh):
    topic = _cleanup_topic(workspace, tmp_path / "ran.log")
    dry, real = plan_then_run("pr-cleanup", topic.id, topic.home)
    names = [s["name"] for s in real.json["steps"]]
    assert "verify-gone" in names
    assert [s["name"] for s in dry.json["steps"]] == names


def test_origin_keeping_the_branch_is_planned_as_kept_and_not_pruned(workspace, tmp_path, no_gh):
    topic = _cleanup_topic(workspace, tmp_path / "ran.log", merge=None)
    merge_on_origin(topic.home, topic.id, how="merge", delete=False)
    tip = git(topic.home, "rev-parse", f"origin/{topic.branch}")
    dry, real = plan_then_run("pr-cleanup", topic.id, topic.home)
    for data in (dry.json, real.json):
        got = {s["name"]: s for s in data["steps"]}
        assert got["remote-branch"] == {
            "name": "remote-branch",
            "outcome": "skipped",
            "reason": "remote-kept",
            "detail": f"origin still has {topic.branch} ({tip[:12]}); pass --delete-remote to "
            "delete it",
        }
        assert got["prune"] == {
            "name": "prune",
            "outcome": "skipped",
            "reason": "not-pruned",
            "detail": f"origin still has {topic.branch}: refs/remotes/origin/{topic.branch} stays",
        }
    assert git(topic.home, "rev-parse", f"origin/{topic.branch}") == tip


def test_a_pr_cleanup_rerun_plans_its_local_state_as_already_run(workspace, tmp_path, no_gh):
    log = tmp_path / "ran.log"
    topic = _cleanup_topic(workspace, log)
    _cleaned_up(topic)
    dry, real = plan_then_run("pr-cleanup", topic.id, topic.home)
    already = {
        "name": "local-state",
        "outcome": "skipped",
        "reason": "already-ran",
        "detail": "already ran in an earlier teardown or pr-cleanup of this topic "
        f"(`team-router local-state {topic.id}` runs it again)",
    }
    assert {s["name"]: s for s in dry.json["steps"]}["local-state"] == already
    assert {s["name"]: s for s in real.json["steps"]}["local-state"] == already
    assert log.read_text() == "web\n"


def test_a_pr_cleanups_dry_run_text_words_each_outcome_in_the_conditional(
    workspace, tmp_path, no_gh
):
    topic = _cleanup_topic(workspace, tmp_path / "ran.log")
    res = run_cli("pr-cleanup", topic.id, "--dry-run", cwd=topic.home)
    assert res.code == 0, res.out + res.err
    rows = res.out.splitlines()[2:]
    assert [row[:35] for row in rows] == [
        f"  {name:<14} {outcome:<17} "
        for name, outcome in (
            ("remove", "would be done"),
            ("verify-gone", "would be done"),
            ("update-default", "would be done"),
            ("branch", "would be done"),
            ("remote-branch", "would be skipped"),
            ("prune", "would be done"),
            ("reclaim", "would be skipped"),
            ("plan-dir", "would be skipped"),
            ("local-state", "would be done"),
        )
    ]


def test_a_dry_runs_last_lines_are_the_real_runs_in_the_conditional(home_repo):
    topic = new_topic(home_repo)
    leftovers = home_repo / ".claude" / "worktrees"
    write(leftovers / "old-topic" / "tmp" / "session.json", "{}\n")
    write(leftovers / "keep-me" / "notes.md", "precious\n")
    dry = run_cli("teardown", topic.id, "--dry-run", cwd=home_repo)
    assert (leftovers / "old-topic").is_dir()
    real = run_cli("teardown", topic.id, cwd=home_repo)
    assert dry.code == real.code == 0, dry.out + real.out
    tail = [
        f"would sweep: {leftovers / 'old-topic'}",
        f"would keep (unexpected-files): {leftovers / 'keep-me'}",
        "    notes.md",
    ]
    assert dry.out.splitlines()[-3:] == tail
    assert real.out.splitlines()[-3:] == [
        f"swept: {leftovers / 'old-topic'}",
        f"kept (unexpected-files): {leftovers / 'keep-me'}",
        "    notes.md",
    ]


# -- pr-cleanup refused: every blocker planned, then the real run refuses with the first ------------


def _refusal_topic(workspace: Path) -> Topic:
    """A topic in ``web`` (origin's URL GitHub's, for a fake gh) with a commit pushed, squash
    merged on origin and fetched: a pr-cleanup would take it apart but for what a scenario adds."""
    web = make_github_repo(workspace, "web")
    topic = new_topic(web)
    worktree = topic.worktrees["home"]
    commit(worktree, "limits.py", "LIMIT = 10\n", "add limits")
    git(worktree, "push", "-q", "origin", f"{topic.id}:{topic.id}")
    merge_on_origin(web, topic.id, how="squash")
    return topic


def _sleeping(stack: contextlib.ExitStack, cwd: Path) -> subprocess.Popen:
    """A process of this test sitting in ``cwd`` until the test ends (killed in its teardown)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], cwd=cwd)
    stack.callback(proc.wait)
    stack.callback(proc.kill)
    return proc


def _dirty_primary(topic: Topic, stack: contextlib.ExitStack) -> None:
    write(topic.home / "notes.txt", "mine\n")


def _dirty_worktree(topic: Topic, stack: contextlib.ExitStack) -> None:
    write(topic.worktrees["home"] / "scratch.txt", "wip\n")


def _unshipped(topic: Topic, stack: contextlib.ExitStack) -> None:
    for name in ("task.md", "design.md"):
        artifact(topic.plan_dir, name)


def _nested_clone(topic: Topic, stack: contextlib.ExitStack) -> None:
    """A repository of its own inside the worktree (ignored there), with a commit nowhere else."""
    with (topic.home / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write("/scratch/\n")
    clone = topic.worktrees["home"] / "scratch" / "experiment"
    git(topic.home, "init", "-q", "-b", "main", str(clone))
    commit(clone, "idea.py", "idea\n", "a local-only repository")


def _reflog_only(topic: Topic, stack: contextlib.ExitStack) -> None:
    """A commit made on a detached HEAD, then left: only the worktree's HEAD reflog keeps it."""
    worktree = topic.worktrees["home"]
    git(worktree, "checkout", "-q", "--detach")
    commit(worktree, "experiment.py", "x = 1\n", "experiment")
    git(worktree, "checkout", "-q", topic.branch)


def _in_use(topic: Topic, stack: contextlib.ExitStack) -> None:
    _sleeping(stack, topic.worktrees["home"])


def _held(topic: Topic, stack: contextlib.ExitStack) -> None:
    sleeper = _sleeping(stack, topic.home)
    held = run_cli("hold", topic.id, "--pid", str(sleeper.pid), "--session", "s-4", cwd=topic.home)
    assert held.code == 0, held.out + held.err


def _rebasing(topic: Topic, stack: contextlib.ExitStack) -> None:
    """A rebase stopped on a conflict in the worktree: git lists it detached, the branch is busy."""
    worktree = topic.worktrees["home"]
    commit(worktree, "limits.py", "LIMIT = 20\n", "a follow-up")
    commit_on_origin(topic.home, "limits.py", "LIMIT = 99\n")
    git(worktree, "fetch", "-q", "origin")
    git(worktree, "rebase", "origin/main", check=False)
    assert "rebase" in git(worktree, "status")


def _checked_out_in_the_primary(topic: Topic, stack: contextlib.ExitStack) -> None:
    worktree = topic.worktrees["home"]
    unlock(topic.home, worktree)
    git(topic.home, "worktree", "remove", "--force", str(worktree))
    git(topic.home, "checkout", "-q", topic.branch)


def _not_merged(topic: Topic, stack: contextlib.ExitStack) -> None:
    commit(topic.worktrees["home"], "more.py", "x = 1\n", "a follow-up never pushed")


def _no_merged_pr(topic: Topic, stack: contextlib.ExitStack) -> None:
    """gh works and knows no PR from this repository: the content proof alone needs --yes."""
    mp = stack.enter_context(pytest.MonkeyPatch.context())
    install_fake_gh(topic.home.parent.parent / "gh", mp)


def _both(*befores: Callable[[Topic, contextlib.ExitStack], None]):
    def before(topic: Topic, stack: contextlib.ExitStack) -> None:
        for each in befores:
            each(topic, stack)

    return before


REMOVE, BRANCH, PLAN_DIR, UPDATE = "remove", "branch", "plan-dir", "update-default"
# scenario -> (what makes the refusal, pr-cleanup's flags, the blockers planned: (step, code))
REFUSALS: dict[
    str,
    tuple[Callable[[Topic, contextlib.ExitStack], None], tuple[str, ...], list[tuple[str, str]]],
] = {
    "dirty-primary": (_dirty_primary, (), [(UPDATE, "dirty-worktree")]),
    "dirty-worktree": (_dirty_worktree, (), [(REMOVE, "dirty-worktree")]),
    "unshipped-run": (_unshipped, (), [(PLAN_DIR, "unshipped-run")]),
    "nested-work": (_nested_clone, (), [(REMOVE, "nested-work")]),
    "nested-work-abandon": (_nested_clone, ("--abandon", "--yes"), [(REMOVE, "nested-work")]),
    "reflog-only-commit": (_reflog_only, (), [(REMOVE, "unintegrated-commits")]),
    "in-use": (_in_use, (), [(REMOVE, "held")]),
    "in-use-abandon": (_in_use, ("--abandon", "--yes"), [(REMOVE, "held")]),
    "held": (_held, (), [(REMOVE, "held")]),
    "rebasing": (_rebasing, (), [(BRANCH, "branch-checked-out")]),
    "checked-out-in-the-primary": (
        _checked_out_in_the_primary,
        (),
        [(BRANCH, "branch-checked-out")],
    ),
    "not-merged": (_not_merged, (), [(BRANCH, "not-merged")]),
    "no-merged-pr": (_no_merged_pr, (), [(BRANCH, "no-merged-pr")]),
    "dirty-and-unshipped": (
        _both(_dirty_worktree, _unshipped),
        (),
        [(REMOVE, "dirty-worktree"), (PLAN_DIR, "unshipped-run")],
    ),
    "three-at-once": (
        _both(_dirty_primary, _dirty_worktree, _in_use),
        (),
        [(UPDATE, "dirty-worktree"), (REMOVE, "dirty-worktree"), (REMOVE, "held")],
    ),
}


def plan_text(dry: CliResult, branch: str) -> str:
    """A refused plan's text: its proof (if it was judged), each blocker as the step it keeps
    from running, and the count."""
    data = dry.json
    lines = [f"Plan (dry run, nothing changed) of {branch} (mode: {data['mode']})"]
    if data["proof"] is not None:
        lines.append(f"proof ({data['proof']['content'] or 'none'}): {data['proof']['detail']}")
    lines += [f"  {b['name']:<14} would be refused  {b['detail']}" for b in data["blockers"]]
    lines.append(
        f"pr-cleanup of {branch} would be refused: {len(data['blockers'])} blocker(s) above; "
        "fix each, then run it again"
    )
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("scenario", list(REFUSALS))
def test_a_refused_pr_cleanup_plans_every_blocker_and_the_run_refuses_as_planned(
    workspace, no_gh, scenario
):
    before, flags, blockers = REFUSALS[scenario]
    topic = _refusal_topic(workspace)
    with contextlib.ExitStack() as stack:
        before(topic, stack)
        fetch_all(topic.home)  # what origin has: both runs fetch, and a fetch then moves nothing
        world = snapshot_of(topic.home)
        text = run_cli("pr-cleanup", topic.id, "--dry-run", *flags, cwd=topic.home)
        dry, real = plan_then_run("pr-cleanup", topic.id, topic.home, *flags)
        real_text = run_cli("pr-cleanup", topic.id, *flags, cwd=topic.home)
        after = snapshot_of(topic.home)
    planned = dry.json["blockers"]
    assert [(b["name"], b["outcome"], b["code"]) for b in planned] == [
        (step, "refused", code) for step, code in blockers
    ]
    assert (dry.code, real.code, text.code, real_text.code) == (1, 1, 1, 1)
    assert (dry.json["steps"], real.json["steps"]) == ([], [])  # no step runs past a blocker
    assert_planned_as_run(dry, real)
    # The error is the first blocker's (the refusal the run always named first); the others
    # are counted.
    more = [b["code"] for b in planned[1:]]
    also = f" (and {len(more)} more blocker(s): {', '.join(more)})" if more else ""
    error = {"code": blockers[0][1], "message": planned[0]["detail"] + also}
    assert dry.json["error"] == real.json["error"] == error
    # The dry run's text lists them all; the real run's names the first, as ever, after the
    # warnings its --json gives (as the dry run's text says them).
    assert text.out == plan_text(dry, topic.branch)
    assert text.err.endswith(f"team-router: {error['message']} [{error['code']}]\n"), text.err
    assert (real_text.out, real_text.err) == (
        "",
        "".join(f"warning: {w}\n" for w in real.json["warnings"])
        + f"team-router: {error['message']} [{error['code']}]\n",
    )
    # Nothing was touched: every ref (origin's included), the worktrees, every file of every
    # checkout (the worktree's, its plan dir and any repository inside it).
    assert after == world
    assert topic.branch in git(topic.home, "branch", "--list", topic.branch)
