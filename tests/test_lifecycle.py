"""A topic's whole life, in every repository format git writes (SHA-1 or SHA-256 object
ids; refs in files or in a reftable): new, work, teardown refused and forced, restore,
pr-cleanup of a merge and --abandon, the host's worktree hooks, doctor --repair."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.fakegh import install_fake_gh, make_github_repo, pr
from helpers.origin import merge_on_origin, push_branch
from helpers.repos import (
    FORMATS,
    branches,
    commit,
    git,
    repo_format,
    run_cli,
    status,
    worktree_paths,
    write,
)
from helpers.topics import new_topic, ship, snapshot_of, steps_of, teardown

pytestmark = pytest.mark.parametrize("git_format", FORMATS, indirect=True)

SNAPSHOTS = "refs/team-router/snapshots/"


def _json(*args: str, cwd: Path, code: int = 0) -> dict:
    res = run_cli(*args, "--json", cwd=cwd)
    assert res.code == code, res.out + res.err
    return res.json


def test_a_topic_lives_and_goes_in_one_repo_losing_nothing(
    git_format, workspace, tmp_path, monkeypatch
):
    web = make_github_repo(workspace, "web")
    assert repo_format(web) == git_format
    topic = new_topic(web)
    wt = topic.worktrees["home"]
    assert repo_format(wt) == git_format
    work = commit(wt, "limits.py", "LIMIT = 10\n", "add limits")
    write(wt / "draft.py", "draft = 1\n")

    # Not integrated, not snapshotted: refused, nothing touched.
    before = snapshot_of(web)
    refused = teardown(topic)
    assert refused.code == 1, refused.out
    assert refused.json["error"]["code"] == "dirty-worktree", refused.out
    assert snapshot_of(web) == before

    # --force snapshots the work first; restore brings every bit of it back.
    forced = teardown(topic, "--force")
    assert forced.code == 0, forced.out
    assert not wt.exists() and topic.branch not in branches(web)
    assert git(web, "show", f"{SNAPSHOTS}{topic.branch}:draft.py") == "draft = 1"
    restored = _json("restore", topic.id, cwd=web)
    assert restored["repos"][0]["status"] == "restored", restored
    assert git(wt, "rev-parse", "HEAD") == work
    assert (wt / "draft.py").read_text() == "draft = 1\n"
    assert git(wt, "status", "--porcelain") == "?? draft.py"

    # Shipped and merged on origin: pr-cleanup proves it and takes it all apart.
    git(wt, "add", "draft.py")
    head = commit(wt, "draft.py", "draft = 2\n", "finish the draft")
    push_branch(wt, topic.branch)
    merge = merge_on_origin(web, topic.branch)
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(7, topic.branch, head, merge_commit=merge),))
    cleaned = _json("pr-cleanup", topic.branch, cwd=web)
    assert cleaned["mode"] == "merged", cleaned
    assert not wt.exists() and worktree_paths(web) == [str(web)]
    assert topic.branch not in branches(web)
    assert git(web, "rev-parse", "main") == merge
    assert status(web) == ""

    # Given up: --abandon keeps the work in a snapshot.
    dropped = new_topic(web, "try another way")
    dropped_wt = dropped.worktrees["home"]
    tried = commit(dropped_wt, "other.py", "other = 1\n", "another way")
    abandoned = run_cli("pr-cleanup", dropped.branch, "--abandon", "--yes", "--json", cwd=web)
    assert abandoned.code == 0, abandoned.out + abandoned.err
    assert not dropped_wt.exists()
    snap = f"{SNAPSHOTS}{dropped.branch}"
    git(web, "merge-base", "--is-ancestor", tried, snap)
    assert git(web, "show", f"{snap}:other.py") == "other = 1"

    # A topic that never made a commit goes with a plain teardown.
    empty = new_topic(web, "nothing yet")
    gone = teardown(empty)
    assert gone.code == 0, gone.out
    assert not empty.worktrees["home"].exists()
    assert worktree_paths(web) == [str(web)]


def test_the_hosts_worktrees_come_and_go_through_the_hooks(git_format, workspace):
    web = make_github_repo(workspace, "web")
    payload = {"session_id": "s-1", "hook_event_name": "WorktreeCreate", "cwd": str(web)}
    made = run_cli("hook", "worktree-create", stdin=json.dumps({**payload, "name": "ENG-1-x"}))
    assert made.code == 0, made.err
    path = Path(made.out.strip())
    assert git(path, "symbolic-ref", "--short", "HEAD") == "ENG-1-x"
    removal = {
        "session_id": "s-1",
        "hook_event_name": "WorktreeRemove",
        "cwd": str(path),
        "worktree_path": str(path),
    }
    removed = run_cli("hook", "worktree-remove", stdin=json.dumps(removal))
    assert removed.code == 0, removed.out + removed.err
    assert not path.exists() and worktree_paths(web) == [str(web)]
    assert "ENG-1-x" not in branches(web)


def test_doctor_repairs_a_registration_whose_directory_is_gone(git_format, home_repo):
    path = home_repo / ".claude" / "worktrees" / "scratch"
    git(home_repo, "worktree", "add", "-q", "-b", "scratch", str(path))
    commit(path, "idea.py", "idea = 1\n", "an idea its branch keeps")
    shutil.rmtree(path)
    res = _json("doctor", "--repair", cwd=home_repo)
    [entry] = [f for f in res["findings"] if f["path"] == str(path)]
    assert (entry["kind"], entry["repaired"]) == ("registration-dir-gone", True), entry
    assert worktree_paths(home_repo) == [str(home_repo)]
    assert "scratch" in branches(home_repo)


def test_a_topic_across_two_repos_lives_and_goes_losing_nothing(git_format, workspace):
    from helpers.topics import multi_topic

    topic = multi_topic(workspace, ("api",))
    for name, wt in topic.worktrees.items():
        assert repo_format(wt) == git_format
        commit(wt, f"{name}.py", f"{name} = 1\n", f"{name} work")
    write(topic.worktrees["api"] / "wip.py", "wip = 1\n")
    before = {n: snapshot_of(r) for n, r in topic.repos.items()}
    refused = teardown(topic)
    assert refused.code == 1, refused.out
    assert {n: snapshot_of(r) for n, r in topic.repos.items()} == before
    assert teardown(topic, "--force").code == 0
    assert not any(wt.exists() for wt in topic.worktrees.values())
    restored = _json("restore", topic.id, cwd=topic.home)
    assert {r["status"] for r in restored["repos"]} == {"restored"}, restored
    assert (topic.worktrees["api"] / "wip.py").read_text() == "wip = 1\n"
    (topic.worktrees["api"] / "wip.py").unlink()
    ship(topic)  # the run finished: its artifacts may go with it
    done = teardown(topic, "--integrate")
    assert done.code == 0, done.out
    for name, repo in topic.repos.items():
        assert git(repo, "log", "-1", "--format=%s", "main") == f"{name} work"
        assert steps_of(done.json, name)["remove"]["outcome"] == "done"
        assert worktree_paths(repo) == [str(repo)]
