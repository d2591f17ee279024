"""Review of ``hook worktree-remove`` and ``restore``: work that must not be lost, outcomes that must be true.

Real git in temp dirs, the CLI in-process (as tests/test_host_worktrees.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers.repos import branches, commit, git, run_cli, status, write

from router.topic import holders, state


def create(repo: Path, name: str) -> Path:
    payload = {
        "session_id": "s-1",
        "hook_event_name": "WorktreeCreate",
        "cwd": str(repo),
        "name": name,
    }
    res = run_cli("hook", "worktree-create", stdin=json.dumps(payload))
    assert res.code == 0, res.err
    return Path(res.out.strip())


def remove(path: Path, **extra: object):
    payload = {
        "session_id": "s-1",
        "hook_event_name": "WorktreeRemove",
        "cwd": str(path),
        "worktree_path": str(path),
        **extra,
    }
    return run_cli("hook", "worktree-remove", stdin=json.dumps(payload))


def host_outcome(repo: Path, topic_id: str) -> str:
    record = state.read_record(repo / ".git", topic_id)
    assert record is not None and record.host_removal is not None
    return record.host_removal.outcome


# -- files under docs/plans/ that only team-router's info/exclude line hides ----------------


def test_hook_keeps_a_file_under_docs_plans_outside_the_topics_plan_dir(home_repo):
    # `new` puts /docs/plans/ in info/exclude: git status no longer shows this file,
    # and `git worktree remove` deleted it without a word.
    path = create(home_repo, "ENG-12-x")
    roadmap = write(path / "docs" / "plans" / "roadmap.md", "my roadmap, not committed yet\n")
    assert status(path) == ""  # hidden by our exclude line, not by the user
    res = remove(path)
    assert res.code == 0 and "kept" in res.err and "docs/plans/roadmap.md" in res.err, res.err
    assert roadmap.read_text() == "my roadmap, not committed yet\n"
    assert host_outcome(home_repo, "ENG-12-x") == "kept"


def test_hook_keeps_a_new_file_in_a_tracked_docs_plans(home_repo):
    write(home_repo / "docs" / "plans" / "README.md", "plans live here\n")
    git(home_repo, "add", "docs")
    git(home_repo, "commit", "-q", "-m", "plans")
    git(home_repo, "push", "-q", "origin", "main")
    path = create(home_repo, "ENG-13-x")
    design = write(path / "docs" / "plans" / "2026-01-01-old" / "design.md", "to commit\n")
    res = remove(path)
    assert res.code == 0 and "kept" in res.err, res.err
    assert design.read_text() == "to commit\n"


def test_teardown_refuses_hidden_docs_plans_files_and_force_snapshots_them_for_restore(topic):
    wt = topic.worktrees["home"]
    roadmap = write(wt / "docs" / "plans" / "roadmap.md", "mine\n")
    res = run_cli("teardown", topic.id, "--json", cwd=topic.home)
    assert res.code == 1 and res.json["error"]["code"] == "dirty-worktree", res.out
    assert "docs/plans/roadmap.md" in res.json["error"]["message"]
    assert roadmap.read_text() == "mine\n"
    res = run_cli("teardown", topic.id, "--json", "--force", cwd=topic.home)
    assert res.code == 0, res.out + res.err
    assert not wt.exists()
    ref = f"refs/team-router/snapshots/{topic.branch}"
    assert git(topic.home, "show", f"{ref}:docs/plans/roadmap.md") == "mine"
    res = run_cli("restore", topic.id, "--json", cwd=topic.home)
    assert res.code == 0, res.out + res.err
    back = Path(res.json["repos"][0]["worktree"])
    assert (back / "docs" / "plans" / "roadmap.md").read_text() == "mine\n"


# -- a discard intent is not a licence to take what another session holds or a lock keeps ---


def test_a_discard_intent_keeps_a_worktree_another_live_session_holds(home_repo):
    # README: "one that another live session holds ... is kept". --force (what discard
    # maps to) would tear it down from under that session.
    path = create(home_repo, "ENG-14-x")
    wip = write(path / "wip.txt", "the other session's work\n")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        other = holders.make_holder(sleeper.pid, session="s-2")
        holders.register(home_repo / ".git", "ENG-14-x", other)
        res = remove(path, discard_changes=True)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert res.code == 0 and "kept" in res.err and "held" in res.err, res.err
    assert wip.read_text() == "the other session's work\n"
    assert host_outcome(home_repo, "ENG-14-x") == "kept"


def test_a_discard_intent_keeps_a_locked_worktree(home_repo):
    path = create(home_repo, "ENG-15-x")
    git(home_repo, "worktree", "lock", "--reason", "keep me", str(path))
    res = remove(path, discard_changes=True)
    assert res.code == 0 and "kept" in res.err and "keep me" in res.err, res.err
    assert path.is_dir() and "ENG-15-x" in branches(home_repo)


# -- the outcome recorded is what happened ---------------------------------------------------


def test_a_worktree_switched_to_another_branch_is_reported_kept_not_removed(home_repo):
    # An agent made its own branch in the host's worktree: teardown keeps the worktree
    # (it is on another branch), so the hook must not say, nor record, "removed".
    path = create(home_repo, "ENG-16-x")
    git(path, "switch", "-q", "-c", "fix-typo")
    sha = commit(path, "typo.txt", "fixed\n", "fix typo")
    res = remove(path)
    assert res.code == 0, res.err
    assert path.is_dir() and git(path, "rev-parse", "fix-typo") == sha
    assert " kept: " in res.err and "fix-typo" in res.err, res.err
    assert host_outcome(home_repo, "ENG-16-x") == "kept"


# -- restore ----------------------------------------------------------------------------------


def test_restore_run_twice_after_the_branch_name_was_taken_reports_existing(topic):
    # README: a rerun is `existing`. The first restore moved the topic to
    # <branch>-restored, whose snapshot ref does not exist: the rerun said no-snapshot, exit 1.
    write(topic.worktrees["home"] / "draft.txt", "draft\n")
    assert run_cli("teardown", topic.id, "--force", cwd=topic.home).code == 0
    git(topic.home, "branch", topic.branch, "main")
    first = run_cli("restore", topic.id, "--json", cwd=topic.home)
    assert first.code == 0, first.out
    back = Path(first.json["repos"][0]["worktree"])
    again = run_cli("restore", topic.id, "--json", cwd=topic.home)
    assert again.code == 0, again.out
    assert again.json["repos"][0]["status"] == "existing"
    assert again.json["repos"][0]["worktree"] == str(back)
    assert (back / "draft.txt").read_text() == "draft\n"


def test_a_snapshot_keeps_the_edits_of_an_ignored_file_staged_with_add_force(topic):
    # The snapshot's files come from `add --all` over HEAD's tree, which skips an
    # ignored path HEAD lacks: the staged version survived (index commit), the
    # later edit was lost, and the restored worktree had no file on disk (`AD`).
    wt = topic.worktrees["home"]
    write(wt / ".gitignore", "*.env\n")
    write(wt / "local.env", "v1 staged\n")
    git(wt, "add", "-f", "local.env")
    write(wt / "local.env", "v2 edited after staging\n")
    assert run_cli("teardown", topic.id, "--force", cwd=topic.home).code == 0
    res = run_cli("restore", topic.id, "--json", cwd=topic.home)
    assert res.code == 0, res.out
    back = Path(res.json["repos"][0]["worktree"])
    assert (back / "local.env").read_text() == "v2 edited after staging\n"
    assert git(back, "show", ":local.env") == "v1 staged"
    assert "AM local.env" in status(back).splitlines()
