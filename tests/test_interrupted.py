"""Killed or interrupted mid-step: the rerun recognises what it left and finishes it; nothing is lost.

Kills are real (a ``git`` first on PATH that SIGKILLs the calling
``team-router`` right after the real git ran, see ``durabilityutil.git_killer``);
interrupts are a real SIGINT sent to the process.
"""

from __future__ import annotations

from pathlib import Path

from durabilityutil import KILLED, git_killer, run
from gitutil import branches, commit, git, make_repo, status, worktree_paths, write
from teardownutil import new_topic, snapshot_of, teardown

from router import state

PICK = "cherry-pick --no-edit"  # the integrate step's cherry-pick (not the rerun's --abort)


def _teardown_killed_in(topic, tmp_path: Path, when: str, then: str = ""):
    env = git_killer(tmp_path / "killer-bin", when, then)
    return run(
        "teardown", topic.id, "--integrate", "--json", cwd=topic.home, env=env, new_group=True
    )


def _integrating_mark(repo: Path, topic_id: str) -> object:
    record = state.read_record(repo / ".git", topic_id)
    return record.extra.get("integrating") if record else None


# -- item: a kill during integration's cherry-pick ----------------------------------


def test_a_kill_mid_pick_leaving_staged_changes_is_undone_and_finished_by_the_rerun(
    home_repo, tmp_path
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "a.py", "a = 1\n", "first")
    commit(wt, "b.py", "b = 2\n", "second")
    # The pick ran, then the kill came between writing the last commit's index and committing it.
    killed = _teardown_killed_in(
        topic, tmp_path, PICK, '"$REAL_GIT" -C "$2" reset -q --soft HEAD~1'
    )
    assert killed.code == KILLED, killed.err
    assert git(home_repo, "diff", "--cached", "--name-only") == "b.py"
    assert _integrating_mark(home_repo, topic.id) is not None

    again = teardown(topic, "--integrate")
    assert again.code == 0, again.out + again.err
    assert any("interrupted" in w for w in again.json["warnings"])
    subjects = git(home_repo, "log", "--format=%s", "main").splitlines()
    assert subjects[:2] == ["second", "first"]
    assert subjects.count("first") == subjects.count("second") == 1
    assert status(home_repo) == ""
    assert (home_repo / "a.py").read_text() == "a = 1\n"
    assert (home_repo / "b.py").read_text() == "b = 2\n"
    assert worktree_paths(home_repo) == [str(home_repo)] and branches(home_repo) == ["main"]
    assert _integrating_mark(home_repo, topic.id) is None


def test_a_kill_while_a_pick_is_stopped_is_aborted_by_the_rerun_which_then_reports_the_conflict(
    home_repo, tmp_path
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "other.py", "fine\n", "applies cleanly")
    bad = commit(wt, "README.md", "# from the branch\n", "conflicts")
    commit(home_repo, "README.md", "# from main\n", "main moved on")
    main_before = git(home_repo, "rev-parse", "main")
    # The real pick stops on the conflict (CHERRY_PICK_HEAD, sequencer/), then the kill.
    killed = _teardown_killed_in(topic, tmp_path, PICK)
    assert killed.code == KILLED, killed.err
    assert (home_repo / ".git/CHERRY_PICK_HEAD").exists()
    assert (home_repo / ".git/sequencer").is_dir()

    again = teardown(topic, "--integrate")
    assert again.code == 1, again.out + again.err
    assert again.json["error"]["code"] == "conflict", again.json["error"]
    assert bad[:12] in again.json["error"]["message"]
    assert git(home_repo, "rev-parse", "main") == main_before  # the first pick was undone too
    assert status(home_repo) == ""
    assert not (home_repo / ".git/CHERRY_PICK_HEAD").exists()
    assert wt.exists() and git(home_repo, "rev-parse", topic.branch) == bad  # nothing lost
    assert _integrating_mark(home_repo, topic.id) is None


def test_a_cherry_pick_the_router_did_not_start_is_refused_naming_the_command_that_clears_it(
    home_repo,
):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    theirs = git(home_repo, "rev-parse", "main")
    commit(home_repo, "README.md", "# mine\n", "mine")
    git(home_repo, "switch", "-q", "-c", "side", theirs)
    side = commit(home_repo, "README.md", "# side\n", "side")
    git(home_repo, "switch", "-q", "main")
    git(home_repo, "cherry-pick", side, check=False)  # the user's own pick, stopped on a conflict
    assert (home_repo / ".git/CHERRY_PICK_HEAD").exists()
    before = snapshot_of(home_repo)
    res = teardown(topic, "--integrate")
    assert res.code == 1
    assert res.json["error"]["code"] == "primary-busy"
    assert f"git -C {home_repo} cherry-pick --abort" in res.json["error"]["message"]
    assert snapshot_of(home_repo) == before  # the user's pick, its conflict and the worktree stay
    assert (home_repo / ".git/CHERRY_PICK_HEAD").exists()
    assert topic.worktrees["home"].exists()


def test_changes_made_after_the_killed_pick_are_kept_and_refused_naming_them(home_repo, tmp_path):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "a.py", "a = 1\n", "first")
    killed = _teardown_killed_in(
        topic, tmp_path, PICK, '"$REAL_GIT" -C "$2" reset -q --soft HEAD~1'
    )
    assert killed.code == KILLED, killed.err
    write(home_repo / "README.md", "# edited by hand after the kill\n")
    res = teardown(topic, "--integrate")
    assert res.code == 1
    assert res.json["error"]["code"] == "primary-busy"
    message = res.json["error"]["message"]
    assert "README.md" in message and "stash" in message
    assert (home_repo / "README.md").read_text() == "# edited by hand after the kill\n"
    assert git(home_repo, "diff", "--cached", "--name-only") == "a.py"  # nothing reset
    assert wt.exists() and branches(home_repo) == sorted(["main", topic.branch])
    # Once the user saves the edit, the rerun finishes the job.
    git(home_repo, "stash", "push", "-q", "--", "README.md")
    again = teardown(topic, "--integrate")
    assert again.code == 0, again.out
    assert git(home_repo, "log", "--format=%s", "main").splitlines().count("first") == 1
    assert git(home_repo, "stash", "list") != ""


def test_integrate_without_a_git_identity_is_refused_no_identity_naming_the_fix(
    workspace, monkeypatch
):
    web = make_repo(workspace, "web")
    topic = new_topic(web)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    for name in ("NAME", "EMAIL"):
        monkeypatch.delenv(f"GIT_COMMITTER_{name}")
        monkeypatch.delenv(f"GIT_AUTHOR_{name}")
    # No identity anywhere, and git may not guess one from the host name.
    git(web, "config", "--global", "user.useConfigOnly", "true")
    before = snapshot_of(web)
    res = teardown(topic, "--integrate")
    assert res.code == 1
    error = res.json["error"]
    assert error["code"] == "no-identity", error
    assert "user.name" in error["message"] and "user.email" in error["message"]
    assert snapshot_of(web) == before
    assert topic.worktrees["home"].exists()
