"""`team-router init`: exclude lines and example files, added once, never overwriting anything."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from helpers.repos import commit, git, make_repo, run_cli, write
from helpers.topics import multi_topic, new_topic, write_repos_md


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
    text = run_cli("init", cwd=home_repo)
    assert text.code == 1 and text.out == ""
    res = run_cli("init", "--json", cwd=home_repo)
    assert (res.code, res.json["error"]["code"]) == (1, "setup-failed")
    message = res.json["error"]["message"]
    assert str(info) in message
    assert text.err == f"team-router: {message} [setup-failed]\n"  # one line
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
    assert res.out.endswith(
        "\nLet the agent run team-router without a prompt (Bash(team-router:*)):\n"
        "  team-router init --allow-agent             (this repo and those its topics reach)\n"
        "  team-router init --allow-agent-everywhere  (your user settings: every repo)\n"
    )
    assert "--allowedTools" not in res.out  # the settings rule holds in `claude -p` too
    assert not (home_repo / ".claude" / "settings.local.json").exists()


def test_allow_agent_gives_the_rule_to_every_repo_its_topics_reach(workspace):
    topic = multi_topic(workspace, ("api",))
    home, api = topic.repos["home"], topic.repos["api"]
    res = run_cli("init", "--allow-agent", "--json", cwd=home)
    assert res.code == 0, res.err
    assert res.json["actions"][-2:] == [
        f"{home / '.claude/settings.local.json'}: allows Bash(team-router:*) (personal; "
        "info/exclude keeps it out of git status)",
        f"api: {api / '.claude/settings.local.json'}: allows Bash(team-router:*) (personal; "
        "info/exclude keeps it out of git status), as the home repo's settings do",
    ]
    for repo in (home, api):
        settings = json.loads((repo / ".claude" / "settings.local.json").read_text())
        assert settings == {"permissions": {"allow": ["Bash(team-router:*)"]}}
        assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


def worktrees_for(home: Path, workspace: Path, names: tuple[str, ...]):
    """A topic of ``home`` reaching the new repos ``names``: (id, their paths, the warnings)."""
    topic = new_topic(home)
    secondaries = {n: make_repo(workspace, n) for n in names}
    write_repos_md(topic, secondaries)
    res = run_cli("worktrees", topic.id, "--json", cwd=home)
    assert res.code == 0, res.out + res.err
    return topic.id, secondaries, res.json["warnings"]


def test_worktrees_gives_the_rule_to_a_repo_the_topic_reaches_later(workspace):
    home = make_repo(workspace, "web")
    assert run_cli("init", "--allow-agent", cwd=home).code == 0
    topic_id, repos, warnings = worktrees_for(home, workspace, ("api", "types"))
    api, types = repos["api"], repos["types"]
    assert warnings == [
        f"{name}: {repo / '.claude/settings.local.json'}: allows Bash(team-router:*) "
        "(personal; info/exclude keeps it out of git status), as the home repo's settings do"
        for name, repo in (("api", api), ("types", types))
    ]
    for repo in (api, types):
        assert "Bash(team-router:*)" in (repo / ".claude" / "settings.local.json").read_text()
        assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    again = run_cli("worktrees", topic_id, "--json", cwd=home)
    assert (again.code, again.json["warnings"]) == (0, [])


def test_worktrees_says_when_a_repo_the_topic_reaches_cannot_get_the_rule(workspace):
    home = make_repo(workspace, "web")
    assert run_cli("init", "--allow-agent", cwd=home).code == 0
    api = workspace / "api"
    shared = api / ".claude" / "settings.local.json"
    topic = new_topic(home)
    make_repo(workspace, "api")
    write(shared, '{"permissions": {"allow": []}}\n')
    git(api, "add", "-f", "--", ".claude/settings.local.json")
    git(api, "commit", "-q", "-m", "shared settings")
    git(api, "push", "-q", "origin", "main")
    write_repos_md(topic, {"api": api})
    res = run_cli("worktrees", topic.id, "--json", cwd=home)
    assert res.code == 0, res.out + res.err
    assert res.json["warnings"] == [
        f"api: sessions there will ask before running team-router ({shared} is tracked by git; "
        "add 'Bash(team-router:*)' to its permissions.allow yourself (init leaves tracked files "
        "alone)); `team-router init --allow-agent-everywhere` allows it in every repo"
    ]
    assert shared.read_text() == '{"permissions": {"allow": []}}\n'


def test_allow_agent_everywhere_writes_the_users_settings_only(home_repo, hermetic):
    user = hermetic / "home" / ".claude" / "settings.json"
    write(user, '{"theme": "dark"}\n')
    res = run_cli("init", "--allow-agent-everywhere", "--json", cwd=home_repo)
    assert res.code == 0, res.err
    assert res.json["actions"][-1] == (
        f"{user}: allows Bash(team-router:*) in every repo (your user settings)"
    )
    assert json.loads(user.read_text()) == {
        "theme": "dark",
        "permissions": {"allow": ["Bash(team-router:*)"]},
    }
    assert not (home_repo / ".claude" / "settings.local.json").exists()
    assert "Let the agent" not in run_cli("init", cwd=home_repo).out


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
        f"examples: {examples / '.worktreeinclude'}, {examples / '.worktreesetup.example'} and "
        f"{examples / '.teamteardown.example'} (outside the work tree, so it stays clean; to use "
        "one, copy it into the repo as .worktreeinclude, .worktreesetup or .teamteardown and "
        "commit it to the default branch)",
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
