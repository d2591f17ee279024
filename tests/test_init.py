"""`team-router init`: exclude lines and example files, added once, never overwriting anything."""

from __future__ import annotations

import json
import os
import shutil

import pytest
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


def test_allow_agent_adds_the_permission_rule_keeps_other_settings_and_git_status_clean(home_repo):
    settings = home_repo / ".claude" / "settings.local.json"
    write(settings, '{"model": "opus", "permissions": {"allow": ["Bash(ls:*)"]}}\n')
    res = run_cli("init", "--allow-agent", "--json", cwd=home_repo)
    assert res.code == 0, res.err
    assert res.json["permission_rule"] == "Bash(team-router:*)"
    data = json.loads(settings.read_text())
    assert data == {
        "model": "opus",
        "permissions": {"allow": ["Bash(ls:*)", "Bash(team-router:*)"]},
    }
    assert ".claude/" not in git(home_repo, "status", "--porcelain", "--untracked-files=all")
    again = run_cli("init", "--allow-agent", "--json", cwd=home_repo)
    assert "already allows" in again.json["actions"][-1]
    assert json.loads(settings.read_text()) == data


def test_init_without_the_flag_only_names_the_rule(home_repo):
    res = run_cli("init", cwd=home_repo)
    assert res.code == 0, res.err
    assert "team-router init --allow-agent" in res.out
    assert '--allowedTools "Bash(team-router:*)"' in res.out
    assert not (home_repo / ".claude" / "settings.local.json").exists()


@pytest.mark.parametrize("tracked", [False, True])
def test_allow_agent_refuses_a_settings_file_it_cannot_safely_edit_and_changes_nothing(
    home_repo, tracked
):
    settings = home_repo / ".claude" / "settings.local.json"
    text = '{"permissions": {"allow": []}}\n' if tracked else "{not json\n"
    write(settings, text)
    if tracked:
        git(home_repo, "add", "-f", "--", ".claude/settings.local.json")
        git(home_repo, "commit", "-q", "-m", "shared settings")
    res = run_cli("init", "--allow-agent", "--json", cwd=home_repo)
    assert (res.code, res.json["error"]["code"]) == (1, "setup-failed")
    assert settings.read_text() == text
