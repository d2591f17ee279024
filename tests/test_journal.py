"""The one journal (router.topic.journal): every resumable operation has one rerun rule, and
each half-done state a real kill leaves is read back by the journal's reader with that rule,
then finished or undone by the rerun, losing nothing."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from helpers.faults import CRASHED, KILLED, finish, git_killer, run, spawn
from helpers.repos import branches, commit, git, run_cli, status, worktree_paths, write
from helpers.topics import new_topic, ship, teardown
from test_signals import _slow_line, _wait_for
from test_snapshot import _HEAD_UNSET, _assert_staged_back, _staged_work, make_work

from router.topic import state
from router.topic.journal import (
    RULES,
    Operation,
    Pending,
    Rerun,
    pending,
    restores_pending,
)
from router.topic.record import TopicRecord

ID = "2026-05-01-add-thing"


def _pending(repo: Path, topic_id: str = ID) -> tuple[Pending, ...]:
    return pending(state.read_record(repo / ".git", topic_id))


def test_every_operation_has_exactly_one_rerun_rule():
    assert set(RULES) == set(Operation)
    assert all(isinstance(rule, Rerun) for rule in RULES.values())
    assert {op: RULES[op] for op in Operation} == {
        Operation.CREATE: Rerun.FINISH,
        Operation.SETUP: Rerun.FINISH,
        Operation.TEARDOWN: Rerun.FINISH,
        Operation.INTEGRATE: Rerun.UNDO,
        Operation.REMOVE: Rerun.FINISH,
        Operation.RESTORE: Rerun.FINISH,
        Operation.RESTORE_ADD: Rerun.UNDO,
    }


def test_a_record_of_the_first_schema_with_its_marks_in_extra_reads_as_pending():
    sha = "a" * 40
    record = TopicRecord.from_json(
        {
            "id": ID,
            "repo": "home",
            "branch": ID,
            "steps": ["inspect", "base", "claim"],
            "extra": {
                "integrating": {"branch": ID, "target": "main", "tip": sha, "commits": [sha]},
                "removing": {"path": "/w/x"},
                "teardown": {"done": ["integrate"], "complete": False},
            },
        }
    )
    assert pending(record) == (
        Pending(Operation.CREATE, "home", ID, None, "claim"),
        Pending(Operation.TEARDOWN, "home", ID, None, "integrate"),
        Pending(Operation.INTEGRATE, "home", ID),
        Pending(Operation.REMOVE, "home", ID, "/w/x"),
    )
    assert [p.rule for p in pending(record)] == [
        Rerun.FINISH,
        Rerun.FINISH,
        Rerun.UNDO,
        Rerun.FINISH,
    ]
    assert pending(None) == ()


def test_a_creation_killed_before_its_add_is_pending_and_finished_by_the_rerun(home_repo):
    args = ("new", "Add thing", "--date", "2026-05-01", "--json")
    crashed = run(*args, cwd=home_repo, crash_at="add")
    assert crashed.code == CRASHED, crashed.err
    [left] = _pending(home_repo)
    assert (left.operation, left.rule, left.branch, left.step) == (
        Operation.CREATE,
        Rerun.FINISH,
        ID,
        "claim",
    )
    again = run(*args, cwd=home_repo)
    assert again.code == 0, again.err
    assert _pending(home_repo) == ()
    worktree = home_repo / ".claude/worktrees" / ID
    assert worktree_paths(home_repo) == [str(home_repo), str(worktree)]
    assert git(worktree, "symbolic-ref", "--short", "HEAD") == ID


def test_a_setup_line_that_failed_is_pending_and_finished_by_the_rerun(home_repo):
    commit(home_repo, ".worktreesetup", "echo one >> ran.txt\ntest -e ready\n", "declare setup")
    git(home_repo, "push", "-q", "origin", "main")
    args = ("new", "Add thing", "--id", ID, "--json")
    made = run_cli(*args, cwd=home_repo)
    assert made.code == 0, made.err
    assert made.json["home"]["setup"]["status"] == "failed"
    wt = home_repo / ".claude/worktrees" / ID
    assert _pending(home_repo) == (Pending(Operation.SETUP, "home", ID, str(wt), "failed"),)
    (wt / "ready").touch()
    again = run_cli(*args, cwd=home_repo)
    assert again.code == 0, again.err
    assert again.json["home"]["setup"]["status"] == "done"
    assert _pending(home_repo) == ()
    assert (wt / "ran.txt").read_text() == "one\n"  # the line that succeeded never ran twice


def test_a_teardown_stopped_by_a_signal_is_pending_and_finished_by_the_rerun(home_repo, tmp_path):
    # A kill between steps leaves no mark (each step is judged again from git's facts);
    # a run that stops by a signal records the steps it finished, and no more.
    topic = ship(new_topic(home_repo))
    wt = topic.worktrees["home"]
    started, finished, fast = _slow_line(home_repo, tmp_path)
    proc = spawn("teardown", topic.id, "--json", cwd=home_repo, new_group=True)
    _wait_for(started)
    os.killpg(proc.pid, signal.SIGTERM)
    assert finish(proc, timeout=60).code == 128 + signal.SIGTERM
    assert _pending(home_repo, topic.id) == (
        Pending(Operation.TEARDOWN, "home", topic.branch, str(wt), "sweep"),
    )
    fast.touch()
    again = teardown(topic)
    assert again.code == 0, again.out + again.err
    assert _pending(home_repo, topic.id) == ()
    assert finished.read_text() == "ran\n"
    assert worktree_paths(home_repo) == [str(home_repo)] and branches(home_repo) == ["main"]


def test_a_pick_killed_mid_way_is_pending_and_undone_then_made_once_by_the_rerun(
    home_repo, tmp_path
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "a.py", "a = 1\n", "first")
    commit(wt, "b.py", "b = 2\n", "second")
    env = git_killer(
        tmp_path / "killer-bin",
        "cherry-pick --no-edit",
        '"$REAL_GIT" -C "$2" reset -q --soft HEAD~1',
    )
    args = ("teardown", topic.id, "--integrate", "--json")
    killed = run(*args, cwd=home_repo, env=env, new_group=True)
    assert killed.code == KILLED, killed.err
    picking = [p for p in _pending(home_repo, topic.id) if p.operation is Operation.INTEGRATE]
    assert picking == [Pending(Operation.INTEGRATE, "home", topic.branch)]
    assert picking[0].rule is Rerun.UNDO
    again = teardown(topic, "--integrate")
    assert again.code == 0, again.out + again.err
    assert _pending(home_repo, topic.id) == ()
    subjects = git(home_repo, "log", "--format=%s", "main").splitlines()
    assert subjects[:2] == ["second", "first"]
    assert subjects.count("first") == subjects.count("second") == 1
    assert status(home_repo) == ""


def test_a_removal_killed_mid_way_is_pending_and_finished_by_the_rerun(home_repo, tmp_path):
    topic = ship(new_topic(home_repo))
    wt = topic.worktrees["home"]
    env = git_killer(
        tmp_path / "killer-bin",
        "worktree remove",
        'for wt; do :; done; rm -f "$wt/README.md" "$wt/.git"',
        real=False,
    )
    killed = run("teardown", topic.id, "--json", cwd=home_repo, env=env, new_group=True)
    assert killed.code == KILLED, killed.err
    removing = [p for p in _pending(home_repo, topic.id) if p.operation is Operation.REMOVE]
    assert removing == [Pending(Operation.REMOVE, "home", topic.branch, str(wt))]
    assert removing[0].rule is Rerun.FINISH
    again = teardown(topic)
    assert again.code == 0, again.out + again.err
    assert _pending(home_repo, topic.id) == ()
    assert not wt.exists() and worktree_paths(home_repo) == [str(home_repo)]


def test_a_restore_killed_before_its_index_step_is_pending_and_finished_by_the_rerun(
    home_repo, tmp_path
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    _staged_work(wt)
    assert teardown(topic, "--force").code == 0
    env = git_killer(tmp_path / "killer-bin", "read-tree", real=False)
    killed = run("restore", topic.id, "--json", cwd=home_repo, env=env, new_group=True)
    assert killed.code == KILLED, killed.out + killed.err
    left = restores_pending(home_repo / ".git")
    assert left == (Pending(Operation.RESTORE, "", topic.branch, str(wt)),)
    assert left[0].rule is Rerun.FINISH
    again = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    assert restores_pending(home_repo / ".git") == ()
    _assert_staged_back(wt)


def test_a_restore_add_killed_before_its_checkout_is_pending_and_undone_by_the_rerun(
    home_repo, tmp_path
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    sha = make_work(wt)
    assert teardown(topic, "--force").code == 0
    env = git_killer(tmp_path / "killer-bin", "worktree add", _HEAD_UNSET, real=False)
    killed = run("restore", topic.id, "--json", cwd=home_repo, env=env, new_group=True)
    assert killed.code == KILLED, killed.out + killed.err
    left = restores_pending(home_repo / ".git")
    assert left == (Pending(Operation.RESTORE_ADD, "", topic.branch, str(wt), topic.branch),)
    assert left[0].rule is Rerun.UNDO
    again = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    assert restores_pending(home_repo / ".git") == ()
    assert git(wt, "rev-parse", "HEAD") == sha
    assert (wt / "lib.py").read_text() == "v = 2  # edited, not committed\n"
    write(wt / "after.txt", "the restored worktree is a working one\n")
    assert "?? after.txt" in status(wt).splitlines()
