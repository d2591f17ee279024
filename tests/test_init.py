"""`team-router init`: exclude lines and example files, added once, never overwriting anything."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from helpers.repos import commit, git, run_cli, write


def test_init_adds_what_is_missing_once_and_keeps_an_existing_file(home_repo):
    write(home_repo / ".worktreeinclude", "mine\n")
    res = run_cli("init", "--write-examples", "--json", cwd=home_repo)
    assert res.code == 0, res.err
    exclude = (home_repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert exclude.count("/.claude/worktrees/") == 1 and exclude.count("/docs/plans/") == 1
    assert (home_repo / ".worktreeinclude").read_text() == "mine\n"
    assert (home_repo / ".teamteardown.example").is_file()
    before = (home_repo / ".teamteardown.example").read_text()
    again = run_cli("init", "--write-examples", "--json", cwd=home_repo)
    assert again.code == 0
    assert all("left as it is" in a or "already" in a for a in again.json["actions"])
    assert (home_repo / ".git" / "info" / "exclude").read_text().splitlines() == exclude
    assert (home_repo / ".teamteardown.example").read_text() == before


def test_init_never_writes_through_a_dangling_symlink(home_repo, tmp_path):
    outside = tmp_path / "outside.txt"
    os.symlink(outside, home_repo / ".worktreeinclude")
    res = run_cli("init", "--write-examples", "--json", cwd=home_repo)
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


def test_init_offers_the_examples_outside_the_work_tree(home_repo):
    res = run_cli("init", "--json", cwd=home_repo)
    assert res.code == 0, res.err
    examples = home_repo / ".git" / "team-router" / "examples"
    assert res.json["actions"] == [
        "info/exclude: added /.claude/worktrees/ and /docs/plans/",
        f"examples: {examples / '.worktreeinclude'} and {examples / '.teamteardown.example'} "
        "(outside the work tree, so it stays clean; to use one, copy it into the repo as "
        ".worktreeinclude or .teamteardown and commit it to the default branch)",
    ]
    assert (examples / ".worktreeinclude").is_file() and (
        examples / ".teamteardown.example"
    ).is_file()
    assert git(home_repo, "status", "--porcelain", "--untracked-files=all") == ""


def test_the_readme_by_hand_flow_ends_clean_after_init(home_repo):
    """README: init, new, next, worktrees, status, teardown --integrate --dry-run, then for real."""
    assert run_cli("init", cwd=home_repo).code == 0
    res = run_cli("new", "Billing page shows the plan", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    topic, worktree = res.json["id"], Path(res.json["home"]["worktree"])
    for args in (("next", topic), ("worktrees", topic), ("status",)):
        assert run_cli(*args, "--json", cwd=home_repo).code == 0, args
    sha = commit(worktree, "billing.py", "PLAN = 'pro'\n", "show the plan")
    dry = run_cli("teardown", topic, "--integrate", "--dry-run", "--json", cwd=home_repo)
    assert dry.code == 0, dry.out
    res = run_cli("teardown", topic, "--integrate", "--json", cwd=home_repo)
    assert res.code == 0, res.out
    assert not worktree.exists()
    assert git(home_repo, "log", "-1", "--format=%s", "main") == "show the plan"
    git(home_repo, "merge-base", "--is-ancestor", sha, "main")  # raises unless main has it
    assert git(home_repo, "status", "--porcelain", "--untracked-files=all") == ""


def test_an_exclude_file_that_is_not_utf8_keeps_its_bytes_and_gets_the_lines(home_repo):
    exclude = home_repo / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_bytes(b"# caf\xe9 (latin-1)\r\n*.log")
    res = run_cli("init", "--json", cwd=home_repo)
    assert res.code == 0, res.err
    data = exclude.read_bytes()
    assert data.startswith(b"# caf\xe9 (latin-1)\r\n*.log\n")
    assert data.splitlines().count(b"/docs/plans/") == 1
    assert (
        run_cli("init", "--json", cwd=home_repo)
        .json["actions"][0]
        .startswith("info/exclude: already")
    )
    assert exclude.read_bytes() == data


def test_allow_agent_changes_only_the_allow_list_and_keeps_the_file_mode(home_repo):
    settings = home_repo / ".claude" / "settings.local.json"
    text = (
        '{\r\n    "model": "ópus — 日本",\r\n    "permissions": {\r\n'
        '        "allow": ["Bash(ls:*)"],\r\n        "deny": []\r\n    },\r\n    "n": 1.10\r\n}\r\n'
    )
    write(settings, "")
    settings.write_bytes(text.encode())
    settings.chmod(0o644)
    res = run_cli("init", "--allow-agent", "--json", cwd=home_repo)
    assert res.code == 0, res.err
    assert settings.read_bytes().decode() == text.replace(
        '["Bash(ls:*)"]', '["Bash(ls:*)", "Bash(team-router:*)"]'
    )
    assert settings.stat().st_mode & 0o777 == 0o644


def test_allow_agent_refuses_a_hard_linked_settings_file_and_both_names_keep_it(
    home_repo, tmp_path
):
    text = '{"permissions": {"allow": []}}\n'
    shared = write(tmp_path / "shared-settings.json", text)
    settings = home_repo / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    os.link(shared, settings)
    exclude = home_repo / ".git" / "info" / "exclude"
    res = run_cli("init", "--allow-agent", "--json", cwd=home_repo)
    assert (res.code, res.json["error"]["code"]) == (1, "setup-failed"), res.out
    assert f"{settings} has 2 hard links" in res.json["error"]["message"]
    assert settings.read_text() == shared.read_text() == text
    assert os.path.samefile(settings, shared)
    assert b"settings.local.json" not in exclude.read_bytes()
