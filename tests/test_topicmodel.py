"""The repos of a topic, decided once for every command (router/topic/model.py)."""

from __future__ import annotations

from pathlib import Path

from helpers.repos import run_cli
from helpers.topics import multi_topic, ship

from router.plandir.reposmd import WorktreeLine
from router.topic import state
from router.topic.model import RepoPlace, repo_places

ID = "2026-05-01-add-thing"


def test_home_then_repos_md_order_then_record_only_then_section_only():
    record = state.TopicRecord(
        id=ID,
        repo="home",
        branch=ID,
        repos=(
            state.RepoEntry("home", "/ws/web", "/ws/web/w"),
            state.RepoEntry("db", "/ws/db", "/ws/db/w-recorded"),
            state.RepoEntry("api", "/ws/api-recorded", "/ws/api/w-recorded"),
        ),
    )
    lines = [
        WorktreeLine("cli", "/ws/cli/w"),
        WorktreeLine("api", "/ws/api/w"),
        WorktreeLine("x", "rel"),
    ]
    places = repo_places("/ws/web", "/ws/web/w", record, [("api", "/ws/api")], lines)
    assert places == [
        RepoPlace("home", "/ws/web", "/ws/web/w"),
        RepoPlace("api", "/ws/api", "/ws/api/w"),  # repos.md's primary, the section's worktree
        RepoPlace("db", "/ws/db", "/ws/db/w-recorded"),  # only the record knows it
        RepoPlace("cli", None, "/ws/cli/w"),  # only the section names it
    ]


def test_phase_status_and_teardown_list_the_same_repos_in_the_same_order(workspace):
    topic = ship(multi_topic(workspace, ("api", "db")))
    status = run_cli("status", "--json", cwd=topic.home)
    listed = [r["name"] for r in status.json["topics"][0]["repos"]]
    dry = run_cli("teardown", topic.id, "--dry-run", "--json", cwd=topic.home)
    assert dry.code == 0, dry.out + dry.err
    assert listed == [r["name"] for r in dry.json["repos"]] == ["home", "api", "db"]
    worktrees = {r["name"]: r["worktree"] for r in status.json["topics"][0]["repos"]}
    assert worktrees == {n: str(p) for n, p in topic.worktrees.items()}
    assert all(Path(p).is_dir() for p in worktrees.values())
