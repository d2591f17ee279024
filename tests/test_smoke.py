from __future__ import annotations

from gitutil import run_cli, status, worktree_paths


def test_new_creates_the_home_worktree_and_leaves_the_main_tree_clean(home_repo):
    res = run_cli("new", "Add rate limiting middleware to all API endpoints", "--date", "2026-05-01", "--json", cwd=home_repo)
    assert res.code == 0, res.err + res.out
    data = res.json
    assert data["id"] == "2026-05-01-add-rate-limiting-middleware-to-all"
    assert data["home"]["status"] == "created"
    wt = home_repo / ".claude/worktrees/2026-05-01-add-rate-limiting-middleware-to-all"
    assert data["home"]["worktree"] == str(wt)
    assert str(wt) in worktree_paths(home_repo)
    assert status(home_repo) == ""
