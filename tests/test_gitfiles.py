"""router.gitfiles: git's files read without git, and "unsure" wherever the layout is not plain."""

from __future__ import annotations

import os

from helpers.repos import commit, git, make_repo

from router import gitfiles


def test_the_branches_checked_out_are_the_primarys_and_each_worktrees(tmp_path):
    repo = make_repo(tmp_path, "r")
    git(repo, "worktree", "add", "-q", "-b", "topic", str(tmp_path / "wt"))
    git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "detached"))
    assert gitfiles.checked_out_branches(str(repo / ".git")) == {"main", "topic"}


def test_a_branch_being_rebased_makes_the_answer_unsure(tmp_path):
    # The rebase detaches HEAD; git still counts the branch as checked out there.
    repo = make_repo(tmp_path, "r")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "topic", str(wt))
    commit(wt, "a.txt", "a\n", "one")
    commit(wt, "b.txt", "b\n", "two")
    os.environ["GIT_SEQUENCE_EDITOR"] = "sed -i -e 1s/^pick/edit/"
    try:
        git(wt, "rebase", "-q", "-i", "HEAD~2")
    finally:
        del os.environ["GIT_SEQUENCE_EDITOR"]
    assert git(wt, "symbolic-ref", "-q", "HEAD", check=False) == ""  # detached
    assert gitfiles.checked_out_branches(str(repo / ".git")) is None


def test_a_config_that_may_move_the_work_tree_is_not_read_as_plain(tmp_path):
    settings = [
        ("core.bare", "1"),
        ("include.path", "other.cfg"),
        ("core.worktree", str(tmp_path)),
        ("extensions.worktreeConfig", "true"),
    ]
    for key, value in settings:
        # Named so its origin URL holds the same words: only keys count.
        repo = make_repo(tmp_path, f"r-{key}-worktree-include-bare")
        assert gitfiles.plain_layout(str(repo)) is not None
        git(repo, "config", key, value)
        assert gitfiles.plain_layout(str(repo)) is None, key
