"""Worktrees the host asked for (``hook worktree-create``) are kept apart from /team runs
(DESIGN §8): they never displace a run, their notice says whose worktree it is, and those
that hold nothing are listed apart by ``status`` and removed by ``sweep --host-worktrees``.

Real git with a local bare origin. A *session* here is a process that runs the hook as the
client does (the hook's parent), and lives until the test ends it.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from helpers.plans import artifact, touch
from helpers.repos import branches, commit, run_cli, worktree_paths, write
from helpers.sessions import Session, asked_for
from helpers.topics import all_answer, answers, new_topic, notice, snapshot_of

from router.topic import state

TODAY = dt.date.today().isoformat()


@pytest.fixture
def run(home_repo: Path):
    """A /team run at RESEARCH whose artifacts are older than anything made afterwards."""
    made = new_topic(home_repo, "add rate limiting")
    for name in ("task.md", "questions.md"):
        touch(artifact(made.plan_dir, name), 1_000_000_000)
    return made


def test_a_host_worktree_never_displaces_a_run_and_its_notice_says_whose_it_is(home_repo, run):
    host = asked_for(home_repo, "feat-x")
    assert host.id == f"{TODAY}-feat-x"
    assert state.read_record(home_repo / ".git", host.id).made_by == "host"
    assert state.read_record(home_repo / ".git", run.id).made_by is None

    assert answers(home_repo) == all_answer(run.id)
    assert f"Phase: RESEARCH | Id: {run.id}" in notice(home_repo).splitlines()
    nxt = run_cli("next", "--json", cwd=home_repo)
    assert (nxt.json["resume_at"], nxt.json["request"]) == ("RESEARCH", None)
    listed = run_cli("status", "--json", cwd=home_repo).json
    assert [t["id"] for t in listed["topics"]] == [run.id]
    assert listed["host_worktrees"] == [
        {
            "id": host.id,
            "worktree": str(host.worktree),
            "dirty": False,
            "ahead": 0,
            "held_by": [],
            "plan_dirs": [],
            "idle": True,
            "holds": [],
        }
    ]

    # A session in the host's worktree is about that worktree, told it is no run.
    assert answers(host.worktree) == all_answer(host.id)
    assert notice(host.worktree).splitlines() == [
        f"team-router: this session works in {host.worktree}, the worktree of topic "
        f"{host.id}, which team-router made when Claude Code asked for a worktree "
        "(`claude --worktree`, EnterWorktree or a worktree-isolated subagent). It is no /team "
        "run: there is nothing to resume.",
        f"Id: {host.id}",
        f"Worktree: {host.worktree}",
        "When the work here is done: ExitWorktree removes it if it holds no work, "
        f"`team-router teardown {host.id}` takes it apart (keeping anything that would lose "
        "work), and `team-router sweep --host-worktrees` removes every such worktree that "
        "holds nothing. To start a /team run, invoke /team with a request.",
    ]


def test_with_only_host_worktrees_the_primary_clone_has_nothing_to_resume(home_repo):
    asked_for(home_repo, "feat-x")
    asked_for(home_repo, "agent-a1b2c3d4")
    assert answers(home_repo) == {
        "hook": None,
        "phase": "no-topic",
        "next": "no-topic",
        "status": None,
    }


def test_a_host_worktree_is_a_run_once_the_pipeline_writes_an_artifact(home_repo, run):
    host = asked_for(home_repo, "feat-x")
    artifact(host.worktree / "docs" / "plans" / host.id, "task.md")
    assert answers(home_repo) == all_answer(host.id)
    assert f"Phase: QUESTION | Id: {host.id}" in notice(home_repo).splitlines()
    listed = run_cli("status", "--json", cwd=home_repo).json
    assert ([t["id"] for t in listed["topics"]], listed["host_worktrees"]) == (
        sorted([run.id, host.id]),
        [],
    )


def test_a_run_started_in_a_host_worktree_is_its_answer_and_keeps_it_from_the_sweep(home_repo):
    host = asked_for(home_repo, "feat-x")
    made = run_cli("new", "add rate limiting", "--json", cwd=host.worktree)
    assert (made.code, made.json["home"]["status"]) == (0, "reused"), made.out
    artifact(Path(made.json["plan_dir"]), "task.md")
    assert answers(host.worktree) == all_answer(made.json["id"])
    (listed,) = run_cli("status", "--json", cwd=home_repo).json["host_worktrees"]
    assert listed["holds"] == [f"docs/plans/{made.json['id']}, another topic's"]
    res = run_cli("sweep", "--host-worktrees", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    assert [(h["id"], h["outcome"]) for h in res.json["host_worktrees"]] == [(host.id, "kept")]
    assert (Path(made.json["plan_dir"]) / "task.md").is_file()


def test_the_host_asking_for_a_runs_own_worktree_leaves_it_a_run(home_repo):
    made = new_topic(home_repo, "native work", topic_id="ENG-7-native")
    Session(home_repo, "ENG-7-native").end()
    assert state.read_record(home_repo / ".git", made.id).made_by is None
    assert answers(home_repo) == all_answer(made.id)


def test_sweep_host_worktrees_removes_those_that_hold_nothing_and_keeps_the_rest(home_repo, run):
    idle = asked_for(home_repo, "agent-1111")
    dirty = asked_for(home_repo, "agent-2222")
    write(dirty.worktree / "scratch.txt", "unsaved\n")
    committed = asked_for(home_repo, "agent-3333")
    commit(committed.worktree, "feature.txt", "feature\n", "a commit of its own")
    held = Session(home_repo, "agent-4444")  # its session still runs
    pid = held.proc.pid
    try:
        listed = run_cli("status", "--json", cwd=home_repo).json["host_worktrees"]
        assert {h["id"]: h["holds"] for h in listed} == {
            idle.id: [],
            dirty.id: ["uncommitted or untracked files"],
            committed.id: ["1 commit(s) of its own"],
            held.id: [f"a live holder, process {pid} (session s-agent-4444)"],
        }
        before = snapshot_of(home_repo)
        dry = run_cli("sweep", "--host-worktrees", "--dry-run", "--json", cwd=home_repo)
        assert dry.code == 0, dry.out + dry.err
        assert [(h["id"], h["outcome"]) for h in dry.json["host_worktrees"]] == [
            (idle.id, "would-remove"),
            (dirty.id, "kept"),
            (committed.id, "kept"),
            (held.id, "kept"),
        ]
        assert snapshot_of(home_repo) == before

        res = run_cli("sweep", "--host-worktrees", "--json", cwd=home_repo)
        assert res.code == 0, res.out + res.err
        assert {h["id"]: (h["outcome"], h["detail"]) for h in res.json["host_worktrees"]} == {
            idle.id: (
                "removed",
                "worktree, branch and residue removed (it held no work that exists nowhere else)",
            ),
            dirty.id: ("kept", "it holds uncommitted or untracked files"),
            committed.id: ("kept", "it holds 1 commit(s) of its own"),
            held.id: ("kept", f"it holds a live holder, process {pid} (session s-agent-4444)"),
        }
        assert not idle.worktree.exists() and idle.id not in branches(home_repo)
        assert (dirty.worktree / "scratch.txt").read_text() == "unsaved\n"
        assert (committed.worktree / "feature.txt").read_text() == "feature\n"
        assert held.worktree.is_dir() and run.worktrees["home"].is_dir()
        kept = (run.worktrees["home"], dirty.worktree, committed.worktree, held.worktree)
        assert sorted(worktree_paths(home_repo)) == sorted(map(str, (home_repo, *kept)))
    finally:
        held.end()
    # Its session ended: nothing holds it any more.
    res = run_cli("sweep", "--host-worktrees", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    assert f"removed: {held.worktree} ({held.id})" in res.out.splitlines()
    assert not held.worktree.exists() and held.id not in branches(home_repo)
    assert answers(home_repo) == all_answer(run.id)
