"""The host's own worktrees through the router: ``hook worktree-create`` / ``worktree-remove``.

Real git with a local bare origin; the payloads are the ones the pinned client sends
(tests/test_client_worktrees.py drives the client itself).
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.origin import commit_on_origin, merge_on_origin, push_branch
from helpers.repos import (
    branches,
    commit,
    git,
    make_repo,
    run_cli,
    status,
    unlock,
    worktree_paths,
    write,
)
from helpers.topics import create_payload, remove_payload, snapshot_of

from router.topic import holders, state


def _dated(slug: str, days: set[str]) -> set[str]:
    """The ids a free-text name may get: dated any day the test ran on (it may cross midnight)."""
    return {f"{day}-{slug}" for day in days}


def create(repo: Path | None, name: str | None, **extra: object):
    return run_cli("hook", "worktree-create", stdin=create_payload(repo, name, **extra))


def remove(path: Path, **extra: object):
    return run_cli("hook", "worktree-remove", stdin=remove_payload(path, **extra))


def made(res) -> Path:
    """The path on stdout: exactly one line, nothing else."""
    assert res.code == 0, res.err
    assert res.out.endswith("\n") and res.out.count("\n") == 1, repr(res.out)
    path = Path(res.out.rstrip("\n"))
    assert path.is_absolute() and path.is_dir()
    return path


def record(repo: Path, topic_id: str) -> state.TopicRecord:
    found = state.read_record(repo / ".git", topic_id)
    assert found is not None
    return found


# -- create -----------------------------------------------------------------------------


def test_a_topic_id_name_is_the_id_and_the_base_is_the_fetched_origin_default(home_repo):
    ahead = commit_on_origin(home_repo, "news.txt", "origin moved on\n")
    stale = git(home_repo, "rev-parse", "main")
    res = create(home_repo, "ENG-7-native")
    path = made(res)
    assert path == home_repo / ".claude" / "worktrees" / "ENG-7-native"
    assert git(path, "symbolic-ref", "--short", "HEAD") == "ENG-7-native"
    # Based on origin's default after the fetch, not the stale local main.
    assert git(path, "rev-parse", "HEAD") == ahead != stale
    rec = record(home_repo, "ENG-7-native")
    assert rec.worktree == str(path) and rec.base_commit == ahead and rec.branch_created
    assert "record" in rec.steps
    assert (path / "docs" / "plans" / "ENG-7-native").is_dir()
    assert status(home_repo) == ""  # the main tree stays clean


def test_a_free_text_name_becomes_a_topic_by_the_slug_rules(home_repo):
    days = {dt.date.today().isoformat()}
    path = made(create(home_repo, "Fix the Login bug!"))
    days.add(dt.date.today().isoformat())
    assert path.name in _dated("fix-the-login-bug", days)
    assert record(home_repo, path.name).description == "Fix the Login bug!"
    keyed = made(create(home_repo, "ENG-12 add rate limiting"))
    assert keyed.name == "ENG-12-add-rate-limiting"
    # Claude Code's generated names and subagent names are free text too.
    agent = made(create(home_repo, "agent-a1b2c3d4"))
    days.add(dt.date.today().isoformat())
    assert agent.name in _dated("agent-a1b2c3d4", days)
    nested = made(create(home_repo, "feature/login"))  # the client allows "/" segments
    days.add(dt.date.today().isoformat())
    assert nested.name in _dated("feature-login", days)
    # Shaped like an id but not one (no 13th month): free text, never a refusal.
    odd = made(create(home_repo, "2026-13-45-odd"))
    days.add(dt.date.today().isoformat())
    assert odd.name in _dated("2026-13-45-odd", days)


def test_the_same_name_again_returns_the_same_path(home_repo):
    first = made(create(home_repo, "ENG-7-native"))
    write(first / "work.txt", "in progress\n")
    again = made(create(home_repo, "ENG-7-native"))
    assert again == first and (first / "work.txt").read_text() == "in progress\n"
    loose = made(create(home_repo, "refactor the parser"))
    assert made(create(home_repo, "refactor the parser")) == loose
    assert sorted(worktree_paths(home_repo)[1:]) == sorted([str(first), str(loose)])


def test_a_name_made_on_another_day_comes_back_to_that_days_topic(home_repo):
    res = run_cli("new", "tidy the docs", "--date", "2026-01-05", "--json", cwd=home_repo)
    assert res.code == 0, res.err
    earlier = Path(res.json["home"]["worktree"])
    assert made(create(home_repo, "tidy the docs")) == earlier


def test_without_cwd_the_project_dir_is_the_repo(home_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(home_repo))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    path = made(create(None, "ENG-8-no-cwd"))
    assert path == home_repo / ".claude" / "worktrees" / "ENG-8-no-cwd"


def test_warnings_go_to_stderr_and_stdout_keeps_the_path_alone(workspace):
    lonely = make_repo(workspace, "lonely", origin=False)
    res = create(lonely, "ENG-9-no-origin")
    path = made(res)
    assert path == lonely / ".claude" / "worktrees" / "ENG-9-no-origin"
    assert res.err == "warning: home: no origin; branching from local main\n"  # on stderr


def test_a_fallback_is_a_failure_with_one_line_and_nothing_left(home_repo):
    # A file where the worktree must go: the pipeline would fall back to the main tree.
    blocker = write(home_repo / ".claude" / "worktrees" / "ENG-7-native", "not a worktree\n")
    before = snapshot_of(home_repo)
    res = create(home_repo, "ENG-7-native")
    assert res.code == 1
    assert res.out == ""
    assert res.err == (  # one line
        f"team-router: no worktree was made in {home_repo} (path-taken: {blocker} already exists"
        " (a file that is not this topic's worktree); move it away); fix that, then try again"
        " [isolation-failed]\n"
    )
    assert blocker.read_text() == "not a worktree\n"
    assert snapshot_of(home_repo) == before  # no branch, no plan dir, no registration
    assert state.read_record(home_repo / ".git", "ENG-7-native") is None


def test_a_repo_without_a_commit_fails_with_one_line(workspace):
    empty = make_repo(workspace, "empty", origin=False, commit_first=False)
    res = create(empty, "ENG-1-first")
    assert (res.code, res.out) == (1, "")
    assert res.err == (  # one line
        f"team-router: home ({empty}) has no commit yet; make a first commit, then run this"
        " again [no-root-commit]\n"
    )


def test_a_payload_without_a_name_or_repo_fails_with_exit_2(home_repo, tmp_path, monkeypatch):
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    no_name = "team-router: the host sent no worktree name (`name`); nothing was created [usage]\n"
    res = create(home_repo, None)
    assert (res.code, res.out, res.err) == (2, "", no_name)
    res = run_cli("hook", "worktree-create", stdin="not json")
    assert (res.code, res.out, res.err) == (2, "", no_name)
    res = create(tmp_path, "ENG-1-x")  # not a repository
    assert (res.code, res.out) == (1, "")
    assert res.err == (
        f"team-router: {tmp_path} is not inside a git work tree; run from a repository or pass"
        " -C [not-a-repo]\n"
    )


def test_from_a_linked_worktree_a_new_worktree_is_made_not_the_current_one_reused(home_repo):
    first = made(create(home_repo, "ENG-1-first"))
    second = made(create(first, "ENG-2-second"))
    assert second == home_repo / ".claude" / "worktrees" / "ENG-2-second"
    assert git(second, "symbolic-ref", "--short", "HEAD") == "ENG-2-second"


def test_the_topic_shows_apart_in_status_and_its_notice_says_whose_worktree_it_is(home_repo):
    path = made(create(home_repo, "ENG-7-native"))
    res = run_cli("status", "--json", cwd=home_repo)
    assert res.code == 0
    assert (res.json["topics"], res.json["current"]) == ([], None)
    (host,) = res.json["host_worktrees"]
    assert (host["id"], host["worktree"], host["dirty"], host["ahead"]) == (
        "ENG-7-native",
        str(path),
        False,
        0,
    )
    hook = run_cli("hook", "session-start", stdin=json.dumps({"cwd": str(path)}))
    context = json.loads(hook.out)["hookSpecificOutput"]["additionalContext"]
    assert "Id: ENG-7-native" in context.splitlines()
    assert "interrupted /team run" not in context and "Phase:" not in context


def test_teardown_takes_a_hook_made_topic_apart_like_any_other(home_repo):
    path = made(create(home_repo, "ENG-7-native"))
    commit(path, "feature.txt", "feature\n", "feature")
    push_branch(path, "ENG-7-native")
    merge_on_origin(home_repo, "ENG-7-native")
    res = run_cli("teardown", "ENG-7-native", "--json", cwd=home_repo)
    assert res.code == 0, res.out
    assert not path.exists() and "ENG-7-native" not in branches(home_repo)


# -- remove -----------------------------------------------------------------------------


def assert_gone(repo: Path, path: Path, branch: str) -> None:
    assert not path.exists()
    assert str(path) not in worktree_paths(repo)
    assert branch not in branches(repo)
    assert not (repo / ".git" / "worktrees" / path.name).exists()
    assert list((repo / ".claude" / "worktrees").iterdir()) == []  # no residue


def test_removing_a_never_committed_worktree_leaves_nothing(home_repo):
    path = made(create(home_repo, "ENG-7-native"))
    res = remove(path)
    assert (res.code, res.out) == (0, "")
    assert res.err == (
        f"team-router: worktree {path} (ENG-7-native) removed: worktree, branch and residue"
        " removed (it held no work that exists nowhere else)\n"
    )
    assert_gone(home_repo, path, "ENG-7-native")
    rec = record(home_repo, "ENG-7-native")
    assert rec.teardown.complete is True
    assert rec.host_removal.outcome == "removed"
    assert status(home_repo) == ""


def test_removing_a_merged_worktree_leaves_nothing(home_repo):
    path = made(create(home_repo, "review the api"))
    commit(path, "api.txt", "api\n", "api")
    push_branch(path, path.name)
    merge_on_origin(home_repo, path.name)
    write(home_repo / ".claude" / "worktrees" / "old-agent" / "tmp" / "x.log", "residue\n")
    res = remove(path)
    assert res.code == 0, res.err
    assert_gone(home_repo, path, path.name)


def test_removing_a_worktree_that_holds_work_keeps_all_of_it(home_repo):
    path = made(create(home_repo, "ENG-7-native"))
    sha = commit(path, "feature.txt", "committed, not pushed\n", "feature")
    write(path / "README.md", "edited, not committed\n")
    write(path / "notes.txt", "untracked\n")
    res = remove(path)
    assert (res.code, res.out) == (1, "")  # the host says "could not remove it. It is kept"
    assert "kept" in res.err and "dirty-worktree" in res.err
    assert (path / "README.md").read_text() == "edited, not committed\n"
    assert (path / "notes.txt").read_text() == "untracked\n"
    assert git(path, "rev-parse", "HEAD") == sha
    assert "ENG-7-native" in branches(home_repo) and str(path) in worktree_paths(home_repo)
    assert record(home_repo, "ENG-7-native").host_removal.outcome == "kept"
    # Committed but unmerged work alone is kept too.
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "more")
    res = remove(path)
    assert res.code == 1 and "unintegrated-commits" in res.err
    assert path.is_dir() and "ENG-7-native" in branches(home_repo)


def test_a_worktree_whose_plan_dir_holds_artifacts_is_kept_even_with_discard(home_repo):
    # git ignores the plan dir: no dirty check and no snapshot would see these files.
    path = made(create(home_repo, "ENG-7-native"))
    task = write(path / "docs" / "plans" / "ENG-7-native" / "task.md", "# the request\n")
    assert status(path) == ""
    for extra in ({}, {"discard_changes": True}):
        res = remove(path, **extra)
        assert res.code == 1 and "kept" in res.err and "task.md" in res.err, res.err
        assert task.read_text() == "# the request\n" and "ENG-7-native" in branches(home_repo)


def test_a_discard_intent_snapshots_before_removing(home_repo):
    path = made(create(home_repo, "ENG-7-native"))
    write(path / "notes.txt", "untracked work\n")
    res = remove(path, discard_changes=True)
    assert res.code == 0, res.err
    ref = "refs/team-router/snapshots/ENG-7-native"
    assert res.err == (
        f"team-router: worktree {path} (ENG-7-native) snapshotted: removed after a snapshot: what"
        f" it held is in {ref}; `team-router restore ENG-7-native` brings it back\n"
    )
    assert not path.exists()
    ref = "refs/team-router/snapshots/ENG-7-native"
    assert git(home_repo, "show", f"{ref}:notes.txt") == "untracked work"
    assert record(home_repo, "ENG-7-native").host_removal.outcome == "snapshotted"


def test_a_discard_that_snapshots_the_runs_plan_dir_says_where_it_went_and_how_back(home_repo):
    # The run fell back to the primary clone's plan dir: the worktree itself holds nothing,
    # and the removal's one snapshot is the plan dir's own ref, which the report must name.
    path = made(create(home_repo, "ENG-7-native"))
    plan_dir = home_repo / "docs" / "plans" / "ENG-7-native"
    write(plan_dir / "task.md", "# the request\n")
    res = remove(path, discard_changes=True)
    assert (res.code, res.out) == (0, ""), res.err
    ref = "refs/team-router/plan-dirs/ENG-7-native"
    assert git(home_repo, "show", f"{ref}:docs/plans/ENG-7-native/task.md") == "# the request"
    detail = (
        f"removed after a snapshot: what it held is in {ref}; "
        "`team-router restore ENG-7-native` brings it back"
    )
    assert res.err == f"team-router: worktree {path} (ENG-7-native) snapshotted: {detail}\n"
    assert_gone(home_repo, path, "ENG-7-native")
    assert not plan_dir.exists()
    removal = record(home_repo, "ENG-7-native").host_removal
    assert (removal.outcome, removal.detail) == ("snapshotted", detail)
    back = run_cli("restore", "ENG-7-native", cwd=home_repo)
    assert back.code == 0, back.out + back.err
    assert (plan_dir / "task.md").read_text() == "# the request\n"


def test_a_worktree_team_router_did_not_make_is_left_alone(home_repo):
    other = home_repo / ".claude" / "worktrees" / "theirs"
    git(home_repo, "worktree", "add", "-q", "-b", "theirs", str(other))
    res = remove(other)
    assert res.code == 1  # left to its owner: not removed
    assert res.err == (
        f"team-router: worktree {other} not-ours: no team-router topic has this worktree; left as"
        f" it is (`git -C {home_repo} worktree remove {other}` removes it when it holds nothing)\n"
    )
    assert other.is_dir() and "theirs" in branches(home_repo)


def test_remove_says_kept_for_a_payload_it_cannot_use_and_removed_for_a_gone_path(
    home_repo, tmp_path, monkeypatch
):
    for stdin in ("", "[]", "not json", json.dumps({"worktree_path": "relative/path"})):
        res = run_cli("hook", "worktree-remove", stdin=stdin)
        assert (res.code, res.out) == (1, ""), stdin  # nothing was removed
        assert res.err == (
            "team-router: the host sent no absolute `worktree_path`; nothing was removed [usage]\n"
        ), stdin
    res = remove(tmp_path / "gone")
    assert res.code == 0
    path = made(create(home_repo, "ENG-7-native"))
    assert remove(path).code == 0
    # Gone now: the host's project dir is how the repo is found.
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(home_repo))
    again = remove(path)  # the host may ask twice (plugin and settings hooks)
    assert again.code == 0 and "already torn down" in again.err


@pytest.mark.parametrize(
    "before",
    [["-C", "{missing}"], ["-C", ""], ["--json"]],
    ids=["-C missing", "-C empty", "--json"],
)
def test_remove_with_arguments_it_cannot_use_exits_1_and_removes_nothing(
    home_repo, tmp_path, before
):
    path = made(create(home_repo, "ENG-7-native"))
    write(path / "notes.txt", "untracked\n")
    args = [a.format(missing=tmp_path / "missing") for a in before]
    payload = {"cwd": str(path), "worktree_path": str(path)}
    res = run_cli(*args, "hook", "worktree-remove", stdin=json.dumps(payload))
    assert (res.code, res.out) == (1, ""), res.err
    (note,) = res.err.splitlines()
    assert note.startswith("team-router: hook worktree-remove: ")
    assert note.endswith("; nothing was removed")
    assert (path / "notes.txt").read_text() == "untracked\n"
    assert str(path) in worktree_paths(home_repo) and "ENG-7-native" in branches(home_repo)


# -- registration -------------------------------------------------------------------------


def settings_file() -> Path:
    return Path(os.environ["HOME"]) / ".claude" / "settings.json"


def test_install_hooks_merges_into_the_user_settings_and_uninstall_takes_exactly_them_out():
    from router.create.hostsettings import WORKTREE_HOOKS

    original = {
        "model": "opus",
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo bye"}]}]},
    }
    write(settings_file(), json.dumps(original))
    dry = run_cli("install-hooks", "--dry-run", "--json")
    assert dry.code == 0 and dry.json["changed"] and '"WorktreeCreate"' in dry.json["diff"]
    assert json.loads(settings_file().read_text()) == original  # a dry run writes nothing
    res = run_cli("install-hooks", "--json")
    assert res.code == 0 and res.json["changed"]
    installed = json.loads(settings_file().read_text())
    assert {k: v for k, v in installed.items() if k != "hooks"} == {
        k: v for k, v in original.items() if k != "hooks"
    }
    assert installed["hooks"]["Stop"] == original["hooks"]["Stop"]
    for event, (command, _timeout) in WORKTREE_HOOKS.items():
        (group,) = installed["hooks"][event]
        assert group["hooks"][0]["command"] == command
    again = run_cli("install-hooks", "--json")
    assert again.code == 0 and not again.json["changed"]
    assert json.loads(settings_file().read_text()) == installed
    out = run_cli("install-hooks", "--uninstall", "--json")
    assert out.code == 0 and out.json["changed"]
    assert json.loads(settings_file().read_text()) == original
    assert not run_cli("install-hooks", "--uninstall", "--json").json["changed"]


def test_install_hooks_honours_claude_config_dir_and_writes_through_a_symlink(
    tmp_path, monkeypatch
):
    config = tmp_path / "config"
    dotfiles = write(tmp_path / "dotfiles" / "claude-settings.json", '{"theme": "dark"}\n')
    config.mkdir()
    (config / "settings.json").symlink_to(dotfiles)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    res = run_cli("install-hooks", "--json")
    assert res.code == 0 and res.json["settings_file"] == str(config / "settings.json")
    assert (config / "settings.json").is_symlink()
    data = json.loads(dotfiles.read_text())
    assert data["theme"] == "dark" and "WorktreeRemove" in data["hooks"]
    assert not settings_file().exists()


def test_install_hooks_creates_the_file_and_refuses_what_it_cannot_merge():
    res = run_cli("install-hooks")
    assert res.code == 0 and "WorktreeCreate: added" in res.out
    assert set(json.loads(settings_file().read_text())) == {"hooks"}
    assert run_cli("install-hooks", "--uninstall").code == 0
    assert json.loads(settings_file().read_text()) == {}
    for broken in ('{"hooks": ', '{"hooks": []}', '{"hooks": {"WorktreeCreate": {}}}'):
        write(settings_file(), broken)
        res = run_cli("install-hooks", "--json")
        assert res.code == 1 and res.json["error"]["code"] == "setup-failed", broken
        assert settings_file().read_text() == broken  # nothing was written


def test_install_hooks_never_writes_a_tracked_settings_file(home_repo, monkeypatch):
    tracked = write(home_repo / ".claude" / "settings.json", '{"model": "team"}\n')
    git(home_repo, "add", ".claude/settings.json")
    git(home_repo, "commit", "-q", "-m", "team settings")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home_repo / ".claude"))
    res = run_cli("install-hooks", "--json")
    assert res.code == 1 and res.json["error"]["code"] == "setup-failed"
    assert tracked.read_text() == '{"model": "team"}\n' and status(home_repo) == ""


USERS_OWN_SETTINGS = {
    "crlf, four spaces, unicode, number literals": (
        '{\r\n    "model": "ópus — 日本",\r\n    "ratio": 1.10,\r\n    "big": 1E5,\r\n'
        '    "hooks": {\r\n        "Stop": [{"hooks": [{"type": "command", "command": "bye"}]}]'
        "\r\n    }\r\n}\r\n"
    ),
    "a byte order mark, tabs, no final newline": '\ufeff{\n\t"theme": "dark",\n\t"z": [1,2]\n}',
    "one line": '{"a":1,"hooks":{"Stop":[]},"b":"\\u00e9"}',
    "an empty object": "{}\n",
}


@pytest.mark.parametrize("text", USERS_OWN_SETTINGS.values(), ids=USERS_OWN_SETTINGS.keys())
def test_install_hooks_changes_only_its_own_keys_byte_for_byte_and_the_diff_says_so(text):
    path = settings_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(text.encode())
    dry = run_cli("install-hooks", "--dry-run", "--json")
    assert dry.code == 0, dry.err
    res = run_cli("install-hooks", "--json")
    assert res.code == 0 and res.json["diff"] == dry.json["diff"], res.err
    after = path.read_bytes().decode()
    # The diff shown is the file's real change: lines added, at most one gaining a comma.
    real = difflib.unified_diff(
        text.splitlines(keepends=True), after.splitlines(keepends=True), str(path), str(path)
    )
    assert dry.json["diff"] == "".join(real)
    removed = [line for line in dry.json["diff"].splitlines() if line.startswith("-")]
    assert len(removed) <= 2  # the --- header, and at most the line that gains a comma
    assert "ópus — 日本" in after or "ópus" not in text
    data = json.loads(after.removeprefix("\ufeff"))
    assert {"WorktreeCreate", "WorktreeRemove"} <= set(data["hooks"])
    assert ("\r\n" in after) == ("\r\n" in text)
    assert run_cli("install-hooks", "--uninstall", "--json").code == 0
    assert path.read_bytes() == text.encode()  # install, then uninstall: the very same bytes


def test_install_hooks_keeps_the_file_mode_and_refuses_a_read_only_file():
    path = write(settings_file(), '{"theme": "dark"}\n')
    path.chmod(0o644)
    assert run_cli("install-hooks", "--json").code == 0
    assert path.stat().st_mode & 0o777 == 0o644
    text = path.read_text()
    path.chmod(0o444)
    res = run_cli("install-hooks", "--uninstall", "--json")
    assert (res.code, res.json["error"]["code"]) == (1, "setup-failed"), res.out
    assert "read-only" in res.json["error"]["message"]
    assert path.read_text() == text and path.stat().st_mode & 0o777 == 0o444


def test_install_hooks_warns_of_another_tools_create_hook_and_uninstall_keeps_it():
    theirs = {"type": "command", "command": "wt claude hook-worktree-create"}
    mine_edited = {"type": "command", "command": "/opt/bin/team-router hook worktree-create -C ."}
    original = {
        "hooks": {
            "WorktreeCreate": [{"hooks": [theirs, mine_edited]}, {"hooks": [mine_edited]}],
            "WorktreeRemove": [{"matcher": "", "hooks": [{"type": "command", "command": "x"}]}],
        }
    }
    write(settings_file(), json.dumps(original, indent=2) + "\n")
    res = run_cli("install-hooks", "--json")
    assert res.code == 0, res.err
    assert res.json["warnings"] and "wt claude hook-worktree-create" in res.json["warnings"][0]
    assert "WorktreeCreate: already runs team-router" in res.json["actions"]
    res = run_cli("install-hooks", "--uninstall", "--json")
    assert res.code == 0
    data = json.loads(settings_file().read_text())
    assert data["hooks"]["WorktreeCreate"] == [{"hooks": [theirs]}]
    assert data["hooks"]["WorktreeRemove"] == original["hooks"]["WorktreeRemove"]


@pytest.mark.parametrize("event", ["WorktreeCreate", "WorktreeRemove"])
def test_the_plugin_registers_the_same_hook_commands(event):
    from router.create.hostsettings import WORKTREE_HOOKS

    hooks = json.loads((Path(__file__).parent.parent / "hooks" / "hooks.json").read_text())
    (group,) = hooks["hooks"][event]
    assert group["hooks"][0]["command"] == WORKTREE_HOOKS[event][0]


def run_registered(event: str, path_dirs: list[Path], cwd: Path, stdin: str):
    from router.create.hostsettings import WORKTREE_HOOKS

    env = {**os.environ, "PATH": os.pathsep.join(str(p) for p in path_dirs)}
    return subprocess.run(
        ["/bin/sh", "-c", WORKTREE_HOOKS[event][0]],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_without_team_router_create_fails_closed_and_remove_fails_open(tmp_path, home_repo):
    bare = tmp_path / "bin-without-team-router"
    bare.mkdir()
    payload = json.dumps({"cwd": str(home_repo), "name": "ENG-1-x"})
    proc = run_registered("WorktreeCreate", [bare], tmp_path, payload)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "team-router is not on PATH" in proc.stderr
    proc = run_registered("WorktreeRemove", [bare], tmp_path, payload)
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr == "team-router is not on PATH, so the worktree was left as it is\n"


def test_the_registered_remove_command_passes_on_the_exit_that_says_kept(home_repo, tmp_path):
    # `|| true` made the host say "removed" while the worktree and its unsaved file stayed.
    dirs = [Path(sys.executable).parent, Path("/usr/bin"), Path("/bin")]
    path = made(create(home_repo, "ENG-7-native"))
    notes = write(path / "notes.txt", "unsaved\n")
    payload = json.dumps({"cwd": str(path), "worktree_path": str(path)})
    proc = run_registered("WorktreeRemove", dirs, tmp_path, payload)
    assert (proc.returncode, proc.stdout) == (1, ""), proc.stderr
    assert f"team-router: worktree {path} (ENG-7-native) kept: " in proc.stderr
    assert notes.read_text() == "unsaved\n" and str(path) in worktree_paths(home_repo)
    notes.unlink()
    proc = run_registered("WorktreeRemove", dirs, tmp_path, payload)
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stderr
    assert not path.exists() and worktree_paths(home_repo) == [str(home_repo)]


def test_install_hooks_brings_an_earlier_versions_remove_command_up_to_date():
    from router.create.hostsettings import WORKTREE_HOOKS

    old = "command -v team-router >/dev/null 2>&1 && team-router hook worktree-remove || true"
    write(
        settings_file(),
        json.dumps(
            {
                "hooks": {
                    "WorktreeCreate": [
                        {
                            "hooks": [
                                {
                                    "type": "command",
                                    "command": WORKTREE_HOOKS["WorktreeCreate"][0],
                                    "timeout": 120,
                                }
                            ]
                        }
                    ],
                    "WorktreeRemove": [
                        {"hooks": [{"type": "command", "command": old, "timeout": 300}]}
                    ],
                }
            }
        ),
    )
    res = run_cli("install-hooks", "--json")
    assert res.code == 0 and res.json["changed"], res.out
    assert res.json["actions"] == [
        "WorktreeCreate: already runs team-router",
        "WorktreeRemove: updated the team-router hook",
    ]
    installed = json.loads(settings_file().read_text())["hooks"]
    for event, (command, timeout) in WORKTREE_HOOKS.items():
        assert installed[event] == [
            {"hooks": [{"type": "command", "command": command, "timeout": timeout}]}
        ]


def test_the_registered_create_command_prints_the_path_alone(home_repo, tmp_path):
    venv_bin = Path(sys.executable).parent
    payload = json.dumps({"cwd": str(home_repo), "name": "ENG-1-x"})
    dirs = [venv_bin, Path("/usr/bin"), Path("/bin")]
    proc = run_registered("WorktreeCreate", dirs, tmp_path, payload)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{home_repo / '.claude' / 'worktrees' / 'ENG-1-x'}\n"


def test_remove_never_acts_on_the_repo_the_hook_happens_to_run_in(workspace, monkeypatch):
    # The worktree is gone and the host named no project: the process's own
    # directory is some other repository, whose residue is not the host's to sweep.
    bystander = make_repo(workspace, "bystander")
    junk = write(bystander / ".claude" / "worktrees" / "junk" / "tmp" / "x.log", "residue\n")
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.chdir(bystander)
    gone = workspace / "web" / ".claude" / "worktrees" / "ENG-1-gone"
    res = remove(gone)
    assert (res.code, res.out) == (0, "") and "not-ours" in res.err
    assert junk.read_text() == "residue\n"


# -- files under docs/plans/ that only team-router's info/exclude line hides ----------------


def test_hook_keeps_a_file_under_docs_plans_outside_the_topics_plan_dir(home_repo):
    # `new` puts /docs/plans/ in info/exclude: git status no longer shows this file,
    # and `git worktree remove` deleted it without a word.
    path = made(create(home_repo, "ENG-12-x"))
    roadmap = write(path / "docs" / "plans" / "roadmap.md", "my roadmap, not committed yet\n")
    assert status(path) == ""  # hidden by our exclude line, not by the user
    res = remove(path)
    assert res.code == 1 and "kept" in res.err and "docs/plans/roadmap.md" in res.err, res.err
    assert roadmap.read_text() == "my roadmap, not committed yet\n"
    assert record(home_repo, "ENG-12-x").host_removal.outcome == "kept"


def test_hook_keeps_a_new_file_in_a_tracked_docs_plans(home_repo):
    write(home_repo / "docs" / "plans" / "README.md", "plans live here\n")
    git(home_repo, "add", "docs")
    git(home_repo, "commit", "-q", "-m", "plans")
    git(home_repo, "push", "-q", "origin", "main")
    path = made(create(home_repo, "ENG-13-x"))
    design = write(path / "docs" / "plans" / "2026-01-01-old" / "design.md", "to commit\n")
    res = remove(path)
    assert res.code == 1 and "kept" in res.err, res.err
    assert design.read_text() == "to commit\n"


# -- a discard intent is not a licence to take what another session holds or a lock keeps ---


def test_a_discard_intent_keeps_a_worktree_another_live_session_holds(home_repo):
    # README: "one that another live session holds ... is kept". --force (what discard
    # maps to) would tear it down from under that session.
    path = made(create(home_repo, "ENG-14-x"))
    wip = write(path / "wip.txt", "the other session's work\n")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        other = holders.make_holder(sleeper.pid, session="s-2")
        holders.register(home_repo / ".git", "ENG-14-x", other)
        res = remove(path, discard_changes=True)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert res.code == 1 and "kept" in res.err and "held" in res.err, res.err
    assert wip.read_text() == "the other session's work\n"
    assert record(home_repo, "ENG-14-x").host_removal.outcome == "kept"


def test_a_discard_intent_keeps_a_locked_worktree(home_repo):
    path = made(create(home_repo, "ENG-15-x"))
    unlock(home_repo, path)  # the user's lock replaces ours
    git(home_repo, "worktree", "lock", "--reason", "keep me", str(path))
    res = remove(path, discard_changes=True)
    assert res.code == 1 and "kept" in res.err and "keep me" in res.err, res.err
    assert path.is_dir() and "ENG-15-x" in branches(home_repo)


# -- the outcome recorded is what happened ---------------------------------------------------


def test_a_worktree_switched_to_another_branch_is_reported_kept_not_removed(home_repo):
    # An agent made its own branch in the host's worktree: teardown keeps the worktree
    # (it is on another branch), so the hook must not say, nor record, "removed".
    path = made(create(home_repo, "ENG-16-x"))
    git(path, "switch", "-q", "-c", "fix-typo")
    sha = commit(path, "typo.txt", "fixed\n", "fix typo")
    res = remove(path)
    assert res.code == 1, res.err
    assert path.is_dir() and git(path, "rev-parse", "fix-typo") == sha
    assert " kept: " in res.err and "fix-typo" in res.err, res.err
    assert record(home_repo, "ENG-16-x").host_removal.outcome == "kept"


def test_a_name_whose_topic_reused_the_users_checkout_is_refused_not_handed_to_the_host(
    home_repo,
):
    feat = home_repo.parent / "feat"
    git(home_repo, "worktree", "add", "-q", "-b", "feature-x", str(feat), "main")
    write(feat / "wip.txt", "the user's work in progress\n")
    made_by_new = run_cli("new", "fix login", "--json", cwd=feat)
    assert made_by_new.json["home"]["status"] == "reused"
    for name in ("fix login", made_by_new.json["id"]):
        res = create(home_repo, name)
        assert (res.code, res.out) == (1, ""), res.out
        assert "[isolation-failed]" in res.err and str(feat) in res.err
    assert worktree_paths(home_repo) == [str(home_repo), str(feat)]
    assert (feat / "wip.txt").read_text() == "the user's work in progress\n"


def test_a_checkout_left_after_its_topic_was_torn_down_is_reported_kept_not_removed(home_repo):
    # The user's own linked worktree, reused by `new`: teardown keeps it. A
    # removal asked for after that must not say "removed" while it is there.
    feat = home_repo.parent / "feat"
    git(home_repo, "worktree", "add", "-q", "-b", "feature-x", str(feat), "main")
    made_by_new = run_cli("new", "fix login", "--json", cwd=feat)
    assert made_by_new.json["home"]["status"] == "reused"
    topic_id = made_by_new.json["id"]
    assert run_cli("teardown", topic_id, cwd=home_repo).code == 0
    assert feat.is_dir()
    res = remove(feat, discard_changes=True)
    assert res.code == 1, res.err
    assert f"{feat} ({topic_id}) kept:" in res.err, res.err
    assert feat.is_dir() and "feature-x" in branches(home_repo)


def test_a_plan_artifact_written_while_remove_waits_for_the_topic_lock_is_kept(home_repo):
    """The plan dir is looked at under the lock: what a session wrote while it waited counts."""
    from helpers.faults import wait_until_open

    path = made(create(home_repo, "ENG-7-native"))
    payload = {"session_id": "s-1", "cwd": str(path), "worktree_path": str(path)}
    with state.held_lock(home_repo / ".git", "ENG-7-native"):  # another command of the topic
        proc = subprocess.Popen(
            [sys.executable, "-m", "router.entry", "hook", "worktree-remove"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        proc.stdin.write(json.dumps(payload))
        proc.stdin.close()
        wait_until_open(proc.pid, state.lock_path(home_repo / ".git", "ENG-7-native"))
        task = write(path / "docs" / "plans" / "ENG-7-native" / "task.md", "# the request\n")
    proc.wait(timeout=120)
    err = proc.stderr.read()
    assert proc.returncode == 1, err
    assert "kept" in err and "task.md" in err, err
    assert task.read_text() == "# the request\n" and "ENG-7-native" in branches(home_repo)


def test_install_hooks_refuses_a_hard_linked_settings_file_and_both_names_keep_it(tmp_path):
    text = '{"theme": "dark"}\n'
    other = write(tmp_path / "dotfiles" / "claude-settings.json", text)
    settings_file().parent.mkdir(parents=True)
    os.link(other, settings_file())
    for args in (("--dry-run",), ()):
        res = run_cli("install-hooks", *args, "--json")
        assert (res.code, res.json["error"]["code"]) == (1, "setup-failed"), res.out
        assert res.json["error"]["message"] == (
            f"{settings_file()} has 2 hard links, and writing it would cut this name off from "
            "the others (they would keep the old settings); keep one name and make the others "
            "symlinks to it (ln -sf), then rerun (nothing was written)"
        )
    assert settings_file().read_text() == other.read_text() == text
    assert os.path.samefile(settings_file(), other)
    # The fix the message names: one file, the other name a symlink to it.
    settings_file().unlink()
    settings_file().symlink_to(other)
    assert run_cli("install-hooks", "--json").code == 0
    assert "WorktreeCreate" in json.loads(other.read_text())["hooks"]


@pytest.mark.parametrize("dangling", ["the file", "its directory"])
def test_install_hooks_never_creates_the_directories_a_dangling_symlink_names(tmp_path, dangling):
    gone = tmp_path / "unmounted" / "dotfiles" / "claude"
    if dangling == "the file":
        settings_file().parent.mkdir(parents=True)
        settings_file().symlink_to(gone / "settings.json")
        link = settings_file()
        expected = gone / "settings.json"
    else:
        settings_file().parent.symlink_to(gone, target_is_directory=True)
        link = settings_file().parent
        expected = gone
    for args in (("--dry-run",), ()):
        res = run_cli("install-hooks", *args, "--json")
        assert (res.code, res.json["error"]["code"]) == (1, "setup-failed"), res.out
        assert res.json["error"]["message"] == (
            f"{link} is a symlink to {expected}, which does not exist, and {gone} is no "
            "directory to write settings.json in; create it (mkdir -p) or remove the symlink, "
            "then rerun (nothing was written)"
        )
    assert not (tmp_path / "unmounted").exists()
    assert os.readlink(link) == str(expected)


def test_install_hooks_writes_through_a_dangling_symlink_into_a_directory_that_exists(tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    settings_file().parent.mkdir(parents=True)
    settings_file().symlink_to(dotfiles / "claude-settings.json")
    res = run_cli("install-hooks", "--json")
    assert res.code == 0, res.out
    assert settings_file().is_symlink()
    assert "WorktreeRemove" in json.loads((dotfiles / "claude-settings.json").read_text())["hooks"]


def test_a_worktree_another_process_works_in_is_kept_and_the_hosts_own_processes_do_not_count(
    home_repo,
):
    """A process the host did not start (a shell or editor of the user's, here one that left
    its parent behind) would lose its directory: the worktree is kept. What the host started
    (its MCP servers, a tool a subagent left running) is the host's own: it asked for the
    removal, and the shell it runs the hook through may sit in the worktree too."""
    from helpers.faults import argv

    path = made(create(home_repo, "ENG-16-x"))
    payload = json.dumps(
        {"hook_event_name": "WorktreeRemove", "cwd": str(path), "worktree_path": str(path)}
    )
    hook = " ".join(f"'{a}'" for a in argv("hook", "worktree-remove", cwd=path))

    def remove_from_inside() -> subprocess.CompletedProcess[str]:
        # `; true`: sh stays (no exec), an ancestor of the hook with its cwd in the worktree.
        return subprocess.run(
            ["sh", "-c", f"{hook}; true"], cwd=path, input=payload, capture_output=True, text=True
        )

    # Started by a shell that exits at once: the sleep is no longer below this test (the host).
    started = subprocess.run(
        ["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"],
        cwd=path,
        capture_output=True,
        text=True,
        check=True,
    )
    stranger = int(started.stdout)
    try:
        kept = remove_from_inside()
    finally:
        os.kill(stranger, signal.SIGKILL)
    assert (kept.returncode, kept.stdout) == (0, ""), kept.stderr
    assert "kept" in kept.stderr and f"process {stranger} (sleep)" in kept.stderr, kept.stderr
    assert "[held]" in kept.stderr, kept.stderr
    assert path.is_dir() and "ENG-16-x" in branches(home_repo)
    assert record(home_repo, "ENG-16-x").host_removal.outcome == "kept"
    own = subprocess.Popen(["sleep", "60"], cwd=path)  # started by the host: its own
    try:
        gone = remove_from_inside()
    finally:
        own.kill()
        own.wait()
    assert gone.returncode == 0 and "removed" in gone.stderr, gone.stderr
    assert_gone(home_repo, path, "ENG-16-x")


def test_the_plugins_hooks_stand_aside_for_the_same_hooks_in_the_users_settings(
    home_repo, hermetic, monkeypatch
):
    assert run_cli("install-hooks", "--json").code == 0
    settings = hermetic / "home" / ".claude" / "settings.json"
    monkeypatch.setenv("CLAUDE_PLUGIN_ROOT", str(hermetic / "plugin"))  # the plugin's hooks
    res = create(home_repo, "ENG-7-native")
    assert (res.code, res.out) == (0, "")
    assert res.err == f"team-router: the WorktreeCreate hook in {settings} makes it\n"
    assert state.list_records(home_repo / ".git") == []
    monkeypatch.delenv("CLAUDE_PLUGIN_ROOT")  # the settings' hooks
    path = made(create(home_repo, "ENG-7-native"))
    monkeypatch.setenv("CLAUDE_PLUGIN_ROOT", str(hermetic / "plugin"))
    res = remove(path)
    # Not 0: the client says "removed" when any remove hook exits 0; the settings' answers.
    assert (res.code, res.out) == (1, "")
    assert (
        res.err == f"team-router: the WorktreeRemove hook in {settings} answers for this removal\n"
    )
    assert path.is_dir() and record(home_repo, "ENG-7-native").host_removal is None
