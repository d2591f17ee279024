from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.faults import argv, hold_open
from helpers.origin import commit_on_origin, merge_on_origin, push_branch
from helpers.plans import artifact
from helpers.repos import (
    FORMATS,
    branches,
    commit,
    git,
    run_cli,
    status,
    unlock,
    worktree_paths,
    write,
)
from helpers.topics import (
    TOPIC_ID,
    configure,
    multi_topic,
    new_topic,
    ship,
    snapshot_of,
    steps_of,
    teardown,
)

from router.teardown.steps import STEPS


def record(repo: Path, topic_id: str) -> dict:
    return json.loads((repo / ".git" / "team-router" / "topics" / f"{topic_id}.json").read_text())


def assert_untouched(topic, before: dict[str, dict[str, str]]) -> None:
    for name, repo in topic.repos.items():
        assert snapshot_of(repo) == before[name], f"{name} changed"


# -- the whole topic ----------------------------------------------------------------


def test_a_clean_multi_repo_topic_is_torn_down_in_every_repo(workspace):
    topic = ship(multi_topic(workspace, ("api", "types")))
    res = teardown(topic)
    assert res.code == 0, res.out + res.err
    data = res.json
    assert data["id"] == topic.id
    assert [r["name"] for r in data["repos"]] == ["home", "api", "types"]
    for name, repo in topic.repos.items():
        steps = steps_of(data, name)
        assert list(steps) == [
            "integrate",
            "remove",
            "branch",
            "verify-gone",
            "update-default",
            "plan-dir",
            "sweep",
            "local-state",
        ]
        assert steps["remove"]["outcome"] == "done"
        assert steps["branch"]["outcome"] == "done"
        assert not topic.worktrees[name].exists()
        assert worktree_paths(repo) == [str(repo)]
        assert topic.branch not in branches(repo)
        assert status(repo) == ""
        assert record(repo, topic.id)["teardown"]["complete"] is True
    assert data["swept"] == [] and data["kept"] == []
    assert [s["name"] for s in data["local_state"]] == ["home", "api", "types"]


def test_a_second_teardown_of_a_torn_down_topic_exits_0(workspace):
    topic = ship(multi_topic(workspace))
    assert teardown(topic).code == 0
    assert not topic.plan_dir.exists()
    again = teardown(topic)
    assert again.code == 0, again.out
    for name in topic.repos:
        steps = steps_of(again.json, name)
        assert steps["remove"]["outcome"] == "skipped"
        assert steps["branch"]["outcome"] == "skipped"
        assert steps["local-state"]["detail"] == (
            "already ran in an earlier teardown or pr-cleanup of this topic "
            f"(`team-router local-state {topic.id}` runs it again)"
        )


def test_teardown_takes_the_plan_dir_path_as_target(home_repo):
    topic = new_topic(home_repo)
    res = run_cli("teardown", str(topic.plan_dir), "--json", cwd=home_repo)
    assert res.code == 0, res.out
    assert not topic.worktrees["home"].exists()


@pytest.mark.parametrize("command", [("teardown",), ("local-state",), ("restore",)])
def test_an_empty_target_is_bad_input_and_never_the_newest_topic(home_repo, command):
    # `team-router teardown "$ID"` with ID unset: the empty string named no topic
    # and discovery's newest one was taken apart.
    topic = new_topic(home_repo)
    res = run_cli(*command, "", "--json", cwd=home_repo)
    assert res.code == 2, res.out
    assert res.json["error"]["code"] == "invalid-id"
    assert topic.worktrees["home"].is_dir() and topic.plan_dir.is_dir()


def test_an_unknown_id_is_bad_input(home_repo):
    res = run_cli("teardown", "2026-05-01-never-made", "--json", cwd=home_repo)
    assert res.code == 2
    assert res.json["error"]["code"] == "no-plan-dir"


def test_dry_run_prints_the_plan_and_changes_nothing(workspace):
    topic = multi_topic(workspace)
    commit(topic.worktrees["api"], "api.py", "x = 1\n", "api work")
    write(topic.worktrees["home"] / "notes.txt", "scratch\n")
    before = {n: snapshot_of(r) for n, r in topic.repos.items()}
    res = teardown(topic, "--dry-run", "--force", "--integrate")
    assert res.code == 0, res.out
    home_wt, api_wt, branch = topic.worktrees["home"], topic.worktrees["api"], topic.branch
    undeclared = "no .teamteardown on main — nothing declared"

    def plan(
        wt: Path,
        integrate: tuple[str, str, str],
        remove: str,
        plan_dir: tuple[str, str],
        local: str,
    ):
        return [
            {
                "name": "integrate",
                "outcome": integrate[0],
                "reason": integrate[1],
                "detail": integrate[2],
            },
            {
                "name": "remove",
                "outcome": "done",
                "reason": "removed",
                "detail": f"would remove {wt}{remove}",
            },
            {
                "name": "branch",
                "outcome": "done",
                "reason": "deleted",
                "detail": f"would delete {branch}",
            },
            {
                "name": "verify-gone",
                "outcome": "done",
                "reason": "gone",
                "detail": f"would re-check that {wt} is gone",
            },
            {
                "name": "update-default",
                "outcome": "done",
                "reason": "up-to-date",
                "detail": "would leave main as it is: it already holds origin/main as last "
                f"fetched; no origin/{branch} ref: nothing to prune",
            },
            {
                "name": "plan-dir",
                "outcome": "skipped",
                "reason": plan_dir[0],
                "detail": plan_dir[1],
            },
            {
                "name": "sweep",
                "outcome": "skipped",
                "reason": "no-residue",
                "detail": f"no residue under {wt.parent}",
            },
            # Nothing declared: skipped, as the real run reports it.
            {
                "name": "local-state",
                "outcome": "skipped",
                "reason": "nothing-declared",
                "detail": local,
            },
        ]

    def local_state(name: str, notes: list[str]) -> dict:
        return {
            "name": name,
            "source": None,
            "declared": False,
            "note": undeclared,
            "commands": [],
            "temp_paths": [],
            "notes": notes,
            "interrupted": False,
        }

    # home's branch has no commit since `new` cut it: empty, which is never "merged".
    empty = f"nothing to integrate: {branch} is empty (nothing on it since it was cut)"
    assert res.json == {
        "ok": True,
        "command": "teardown",
        "id": topic.id,
        "dry_run": True,
        "repos": [
            {
                "name": "home",
                "worktree": str(home_wt),
                "steps": plan(
                    home_wt,
                    ("skipped", "empty", empty),
                    " after writing a snapshot holding the run's artifacts repos.md",
                    ("no-plan-dir", f"no docs/plans/{topic.id}/ in the primary clone"),
                    f"{undeclared}; no temp paths recorded",
                ),
            },
            {
                "name": "api",
                "worktree": str(api_wt),
                "steps": plan(
                    api_wt,
                    ("done", "picked", "would cherry-pick 1 commit(s) onto main"),
                    "",
                    ("not-home", "home repo only"),
                    undeclared,
                ),
            },
        ],
        "swept": [],
        "kept": [],
        "local_state": [local_state("home", ["no temp paths recorded"]), local_state("api", [])],
        "warnings": [
            "dry run: origin was not fetched, so the plan uses what was fetched before (a merge"
            " made since is not seen: `git fetch origin` first for an up-to-date plan)"
        ],
    }
    assert_untouched(topic, before)


def test_dry_run_says_origin_was_not_fetched(home_repo):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "limits.py", "LIMIT = 10\n", "add limits")
    push_branch(topic.worktrees["home"], topic.branch)
    merge_on_origin(home_repo, topic.branch)
    before = snapshot_of(home_repo)
    plan = teardown(topic, "--dry-run")
    assert any("origin was not fetched" in w for w in plan.json["warnings"])
    assert snapshot_of(home_repo) == before
    res = teardown(topic)
    assert res.code == 0, res.out
    assert not any("origin was not fetched" in w for w in res.json["warnings"])


def test_dry_run_of_a_main_behind_origin_says_how_it_would_be_brought_up(home_repo):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "limits.py", "LIMIT = 10\n", "add limits")
    commit_on_origin(home_repo, "UPSTREAM.md", "upstream\n")
    git(home_repo, "fetch", "-q", "origin")
    before = snapshot_of(home_repo)
    plan = teardown(topic, "--dry-run", "--integrate")
    assert plan.code == 0, plan.out
    assert steps_of(plan.json, "home")["update-default"] == {
        "name": "update-default",
        "outcome": "done",
        "reason": "updated",
        "detail": "would fast-forward main to origin/main; "
        f"no origin/{topic.branch} ref: nothing to prune",
    }
    assert snapshot_of(home_repo) == before


def test_dry_run_of_a_refused_teardown_says_so_and_exits_1(workspace):
    topic = multi_topic(workspace)
    write(topic.worktrees["api"] / "draft.txt", "not committed\n")
    before = {n: snapshot_of(r) for n, r in topic.repos.items()}
    res = teardown(topic, "--dry-run")
    assert res.code == 1
    assert steps_of(res.json, "api")["remove"]["code"] == "dirty-worktree"
    assert steps_of(res.json, "home")["remove"]["outcome"] == "skipped"
    assert_untouched(topic, before)


# -- refusals: nothing is lost anywhere -------------------------------------------------


def test_a_dirty_tracked_change_in_one_repo_refuses_the_whole_teardown(workspace):
    topic = ship(multi_topic(workspace))
    write(topic.worktrees["api"] / "README.md", "# api, edited but not committed\n")
    before = {n: snapshot_of(r) for n, r in topic.repos.items()}
    res = teardown(topic)
    assert res.code == 1
    assert res.json["error"]["code"] == "dirty-worktree"
    assert "README.md" in steps_of(res.json, "api")["remove"]["detail"]
    assert_untouched(topic, before)
    assert (topic.worktrees["api"] / "README.md").read_text() == "# api, edited but not committed\n"
    assert topic.worktrees["home"].exists() and topic.plan_dir.exists()


def test_an_untracked_file_refuses_and_stays(home_repo):
    topic = new_topic(home_repo)
    write(topic.worktrees["home"] / "src" / "new.py", "print('new')\n")
    before = {"home": snapshot_of(home_repo)}
    res = teardown(topic)
    assert res.code == 1
    assert res.json["error"]["code"] == "dirty-worktree"
    assert "untracked" in steps_of(res.json, "home")["remove"]["detail"]
    assert_untouched(topic, before)
    assert (topic.worktrees["home"] / "src" / "new.py").read_text() == "print('new')\n"


def test_a_commit_not_on_origin_refuses_unintegrated_commits(workspace):
    topic = multi_topic(workspace)
    sha = commit(topic.worktrees["home"], "feature.py", "x = 1\n", "feature work")
    before = {n: snapshot_of(r) for n, r in topic.repos.items()}
    res = teardown(topic)
    assert res.code == 1
    assert res.json["error"]["code"] == "unintegrated-commits"
    assert sha[:12] in steps_of(res.json, "home")["integrate"]["detail"]
    assert_untouched(topic, before)
    assert git(topic.repos["home"], "rev-parse", topic.branch) == sha


def test_a_commit_pushed_to_its_own_branch_on_origin_but_not_merged_still_refuses(home_repo):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "feature.py", "x = 1\n", "feature work")
    push_branch(topic.worktrees["home"], topic.branch)
    before = {"home": snapshot_of(home_repo)}
    res = teardown(topic)
    assert res.code == 1
    assert res.json["error"]["code"] == "unintegrated-commits"
    assert_untouched(topic, before)


def test_a_locked_worktree_refuses_locked_worktree(workspace):
    topic = ship(multi_topic(workspace))
    unlock(topic.repos["api"], topic.worktrees["api"])  # the user's lock replaces ours
    git(
        topic.repos["api"],
        "worktree",
        "lock",
        "--reason",
        "on a USB disk",
        str(topic.worktrees["api"]),
    )
    before = {n: snapshot_of(r) for n, r in topic.repos.items()}
    res = teardown(topic)
    assert res.code == 1
    assert res.json["error"]["code"] == "locked-worktree"
    assert "on a USB disk" in steps_of(res.json, "api")["remove"]["detail"]
    assert_untouched(topic, before)


def test_a_detached_head_with_commits_on_no_branch_refuses(home_repo):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    git(wt, "checkout", "-q", "--detach")
    sha = commit(wt, "loose.py", "x = 1\n", "loose commit")
    res = teardown(topic)
    assert res.code == 1
    assert res.json["error"]["code"] == "unintegrated-commits"
    assert git(wt, "rev-parse", "HEAD") == sha


def _experiment_left_behind(topic) -> tuple[Path, str]:
    """An experiment on a detached HEAD, left behind by checking the branch out again:
    git worktree remove would delete the only record of it (the worktree's HEAD reflog)."""
    wt = topic.worktrees["home"]
    git(wt, "checkout", "-q", "--detach")
    sha = commit(wt, "experiment.py", "x = 1\n", "experiment")
    git(wt, "checkout", "-q", topic.branch)
    return wt, sha


@pytest.mark.parametrize("git_format", FORMATS, indirect=True)
def test_a_commit_only_the_worktrees_head_reflog_keeps_refuses_even_with_force(home_repo):
    topic = new_topic(home_repo)
    wt, sha = _experiment_left_behind(topic)
    before = {"home": snapshot_of(home_repo)}
    for flags in ((), ("--force",)):
        res = teardown(topic, *flags)
        assert res.code == 1, res.out
        step = steps_of(res.json, "home")["remove"]
        assert step["code"] == "unintegrated-commits", step
        assert "HEAD reflog" in step["detail"] and sha[:12] in step["detail"]
        assert_untouched(topic, before)
        assert wt.is_dir() and git(home_repo, "cat-file", "-t", sha) == "commit"
    # The fix the message names: a branch keeps the commit, and the teardown goes through.
    git(wt, "branch", "experiment", sha)
    res = teardown(topic)
    assert res.code == 0, res.out
    assert not wt.exists()
    assert git(home_repo, "rev-parse", "experiment") == sha


def test_a_config_the_reflog_reader_does_not_read_refuses_naming_it(home_repo):
    """An [extensions] line the file reader does not parse (git ignores it in a version-0
    repository): what the HEAD reflog alone keeps is not known, and the refusal says why."""
    topic = new_topic(home_repo)
    wt, sha = _experiment_left_behind(topic)
    git(home_repo, "config", "extensions.noop", 'a"b')  # written as `noop = a\"b`
    common = git(home_repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
    res = teardown(topic)
    assert res.code == 1, res.out
    step = steps_of(res.json, "home")["remove"]
    log = f"{common}/worktrees/{wt.name}/logs/HEAD"
    assert (step["code"], step["reason"], step["detail"]) == (
        "unintegrated-commits",
        "reflog-unknown",
        f"what the HEAD reflog of {wt} ({log}) alone keeps is unknown ({common}/config has "
        "an [extensions] line not read here): keep those commits on a branch, then run "
        "teardown again",
    )
    assert git(home_repo, "cat-file", "-t", sha) == "commit" and wt.is_dir()


@pytest.mark.parametrize("git_format", FORMATS, indirect=True)
def test_dropping_the_reflog_as_the_refusal_names_lets_the_teardown_through(home_repo):
    topic = new_topic(home_repo)
    wt, _ = _experiment_left_behind(topic)
    assert teardown(topic).code == 1
    git(wt, "reflog", "expire", "--expire-unreachable=now", "HEAD")
    res = teardown(topic)
    assert res.code == 0, res.out
    assert not wt.exists()


@pytest.mark.parametrize("git_format", FORMATS, indirect=True)
def test_an_experiment_whose_commit_entry_was_expired_still_refuses(home_repo):
    """An expiry dropped the entry that made the experiment: the checkout that left it
    still names it (in a reftable, git prints no entry's old id: the message does)."""
    topic = new_topic(home_repo)
    wt, sha = _experiment_left_behind(topic)
    git(wt, "reflog", "delete", "HEAD@{1}")  # "commit: experiment"; its successor keeps `sha`
    assert sha not in git(wt, "log", "-g", "--format=%H", "HEAD").split()
    res = teardown(topic)
    assert res.code == 1, res.out
    step = steps_of(res.json, "home")["remove"]
    assert step["code"] == "unintegrated-commits" and sha[:12] in step["detail"], step
    assert wt.is_dir() and git(home_repo, "cat-file", "-t", sha) == "commit"


@pytest.mark.parametrize("git_format", FORMATS, indirect=True)
def test_a_branch_left_by_the_oldest_entry_and_deleted_since_refuses(home_repo):
    """The one entry left is the checkout away from a branch deleted since: its old id,
    which git prints for no entry of a reftable, is the only record of the branch's work."""
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    git(wt, "checkout", "-q", "-b", "side")
    sha = commit(wt, "side.py", "side = 1\n", "work on a side branch")
    git(wt, "checkout", "-q", topic.branch)
    git(wt, "branch", "-q", "-D", "side")  # and with it the branch's own reflog
    for _ in git(wt, "log", "-g", "--format=%H", "HEAD").splitlines()[1:]:
        git(wt, "reflog", "delete", "HEAD@{1}")  # as an expiry drops the older entries
    assert (
        git(wt, "log", "-g", "--format=%gs", "HEAD")
        == f"checkout: moving from side to {topic.branch}"
    )
    res = teardown(topic, "--force")
    assert res.code == 1, res.out
    step = steps_of(res.json, "home")["remove"]
    assert step["code"] == "unintegrated-commits" and sha[:12] in step["detail"], step
    assert wt.is_dir() and git(home_repo, "cat-file", "-t", sha) == "commit"
    git(wt, "branch", "side", sha)  # the fix named: a branch keeps it
    assert teardown(topic, "--force").code == 0


def test_what_an_amend_replaced_on_the_branch_does_not_refuse(home_repo):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "f.py", "f = 1\n", "work")
    write(wt / "f.py", "f = 2\n")
    git(wt, "commit", "-q", "-a", "--amend", "-m", "work, amended")
    res = teardown(topic, "--integrate")
    assert res.code == 0, res.out
    assert git(home_repo, "log", "-1", "--format=%s", "main") == "work, amended"
    assert not wt.exists()


@pytest.mark.parametrize("git_format", FORMATS, indirect=True)
def test_what_a_squashing_rebase_made_on_the_way_does_not_refuse(home_repo):
    """`git rebase -i --autosquash` onto a moved main makes each picked commit and then
    the squashed one on a detached HEAD: the ones in between are only in the HEAD reflog,
    rewrites of commits the branch's own reflog keeps. Ordinary work, not an experiment."""
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "f.py", "f = 1\n", "work")
    write(wt / "f.py", "f = 2\n")
    git(wt, "commit", "-q", "-a", "--fixup=HEAD")
    commit(home_repo, "other.py", "o = 1\n", "main moved on")
    git(wt, "-c", "sequence.editor=true", "rebase", "-q", "-i", "--autosquash", "main")
    res = teardown(topic, "--integrate")
    assert res.code == 0, res.out
    assert git(home_repo, "log", "-1", "--format=%s", "main") == "work"
    assert not wt.exists()


@pytest.mark.parametrize("git_format", FORMATS, indirect=True)
def test_what_an_aborted_rebase_made_does_not_refuse_a_forced_teardown(home_repo):
    """The picks a rebase made before a conflict stopped it are copies of the branch's own
    commits, left on a detached HEAD by `git rebase --abort`: no work of the user's."""
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "a.py", "a = 1\n", "first, picked cleanly")
    tip = commit(wt, "f.py", "f = 1\n", "second, conflicts")
    commit(home_repo, "f.py", "f = 2\n", "main changed f too")
    git(wt, "rebase", "-q", "main", check=False)  # picks the first, stops at the second
    assert Path(
        git(wt, "rev-parse", "--path-format=absolute", "--git-path", "rebase-merge")
    ).is_dir()
    git(wt, "rebase", "--abort")
    assert git(wt, "rev-parse", "HEAD") == tip
    res = teardown(topic, "--force")
    assert res.code == 0, res.out
    assert not wt.exists()


@pytest.mark.parametrize("git_format", FORMATS, indirect=True)
def test_what_an_amend_replaced_on_a_detached_head_does_not_refuse(home_repo):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    git(wt, "checkout", "-q", "--detach")
    replaced = commit(wt, "f.py", "f = 1\n", "work")
    write(wt / "f.py", "f = 2\n")
    git(wt, "commit", "-q", "-a", "--amend", "-m", "work, amended")
    git(wt, "branch", "kept", "HEAD")
    res = teardown(topic)
    assert res.code == 0, res.out
    assert not wt.exists()
    assert git(home_repo, "log", "-1", "--format=%s", "kept") == "work, amended"
    assert git(home_repo, "cat-file", "-t", replaced) == "commit"


def test_a_live_holder_refuses_the_teardown(home_repo):
    import subprocess
    import sys

    topic = new_topic(home_repo)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        held = run_cli("hold", topic.id, "--pid", str(sleeper.pid), "--json", cwd=home_repo)
        assert held.code == 0, held.out + held.err
        res = teardown(topic)
        assert res.code == 1
        assert res.json["error"]["code"] == "held"
        assert topic.worktrees["home"].exists()
    finally:
        sleeper.kill()
        sleeper.wait()


# -- --integrate -----------------------------------------------------------------------------


def test_integrate_cherry_picks_the_commits_onto_the_primary_default_branch(workspace):
    topic = ship(multi_topic(workspace))
    api_wt = topic.worktrees["api"]
    first = commit(api_wt, "a.py", "a = 1\n", "api: first")
    commit(api_wt, "b.py", "b = 2\n", "api: second")
    res = teardown(topic, "--integrate")
    assert res.code == 0, res.out
    api = topic.repos["api"]
    assert steps_of(res.json, "api")["integrate"]["outcome"] == "done"
    assert git(api, "log", "--format=%s", "-2", "main").splitlines() == [
        "api: second",
        "api: first",
    ]
    assert (api / "a.py").read_text() == "a = 1\n" and (api / "b.py").read_text() == "b = 2\n"
    assert git(api, "rev-parse", "main") != first  # a new commit with the same patch
    assert status(api) == "" and not api_wt.exists()
    assert topic.branch not in branches(api)


def test_integrate_refuses_primary_busy_when_the_primary_clone_is_not_on_main(home_repo):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    git(home_repo, "switch", "-q", "-c", "elsewhere")
    before = {"home": snapshot_of(home_repo)}
    res = teardown(topic, "--integrate")
    assert res.code == 1
    assert res.json["error"]["code"] == "primary-busy"
    assert "elsewhere" in res.json["error"]["message"]
    assert_untouched(topic, before)


@pytest.mark.no_plan_check(
    "a cherry-pick's conflict is found by trying it: the plan says it would pick (git 2.39 "
    "cannot merge-tree a single pick to foresee it)"
)
def test_integrate_refuses_conflict_naming_the_commit_and_leaves_main_as_it_was(home_repo):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    ok = commit(wt, "other.py", "fine\n", "applies cleanly")
    bad = commit(wt, "README.md", "# from the branch\n", "conflicts")
    commit(home_repo, "README.md", "# from main\n", "main moved on")
    main_before = git(home_repo, "rev-parse", "main")
    res = teardown(topic, "--integrate")
    assert res.code == 1
    step = steps_of(res.json, "home")["integrate"]
    assert step["code"] == "conflict" and bad[:12] in step["detail"]
    assert git(home_repo, "rev-parse", "main") == main_before  # the first pick was undone too
    assert status(home_repo) == ""
    assert wt.exists() and git(home_repo, "rev-parse", topic.branch) == bad
    assert ok in git(home_repo, "rev-list", topic.branch).splitlines()
    assert steps_of(res.json, "home")["remove"]["outcome"] == "skipped"


def test_a_rerun_after_integrate_does_not_cherry_pick_twice(home_repo):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    env_crash = "TEAM_ROUTER_CRASH_AT"
    import os
    import subprocess
    import sys

    exe = str(Path(sys.executable).with_name("team-router"))
    proc = subprocess.run(
        [exe, "-C", str(home_repo), "teardown", topic.id, "--integrate", "--json"],
        env={**os.environ, env_crash: "remove"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 137
    assert git(home_repo, "log", "--format=%s", "-1", "main") == "work"
    res = teardown(topic, "--integrate")
    assert res.code == 0, res.out
    subjects = git(home_repo, "log", "--format=%s", "main").splitlines()
    assert subjects.count("work") == 1
    assert not topic.worktrees["home"].exists()


# -- merged on origin ---------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["merge", "squash"], ids=["merge-commit", "squash"])
def test_a_branch_merged_on_origin_is_torn_down_and_main_fast_forwarded(home_repo, how):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "one.py", "one\n", "first")
    commit(wt, "two.py", "two\n", "second")
    push_branch(wt, topic.branch)
    merged = merge_on_origin(home_repo, topic.branch, how=how)
    res = teardown(topic)
    assert res.code == 0, res.out
    steps = steps_of(res.json, "home")
    proof = (
        "squashed change is already on origin/main"
        if how == "squash"
        else "ancestor of origin/main"
    )
    assert proof in steps["integrate"]["detail"]
    assert steps["branch"]["outcome"] == "done"
    assert git(home_repo, "rev-parse", "main") == merged
    assert (home_repo / "two.py").read_text() == "two\n"
    assert "pruned" in steps["update-default"]["detail"]
    assert f"origin/{topic.branch}" not in git(home_repo, "branch", "-r")
    assert not wt.exists() and topic.branch not in branches(home_repo)


def test_update_default_fetches_only_when_the_primary_clone_is_dirty(home_repo):
    topic = new_topic(home_repo)
    commit_on_origin(home_repo, "elsewhere.py", "x\n")
    write(home_repo / "local-notes.txt", "mine\n")
    before = git(home_repo, "rev-parse", "main")
    res = teardown(topic)
    assert res.code == 0, res.out
    step = steps_of(res.json, "home")["update-default"]
    assert step["outcome"] == "skipped" and "fetched only" in step["detail"]
    assert git(home_repo, "rev-parse", "main") == before
    assert (home_repo / "local-notes.txt").read_text() == "mine\n"


def _empty_pick_stopped_on_main(repo: Path) -> str:
    """The user's cherry-pick, stopped with nothing to commit: clean, on main, yet in progress."""
    git(repo, "switch", "-q", "-c", "side")
    picked = commit(repo, "side.txt", "side\n", "on side")
    git(repo, "switch", "-q", "main")
    commit(repo, "side.txt", "side\n", "the same change on main")
    git(repo, "cherry-pick", picked, check=False)  # stops: the pick is now empty
    assert (repo / ".git" / "CHERRY_PICK_HEAD").exists() and status(repo) == ""
    return picked


def test_update_default_leaves_the_users_stopped_cherry_pick_alone(home_repo):
    # The user's cherry-pick stopped with nothing to commit: the primary clone
    # looks clean and on main, but `git pull --rebase` would drop CHERRY_PICK_HEAD
    # and the rest of the sequence.
    topic = new_topic(home_repo)
    picked = _empty_pick_stopped_on_main(home_repo)
    commit_on_origin(home_repo, "elsewhere.py", "x\n")
    before = git(home_repo, "rev-parse", "main")
    res = teardown(topic)
    step = steps_of(res.json, "home")["update-default"]
    assert step["outcome"] == "skipped" and "cherry-pick is in progress" in step["detail"], step
    assert git(home_repo, "rev-parse", "main") == before
    assert (home_repo / ".git" / "CHERRY_PICK_HEAD").read_text().strip() == picked


def test_a_dry_run_says_the_users_stopped_cherry_pick_keeps_main_from_being_pulled(home_repo):
    # The plan answers as the run does: the run fetches only, so the preview may
    # not promise a pull.
    topic = new_topic(home_repo)
    picked = _empty_pick_stopped_on_main(home_repo)
    res = teardown(topic, "--dry-run")
    step = steps_of(res.json, "home")["update-default"]
    assert step == {
        "name": "update-default",
        "outcome": "skipped",
        "reason": "busy",
        "detail": "would fetch only: a cherry-pick is in progress there; "
        f"no origin/{topic.branch} ref: nothing to prune",
    }, step
    assert (home_repo / ".git" / "CHERRY_PICK_HEAD").read_text().strip() == picked


def _bisecting_on_main(repo: Path) -> str:
    """A bisect started with no revisions yet: HEAD is still main, and the tree is clean."""
    git(repo, "bisect", "start")
    assert status(repo) == "" and git(repo, "branch", "--show-current") == "main"
    return git(repo, "rev-parse", "main")


def test_update_default_leaves_main_alone_while_the_user_bisects_in_the_primary(home_repo):
    topic = new_topic(home_repo)
    commit_on_origin(home_repo, "elsewhere.py", "x\n")
    before = _bisecting_on_main(home_repo)
    res = teardown(topic)
    assert res.code == 0, res.out + res.err
    step = steps_of(res.json, "home")["update-default"]
    assert step["outcome"] == "skipped" and "a bisect is in progress" in step["detail"], step
    assert git(home_repo, "rev-parse", "main") == before
    assert (home_repo / ".git" / "BISECT_START").exists()


def test_integrate_refuses_primary_busy_while_the_user_bisects_naming_bisect_reset(home_repo):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    _bisecting_on_main(home_repo)
    before = {"home": snapshot_of(home_repo)}
    res = teardown(topic, "--integrate")
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "primary-busy"
    assert f"`git -C {home_repo} bisect reset`" in res.json["error"]["message"]
    assert_untouched(topic, before)


def test_a_default_branch_that_cannot_rebase_is_left_to_the_user_and_not_pulled_again(home_repo):
    topic = new_topic(home_repo)
    commit_on_origin(home_repo, "README.md", "# web, changed on origin\n")
    local = commit(home_repo, "README.md", "# web, changed here\n", "local edit of the same line")
    res = teardown(topic)
    assert res.code == 0, res.out + res.err
    step = steps_of(res.json, "home")["update-default"]
    assert step["outcome"] == "failed" and "aborted" in step["detail"]
    assert any("the default branch was not updated" in w for w in res.json["warnings"])
    mark = record(home_repo, topic.id)["teardown"]
    assert (mark["complete"], mark["left"]) == (True, ["update-default"])
    assert "update-default" not in mark["done"]
    # The record says it is the user's: a rerun exits 0 without failing at it again.
    again = teardown(topic)
    assert again.code == 0, again.out + again.err
    assert steps_of(again.json, "home")["update-default"] == {
        "name": "update-default",
        "outcome": "skipped",
        "reason": "left-earlier",
        "detail": "not done: left to you by an earlier run: main could not be updated to "
        f"origin/main; update it yourself (`git -C {home_repo} pull --rebase origin main`)",
    }
    assert again.json["warnings"] == []
    assert git(home_repo, "rev-parse", "main") == local and status(home_repo) == ""
    assert not topic.worktrees["home"].exists()
    assert record(home_repo, topic.id)["teardown"] == mark


# -- the primary clone and the plan dir ----------------------------------------------------------


def test_a_record_pointing_at_the_primary_clone_never_removes_it(home_repo):
    topic = new_topic(home_repo)
    unlock(home_repo, topic.worktrees["home"])
    git(home_repo, "worktree", "remove", str(topic.worktrees["home"]))
    path = home_repo / ".git" / "team-router" / "topics" / f"{topic.id}.json"
    data = json.loads(path.read_text())
    data["worktree"] = str(home_repo)
    data["repos"][0]["worktree"] = str(home_repo)
    path.write_text(json.dumps(data))
    plan = home_repo / "docs" / "plans" / topic.id
    write(plan / "design.md", "# design\n")
    ship(topic, plan_dir=plan)
    res = run_cli("teardown", topic.id, "--json", cwd=home_repo)
    assert res.code == 0, res.out
    steps = steps_of(res.json, "home")
    assert "primary clone: never removed" in steps["remove"]["detail"]
    assert (home_repo / ".git").is_dir() and (home_repo / "README.md").exists()
    assert worktree_paths(home_repo) == [str(home_repo)]
    assert steps["plan-dir"]["outcome"] == "done" and not plan.exists()


def test_a_tracked_plan_dir_in_the_primary_clone_is_kept(home_repo):
    topic = new_topic(home_repo)
    plan = home_repo / "docs" / "plans" / topic.id
    write(plan / "design.md", "# tracked design\n")
    git(home_repo, "add", "-f", "--", str(plan / "design.md"))
    git(home_repo, "commit", "-q", "-m", "track the plan")
    git(home_repo, "push", "-q", "origin", "main")
    res = teardown(topic)
    assert res.code == 0, res.out
    step = steps_of(res.json, "home")["plan-dir"]
    assert step["outcome"] == "skipped" and "tracked" in step["detail"]
    assert (plan / "design.md").read_text() == "# tracked design\n"


def test_a_repos_md_line_naming_another_topics_worktree_never_removes_it(workspace):
    from helpers.repos import make_repo

    topic = new_topic(make_repo(workspace, "web"))
    api = make_repo(workspace, "api")
    other = new_topic(api, "2026-05-02-other-work")  # api's own topic, in flight
    artifact = write(other.plan_dir / "design.md", "# the other topic's design\n")
    wrong = other.worktrees["home"]
    write(
        topic.plan_dir / "repos.md",
        f"# Repos\n\n## Home repo\n\n- **name:** web\n- **path:** {topic.home}\n\n"
        f"## Additional repos\n\n- **name:** api\n  **path:** {api}\n\n"
        f"## Worktrees\n\n- home: {topic.worktrees['home']}\n- api: {wrong}\n",
    )
    ship(topic)
    for flags in (("--dry-run",), ()):
        res = teardown(topic, *flags)
        assert res.code == 0, res.out + res.err
        step = steps_of(res.json, "api")["remove"]
        assert step["outcome"] == "skipped" and "not this topic's, kept" in step["detail"]
        assert any("not this topic's" in w for w in res.json["warnings"])
    assert artifact.read_text() == "# the other topic's design\n"
    assert worktree_paths(api) == [str(api), str(wrong)]
    assert not topic.worktrees["home"].exists()


def test_a_plan_dir_reached_through_a_symlinked_docs_dir_is_kept(home_repo, tmp_path):
    topic = new_topic(home_repo)
    elsewhere = tmp_path / "shared-docs"
    kept = write(elsewhere / "plans" / topic.id / "design.md", "# not this repo's\n")
    (home_repo / "docs").symlink_to(elsewhere)
    plan = teardown(topic, "--dry-run")
    assert plan.code == 1 and steps_of(plan.json, "home")["plan-dir"]["code"] == "plan-dir-kept"
    res = teardown(topic)
    assert res.code == 1, res.out
    step = steps_of(res.json, "home")["plan-dir"]
    assert (step["outcome"], step["code"]) == ("refused", "plan-dir-kept")
    assert "through a symlink" in step["detail"]
    assert kept.read_text() == "# not this repo's\n"
    assert not topic.worktrees["home"].exists()  # the rest of the teardown ran


def test_teardown_never_deletes_through_tracked_docs_symlinks_in_the_worktree_or_main_tree(
    home_repo, workspace
):
    # `docs` committed as a link to a directory outside the repository, on the
    # topic's branch (the worktree) and on main (the primary clone): teardown
    # --force snapshots and removes the worktree and its plan-dir step looks
    # under docs/plans/<id> of the primary; what the links point at stays.
    topic = new_topic(home_repo)
    elsewhere = workspace / "elsewhere"
    theirs = {
        elsewhere / "readme.md": "shared docs\n",
        elsewhere / "plans" / topic.id / "design.md": "# another repo's design\n",
        elsewhere / "plans" / "notes.md": "notes\n",
    }
    for path, text in theirs.items():
        write(path, text)
    wt = topic.worktrees["home"]
    for checkout, target in ((wt, elsewhere), (home_repo, Path("../elsewhere"))):
        shutil.rmtree(checkout / "docs", ignore_errors=True)  # the worktree's empty plan dir
        (checkout / "docs").symlink_to(target)
        git(checkout, "add", "docs")
        git(checkout, "commit", "-q", "-m", "docs live in a shared directory")
    res = teardown(topic, "--force")
    assert res.code == 1, res.out  # the plan-dir step refused; everything else ran
    steps = steps_of(res.json, "home")
    assert steps["remove"]["outcome"] == "done", steps["remove"]
    assert (steps["plan-dir"]["outcome"], steps["plan-dir"]["code"]) == ("refused", "plan-dir-kept")
    assert "through a symlink" in steps["plan-dir"]["detail"]
    assert not wt.exists() and topic.branch not in branches(home_repo)
    for path, text in theirs.items():
        assert path.read_text() == text
    assert len(list(elsewhere.rglob("*"))) == 5  # the three files, plans/ and plans/<id>/


def test_the_removal_names_worktreeinclude_copies_and_which_were_edited(home_repo):
    write(home_repo / ".gitignore", ".env\n.env.local\n")
    write(home_repo / ".worktreeinclude", ".env\n.env.local\n")
    git(home_repo, "add", ".gitignore", ".worktreeinclude")
    git(home_repo, "commit", "-q", "-m", "copy the env files into worktrees")
    git(home_repo, "push", "-q", "origin", "main")
    write(home_repo / ".env", "TOKEN=original\n")
    write(home_repo / ".env.local", "DEBUG=1\n")
    topic = new_topic(home_repo)
    write(topic.worktrees["home"] / ".env", "TOKEN=edited-in-the-worktree\n")
    plan = teardown(topic, "--dry-run")
    assert (
        "copies placed by .worktreeinclude: .env, .env.local"
        in steps_of(plan.json, "home")["remove"]["detail"]
    )
    res = teardown(topic)
    assert res.code == 0, res.out
    detail = steps_of(res.json, "home")["remove"]["detail"]
    assert (
        "copies placed by .worktreeinclude: .env, .env.local (edited since copied, not kept: .env)"
        in detail
    )
    assert (home_repo / ".env").read_text() == "TOKEN=original\n"


def test_sibling_plan_dirs_of_other_topics_are_left_alone(home_repo):
    topic = new_topic(home_repo)
    mine = home_repo / "docs" / "plans" / topic.id
    other = home_repo / "docs" / "plans" / "2026-05-02-other-work"
    write(mine / "x.md", "x\n")
    write(other / "y.md", "y\n")
    assert teardown(ship(topic)).code == 0
    assert not mine.exists() and (other / "y.md").exists()


# -- residue after removal ----------------------------------------------------------------------


def test_teardown_sweeps_late_writer_residue_and_reports_kept_directories(home_repo):
    topic = new_topic(home_repo)
    leftovers = home_repo / ".claude" / "worktrees"
    write(leftovers / "old-topic" / "tmp" / "session.json", "{}\n")
    write(leftovers / "keep-me" / "notes.md", "precious\n")
    res = teardown(topic)
    assert res.code == 0, res.out
    assert res.json["swept"] == [str(leftovers / "old-topic")]
    assert res.json["kept"] == [
        {"path": str(leftovers / "keep-me"), "reason": "unexpected-files", "files": ["notes.md"]}
    ]
    assert (leftovers / "keep-me" / "notes.md").read_text() == "precious\n"


def test_teardown_keeps_residue_holding_an_unshipped_runs_artifacts_and_refuses_its_sweep(
    home_repo,
):
    topic = new_topic(home_repo)
    leftovers = home_repo / ".claude" / "worktrees"
    other = "2026-04-30-earlier-run"
    plan = leftovers / other / "docs" / "plans" / other
    for name in ("task.md", "questions.md"):  # written after its worktree was removed
        artifact(plan, name)
    write(leftovers / "old-topic" / "tmp" / "session.json", "{}\n")
    before = {p.name: p.read_bytes() for p in plan.iterdir()}
    res = teardown(topic)
    assert res.code == 1, res.out + res.err
    files = [f"docs/plans/{other}/questions.md", f"docs/plans/{other}/task.md"]
    why = (
        f"teardown keeps {leftovers / other}: it holds the artifacts of {other}, a run that has "
        f"not shipped (no pr.md): {', '.join(files)}; pass --force to snapshot them before they "
        f"go (`team-router restore {other}` brings them back), or move them to where the run "
        "goes on"
    )
    assert steps_of(res.json, "home")["sweep"] == {
        "name": "sweep",
        "outcome": "refused",
        "reason": "unshipped",
        "code": "unshipped-run",
        "detail": f"{why}; swept 1: {leftovers / 'old-topic'}; kept 1 (see kept): "
        f"{leftovers / other}",
    }
    assert res.json["error"]["code"] == "unshipped-run"
    assert res.json["kept"] == [
        {"path": str(leftovers / other), "reason": "unshipped-run", "files": files}
    ]
    assert res.json["swept"] == [str(leftovers / "old-topic")]
    assert {p.name: p.read_bytes() for p in plan.iterdir()} == before  # nothing lost
    assert not topic.worktrees["home"].exists()  # the topic's own teardown went on
    # --force snapshots them first; restore puts them in the primary clone's docs/plans/.
    forced = teardown(topic, "--force")
    assert forced.code == 0, forced.out + forced.err
    ref = f"refs/team-router/plan-dirs/{other}"
    snap = git(home_repo, "rev-parse", ref)
    assert steps_of(forced.json, "home")["sweep"]["detail"] == (
        f"swept 1: {leftovers / other}; the run's artifacts questions.md, task.md are in "
        f"{ref} ({snap[:12]})"
    )
    assert not (leftovers / other).exists()
    restored = run_cli("restore", other, "--json", cwd=home_repo)
    assert restored.code == 0, restored.out + restored.err
    back = home_repo / "docs" / "plans" / other
    assert {p.name: p.read_bytes() for p in back.iterdir()} == before


# -- the step functions on their own ------------------------------------------------------------


def test_verify_gone_removes_a_recreated_path_only_when_it_is_residue(home_repo):
    from router.teardown.branch import verify_gone
    from router.teardown.steps import Outcome
    from router.topic.workspace import open_repo

    repo = open_repo(home_repo)
    path = home_repo / ".claude" / "worktrees" / "came-back"
    write(path / "tmp" / "lsp.sock.txt", "x\n")
    assert verify_gone(repo, path).outcome is Outcome.DONE
    assert not path.exists()
    write(path / "notes.md", "real work\n")
    result = verify_gone(repo, path)
    assert (result.outcome, result.code) == (Outcome.REFUSED, "residue-kept")
    assert (path / "notes.md").read_text() == "real work\n"


def test_verify_gone_never_touches_the_primary_clone_or_a_live_worktree(home_repo):
    from router.teardown.branch import verify_gone
    from router.teardown.steps import Outcome
    from router.topic.workspace import open_repo

    topic = new_topic(home_repo)
    repo = open_repo(home_repo)
    assert verify_gone(repo, home_repo).outcome is Outcome.SKIPPED
    assert verify_gone(repo, topic.worktrees["home"]).outcome is Outcome.SKIPPED
    assert topic.worktrees["home"].exists() and (home_repo / "README.md").exists()


def test_merge_proof_names_which_proof_held(home_repo):
    from router.git import Git
    from router.teardown.proof import ProofKind, merge_proof

    g = Git(home_repo)
    git(home_repo, "switch", "-q", "-c", "ff")
    commit(home_repo, "a.txt", "a\n", "a")
    commit(home_repo, "b.txt", "b\n", "b")
    git(home_repo, "switch", "-q", "main")
    assert merge_proof(g, "ff", "main") is None
    assert merge_proof(g, "main", "ff").kind is ProofKind.ANCESTOR
    git(home_repo, "switch", "-q", "-c", "picked", "main")
    commit(home_repo, "other.txt", "o\n", "unrelated")
    git(home_repo, "cherry-pick", "main..ff")
    assert merge_proof(g, "ff", "picked").kind is ProofKind.PATCHES
    git(home_repo, "switch", "-q", "-c", "squashed", "main")
    git(home_repo, "merge", "-q", "--squash", "ff")
    git(home_repo, "commit", "-q", "-m", "squash of a and b")
    proof = merge_proof(g, "ff", "squashed")
    assert proof.kind is ProofKind.SQUASH and proof.target == "squashed"


def test_remove_worktree_refuses_a_dirty_worktree_and_names_its_files(home_repo):
    from router.teardown.remove import remove_worktree
    from router.teardown.steps import Outcome
    from router.topic.workspace import open_repo

    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    write(wt / "README.md", "changed\n")
    write(wt / "new.txt", "new\n")
    result, snap = remove_worktree(open_repo(home_repo), wt, topic.branch, force=False)
    assert (result.outcome, result.code, snap) == (Outcome.REFUSED, "dirty-worktree", None)
    assert "README.md" in result.detail and "new.txt" in result.detail
    assert (wt / "new.txt").read_text() == "new\n"


def test_teardown_run_from_inside_the_worktree_it_removes(workspace):
    topic = ship(multi_topic(workspace))
    res = teardown(topic, cwd=topic.worktrees["home"])
    assert res.code == 0, res.out
    assert not topic.worktrees["home"].exists() and not topic.worktrees["api"].exists()
    again = teardown(topic)  # the plan dir went with the worktree: the home record answers
    assert again.code == 0, again.out


def test_a_git_failure_while_planning_refuses_without_a_traceback(workspace):
    topic = ship(multi_topic(workspace))
    broken = topic.worktrees["api"] / ".git"
    broken.write_text("gitdir: /nowhere/at/all\n")
    res = teardown(topic)
    assert res.code == 1
    assert res.json["error"]["code"] == "git-failed"
    assert "Traceback" not in res.err
    assert topic.worktrees["home"].exists() and topic.branch in branches(topic.repos["home"])
    assert broken.read_text() == "gitdir: /nowhere/at/all\n"


def test_no_command_runs_a_repos_core_fsmonitor(workspace, tmp_path):
    # core.fsmonitor is a command git runs whenever it reads the index (fetch
    # and pull included): someone else's checkout must not run code through us.
    marker = tmp_path / "fsmonitor-ran"
    hook = write(tmp_path / "fsmonitor.sh", f'#!/bin/sh\necho "$@" >> {marker}\nexit 1\n')
    hook.chmod(0o755)
    topic = ship(multi_topic(workspace, config={"core.fsmonitor": str(hook)}))
    assert not marker.exists(), "new or worktrees ran core.fsmonitor"
    commit(topic.worktrees["api"], "api.txt", "api\n", "api change")
    push_branch(topic.worktrees["api"], topic.branch)
    merge_on_origin(topic.repos["api"], topic.branch)
    marker.unlink(missing_ok=True)  # the test's own git ran it; team-router must not
    res = teardown(topic)
    assert res.code == 0, res.out + res.err
    assert not marker.exists(), "teardown ran core.fsmonitor"
    assert (
        git(topic.repos["api"], "log", "-1", "--format=%s", "main")
        == f"Merge pull request from {topic.branch}"
    )
    configure(topic.home, {"core.fsmonitor": str(hook)})
    status(topic.home)  # the hook is live: plain git runs it
    assert marker.exists()


def test_a_git_killed_by_ctrl_c_while_teardown_reads_the_repos_exits_130_with_json(
    home_repo, tmp_path, monkeypatch
):
    # The Ctrl-C reached only git (it runs in team-router's process group): the
    # command still ends with one JSON object and exit 130, never a traceback.
    from helpers.faults import git_wrapper

    topic = new_topic(home_repo, "2026-05-01-add-thing")
    # (The worktree's status: its refs and trees are read from git's files.)
    env = git_wrapper(tmp_path / "bin", "status --porcelain", "kill -INT $$")
    monkeypatch.setenv("PATH", env["PATH"])
    res = run_cli("teardown", topic.id, "--json", cwd=home_repo)
    assert res.code == 130, res.out + res.err
    assert res.json["ok"] is False and res.json["error"]["code"] == "interrupted"
    assert topic.worktrees["home"].is_dir()  # nothing was removed


def test_teardown_of_a_word_that_is_not_an_id_is_invalid_id(home_repo):
    res = run_cli("teardown", "not_an_id", "--json", cwd=home_repo)
    assert res.code == 2
    assert res.json == {
        "ok": False,
        "command": "teardown",
        "warnings": [],
        "error": {
            "code": "invalid-id",
            "message": "'not_an_id' is not a topic id: use <TICKET-123>-<slug> or "
            "<YYYY-MM-DD>-<slug>, slug in lowercase letters, digits and '-'",
        },
    }


def _refused_plan(
    blocker: dict[str, str], wt: Path, branch: str, *, home: bool, plan: bool = False
) -> list[dict[str, str]]:
    """A refused repo's steps (JSON): its blocker, and for every other step what it would
    have done. ``plan``: those steps as the text shows them, each as it would go once the
    blockers are gone (outcome in the conditional); the blocker first, by name only."""
    why = f"not done: teardown refused ({blocker.get('code')} here)"
    planned = {
        "integrate": (
            "skipped",
            f"nothing to integrate: {branch} is empty (nothing on it since it was cut)",
            "empty",
        ),
        "remove": ("done", f"would remove {wt}"),
        "branch": (
            ("done", f"would delete {branch}")
            if home
            else ("refused", f"{branch} holds 1 commit(s) not on the default branch; kept")
        ),
        "verify-gone": ("done", f"would re-check that {wt} is gone"),
        "update-default": (
            "done",
            "main already holds origin/main as this command fetched it: nothing to pull; "
            f"no origin/{branch} ref: nothing to prune",
        ),
        "plan-dir": (
            ("skipped", f"no docs/plans/{branch}/ in the primary clone", "no-plan-dir")
            if home
            else ("skipped", "home repo only", "not-home")
        ),
        "sweep": ("skipped", f"no residue under {wt.parent}", "no-residue"),
        "local-state": (
            "skipped",
            "no .teamteardown on main — nothing declared"
            + ("; no temp paths recorded" if home else ""),
            "nothing-declared",
        ),
    }
    if plan:
        conditional = {"done": "would be done", "skipped": "would be skipped"}
        conditional["refused"] = "would be refused"
        rest = [n for n in STEPS if n != blocker["name"]]
        return [blocker] + [
            {"name": n, "outcome": conditional[planned[n][0]], "detail": planned[n][1]}
            for n in rest
        ]
    # A step skipped anyway keeps its reason; one not done is so for the refusal.
    return [
        blocker
        if name == blocker["name"]
        else {
            "name": name,
            "outcome": "skipped",
            "reason": planned[name][2] if planned[name][0] == "skipped" else "teardown-refused",
            "detail": planned[name][1]
            if planned[name][0] == "skipped"
            else f"{why}: {planned[name][1]}",
        }
        for name in STEPS
    ]


def test_a_refused_teardown_prints_the_plan_naming_every_blocker_in_every_repo(workspace):
    topic = ship(multi_topic(workspace, ("api",)))
    home_wt, api_wt = topic.worktrees["home"], topic.worktrees["api"]
    write(home_wt / "draft.txt", "draft\n")
    sha = commit(api_wt, "api.py", "x = 1\n", "api work")
    before = {n: snapshot_of(p) for n, p in topic.repos.items()}
    res = run_cli("teardown", topic.id, cwd=topic.home)
    assert res.code == 1
    lines = res.out.splitlines()
    dirty = (
        f"{home_wt} has 1 untracked file(s): draft.txt; commit them, or pass --force to "
        "snapshot and remove"
    )
    unintegrated = (
        f"1 commit(s) of {topic.branch} are on no target branch: {sha[:12]}; pass --integrate, "
        "or --force to snapshot them"
    )
    # Each repo's blockers, then one line for its steps not done, and what each of
    # those would do once the blockers are gone (in the conditional: none was done).
    home_plan = _refused_plan({"name": "remove"}, home_wt, topic.branch, home=True, plan=True)
    api_plan = _refused_plan({"name": "integrate"}, api_wt, topic.branch, home=False, plan=True)
    assert lines == [
        f"Refused (nothing was removed in any repo); the plan of {topic.id}",
        f"home  {home_wt}",
        f"  {'remove':<15} {'refused':<8} {dirty}",
        f"  {'the rest':<15} {'skipped':<8} not done: teardown refused (dirty-worktree here); "
        "once it is not, each would go as follows:",
        *[f"    {s['name']:<15} {s['outcome']:<17} {s['detail']}" for s in home_plan[1:]],
        f"api  {api_wt}",
        f"  {'integrate':<15} {'refused':<8} {unintegrated}",
        f"  {'the rest':<15} {'skipped':<8} not done: teardown refused (unintegrated-commits "
        "here); once it is not, each would go as follows:",
        *[f"    {s['name']:<15} {s['outcome']:<17} {s['detail']}" for s in api_plan[1:]],
        f"teardown of {topic.id} refused: 2 refused step(s) above; fix each, then run it again",
    ]
    assert res.err == (
        f"team-router: teardown of {topic.id} refused, nothing was removed in any repo: "
        f"home: {dirty}; api: {unintegrated} [dirty-worktree]\n"
    )
    res = run_cli("teardown", topic.id, "--json", cwd=topic.home)
    assert res.code == 1
    assert res.json == {
        "ok": False,
        "command": "teardown",
        "id": topic.id,
        "dry_run": False,
        "repos": [
            {
                "name": "home",
                "worktree": str(home_wt),
                "steps": _refused_plan(
                    {
                        "name": "remove",
                        "outcome": "refused",
                        "reason": "dirty",
                        "detail": dirty,
                        "code": "dirty-worktree",
                    },
                    home_wt,
                    topic.branch,
                    home=True,
                ),
            },
            {
                "name": "api",
                "worktree": str(api_wt),
                "steps": _refused_plan(
                    {
                        "name": "integrate",
                        "outcome": "refused",
                        "reason": "unintegrated",
                        "detail": unintegrated,
                        "code": "unintegrated-commits",
                    },
                    api_wt,
                    topic.branch,
                    home=False,
                ),
            },
        ],
        "swept": [],
        "kept": [],
        "local_state": [],
        "warnings": [],
        "error": {
            "code": "dirty-worktree",
            "message": f"teardown of {topic.id} refused, nothing was removed in any repo: "
            f"home: {dirty}; api: {unintegrated}",
        },
    }
    assert {n: snapshot_of(p) for n, p in topic.repos.items()} == before


def test_a_reused_checkout_and_branch_are_kept_unless_remove_reused(home_repo, workspace):
    wt = workspace / "feature-wt"
    git(home_repo, "worktree", "add", "-q", "-b", "feature-x", str(wt))
    res = run_cli("new", "Add rate limiting", "--id", TOPIC_ID, "--json", cwd=wt)
    assert res.json["home"]["status"] == "reused"
    sha = commit(wt, "mine.py", "x = 1\n", "the user's own work")
    write(wt / "draft.txt", "uncommitted\n")
    plan_text = run_cli("teardown", TOPIC_ID, "--dry-run", cwd=home_repo).out.splitlines()
    kept_wt = (
        f"kept {wt}: team-router did not create this checkout (`new` reused it); "
        "pass --remove-reused to remove it"
    )
    kept_branch = (
        "kept feature-x: team-router did not create this branch; pass --remove-reused to delete it"
    )
    assert f"  {'remove':<15} {'would be skipped':<17} {kept_wt}" in plan_text
    assert f"  {'branch':<15} {'would be skipped':<17} {kept_branch}" in plan_text
    res = run_cli("teardown", TOPIC_ID, "--json", cwd=home_repo)
    assert res.code == 0, res.out
    got = steps_of(res.json, "home")
    assert {
        n: (got[n]["outcome"], got[n]["detail"]) for n in ("remove", "branch", "verify-gone")
    } == {
        "remove": ("skipped", kept_wt),
        "branch": ("skipped", kept_branch),
        "verify-gone": ("skipped", "the worktree is kept"),
    }
    assert (
        str(wt) in worktree_paths(home_repo) and (wt / "draft.txt").read_text() == "uncommitted\n"
    )
    assert git(home_repo, "rev-parse", "feature-x") == sha
    assert "--remove-reused" in run_cli("teardown", "--help").out


def test_remove_reused_removes_the_reused_checkout_with_the_usual_guards(home_repo, workspace):
    wt = workspace / "feature-wt"
    git(home_repo, "worktree", "add", "-q", "-b", "feature-x", str(wt))
    assert run_cli("new", "Add rate limiting", "--id", TOPIC_ID, cwd=wt).code == 0
    write(wt / "draft.txt", "uncommitted\n")
    res = run_cli("teardown", TOPIC_ID, "--remove-reused", "--json", cwd=home_repo)
    assert res.code == 1 and res.json["error"]["code"] == "dirty-worktree"
    assert (wt / "draft.txt").is_file()
    (wt / "draft.txt").unlink()
    res = run_cli("teardown", TOPIC_ID, "--remove-reused", "--json", cwd=home_repo)
    assert res.code == 0, res.out
    assert not wt.exists() and "feature-x" not in branches(home_repo)


def test_the_topics_own_worktree_switched_to_another_branch_is_kept_and_the_way_back_named(
    home_repo,
):
    """An agent switched the topic's worktree to a branch of its own and committed there:
    `new` reruns take it as the topic's worktree, and teardown says so and how to finish,
    keeping it and that branch's commit."""
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    git(wt, "switch", "-q", "-c", "spike")
    sha = commit(wt, "spike.txt", "the agent's work\n", "spike")
    res = teardown(topic)
    assert res.code == 0, res.out + res.err
    step = steps_of(res.json, "home")["remove"]
    assert step["outcome"] == "skipped"
    assert f"{wt} is the topic's worktree, switched to spike" in step["detail"]
    assert f"`git -C {wt} switch {topic.id}`" in step["detail"]
    assert git(wt, "rev-parse", "HEAD") == sha and str(wt) in worktree_paths(home_repo)


# -- processes working in the worktree ---------------------------------------------------


def test_a_process_working_in_the_worktree_refuses_even_with_force_and_names_it(workspace):
    """A shell or editor whose working directory is in the worktree would lose it (and an
    editor may write its buffers back into a deleted tree): nothing is removed anywhere,
    --force or not, until it is closed."""
    topic = ship(multi_topic(workspace))
    wt = topic.worktrees["api"]
    (wt / "src").mkdir()
    before = {n: snapshot_of(p) for n, p in topic.repos.items()}
    shell = subprocess.Popen(["sleep", "60"], cwd=wt / "src")
    try:
        dry = teardown(topic, "--dry-run")
        res = teardown(topic)
        forced = teardown(topic, "--force")
    finally:
        shell.kill()
        shell.wait()
    expected = (
        f"{wt} is in use by process {shell.pid} (sleep) (its working directory or an open file "
        "is there): removing the worktree would pull the directory out from under it; close it "
        "(exit the shell, quit the editor, stop the server), then run teardown again"
    )
    for run in (dry, res, forced):
        assert run.code == 1, run.out
        assert run.json["error"]["code"] == "held", run.json["error"]
        assert expected in run.json["error"]["message"]
        step = steps_of(run.json, "api")["remove"]
        assert (step["outcome"], step["code"], step["detail"]) == (
            "refused",
            "held",
            expected,
        )
    assert {n: snapshot_of(p) for n, p in topic.repos.items()} == before
    assert wt.is_dir() and topic.worktrees["home"].is_dir()
    # Closed: the same command finishes.
    res = teardown(topic)
    assert res.code == 0, res.out
    assert not wt.exists() and not topic.worktrees["home"].exists()


def test_a_process_holding_a_file_of_the_worktree_open_refuses(home_repo):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    held = hold_open(wt / "README.md")
    try:
        res = teardown(topic)
    finally:
        held.kill()
        held.wait()
    assert res.code == 1 and res.json["error"]["code"] == "held", res.out
    assert f"process {held.pid} (sleep)" in res.json["error"]["message"]
    assert wt.is_dir() and topic.branch in branches(home_repo)


def test_teardown_started_by_a_shell_sitting_in_the_worktree_is_not_refused(workspace):
    """The caller and the shells above it are excluded: they asked for the removal."""
    topic = ship(multi_topic(workspace))
    wt = topic.worktrees["home"]
    command = " ".join(f"'{a}'" for a in argv("teardown", topic.id, "--json", cwd=wt))
    # `; true` keeps sh from exec'ing the command: the shell stays, an ancestor in the worktree.
    done = subprocess.run(["sh", "-c", f"{command}; true"], cwd=wt, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["ok"] is True
    assert not wt.exists() and not topic.worktrees["api"].exists()


def test_teardown_piped_into_a_reader_sitting_in_the_worktree_is_not_refused(workspace):
    """`team-router teardown --json | jq .` typed in the worktree: the reader of the output
    is part of the command line that asked for the removal, not a process working there."""
    topic = ship(multi_topic(workspace))
    wt = topic.worktrees["home"]
    command = " ".join(f"'{a}'" for a in argv("teardown", topic.id, "--json", cwd=wt))
    done = subprocess.run(
        ["sh", "-c", f"{command} | cat; true"], cwd=wt, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["ok"] is True, done.stdout
    assert not wt.exists() and not topic.worktrees["api"].exists()


def test_a_server_started_by_the_same_shell_still_refuses(workspace):
    """A process that only shares the output pipe (started with `&`) is no reader of it."""
    topic = ship(multi_topic(workspace))
    wt = topic.worktrees["home"]
    command = " ".join(f"'{a}'" for a in argv("teardown", topic.id, "--json", cwd=wt))
    line = f'sleep 60 & server=$!; {command}; kill "$server"'
    done = subprocess.run(["sh", "-c", line], cwd=wt, capture_output=True, text=True, timeout=60)
    res = json.loads(done.stdout)
    assert res["error"]["code"] == "held" and "(sleep)" in res["error"]["message"], res
    assert wt.is_dir() and topic.worktrees["api"].is_dir()


def test_a_rerun_keeping_a_reused_checkout_does_not_run_the_local_state_lines_again(
    home_repo, workspace, tmp_path
):
    # The kept checkout is still registered on the rerun; it is not the topic "created again".
    write(home_repo / ".teamteardown", f'echo ran >> "{tmp_path}/ran.log"\n')
    git(home_repo, "add", ".teamteardown")
    git(home_repo, "commit", "-q", "-m", "declare local state")
    git(home_repo, "push", "-q", "origin", "main")
    wt = workspace / "feature-wt"
    git(home_repo, "worktree", "add", "-q", "-b", "feature-x", str(wt))
    assert run_cli("new", "Add rate limiting", "--id", TOPIC_ID, cwd=wt).code == 0
    for _ in range(2):
        res = run_cli("teardown", TOPIC_ID, "--json", cwd=home_repo)
        assert res.code == 0, res.out + res.err
    assert "already ran" in steps_of(res.json, "home")["local-state"]["detail"]
    assert (tmp_path / "ran.log").read_text() == "ran\n"
    assert wt.is_dir()


def test_a_malformed_repos_md_is_a_warning_when_the_records_know_every_repo(workspace):
    topic = multi_topic(workspace, ("api", "types"))
    repos_md_path = topic.plan_dir / "repos.md"
    text = repos_md_path.read_text()
    assert "**name:** api\n" in text
    repos_md_path.write_text(text.replace("**name:** api\n", "**name:** API\n"))
    artifact(topic.plan_dir, "pr.md", url="https://github.com/acme/web/pull/7")
    dry = run_cli("teardown", topic.id, "--dry-run", "--json", cwd=topic.home)
    assert dry.code == 0, dry.out
    assert [r["name"] for r in dry.json["repos"]] == ["home", "api", "types"]
    res = run_cli("teardown", topic.id, "--json", cwd=topic.home)
    assert res.code == 0, res.out
    line = text.splitlines().index("- **name:** api") + 1
    assert res.json["warnings"] == [
        f"repos.md line {line}: name 'API' is not a slug; use lowercase letters, digits and "
        "'-'; the topic's records name its repos, so this went on"
    ]
    assert [r["name"] for r in res.json["repos"]] == ["home", "api", "types"]
    for name, repo in topic.repos.items():
        assert worktree_paths(repo) == [str(repo)], name
        assert topic.id not in branches(repo), name
        assert status(repo) == "", name
    assert not topic.plan_dir.exists()


def test_a_refusal_for_commits_already_pushed_says_they_are_safe_on_origin(home_repo):
    topic = new_topic(home_repo)
    sha = commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    push_branch(topic.worktrees["home"], topic.branch)
    before = {"home": snapshot_of(home_repo)}
    res = teardown(topic)
    assert (res.code, res.json["error"]["code"]) == (1, "unintegrated-commits"), res.out
    assert steps_of(res.json, "home")["integrate"]["detail"] == (
        f"1 commit(s) of {topic.branch} are on no target branch: {sha[:12]}; they are safe on "
        f"origin/{topic.branch} (pushed, as last fetched), so --force removes only the local "
        "copy (after a snapshot); or pass --integrate"
    )
    assert_untouched(topic, before)
    commit(topic.worktrees["home"], "g.py", "g = 1\n", "more work, not pushed")
    res = teardown(topic)
    assert res.code == 1
    assert steps_of(res.json, "home")["integrate"]["detail"].endswith(
        "pass --integrate, or --force to snapshot them"
    )


def test_a_repo_refused_twice_names_in_text_the_code_its_json_and_error_name(home_repo):
    # Both blockers in one repo: the rest is held back by the refusal the error names,
    # and the text's "the rest" line, each held-back step and the error say the same code.
    topic = ship(new_topic(home_repo))
    wt = topic.worktrees["home"]
    sha = commit(wt, "lib.py", "v = 1\n", "unpushed work")
    write(wt / "lib.py", "v = 2  # edited, not committed\n")
    write(wt / "idea.py", "print('untracked')\n")
    res = run_cli("teardown", topic.id, cwd=home_repo)
    unintegrated = (
        f"1 commit(s) of {topic.branch} are on no target branch: {sha[:12]}; pass --integrate, "
        "or --force to snapshot them"
    )
    dirty = (
        f"{wt} has 1 changed tracked file(s): lib.py; 1 untracked file(s): idea.py; commit "
        "them, or pass --force to snapshot and remove"
    )
    assert res.code == 1
    assert res.out.splitlines() == [
        f"Refused (nothing was removed in any repo); the plan of {topic.id}",
        f"home  {wt}",
        f"  integrate       refused  {unintegrated}",
        f"  remove          refused  {dirty}",
        "  the rest        skipped  not done: teardown refused (dirty-worktree here); once it is "
        "not, each would go as follows:",
        f"    branch          would be refused  {topic.branch} holds 1 commit(s) not on the "
        "default branch; kept",
        f"    verify-gone     would be done     would re-check that {wt} is gone",
        "    update-default  would be done     main already holds origin/main as this command "
        f"fetched it: nothing to pull; no origin/{topic.branch} ref: nothing to prune",
        f"    plan-dir        would be skipped  no docs/plans/{topic.branch}/ in the primary clone",
        f"    sweep           would be skipped  no residue under {wt.parent}",
        "    local-state     would be skipped  no .teamteardown on main — nothing declared; no "
        "temp paths recorded",
        f"teardown of {topic.id} refused: 2 refused step(s) above; fix each, then run it again",
    ]
    assert res.err == (
        f"team-router: teardown of {topic.id} refused, nothing was removed in any repo: "
        f"home: {dirty}; home: {unintegrated} [dirty-worktree]\n"
    )
    data = run_cli("teardown", topic.id, "--json", cwd=home_repo).json
    held = [s["detail"] for s in data["repos"][0]["steps"] if s.get("reason") == "teardown-refused"]
    assert held and all(
        d.startswith("not done: teardown refused (dirty-worktree here)") for d in held
    )
    assert data["error"]["code"] == "dirty-worktree"
    # Refused: nothing was lost.
    assert (wt / "lib.py").read_text() == "v = 2  # edited, not committed\n"
    assert (wt / "idea.py").is_file() and topic.branch in branches(home_repo)
    assert git(wt, "log", "-1", "--format=%s") == "unpushed work"


def test_a_listed_repo_moved_away_is_said_unusable_in_each_step(workspace):
    # The repo's primary clone is moved away: nothing is done there, and each step says why.
    topic = ship(multi_topic(workspace, ("api",)))
    api = topic.repos["api"]
    moved = workspace.parent / "api-moved"
    api.rename(moved)
    try:
        res = teardown(topic)
        assert res.code == 0, res.out + res.err
        steps = steps_of(res.json, "api")
        assert list(steps) == list(STEPS)
        for step in steps.values():
            assert step["outcome"] == "skipped"
            assert step["reason"] == "repo-unusable"
            assert step["detail"] == f"repo not usable: missing: {api} does not exist"
    finally:
        moved.rename(api)
