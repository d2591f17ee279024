"""git's own lock files left by a kill: refused with ``git-locked``, naming the file and the fix.

A killed git leaves ``index.lock``, ``packed-refs.lock`` or
``refs/heads/<b>.lock`` behind (an empty file, exactly what the tests
create). The rerun must say which file and how to get past it, never git's
raw "File exists" nor a fallback that hides the cause, and must lose nothing.
The router never removes such a file itself: it cannot prove no git command
is still running in the repository.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.fakegh import hide_gh, make_github_repo
from helpers.faults import hold_open
from helpers.origin import merge_on_origin
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
from helpers.topics import new_topic, teardown, write_repos_md

ID = "2026-05-01-add-rate-limiting"


def left_by_a_kill(path: Path) -> Path:
    """An empty lock file, as git leaves it when killed between creating and renaming it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


def assert_names_the_lock_and_the_fix(message: str, lock: Path, repo: Path) -> None:
    lock = Path(os.path.realpath(lock))
    assert f"if no git command is running in {repo}, remove {lock}" in message
    assert "File exists" not in message  # git's raw text, with its cut-off paragraph


# -- creation ---------------------------------------------------------------------------


def test_a_branch_lock_refuses_new_naming_the_lock_and_a_rerun_after_the_fix_creates(home_repo):
    lock = left_by_a_kill(home_repo / ".git" / "refs" / "heads" / f"{ID}.lock")
    res = run_cli("new", "Add rate limiting", "--id", ID, "--json", cwd=home_repo)
    assert res.code == 1, res.out + res.err
    assert res.json["ok"] is False
    assert res.json["error"]["code"] == "git-locked"
    assert_names_the_lock_and_the_fix(res.json["error"]["message"], lock, home_repo)
    # Refused, not fallen back: nothing was made, not even a plan dir in the main tree.
    assert lock.exists()
    assert worktree_paths(home_repo) == [str(home_repo)]
    assert branches(home_repo) == ["main"]
    assert not (home_repo / ".claude" / "worktrees" / ID).exists()
    assert not (home_repo / "docs").exists()
    assert status(home_repo) == ""
    text = run_cli("new", "Add rate limiting", "--id", ID, cwd=home_repo)
    assert text.code == 1 and "[git-locked]" in text.err and "Traceback" not in text.err

    lock.unlink()  # the fix the message names
    again = run_cli("new", "Add rate limiting", "--id", ID, "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    assert again.json["home"]["status"] == "created"
    assert again.json["id"] == ID


def test_a_branch_lock_in_a_secondary_refuses_that_repo_and_strict_rolls_back_the_rest(
    workspace, home_repo
):
    topic = new_topic(home_repo, topic_id=ID)
    api = make_repo(workspace, "api")
    types = make_repo(workspace, "types")
    repos_md = write(
        topic.plan_dir / "repos.md",
        f"# Repos\n\n## Home repo\n- **name:** web\n- **path:** {home_repo}\n\n"
        f"## Additional repos\n- **name:** api\n  **path:** {api}\n"
        f"- **name:** types\n  **path:** {types}\n",
    )
    original = repos_md.read_text()
    lock = left_by_a_kill(api / ".git" / "refs" / "heads" / f"{ID}.lock")

    strict = run_cli("worktrees", ID, "--strict", "--json", cwd=home_repo)
    assert strict.code == 1, strict.out + strict.err
    assert strict.json["error"]["code"] == "strict-failed"
    assert_names_the_lock_and_the_fix(strict.json["error"]["message"], lock, api)
    for repo in (api, types):
        assert worktree_paths(repo) == [str(repo)] and branches(repo) == ["main"]
        assert status(repo) == ""
    assert repos_md.read_text() == original

    loose = run_cli("worktrees", ID, "--json", cwd=home_repo)
    assert loose.code == 0, loose.out + loose.err
    got = {r["name"]: r for r in loose.json["repos"]}
    assert (got["api"]["status"], got["api"]["reason"]) == ("refused", "git-locked")
    assert got["types"]["status"] == "created"
    assert any(str(lock) in w for w in loose.json["warnings"])
    assert "- api:" not in repos_md.read_text()  # a refused repo is not listed
    assert lock.exists() and branches(api) == ["main"]

    lock.unlink()
    fixed = run_cli("worktrees", ID, "--json", cwd=home_repo)
    assert fixed.code == 0, fixed.out + fixed.err
    assert {r["name"]: r["status"] for r in fixed.json["repos"]}["api"] == "created"


# -- teardown and pr-cleanup ----------------------------------------------------------------


def test_a_merge_msg_lock_refuses_integrate_naming_it_and_the_rerun_finishes(home_repo):
    # A pick killed while writing its message leaves MERGE_MSG.lock; the next
    # pick stages its changes, then stops on it ("could not lock '.git/MERGE_MSG'").
    topic = new_topic(home_repo, topic_id=ID)
    sha = commit(topic.worktrees["home"], "limits.py", "LIMIT = 10\n", "add limits")
    main_before = git(home_repo, "rev-parse", "main")
    lock = left_by_a_kill(home_repo / ".git" / "MERGE_MSG.lock")

    res = teardown(topic, "--integrate")
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "git-locked"
    assert_names_the_lock_and_the_fix(res.json["error"]["message"], lock, home_repo)
    assert git(home_repo, "rev-parse", "main") == main_before
    assert git(home_repo, "rev-parse", ID) == sha

    lock.unlink()
    again = teardown(topic, "--integrate")
    assert again.code == 0, again.out + again.err
    assert git(home_repo, "log", "--format=%s", "main").splitlines().count("add limits") == 1
    assert status(home_repo) == "" and branches(home_repo) == ["main"]


def test_reading_a_worktrees_status_never_rewrites_its_index(home_repo):
    # git status refreshes the index under index.lock unless told not to: a
    # read killed then would leave that lock, and it would collide with the
    # user's own git in the worktree.
    topic = new_topic(home_repo, topic_id=ID)
    worktree = topic.worktrees["home"]
    readme = worktree / "README.md"
    os.utime(readme, (readme.stat().st_atime, readme.stat().st_mtime + 5))  # stale stat data
    index = Path(git(worktree, "rev-parse", "--path-format=absolute", "--git-path", "index"))
    before = index.stat().st_mtime_ns
    res = teardown(topic, "--dry-run")
    assert res.code == 0, res.out + res.err
    assert index.stat().st_mtime_ns == before


def test_an_index_lock_in_the_primary_refuses_integrate_naming_it_and_loses_nothing(home_repo):
    topic = new_topic(home_repo, topic_id=ID)
    worktree = topic.worktrees["home"]
    sha = commit(worktree, "limits.py", "LIMIT = 10\n", "add limits")
    main_before = git(home_repo, "rev-parse", "main")
    lock = left_by_a_kill(home_repo / ".git" / "index.lock")

    res = teardown(topic, "--integrate")
    assert res.code == 1, res.out + res.err
    assert res.json["ok"] is False
    assert res.json["error"]["code"] == "git-locked"
    assert_names_the_lock_and_the_fix(res.json["error"]["message"], lock, home_repo)
    integrate = res.json["repos"][0]["steps"][0]
    assert (integrate["name"], integrate["outcome"], integrate["code"]) == (
        "integrate",
        "refused",
        "git-locked",
    )
    assert lock.exists()
    assert git(home_repo, "rev-parse", "main") == main_before
    assert git(home_repo, "rev-parse", ID) == sha
    assert (worktree / "limits.py").read_text() == "LIMIT = 10\n"

    lock.unlink()
    again = teardown(topic, "--integrate")
    assert again.code == 0, again.out + again.err
    assert (home_repo / "limits.py").read_text() == "LIMIT = 10\n"
    assert "add limits" in git(home_repo, "log", "--format=%s", "main").splitlines()
    assert branches(home_repo) == ["main"] and worktree_paths(home_repo) == [str(home_repo)]


def test_a_packed_refs_lock_keeps_the_branch_and_names_the_lock_in_the_error(home_repo):
    topic = new_topic(home_repo, topic_id=ID)  # never committed to: teardown deletes the branch
    lock = left_by_a_kill(home_repo / ".git" / "packed-refs.lock")

    res = teardown(topic)
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "git-locked"
    assert_names_the_lock_and_the_fix(res.json["error"]["message"], lock, home_repo)
    by_name = {s["name"]: s for s in res.json["repos"][0]["steps"]}
    assert (by_name["branch"]["outcome"], by_name["branch"]["code"]) == ("failed", "git-locked")
    assert ID in branches(home_repo)  # kept until git can delete it

    lock.unlink()
    again = teardown(topic)
    assert again.code == 0, again.out + again.err
    assert branches(home_repo) == ["main"]


def test_pr_cleanup_with_a_packed_refs_lock_fails_git_locked_and_keeps_the_branch(
    workspace, tmp_path, monkeypatch
):
    hide_gh(tmp_path, monkeypatch)
    web = make_github_repo(workspace, "web")
    res = run_cli("new", "Add rate limiting", "--id", ID, "--json", cwd=web)
    worktree = Path(res.json["home"]["worktree"])
    commit(worktree, "limits.py", "LIMIT = 10\n", "add limits")
    git(worktree, "push", "-q", "origin", f"{ID}:{ID}")
    merge_on_origin(web, ID, how="squash")
    tip = git(web, "rev-parse", ID)
    lock = left_by_a_kill(web / ".git" / "packed-refs.lock")

    res = run_cli("pr-cleanup", ID, "--json", cwd=web)
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "git-locked"
    assert_names_the_lock_and_the_fix(res.json["error"]["message"], lock, web)
    assert git(web, "rev-parse", ID) == tip

    lock.unlink()
    again = run_cli("pr-cleanup", ID, "--json", cwd=web)
    assert again.code == 0, again.out + again.err
    assert ID not in branches(web)


def test_a_teardown_that_finishes_names_a_git_lock_left_in_the_repo_with_the_fix(home_repo):
    # A lock no step needs (a killed `git branch` elsewhere left it): the
    # teardown finishes, and says where the lock is and how to clear it.
    topic = new_topic(home_repo, topic_id=ID)
    commit(topic.worktrees["home"], "limits.py", "LIMIT = 10\n", "add limits")
    lock = left_by_a_kill(home_repo / ".git" / "refs" / "heads" / "elsewhere.lock")

    res = teardown(topic, "--integrate")
    assert res.code == 0, res.out + res.err
    named = [w for w in res.json["warnings"] if str(lock) in w]
    assert len(named) == 1
    assert "if no git command is running" in named[0] and "remove it" in named[0]
    assert lock.exists()  # never removed by team-router
    assert status(home_repo) == "" and branches(home_repo) == ["main"]


def _named_once_with_the_fix(warnings: list[str], lock: Path, repo: Path) -> None:
    named = [w for w in warnings if str(lock) in w]
    assert len(named) == 1, warnings
    assert f"if no git command is running in {repo}, remove it" in named[0]
    assert lock.exists()  # never removed by team-router


def test_new_names_a_git_lock_it_does_not_need_with_the_fix(home_repo):
    lock = left_by_a_kill(home_repo / ".git" / "refs" / "heads" / "elsewhere.lock")
    res = run_cli("new", "Add rate limiting", "--id", ID, "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    assert res.json["home"]["status"] == "created"
    _named_once_with_the_fix(res.json["warnings"], lock, home_repo)


def test_a_git_lock_a_live_process_holds_is_not_named_a_left_one_is(home_repo):
    left = left_by_a_kill(home_repo / ".git" / "refs" / "heads" / "elsewhere.lock")
    live = left_by_a_kill(home_repo / ".git" / "packed-refs.lock")  # a git at work holds it
    holder = hold_open(live)
    try:
        res = run_cli("new", "Add rate limiting", "--id", ID, "--json", cwd=home_repo)
    finally:
        holder.kill()
        holder.wait()
    assert res.code == 0, res.out + res.err
    _named_once_with_the_fix(res.json["warnings"], left, home_repo)
    assert not [
        w for w in res.json["warnings"] if str(live) in w
    ]  # removing it would break that git
    assert live.exists()


def test_worktrees_names_a_git_lock_left_in_a_secondary_with_the_fix(workspace):
    topic = new_topic(make_repo(workspace, "web"), topic_id=ID)
    api = make_repo(workspace, "api")
    lock = left_by_a_kill(api / ".git" / "index.lock")  # `git worktree add` does not need it
    write_repos_md(topic, {"api": api})
    res = run_cli("worktrees", str(topic.plan_dir), "--json", cwd=topic.home)
    assert res.code == 0, res.out + res.err
    assert [r["status"] for r in res.json["repos"]] == ["existing", "created"]
    _named_once_with_the_fix(res.json["warnings"], lock, api)
    assert not [w for w in res.json["warnings"] if "web: " in w and ".lock" in w]


def test_a_packed_refs_new_left_by_a_kill_is_named_with_the_fix(home_repo):
    # git rewrites packed-refs through packed-refs.new; a kill leaves that file,
    # and deleting a packed branch then fails with "unable to create file".
    topic = new_topic(home_repo, topic_id=ID)
    git(home_repo, "pack-refs", "--all")
    unlock(home_repo, topic.worktrees["home"])
    git(home_repo, "worktree", "remove", str(topic.worktrees["home"]))
    left = left_by_a_kill(home_repo / ".git" / "packed-refs.new")

    res = teardown(topic)
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "git-locked"
    assert_names_the_lock_and_the_fix(res.json["error"]["message"], left, home_repo)
    assert ID in branches(home_repo)  # kept

    left.unlink()
    again = teardown(topic)
    assert again.code == 0, again.out + again.err
    assert ID not in branches(home_repo)


def test_a_git_lock_refusal_says_its_fix_once_wherever_a_command_turns_it_into_words(home_repo):
    # The lock's own line names the fix (remove it, then run again); the generic "run the
    # same command again" would contradict it. Creation's refusal and the CLI's edge say
    # a git failure through one property.
    from types import SimpleNamespace

    from router.create.creation import failure
    from router.git import Git, GitError

    lock = left_by_a_kill(home_repo / ".git" / "refs" / "heads" / "topic.lock")
    with pytest.raises(GitError) as caught:
        Git(home_repo).run("update-ref", "refs/heads/topic", "HEAD")
    exc = caught.value
    assert exc.lock_file == lock
    assert exc.said == exc.first_line
    assert_names_the_lock_and_the_fix(exc.said, lock, home_repo)
    refusal = failure(SimpleNamespace(name="home"), exc)  # type: ignore[arg-type]
    assert refusal.message == f"home: {exc.first_line}"
    assert "run the same command again" not in refusal.message

    plain = GitError(["git", "status"], 128, "fatal: something broke")
    assert plain.said == (
        "fatal: something broke; run the same command again, and if it fails the same way, "
        "`git status` in that repo shows what needs repair"
    )
