"""Review: pr-cleanup, sweep and doctor --repair in situations that could lose work."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.fakegh import hide_gh, make_github_repo
from helpers.origin import merge_on_origin
from helpers.repos import commit, git, run_cli, write
from helpers.topics import TOPIC_ID, new_topic


@pytest.fixture
def web(workspace: Path) -> Path:
    return make_github_repo(workspace, "web")


@pytest.fixture
def no_gh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return hide_gh(tmp_path, monkeypatch)


def pushed_topic(repo: Path, topic_id: str = TOPIC_ID) -> Path:
    worktree = new_topic(repo, "Add rate limiting", topic_id=topic_id).worktrees["home"]
    commit(worktree, "limits.py", "LIMIT = 10\n", "add limits")
    commit(worktree, "test_limits.py", "assert True\n", "test limits")
    git(worktree, "push", "-q", "origin", f"{topic_id}:{topic_id}")
    return worktree


def cleanup(repo: Path, *args: str, cwd: Path | None = None):
    return run_cli("pr-cleanup", *args, "--json", cwd=cwd or repo)


def steps(data: dict) -> dict[str, dict]:
    return {s["name"]: s for s in data["steps"]}


# -- pr-cleanup --reclaim ------------------------------------------------------------------


def test_reclaim_keeps_every_stash_entry(web, no_gh):
    """--reclaim expires unreachable reflog entries; refs/stash's older entries are stashes, not log."""
    pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="squash")
    write(web / "README.md", "first stashed edit\n")
    git(web, "stash", "push", "-q", "-m", "first")
    write(web / "README.md", "second stashed edit\n")
    git(web, "stash", "push", "-q", "-m", "second")
    before = git(web, "stash", "list", "--format=%H %gs").splitlines()
    assert len(before) == 2
    res = cleanup(web, TOPIC_ID, "--reclaim")
    assert res.code == 0, res.out + res.err
    assert steps(res.json)["reclaim"]["outcome"] == "done"
    assert git(web, "stash", "list", "--format=%H %gs").splitlines() == before
    assert "first stashed edit" in git(web, "stash", "show", "-p", "stash@{1}")


# -- sweep -----------------------------------------------------------------------------------


def leftovers(repo: Path) -> Path:
    return repo / ".claude" / "worktrees"


def test_sweep_keeps_a_nested_clone_under_tmp(home_repo):
    """A repository someone made under tmp/ holds commits that exist nowhere else: not residue."""
    clone = leftovers(home_repo) / "gone-topic" / "tmp" / "scratch-lib"
    clone.mkdir(parents=True)
    git(clone, "init", "-q")
    commit(clone, "patch.py", "fix = True\n", "a local fix, never pushed")
    res = run_cli("sweep", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    assert res.json["swept"] == []
    assert [k["reason"] for k in res.json["kept"]] == ["checkout"]
    assert git(clone, "log", "--format=%s") == "a local fix, never pushed"


def test_sweep_keeps_a_file_written_after_the_directory_was_judged(home_repo, monkeypatch):
    """A writer adds work between the sweep's judgement and its removal: the work stays."""
    import router.teardown.sweep as sweep_module

    residue = leftovers(home_repo) / "gone-topic"
    write(residue / "tmp" / "lsp.log", "log\n")
    judged = sweep_module.claimed_names

    def then_a_writer(common_dir):
        write(residue / "src" / "draft.py", "written just now\n")
        return judged(common_dir)

    monkeypatch.setattr(sweep_module, "claimed_names", then_a_writer)
    res = run_cli("sweep", "--json", cwd=home_repo)
    assert (residue / "src" / "draft.py").read_text() == "written just now\n"
    assert res.json["swept"] == []
    assert [(k["path"], k["files"]) for k in res.json["kept"]] == [(str(residue), ["src/draft.py"])]


# -- doctor --repair -------------------------------------------------------------------------


def test_repair_keeps_a_vanished_registration_whose_detached_head_holds_the_only_commit(
    home_repo,
):
    """The registration's HEAD is the one ref to a commit made on a detached HEAD: it stays."""
    path = leftovers(home_repo) / "scratch"
    git(home_repo, "worktree", "add", "-q", "--detach", str(path))
    sha = commit(path, "idea.py", "idea = 1\n", "committed on a detached HEAD")
    import shutil

    shutil.rmtree(path)
    res = run_cli("doctor", "--repair", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    finding = next(f for f in res.json["findings"] if f["kind"] == "registration-dir-gone")
    assert finding["repaired"] is False
    assert str(path) in git(home_repo, "worktree", "list", "--porcelain")
    # Still reachable from a ref or a worktree's HEAD: what git gc keeps.
    assert sha not in git(home_repo, "fsck", "--unreachable", "--no-reflogs")
