"""`team-router init`: exclude lines and example files, added once, never overwriting anything."""

from __future__ import annotations

import os
import shutil

from gitutil import git, run_cli, write


def test_init_adds_what_is_missing_once_and_keeps_an_existing_file(home_repo):
    write(home_repo / ".worktreeinclude", "mine\n")
    res = run_cli("init", "--json", cwd=home_repo)
    assert res.code == 0, res.err
    exclude = (home_repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert exclude.count("/.claude/worktrees/") == 1 and exclude.count("/docs/plans/") == 1
    assert (home_repo / ".worktreeinclude").read_text() == "mine\n"
    assert (home_repo / ".teamteardown.example").is_file()
    before = (home_repo / ".teamteardown.example").read_text()
    again = run_cli("init", "--json", cwd=home_repo)
    assert again.code == 0
    assert all("left as it is" in a or "already" in a for a in again.json["actions"])
    assert (home_repo / ".git" / "info" / "exclude").read_text().splitlines() == exclude
    assert (home_repo / ".teamteardown.example").read_text() == before


def test_init_never_writes_through_a_dangling_symlink(home_repo, tmp_path):
    outside = tmp_path / "outside.txt"
    os.symlink(outside, home_repo / ".worktreeinclude")
    res = run_cli("init", "--json", cwd=home_repo)
    assert res.code == 0, res.err
    assert not outside.exists()
    assert os.readlink(home_repo / ".worktreeinclude") == str(outside)


def test_an_exclude_file_that_cannot_be_written_is_one_line_setup_failed(home_repo):
    info = home_repo / ".git" / "info"
    shutil.rmtree(info, ignore_errors=True)
    write(info, "a file where git keeps a directory\n")
    res = run_cli("init", cwd=home_repo)
    assert res.code == 1 and res.out == ""
    assert res.err.count("\n") == 1 and "[setup-failed]" in res.err and str(info) in res.err
    res = run_cli("init", "--json", cwd=home_repo)
    assert (res.code, res.json["error"]["code"]) == (1, "setup-failed")
    assert info.read_text() == "a file where git keeps a directory\n"
    assert git(home_repo, "status", "--porcelain") == ""
