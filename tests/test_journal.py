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


# -- a half-made `git worktree add` of ours: one rule, one finding, one undo ------------------

NEW_ID = "2026-05-02-other-thing"
NEW = ("new", "Other thing", "--date", "2026-05-02", "--json")


def _both_adds_killed_before_their_head(home_repo: Path, tmp_path: Path, then: str = ""):
    """A restore's add and a new's add, each killed before git set its HEAD (``then``: what
    the stand-in does after each add, before the kill)."""
    topic = new_topic(home_repo)
    sha = make_work(topic.worktrees["home"])
    assert teardown(topic, "--force").code == 0
    env = git_killer(tmp_path / "killer-bin", "worktree add", _HEAD_UNSET + then, real=False)
    for argv in (("restore", topic.id, "--json"), NEW):
        killed = run(*argv, cwd=home_repo, env=env, new_group=True)
        assert killed.code == KILLED, killed.out + killed.err
    assert git(home_repo, "rev-list", "--all", check=False) == ""  # git cannot walk the refs
    return topic, sha, home_repo / ".claude/worktrees" / NEW_ID


def _half_made(repo: Path, *flags: str) -> list[dict]:
    res = run_cli("doctor", "--json", *flags, cwd=repo)
    assert res.code == 0, res.out + res.err
    return sorted(
        (f for f in res.json["findings"] if f["kind"] == "half-made-registration"),
        key=lambda f: f["path"],
    )


def test_a_restores_and_a_creations_half_made_add_are_one_finding_each_undone_by_their_rerun(
    home_repo, tmp_path
):
    topic, sha, made = _both_adds_killed_before_their_head(home_repo, tmp_path)
    restored = topic.worktrees["home"]
    admin = home_repo / ".git/worktrees" / NEW_ID
    restore_detail = (
        f"a restore of {topic.branch} was killed inside `git worktree add`, before anything was "
        "checked out: git cannot use this registration (`git rev-list --all` may fail while it "
        f"is there); `team-router restore {topic.branch}` removes it and restores, "
        "`team-router doctor --repair` removes it"
    )
    new_detail = (
        f"a `team-router new` of {NEW_ID} was killed inside `git worktree add`, before git set "
        f"the worktree's HEAD: git cannot use its registration {admin} (`git rev-list --all` "
        "fails while it is there); `team-router new` (`worktrees` for a repo other than the "
        "topic's home) run again removes it and creates the worktree, "
        "`team-router doctor --repair` removes it"
    )
    found = [(f["path"], f["topic"], f["repaired"], f["detail"]) for f in _half_made(home_repo)]
    assert found == sorted(
        [
            (str(restored), topic.id, False, restore_detail),
            (str(made), NEW_ID, False, new_detail),
        ]
    ), found

    again = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    assert git(restored, "rev-parse", "HEAD") == sha
    assert (restored / "lib.py").read_text() == "v = 2  # edited, not committed\n"
    assert [f["path"] for f in _half_made(home_repo)] == [str(made)]

    created = run_cli(*NEW, cwd=home_repo)
    assert created.code == 0, created.out + created.err
    assert created.json["home"]["status"] == "created"
    assert _half_made(home_repo) == []
    assert git(home_repo, "rev-list", "--all", check=False) != ""
    assert git(made, "status", "--porcelain") == "" and (made / "README.md").exists()
    assert worktree_paths(home_repo) == [str(home_repo), str(restored), str(made)]


def test_a_half_made_add_holding_a_users_file_is_undone_neither_by_a_rerun_nor_by_doctor(
    home_repo, tmp_path
):
    topic, _, made = _both_adds_killed_before_their_head(
        home_repo, tmp_path, 'echo mine > "$wt/notes.txt"'
    )
    restored = topic.worktrees["home"]
    restore = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert restore.code == 1, restore.out + restore.err
    create = run_cli(*NEW, cwd=home_repo)
    assert create.code == 1, create.out + create.err
    assert "half-made-worktree" in restore.out and "half-made-worktree" in create.out
    repaired = _half_made(home_repo, "--repair")
    assert [(f["path"], f["repaired"]) for f in repaired] == sorted(
        [(str(restored), False), (str(made), False)]
    ), repaired
    assert all("notes.txt" in f["detail"] for f in repaired), repaired
    for wt in (restored, made):
        assert (wt / "notes.txt").read_text() == "mine\n"
        assert (wt / ".git").is_file()
