"""Killed mid-command (``TEAM_ROUTER_CRASH_AT``): the same command run again finishes the job."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.faults import CRASHED, run
from helpers.repos import branches, commit, git, make_repo, run_cli, status, worktree_paths, write

from router.topic import state

ID = "2026-05-01-add-thing"
CREATION_STEPS = ("inspect", "base", "claim", "add", "verify", "submodules", "setup", "record")


def _doctor_findings(repo) -> list[tuple[str, str]]:
    res = run_cli("doctor", "--json", cwd=repo)
    assert res.code == 0, res.err
    return [(f["kind"], f["path"]) for f in res.json["findings"]]


def _assert_one_complete_worktree(repo, *, home: bool) -> None:
    worktree = repo / ".claude/worktrees" / ID
    assert worktree_paths(repo) == [str(repo), str(worktree)]
    assert os.listdir(repo / ".claude/worktrees") == [ID]  # no stray claim, no -2
    assert git(worktree, "symbolic-ref", "--short", "HEAD") == ID
    assert git(repo, "rev-parse", ID) == git(repo, "rev-parse", "origin/main")
    assert branches(repo) == [ID, "main"]
    record = state.read_record(repo / ".git", ID)
    assert record is not None
    assert set(CREATION_STEPS) <= set(record.steps)
    assert record.worktree == str(worktree)
    assert record.branch_created is True
    assert record.base_commit == git(repo, "rev-parse", "origin/main")
    if home:
        assert (worktree / "docs/plans" / ID).is_dir()
    assert status(repo) == ""


@pytest.mark.parametrize("step", CREATION_STEPS)
def test_new_killed_before_each_step_is_finished_by_running_it_again(home_repo, step):
    args = ("new", "Add thing", "--date", "2026-05-01", "--json")
    crashed = run(*args, cwd=home_repo, crash_at=step)
    assert crashed.code == CRASHED, crashed.err
    assert crashed.out == ""
    again = run(*args, cwd=home_repo)
    assert again.code == 0, again.err
    assert again.json["id"] == ID  # the same topic, not a "-2"
    assert again.json["home"]["status"] in {"created", "existing"}
    _assert_one_complete_worktree(home_repo, home=True)
    home = state.read_record(home_repo / ".git", ID)
    assert [r.name for r in home.repos] == ["home"]
    assert home.description == "Add thing"
    assert _doctor_findings(home_repo) == []
    # And a third run is a no-op that says so.
    third = run_cli(*args, cwd=home_repo)
    assert third.json["home"]["status"] == "existing"


@pytest.mark.parametrize("step", CREATION_STEPS)
def test_worktrees_killed_before_each_step_is_finished_by_running_it_again(
    workspace, home_repo, step
):
    api = make_repo(workspace, "api")
    shared = make_repo(workspace, "shared")
    made = run_cli("new", "Add thing", "--date", "2026-05-01", "--json", cwd=home_repo)
    plan = home_repo / ".claude/worktrees" / ID / "docs/plans" / ID
    assert made.json["plan_dir"] == str(plan)
    repos_md = write(
        plan / "repos.md",
        f"# Repos\n\n## Home repo\n- **name:** web\n- **path:** {home_repo}\n\n"
        f"## Additional repos\n- **name:** api\n  **path:** {api}\n"
        f"- **name:** shared\n  **path:** {shared}\n",
    )
    crashed = run("worktrees", ID, "--json", cwd=home_repo, crash_at=step)
    assert crashed.code == CRASHED, crashed.err
    again = run("worktrees", ID, "--json", cwd=home_repo)
    assert again.code == 0, again.err
    assert [r["status"] in {"created", "existing"} for r in again.json["repos"]] == [True] * 3
    _assert_one_complete_worktree(home_repo, home=True)
    for repo in (api, shared):
        _assert_one_complete_worktree(repo, home=False)
    text = repos_md.read_text()
    assert f"- api: {api / '.claude/worktrees' / ID}" in text
    assert f"- shared: {shared / '.claude/worktrees' / ID}" in text
    assert text.count("## Worktrees") == 1
    home = state.read_record(home_repo / ".git", ID)
    assert sorted(r.name for r in home.repos) == ["api", "home", "shared"]
    assert _doctor_findings(home_repo) == []
    # The rewrite is stable: a third run changes nothing.
    third = run_cli("worktrees", ID, "--json", cwd=home_repo)
    assert third.json["repos_md_updated"] is False
    assert repos_md.read_text() == text


@pytest.mark.parametrize("step", ("verify", "setup", "record"))
def test_new_killed_after_add_leaves_the_primary_clone_clean(home_repo, step):
    # A `?? .claude/` in the primary clone would block every other topic's
    # teardown --integrate and pr-cleanup until someone finished this one.
    crashed = run("new", "Add thing", "--id", ID, "--json", cwd=home_repo, crash_at=step)
    assert crashed.code == CRASHED, crashed.err
    assert (home_repo / ".claude/worktrees" / ID / ".git").is_file()  # git had added it
    assert status(home_repo) == ""


def test_new_killed_once_its_worktree_is_recorded_leaves_a_record_naming_its_plan_dir(home_repo):
    # The worktree's last creation step is written with the topic's own fields: a run
    # killed right after it (before its setup lines) leaves a record that already names
    # the plan dir and the home repo's worktree, as the finished run's does.
    args = ("new", "Add thing", "--id", ID, "--json")
    crashed = run(*args, cwd=home_repo, crash_at="setup-commands")
    assert crashed.code == CRASHED, crashed.err
    worktree = home_repo / ".claude/worktrees" / ID
    record = state.read_record(home_repo / ".git", ID)
    assert record is not None and "record" in record.steps
    assert record.plan_dir == str(worktree / "docs/plans" / ID)
    assert [(r.name, r.path, r.worktree) for r in record.repos] == [
        ("home", str(home_repo), str(worktree))
    ]
    again = run(*args, cwd=home_repo)
    assert again.code == 0, again.err
    assert (again.json["home"]["status"], again.json["plan_dir"]) == ("existing", record.plan_dir)
    assert state.read_record(home_repo / ".git", ID) == record  # nothing left to write


def test_worktrees_killed_after_add_leaves_every_primary_clone_clean(workspace, home_repo):
    api = make_repo(workspace, "api")
    made = run_cli("new", "Add thing", "--id", ID, "--json", cwd=home_repo)
    write(
        Path(made.json["plan_dir"]) / "repos.md",
        f"# Repos\n\n## Home repo\n- **name:** web\n- **path:** {home_repo}\n\n"
        f"## Additional repos\n- **name:** api\n  **path:** {api}\n",
    )
    crashed = run("worktrees", ID, "--json", cwd=home_repo, crash_at="verify")
    assert crashed.code == CRASHED, crashed.err
    assert (api / ".claude/worktrees" / ID / ".git").is_file()
    assert status(api) == ""


def test_a_crash_leaves_a_stale_lock_owner_that_doctor_reports_and_repairs(home_repo):
    crashed = run("new", "Add thing", "--id", ID, "--json", cwd=home_repo, crash_at="add")
    assert crashed.code == CRASHED
    owner = state.lock_path(home_repo / ".git", ID).with_suffix(".pid")
    findings = _doctor_findings(home_repo)
    assert ("stale-lock", str(owner)) in findings
    assert ("record-incomplete", str(state.record_path(home_repo / ".git", ID))) in findings
    repaired = run_cli("doctor", "--repair", "--json", cwd=home_repo).json["findings"]
    assert {"kind": "stale-lock", "path": str(owner), "repaired": True} == {
        k: v
        for f in repaired
        if f["kind"] == "stale-lock"
        for k, v in f.items()
        if k in {"kind", "path", "repaired"}
    }
    assert not owner.exists()
    # The empty claim doctor removed is no obstacle: the rerun creates the worktree.
    again = run_cli("new", "Add thing", "--id", ID, "--json", cwd=home_repo)
    assert again.code == 0 and again.json["home"]["status"] == "created"
    _assert_one_complete_worktree(home_repo, home=True)


# -- teardown ----------------------------------------------------------------------

TEARDOWN_STEPS = (
    "integrate",
    "remove",
    "branch",
    "verify-gone",
    "update-default",
    "plan-dir",
    "sweep",
    "local-state",
)


def _declare_local_state(repo, log) -> None:
    """A .teamteardown on main (and origin) that appends one line per run to ``log``."""
    commit(repo, ".teamteardown", f"echo \"$TEAM_BRANCH\" >> '{log}'\n", "declare local state")
    git(repo, "push", "-q", "origin", "main")


@pytest.mark.parametrize("step", TEARDOWN_STEPS)
def test_teardown_integrate_killed_before_each_step_is_finished_by_running_it_again(
    workspace, tmp_path, step
):
    logs = {n: tmp_path / f"local-state-{n}.log" for n in ("web", "api")}
    web = make_repo(workspace, "web")
    api = make_repo(workspace, "api")
    _declare_local_state(web, logs["web"])
    _declare_local_state(api, logs["api"])
    topic = _topic_over(web, api)
    home_wt, api_wt = topic["home"], topic["api"]
    home_commit = commit(home_wt, "web.py", "w = 1\n", "web: the change")
    commit(api_wt, "a.py", "a = 1\n", "api: first")
    commit(api_wt, "b.py", "b = 2\n", "api: second")
    assert home_commit
    # The run is finished here, without a PR: its pr.md says so (a run that has not shipped
    # keeps its artifacts).
    shipped = run_cli("record", "pr", ID, "--local", "--json", cwd=web)
    assert shipped.code == 0, shipped.out + shipped.err
    args = ("teardown", ID, "--integrate", "--json")
    crashed = run(*args, cwd=web, crash_at=step)
    assert crashed.code == CRASHED, crashed.err + crashed.out
    again = run(*args, cwd=web)
    assert again.code == 0, again.err + again.out

    # Every commit is on main exactly once (no double cherry-pick), nothing lost.
    assert git(web, "log", "--format=%s", "main").splitlines().count("web: the change") == 1
    api_log = git(api, "log", "--format=%s", "main").splitlines()
    assert api_log[:2] == ["api: second", "api: first"]
    assert api_log.count("api: first") == api_log.count("api: second") == 1
    assert (web / "web.py").read_text() == "w = 1\n"
    assert (api / "a.py").read_text() == "a = 1\n" and (api / "b.py").read_text() == "b = 2\n"
    for repo in (web, api):
        assert worktree_paths(repo) == [str(repo)]
        assert branches(repo) == ["main"]
        assert status(repo) == ""
        assert not (repo / ".claude/worktrees" / ID).exists()
    assert not (web / "docs/plans" / ID).exists()
    # Local state ran once per repo, whether the crash came before it or not.
    assert logs["web"].read_text().splitlines() == [ID]
    assert logs["api"].read_text().splitlines() == [ID]
    # A third run is a no-op that exits 0, and doctor finds nothing to repair.
    assert run_cli(*args, cwd=web).code == 0
    assert _doctor_findings(web) == []


def _topic_over(web: Path, api: Path) -> dict[str, Path]:
    made = run_cli("new", "Add thing", "--id", ID, "--json", cwd=web)
    assert made.code == 0, made.err
    plan = web / ".claude/worktrees" / ID / "docs/plans" / ID
    write(
        plan / "repos.md",
        f"# Repos\n\n## Home repo\n- **name:** web\n- **path:** {web}\n\n"
        f"## Additional repos\n- **name:** api\n  **path:** {api}\n",
    )
    res = run_cli("worktrees", ID, "--json", cwd=web)
    assert res.code == 0, res.err
    return {r["name"]: Path(r["worktree"]) for r in res.json["repos"]}


@pytest.mark.parametrize("step", ("remove", "branch", "verify-gone", "update-default"))
def test_a_forced_teardown_killed_mid_way_loses_nothing_on_the_rerun(home_repo, step):
    made = run_cli("new", "Add thing", "--id", ID, "--json", cwd=home_repo)
    worktree = Path(made.json["home"]["worktree"])
    sha = commit(worktree, "kept.py", "k = 1\n", "an unintegrated commit")
    write(worktree / "draft.txt", "uncommitted work\n")
    args = ("teardown", ID, "--force", "--json")
    crashed = run(*args, cwd=home_repo, crash_at=step)
    assert crashed.code == CRASHED, crashed.err + crashed.out
    again = run(*args, cwd=home_repo)
    assert again.code == 0, again.err + again.out
    assert worktree_paths(home_repo) == [str(home_repo)]
    assert branches(home_repo) == ["main"]
    snapshot = f"refs/team-router/snapshots/{ID}"
    # Both the commit and the uncommitted file survive in the snapshot ref ...
    git(home_repo, "merge-base", "--is-ancestor", sha, snapshot)  # raises unless an ancestor
    assert git(home_repo, "show", f"{snapshot}:draft.txt") == "uncommitted work"
    assert git(home_repo, "show", f"{snapshot}:kept.py") == "k = 1"
    # ... and restore brings the worktree back with them.
    restored = run_cli("restore", ID, "--json", cwd=home_repo)
    assert restored.code == 0, restored.out + restored.err
    back = [Path(p) for p in worktree_paths(home_repo)[1:]]
    assert len(back) == 1
    assert (back[0] / "draft.txt").read_text() == "uncommitted work\n"
    assert (back[0] / "kept.py").read_text() == "k = 1\n"
