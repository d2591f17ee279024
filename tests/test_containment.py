"""Containment judges the repository, not the path (DESIGN §6).

A sibling directory can be a linked worktree (``git worktree add ../x``) of
the home repo, of another listed repo, or of a repo whose primary clone lies
outside the sibling set. The path check alone passes all three; the common
git dir and the primary clone behind it must not.
"""

from __future__ import annotations

from pathlib import Path

from helpers.plans import repos_md
from helpers.repos import branches, commit, git, make_repo, run_cli, worktree_paths, write
from helpers.topics import TOPIC_ID, new_topic, ship, teardown

ID = TOPIC_ID
WT = Path(".claude") / "worktrees" / ID


def _worktrees(home: Path, *items: tuple[str, Path]):
    topic = new_topic(home)
    write(topic.plan_dir / "repos.md", repos_md(home, *items, topic=None))
    res = run_cli("worktrees", str(topic.plan_dir), "--json", cwd=home)
    assert res.code == 0, res.out + res.err
    return topic, {r["name"]: r for r in res.json["repos"]}


def _section(topic) -> str:
    return (topic.plan_dir / "repos.md").read_text().split("## Worktrees")[1]


def _linked(repo: Path, path: Path, *options: str, start: str = "HEAD") -> Path:
    """A linked worktree of ``repo`` at ``path``, made the way a user makes one."""
    git(repo, "worktree", "add", "-q", *options, "--", str(path), start)
    return path


def _state(repo: Path) -> tuple[list[str], list[str]]:
    return worktree_paths(repo), branches(repo)


def test_a_linked_worktree_of_the_home_repo_is_a_duplicate_and_nothing_is_made_there(workspace):
    home = make_repo(workspace, "web")
    alias = _linked(home, workspace / "web-feature", "-b", "feature")
    commit(alias, "work.txt", "keep\n", "work in the alias")
    topic = new_topic(home)
    before = _state(home)
    write(topic.plan_dir / "repos.md", repos_md(home, ("alias", alias), topic=None))
    res = run_cli("worktrees", str(topic.plan_dir), "--json", cwd=home)
    assert res.code == 0, res.out + res.err
    [report] = [r for r in res.json["repos"] if r["name"] == "alias"]
    assert (report["status"], report["reason"], report["worktree"]) == (
        "refused",
        "duplicate",
        None,
    )
    assert _state(home) == before
    assert "alias" not in _section(topic)
    assert git(alias, "status", "--porcelain") == "" and (alias / "work.txt").is_file()


def test_a_linked_worktree_of_a_listed_repo_is_a_duplicate_in_either_order(workspace):
    home = make_repo(workspace, "web")
    api = make_repo(workspace, "api")
    alias = _linked(api, workspace / "api-feature", "-b", "feature")
    topic, repos = _worktrees(home, ("api", api), ("alias", alias))
    assert (repos["api"]["status"], repos["api"]["worktree"]) == ("created", str(api / WT))
    assert (repos["alias"]["status"], repos["alias"]["reason"]) == ("refused", "duplicate")
    assert worktree_paths(api) == [str(api), str(alias), str(api / WT)]
    assert "alias" not in _section(topic)


def test_a_listed_linked_worktree_first_makes_its_primary_the_duplicate(workspace):
    home = make_repo(workspace, "web")
    api = make_repo(workspace, "api")
    alias = _linked(api, workspace / "api-feature", "-b", "feature")
    before = _state(api)
    topic, repos = _worktrees(home, ("alias", alias), ("api", api))
    assert (repos["alias"]["status"], repos["alias"]["worktree"]) == ("reused", str(alias))
    assert (repos["api"]["status"], repos["api"]["reason"]) == ("refused", "duplicate")
    assert _state(api) == before  # reused in place: no new worktree, no new branch
    assert f"- alias: {alias}\n" in _section(topic) and "- api:" not in _section(topic)


def test_a_linked_worktree_whose_primary_is_not_a_sibling_is_refused_and_untouched(
    workspace, tmp_path
):
    home = make_repo(workspace, "web")
    far = make_repo(tmp_path / "elsewhere", "far")
    alias = _linked(far, workspace / "far-feature", "-b", "feature")
    before = _state(far)
    topic, repos = _worktrees(home, ("far", alias))
    assert (repos["far"]["status"], repos["far"]["reason"]) == ("refused", "containment")
    assert _state(far) == before
    assert not (far / ".claude").exists()
    assert "far" not in _section(topic)


def test_a_listed_linked_worktree_on_a_feature_branch_is_reused_in_place(workspace):
    home = make_repo(workspace, "web")
    api = make_repo(workspace, "api")
    feature = _linked(api, workspace / "api-feature", "-b", "feature")
    before = _state(api)
    topic, repos = _worktrees(home, ("api", feature))
    report = repos["api"]
    assert (report["status"], report["worktree"], report["branch"]) == (
        "reused",
        str(feature),
        "feature",
    )
    assert report["path"] == str(api)
    assert _state(api) == before
    assert f"- api: {feature}\n" in _section(topic)
    # A second run changes nothing.
    again = run_cli("worktrees", str(topic.plan_dir), "--json", cwd=home)
    assert again.json["repos_md_updated"] is False and _state(api) == before
    doctor = run_cli("doctor", "--json", cwd=home).json
    assert [f for f in doctor["findings"] if f["kind"] == "worktrees-section"] == []


def test_a_listed_linked_worktree_on_the_default_branch_is_refused(workspace):
    home = make_repo(workspace, "web")
    api = make_repo(workspace, "api")
    git(api, "switch", "-q", "-c", "dev")
    on_main = _linked(api, workspace / "api-main", start="main")
    commit(on_main, "main-work.txt", "keep\n", "work on main")
    before = _state(api)
    topic, repos = _worktrees(home, ("api", on_main))
    assert (repos["api"]["status"], repos["api"]["reason"]) == (
        "refused",
        "default-branch-worktree",
    )
    assert _state(api) == before
    assert (on_main / "main-work.txt").is_file()
    assert "- api:" not in _section(topic)


def test_a_listed_linked_worktree_on_a_detached_head_is_refused(workspace):
    home = make_repo(workspace, "web")
    api = make_repo(workspace, "api")
    detached = _linked(api, workspace / "api-detached", "--detach")
    before = _state(api)
    _, repos = _worktrees(home, ("api", detached))
    assert (repos["api"]["status"], repos["api"]["reason"]) == (
        "refused",
        "default-branch-worktree",
    )
    assert _state(api) == before


def test_teardown_integrates_once_into_a_primary_listed_twice(workspace):
    home = make_repo(workspace, "web")
    api = make_repo(workspace, "api")
    alias = _linked(api, workspace / "api-other", "-b", "other")
    topic, _ = _worktrees(home, ("api", api), ("alias", alias))
    sha = commit(api / WT, "api.txt", "api work\n", "api work")
    res = teardown(ship(topic), "--integrate")
    assert res.code == 0, res.out + res.err
    by_name = {r["name"]: r for r in res.json["repos"]}
    assert "alias" not in by_name or not any(
        s["outcome"] == "done" for s in by_name["alias"]["steps"]
    )
    integrated = [
        s
        for r in res.json["repos"]
        for s in r["steps"]
        if s["name"] == "integrate" and s["outcome"] == "done"
    ]
    assert len(integrated) == 1
    subjects = git(api, "log", "--format=%s", "main").splitlines()
    assert subjects.count("api work") == 1
    assert git(api, "cat-file", "-t", sha) == "commit"
    # The alias checkout and its branch are the user's: untouched.
    assert alias.is_dir() and "other" in branches(api)


def test_teardown_of_a_reused_linked_worktree_integrates_its_commits_once(workspace):
    home = make_repo(workspace, "web")
    api = make_repo(workspace, "api")
    feature = _linked(api, workspace / "api-feature", "-b", "feature")
    topic, repos = _worktrees(home, ("api", feature))
    assert repos["api"]["status"] == "reused"
    commit(feature, "api.txt", "api work\n", "api work")
    res = teardown(ship(topic), "--integrate")
    assert res.code == 0, res.out + res.err
    [api_report] = [r for r in res.json["repos"] if r["name"] == "api"]
    steps = {s["name"]: s["outcome"] for s in api_report["steps"]}
    assert steps["integrate"] == "done"
    assert git(api, "log", "--format=%s", "main").splitlines().count("api work") == 1
    assert git(api, "status", "--porcelain") == ""
