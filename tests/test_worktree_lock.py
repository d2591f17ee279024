"""Our worktrees are locked against other tools' cleanup, and our own commands know our lock.

Claude Code's cleanup deletes unlocked worktrees under ``.claude/worktrees/`` it did
not make; every worktree team-router makes is locked with a reason naming
team-router and the topic (DESIGN §10). Real git, a local bare origin.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers.faults import KILLED, git_killer, git_wrapper, run
from helpers.plans import repos_md
from helpers.repos import (
    branches,
    commit,
    git,
    lock_reason,
    make_repo,
    own_lock,
    run_cli,
    status,
    unlock,
    worktree_paths,
    write,
)
from helpers.topics import TOPIC_ID, multi_topic, new_topic, ship, steps_of, teardown

from router.topic import state


def other_tools_cleanup(repo: Path) -> list[str]:
    """What another tool's cleanup does under ``.claude/worktrees/`` (Claude Code's, its
    issues #89199 and #96162): ``git worktree remove --force`` every worktree there it did
    not make; git itself refuses a locked one. The paths it removed."""
    removed = []
    listing = git(repo, "worktree", "list", "--porcelain", "-z").split("\0\0")
    for entry in listing:
        fields = dict(f.partition(" ")[::2] for f in entry.split("\0") if f)
        path = fields.get("worktree", "")
        if "/.claude/worktrees/" not in path:
            continue
        git(repo, "worktree", "remove", "--force", path, check=False)
        if not Path(path).exists():
            removed.append(path)
    return removed


def made_by_an_earlier_version(repo: Path, worktree: Path) -> None:
    """A worktree team-router made before it locked them: unlocked."""
    unlock(repo, worktree)
    assert lock_reason(repo, worktree) is None


# -- every worktree team-router makes is locked ---------------------------------------------


def test_new_and_worktrees_lock_every_worktree_they_make_and_other_tools_cleanup_skips_them(
    workspace,
):
    topic = multi_topic(workspace, ("api",))
    for name, repo in topic.repos.items():
        assert lock_reason(repo, topic.worktrees[name]) == own_lock(topic.id), name
    write(topic.worktrees["home"] / "notes.txt", "unsaved work\n")
    for repo in topic.repos.values():
        assert other_tools_cleanup(repo) == []
    assert (topic.worktrees["home"] / "notes.txt").read_text() == "unsaved work\n"
    assert status(topic.worktrees["api"]) == ""


def test_the_hosts_own_worktree_is_locked_too(home_repo):
    payload = {"session_id": "s-1", "cwd": str(home_repo), "name": "ENG-7-native"}
    res = run_cli("hook", "worktree-create", stdin=json.dumps(payload))
    assert res.code == 0, res.err
    path = Path(res.out.strip())
    assert lock_reason(home_repo, path) == own_lock("ENG-7-native")
    assert other_tools_cleanup(home_repo) == [] and path.is_dir()


def test_a_restored_worktree_is_locked_for_its_topic(topic):
    write(topic.worktrees["home"] / "wip.py", "w = 1\n")
    assert teardown(topic, "--force").code == 0
    res = run_cli("restore", topic.id, "--json", cwd=topic.home)
    assert res.code == 0, res.out + res.err
    back = Path(res.json["repos"][0]["worktree"])
    assert lock_reason(topic.home, back) == own_lock(topic.id)
    assert (back / "wip.py").read_text() == "w = 1\n"


# -- our own commands know their own lock ------------------------------------------------------


def test_teardown_lifts_its_own_lock_and_removes_every_repo(workspace):
    topic = ship(multi_topic(workspace, ("api",)))
    res = teardown(topic)
    assert res.code == 0, res.out
    for name, repo in topic.repos.items():
        assert worktree_paths(repo) == [str(repo)], name
        assert not topic.worktrees[name].exists()


def test_a_lock_of_someone_else_still_refuses_and_is_left_as_it_was(topic):
    wt = topic.worktrees["home"]
    unlock(topic.home, wt)
    git(topic.home, "worktree", "lock", "--reason", "team-router: keep", str(wt))
    res = teardown(topic)
    assert res.code == 1 and res.json["error"]["code"] == "locked-worktree", res.out
    assert "(team-router: keep)" in steps_of(res.json, "home")["remove"]["detail"]
    assert lock_reason(topic.home, wt) == "team-router: keep" and wt.is_dir()


def test_a_removal_git_refuses_after_the_lock_came_off_puts_the_lock_back(topic, tmp_path):
    wt = topic.worktrees["home"]
    # A file written between the plan (which saw the worktree clean) and git's removal,
    # after the lock came off.
    late = f'echo late > \'{wt}/late.txt\'\nexec "$REAL_GIT" "$@"'
    env = git_wrapper(tmp_path / "bin", "worktree remove", late)
    res = run("teardown", topic.id, "--json", cwd=topic.home, env=env)
    assert res.code == 1, res.out + res.err
    remove = steps_of(res.json, "home")["remove"]
    assert remove["outcome"] == "refused" and remove["code"] == "dirty-worktree", remove
    assert (wt / "late.txt").read_text() == "late\n"
    assert lock_reason(topic.home, wt) == own_lock(topic.id)
    assert state.read_record(topic.home / ".git", topic.id).removing is None  # type: ignore[union-attr]


def test_a_kill_between_lifting_the_lock_and_removing_is_finished_by_the_rerun(topic, tmp_path):
    wt = topic.worktrees["home"]
    # Killed once the lock is off, before git removes anything.
    env = git_killer(tmp_path / "bin", "worktree remove", real=False)
    killed = run("teardown", topic.id, "--json", cwd=topic.home, env=env, new_group=True)
    assert killed.code == KILLED, killed.out + killed.err
    assert wt.is_dir() and lock_reason(topic.home, wt) is None
    again = teardown(topic)
    assert again.code == 0, again.out
    assert (
        "finished a removal that was interrupted"
        in steps_of(again.json, "home")["remove"]["detail"]
    )
    assert worktree_paths(topic.home) == [str(topic.home)] and not wt.exists()
    assert topic.branch not in branches(topic.home)


def test_the_hosts_discard_intent_removes_a_worktree_only_our_own_lock_holds(home_repo):
    payload = {"session_id": "s-1", "cwd": str(home_repo), "name": "ENG-8-native"}
    path = Path(run_cli("hook", "worktree-create", stdin=json.dumps(payload)).out.strip())
    write(path / "scratch.txt", "thrown away on purpose\n")
    gone = {
        "session_id": "s-1",
        "cwd": str(path),
        "worktree_path": str(path),
        "discard_changes": True,
    }
    res = run_cli("hook", "worktree-remove", stdin=json.dumps(gone))
    assert "snapshotted" in res.err, res.err
    assert not path.exists() and worktree_paths(home_repo) == [str(home_repo)]


def test_doctor_repair_unregisters_a_gone_worktree_only_our_own_lock_holds(topic):
    import shutil

    wt = topic.worktrees["home"]
    shutil.rmtree(wt)
    res = run_cli("doctor", "--repair", "--json", cwd=topic.home)
    assert res.code == 0, res.out
    gone = [f for f in res.json["findings"] if f["kind"] == "registration-dir-gone"]
    assert [(f["path"], f["repaired"]) for f in gone] == [(str(wt), True)]
    assert worktree_paths(topic.home) == [str(topic.home)]


# -- worktrees made before they were locked ------------------------------------------------------


def test_doctor_reports_an_unlocked_worktree_of_ours_and_repair_locks_it(topic):
    wt = topic.worktrees["home"]
    made_by_an_earlier_version(topic.home, wt)
    found = run_cli("doctor", "--json", cwd=topic.home)
    assert found.code == 0, found.out
    [finding] = [f for f in found.json["findings"] if f["kind"] == "unlocked-worktree"]
    assert (finding["path"], finding["topic"], finding["repaired"]) == (str(wt), topic.id, False)
    assert "other tools' cleanup" in finding["detail"]
    assert lock_reason(topic.home, wt) is None  # a report changes nothing

    fixed = run_cli("doctor", "--repair", "--json", cwd=topic.home)
    [finding] = [f for f in fixed.json["findings"] if f["kind"] == "unlocked-worktree"]
    assert finding["repaired"] is True
    assert lock_reason(topic.home, wt) == own_lock(topic.id)
    again = run_cli("doctor", "--json", cwd=topic.home)
    assert "unlocked-worktree" not in {f["kind"] for f in again.json["findings"]}


def test_doctor_leaves_a_checkout_it_did_not_make_unlocked(home_repo):
    side = home_repo.parent / "side"
    git(home_repo, "worktree", "add", "-q", "-b", "feature", str(side), "main")
    res = run_cli("new", "x", "--id", TOPIC_ID, "--json", cwd=side)  # reuses the checkout
    assert res.code == 0 and res.json["home"]["status"] == "reused", res.out
    fixed = run_cli("doctor", "--repair", "--json", cwd=home_repo)
    assert "unlocked-worktree" not in {f["kind"] for f in fixed.json["findings"]}
    assert lock_reason(home_repo, side) is None


def test_new_run_again_locks_the_worktree_an_earlier_version_made(topic):
    wt = topic.worktrees["home"]
    made_by_an_earlier_version(topic.home, wt)
    res = run_cli("new", "add rate limiting", "--id", topic.id, "--json", cwd=topic.home)
    assert res.code == 0 and res.json["home"]["status"] == "existing", res.out
    assert lock_reason(topic.home, wt) == own_lock(topic.id)


def test_a_refused_teardown_still_locks_the_worktree_an_earlier_version_made(topic):
    wt = topic.worktrees["home"]
    made_by_an_earlier_version(topic.home, wt)
    write(wt / "wip.py", "w = 1\n")
    res = teardown(topic)
    assert res.code == 1 and res.json["error"]["code"] == "dirty-worktree", res.out
    assert lock_reason(topic.home, wt) == own_lock(topic.id)
    assert (wt / "wip.py").read_text() == "w = 1\n"
    assert other_tools_cleanup(topic.home) == []


def test_a_teardown_of_a_worktree_an_earlier_version_made_removes_it(topic):
    wt = topic.worktrees["home"]
    made_by_an_earlier_version(topic.home, wt)
    res = teardown(topic)
    assert res.code == 0, res.out
    assert not wt.exists() and worktree_paths(topic.home) == [str(topic.home)]


def test_a_refused_pr_cleanup_still_locks_the_worktree_an_earlier_version_made(topic):
    wt = topic.worktrees["home"]
    commit(wt, "limits.py", "LIMIT = 1\n", "not merged anywhere")
    made_by_an_earlier_version(topic.home, wt)
    res = run_cli("pr-cleanup", topic.id, "--json", cwd=topic.home)
    assert res.code == 1 and res.json["error"]["code"] == "not-merged", res.out
    assert lock_reason(topic.home, wt) == own_lock(topic.id)


def test_worktrees_run_again_locks_a_secondary_an_earlier_version_made(workspace):
    topic = multi_topic(workspace, ("api",))
    api, api_wt = topic.repos["api"], topic.worktrees["api"]
    made_by_an_earlier_version(api, api_wt)
    res = run_cli("worktrees", str(topic.plan_dir), "--json", cwd=topic.home)
    assert res.code == 0, res.out
    assert lock_reason(api, api_wt) == own_lock(topic.id)


def test_a_second_repo_named_later_gets_a_locked_worktree(workspace):
    topic = new_topic(make_repo(workspace, "web"))
    api = make_repo(workspace, "api")
    write(topic.plan_dir / "repos.md", repos_md(topic.home, ("api", api), topic=None))
    res = run_cli("worktrees", str(topic.plan_dir), "--json", cwd=topic.home)
    assert res.code == 0, res.out
    assert lock_reason(api, api / ".claude/worktrees" / topic.id) == own_lock(topic.id)


def test_new_teardown_and_pr_cleanup_say_alike_that_a_worktree_could_not_be_locked(topic, tmp_path):
    wt = topic.worktrees["home"]
    commit(wt, "limits.py", "LIMIT = 1\n", "not merged anywhere")
    write(wt / "wip.py", "w = 1\n")  # teardown refuses: the worktree stays
    made_by_an_earlier_version(topic.home, wt)
    env = git_wrapper(tmp_path / "bin", "worktree lock", "echo 'fatal: no lock here' >&2; exit 128")
    said = (
        f"home: {wt} is not locked and could not be locked (fatal: no lock here); other tools' "
        f"cleanup may delete an unlocked worktree: `git worktree lock --reason "
        f"'{own_lock(topic.id)}' {wt}`"
    )
    for args, code in (
        (("new", "add rate limiting", "--id", topic.id), 0),
        (("teardown", topic.id), 1),
        (("pr-cleanup", topic.id), 1),
    ):
        res = run(*args, "--json", cwd=topic.home, env=env)
        assert res.code == code, res.out + res.err
        assert res.json["warnings"] == [said], res.out
        if code:
            assert res.json["error"]["code"] == "dirty-worktree", res.out
    assert lock_reason(topic.home, wt) is None
    assert (wt / "wip.py").read_text() == "w = 1\n" and (wt / "limits.py").exists()
    assert topic.branch in branches(topic.home)
