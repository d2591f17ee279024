"""Killed or interrupted mid-step: the rerun recognises what it left and finishes it; nothing is lost.

Kills are real (a ``git`` first on PATH that SIGKILLs the calling
``team-router`` right after the real git ran, see ``helpers.faults.git_killer``);
interrupts are a real SIGINT sent to the process.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from helpers.faults import (
    KILLED,
    finish,
    git_killer,
    git_then,
    git_wrapper,
    hold_open,
    run,
    slow_git,
    spawn,
    tree,
)
from helpers.origin import merge_on_origin
from helpers.repos import (
    branches,
    commit,
    git,
    lock_reason,
    make_repo,
    own_lock,
    status,
    worktree_paths,
    write,
)
from helpers.topics import (
    Topic,
    multi_topic,
    new_topic,
    ship,
    snapshot_of,
    steps_of,
    teardown,
    write_repos_md,
)

from router.records import replace
from router.topic import state

PICK = "cherry-pick --no-edit"  # the integrate step's cherry-pick (not the rerun's --abort)


def _teardown_killed_in(topic, tmp_path: Path, when: str, then: str = ""):
    env = git_killer(tmp_path / "killer-bin", when, then)
    return run(
        "teardown", topic.id, "--integrate", "--json", cwd=topic.home, env=env, new_group=True
    )


def _refused_primary_busy(topic, *named: str) -> str:
    """Rerun the teardown: refused ``primary-busy``, naming each of ``named``; its message."""
    res = teardown(topic, "--integrate")
    assert (res.code, res.json["error"]["code"]) == (1, "primary-busy"), res.out + res.err
    message = res.json["error"]["message"]
    for name in named:
        assert name in message
    return message


def _integrating_mark(repo: Path, topic_id: str) -> object:
    record = state.read_record(repo / ".git", topic_id)
    return record.integrating if record else None


# -- item: a kill during integration's cherry-pick ----------------------------------


def test_a_kill_mid_pick_leaving_staged_changes_is_undone_and_finished_by_the_rerun(
    home_repo, tmp_path
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "a.py", "a = 1\n", "first")
    commit(wt, "b.py", "b = 2\n", "second")
    # The pick ran, then the kill came between writing the last commit's index and committing it.
    killed = _teardown_killed_in(
        topic, tmp_path, PICK, '"$REAL_GIT" -C "$2" reset -q --soft HEAD~1'
    )
    assert killed.code == KILLED, killed.err
    assert git(home_repo, "diff", "--cached", "--name-only") == "b.py"
    assert _integrating_mark(home_repo, topic.id) is not None
    preview = teardown(topic, "--integrate", "--dry-run")  # says so, changes nothing
    assert preview.code == 0, preview.out
    assert any("undoes it first" in w for w in preview.json["warnings"])
    assert git(home_repo, "diff", "--cached", "--name-only") == "b.py"

    again = teardown(topic, "--integrate")
    assert again.code == 0, again.out + again.err
    assert any("interrupted" in w for w in again.json["warnings"])
    subjects = git(home_repo, "log", "--format=%s", "main").splitlines()
    assert subjects[:2] == ["second", "first"]
    assert subjects.count("first") == subjects.count("second") == 1
    assert status(home_repo) == ""
    assert (home_repo / "a.py").read_text() == "a = 1\n"
    assert (home_repo / "b.py").read_text() == "b = 2\n"
    assert worktree_paths(home_repo) == [str(home_repo)] and branches(home_repo) == ["main"]
    assert _integrating_mark(home_repo, topic.id) is None


def _teardown_killed_after_a_picks_commit(repo: Path, topic: Topic, then: str = "") -> None:
    """``teardown --integrate`` killed with its git by a post-commit hook: right after a pick's commit.

    ``then``: shell run in the hook first (git still holds its locks there).
    """
    hook = write(repo / ".git/hooks/post-commit", f"#!/bin/sh\n{then}\nkill -KILL 0\n")
    hook.chmod(0o755)
    killed = run("teardown", topic.id, "--integrate", "--json", cwd=repo, new_group=True)
    assert killed.code == KILLED, killed.err
    hook.unlink()


def test_a_kill_between_two_picks_is_aborted_and_finished_by_the_rerun(home_repo):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "a.py", "a = 1\n", "first")
    commit(wt, "b.py", "b = 2\n", "second")
    tip = git(home_repo, "rev-parse", "main")
    # git runs post-commit after each pick of a sequence: killed right after the first one.
    _teardown_killed_after_a_picks_commit(home_repo, topic)
    assert (home_repo / ".git/sequencer").is_dir()
    assert git(home_repo, "log", "--format=%s", "-1", "main") == "first"

    again = teardown(topic, "--integrate")
    assert again.code == 0, again.out + again.err
    subjects = git(home_repo, "log", "--format=%s", f"{tip}..main").splitlines()
    assert subjects == ["second", "first"]  # each once, in order
    assert status(home_repo) == "" and not (home_repo / ".git/sequencer").exists()
    assert worktree_paths(home_repo) == [str(home_repo)] and branches(home_repo) == ["main"]


def test_a_kill_while_a_pick_is_stopped_is_aborted_by_the_rerun_which_then_reports_the_conflict(
    home_repo, tmp_path
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "other.py", "fine\n", "applies cleanly")
    bad = commit(wt, "README.md", "# from the branch\n", "conflicts")
    commit(home_repo, "README.md", "# from main\n", "main moved on")
    main_before = git(home_repo, "rev-parse", "main")
    # The real pick stops on the conflict (CHERRY_PICK_HEAD, sequencer/), then the kill.
    killed = _teardown_killed_in(topic, tmp_path, PICK)
    assert killed.code == KILLED, killed.err
    assert (home_repo / ".git/CHERRY_PICK_HEAD").exists()
    assert (home_repo / ".git/sequencer").is_dir()

    again = teardown(topic, "--integrate")
    assert again.code == 1, again.out + again.err
    assert again.json["error"]["code"] == "conflict", again.json["error"]
    assert bad[:12] in again.json["error"]["message"]
    assert git(home_repo, "rev-parse", "main") == main_before  # the first pick was undone too
    assert status(home_repo) == ""
    assert not (home_repo / ".git/CHERRY_PICK_HEAD").exists()
    assert wt.exists() and git(home_repo, "rev-parse", topic.branch) == bad  # nothing lost
    assert _integrating_mark(home_repo, topic.id) is None


def test_a_cherry_pick_the_router_did_not_start_is_refused_naming_the_command_that_clears_it(
    home_repo,
):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    theirs = git(home_repo, "rev-parse", "main")
    commit(home_repo, "README.md", "# mine\n", "mine")
    git(home_repo, "switch", "-q", "-c", "side", theirs)
    side = commit(home_repo, "README.md", "# side\n", "side")
    git(home_repo, "switch", "-q", "main")
    git(home_repo, "cherry-pick", side, check=False)  # the user's own pick, stopped on a conflict
    assert (home_repo / ".git/CHERRY_PICK_HEAD").exists()
    before = snapshot_of(home_repo)
    _refused_primary_busy(topic, f"git -C {home_repo} cherry-pick --abort")
    assert snapshot_of(home_repo) == before  # the user's pick, its conflict and the worktree stay
    assert (home_repo / ".git/CHERRY_PICK_HEAD").exists()
    assert topic.worktrees["home"].exists()


def test_a_sequence_left_without_cherry_pick_head_names_quit_which_keeps_its_commits(home_repo):
    # A multi-commit pick stopped on a conflict that was then committed by hand:
    # `sequencer/` stays, CHERRY_PICK_HEAD does not. --abort would rewind those
    # commits off the branch; the message also names --quit, which keeps them.
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    theirs = git(home_repo, "rev-parse", "main")
    commit(home_repo, "README.md", "# mine\n", "mine")
    git(home_repo, "switch", "-q", "-c", "side", theirs)
    first = commit(home_repo, "README.md", "# side\n", "side")
    second = commit(home_repo, "side.txt", "side\n", "side two")
    git(home_repo, "switch", "-q", "main")
    git(home_repo, "cherry-pick", first, second, check=False)  # stops on the first
    git(home_repo, "commit", "-qam", "resolved by hand")
    assert (home_repo / ".git/sequencer").is_dir()
    assert not (home_repo / ".git/CHERRY_PICK_HEAD").exists()
    before = snapshot_of(home_repo)
    _refused_primary_busy(
        topic,
        f"git -C {home_repo} cherry-pick --quit",
        f"git -C {home_repo} cherry-pick --continue",
    )
    assert snapshot_of(home_repo) == before


@pytest.mark.parametrize("cut", [False, True], ids=["whole", "cut-short"])
def test_a_new_file_a_killed_pick_wrote_but_never_staged_is_undone_by_the_rerun(
    home_repo, tmp_path, cut
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "src/new.py", "x = 1\n" * 50, "adds a file")
    # git writes the new file, then the index: the kill came in between (and,
    # cut short, while it was still writing the file).
    then = '"$REAL_GIT" -C "$2" reset -q --mixed HEAD~1'
    if cut:
        then += '\ntruncate -s 7 "$2/src/new.py"'
    killed = _teardown_killed_in(topic, tmp_path, PICK, then)
    assert killed.code == KILLED, killed.err
    assert git(home_repo, "status", "--porcelain") == "?? src/"

    again = teardown(topic, "--integrate")
    assert again.code == 0, again.out + again.err
    assert any("src/new.py" in w for w in again.json["warnings"])
    assert git(home_repo, "log", "--format=%s", "main").splitlines().count("adds a file") == 1
    assert (home_repo / "src/new.py").read_text() == "x = 1\n" * 50
    assert status(home_repo) == "" and branches(home_repo) == ["main"]


def test_a_file_cut_down_by_hand_after_the_killed_pick_is_kept_and_refused(home_repo, tmp_path):
    # Its bytes are the start of HEAD's: an edit (lines deleted), not a write git was killed in.
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "a.py", "a = 1\n", "first")
    killed = _teardown_killed_in(
        topic, tmp_path, PICK, '"$REAL_GIT" -C "$2" reset -q --soft HEAD~1'
    )
    assert killed.code == KILLED, killed.err
    readme = home_repo / "README.md"
    kept = readme.read_text()[:3]
    readme.write_text(kept)
    _refused_primary_busy(topic, "README.md")
    assert readme.read_text() == kept


def test_an_untracked_file_that_is_not_the_picks_is_kept_and_refused(home_repo, tmp_path):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "src/new.py", "x = 1\n", "adds a file")
    killed = _teardown_killed_in(
        topic, tmp_path, PICK, '"$REAL_GIT" -C "$2" reset -q --mixed HEAD~1'
    )
    assert killed.code == KILLED, killed.err
    write(home_repo / "src/new.py", "my own x\n")  # the same path, the user's content
    _refused_primary_busy(topic, "src/new.py")
    assert (home_repo / "src/new.py").read_text() == "my own x\n"
    assert topic.branch in branches(home_repo)


def test_changes_made_after_the_killed_pick_are_kept_and_refused_naming_them(home_repo, tmp_path):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "a.py", "a = 1\n", "first")
    killed = _teardown_killed_in(
        topic, tmp_path, PICK, '"$REAL_GIT" -C "$2" reset -q --soft HEAD~1'
    )
    assert killed.code == KILLED, killed.err
    write(home_repo / "README.md", "# edited by hand after the kill\n")
    _refused_primary_busy(topic, "README.md", "stash")
    assert (home_repo / "README.md").read_text() == "# edited by hand after the kill\n"
    assert git(home_repo, "diff", "--cached", "--name-only") == "a.py"  # nothing reset
    assert wt.exists() and branches(home_repo) == sorted(["main", topic.branch])
    # Once the user saves the edit, the rerun finishes the job.
    git(home_repo, "stash", "push", "-q", "--", "README.md")
    again = teardown(topic, "--integrate")
    assert again.code == 0, again.out
    assert git(home_repo, "log", "--format=%s", "main").splitlines().count("first") == 1
    assert git(home_repo, "stash", "list") != ""


def _pick_killed_as_it_began(home_repo: Path, tmp_path: Path) -> tuple[Topic, Path, str]:
    """A two-commit topic whose teardown was killed as git began its pick: (topic, sequencer dir, main before)."""
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "a.py", "a = 1\n", "first")
    commit(topic.worktrees["home"], "b.py", "b = 2\n", "second")
    main_before = git(home_repo, "rev-parse", "main")
    seq = home_repo / ".git/sequencer"
    env = git_killer(
        tmp_path / "bin",
        PICK,
        f"mkdir -p '{seq}' && touch '{seq}/head.lock'\n\"$REAL_GIT\" \"$@\"",
        real=False,
    )
    killed = run("teardown", topic.id, "--integrate", cwd=home_repo, env=env, new_group=True)
    assert killed.code == KILLED, killed.err
    return topic, seq, main_before


def test_a_pick_killed_removing_its_emptied_sequencer_is_ended_and_its_commits_kept(
    home_repo, tmp_path
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "a.py", "a = 1\n", "first")
    commit(wt, "b.py", "b = 2\n", "second")
    # Both commits made, then the kill while git removed sequencer/: only the empty directory is left.
    killed = _teardown_killed_in(topic, tmp_path, PICK, 'mkdir -p "$2/.git/sequencer"')
    assert killed.code == KILLED, killed.err
    assert (home_repo / ".git/sequencer").is_dir()

    again = teardown(topic, "--integrate")
    assert again.code == 0, again.out + again.err
    subjects = git(home_repo, "log", "--format=%s", "main").splitlines()
    assert subjects[:2] == ["second", "first"] and subjects.count("first") == 1
    assert not (home_repo / ".git/sequencer").exists() and status(home_repo) == ""
    assert _integrating_mark(home_repo, topic.id) is None


def test_a_pick_killed_as_it_began_is_ended_by_the_rerun_and_made_once(home_repo, tmp_path):
    # git makes sequencer/ and takes sequencer/head.lock before it picks anything:
    # a kill right there leaves both, no CHERRY_PICK_HEAD, and HEAD where it was.
    topic, seq, main_before = _pick_killed_as_it_began(home_repo, tmp_path)
    assert (seq / "head.lock").exists() and not (seq / "head").exists()
    assert git(home_repo, "rev-parse", "main") == main_before

    again = teardown(topic, "--integrate")
    assert again.code == 0, again.out + again.err
    assert "cherry-picked 2 commit(s)" in steps_of(again.json, "home")["integrate"]["detail"]
    subjects = git(home_repo, "log", "--format=%s", f"{main_before}..main").splitlines()
    assert subjects == ["second", "first"]  # each once, in order
    assert not seq.exists() and status(home_repo) == ""
    assert _integrating_mark(home_repo, topic.id) is None


def test_a_pick_whose_git_still_holds_its_sequencer_lock_is_left_to_it(home_repo, tmp_path):
    # Only team-router was killed: the git it started may still be working the
    # sequence; ending it under that git would race it. Refused while it holds the lock.
    topic, seq, main_before = _pick_killed_as_it_began(home_repo, tmp_path)
    holder = hold_open(seq / "head.lock")
    try:
        res = teardown(topic, "--integrate")
        assert res.code == 1, res.out + res.err
        assert res.json["error"]["code"] == "git-locked", res.out
        assert "head.lock" in res.json["error"]["message"]
        assert (seq / "head.lock").exists() and _integrating_mark(home_repo, topic.id) is not None
        assert git(home_repo, "rev-parse", "main") == main_before
    finally:
        holder.kill()
        holder.wait()
    again = teardown(topic, "--integrate")
    assert again.code == 0, again.out + again.err
    subjects = git(home_repo, "log", "--format=%s", f"{main_before}..main").splitlines()
    assert subjects == ["second", "first"]  # each once, in order


def test_a_kill_leaving_an_index_lock_and_a_sequencer_is_undone_once_the_lock_is_removed(
    home_repo, tmp_path
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "a.py", "a = 1\n", "first")
    tip = commit(wt, "b.py", "b = 2\n", "second")
    main_before = git(home_repo, "rev-parse", "main")
    lock = home_repo / ".git/index.lock"
    # Killed while the pick held the index lock: git had written sequencer/ and
    # applied nothing yet (a git that meets the lock leaves exactly this).
    env = git_killer(tmp_path / "bin", PICK, f'touch \'{lock}\'\n"$REAL_GIT" "$@"', real=False)
    killed = run("teardown", topic.id, "--integrate", cwd=home_repo, env=env, new_group=True)
    assert killed.code == KILLED, killed.err
    assert lock.exists() and (home_repo / ".git/sequencer").is_dir()

    for _ in range(2):  # refused as often as it is run while the lock stays
        locked = teardown(topic, "--integrate")
        assert locked.code == 1, locked.out + locked.err
        assert locked.json["error"]["code"] == "git-locked", locked.json["error"]
        assert f"remove {lock}" in locked.json["error"]["message"]
        assert _integrating_mark(home_repo, topic.id) is not None  # kept: our pick is not undone
        assert git(home_repo, "rev-parse", "main") == main_before
        assert wt.exists() and git(home_repo, "rev-parse", topic.branch) == tip

    lock.unlink()  # the fix the refusal names
    again = teardown(topic, "--integrate")
    assert again.code == 0, again.out + again.err
    subjects = git(home_repo, "log", "--format=%s", f"{main_before}..main").splitlines()
    assert subjects == ["second", "first"]  # each once, in order
    assert status(home_repo) == "" and not (home_repo / ".git/sequencer").exists()
    assert worktree_paths(home_repo) == [str(home_repo)] and branches(home_repo) == ["main"]
    assert _integrating_mark(home_repo, topic.id) is None


@pytest.mark.parametrize("lock_name", ["CHERRY_PICK_HEAD.lock", "packed-refs.lock"])
@pytest.mark.parametrize("picks", [1, 2], ids=["one-commit", "sequence"])
def test_a_kill_deleting_cherry_pick_head_names_the_lock_it_left_then_the_rerun_finishes(
    home_repo, picks, lock_name
):
    # Found by the kill trials. Right after each pick's commit git deletes
    # CHERRY_PICK_HEAD, holding CHERRY_PICK_HEAD.lock and packed-refs.lock: a
    # kill (or a Ctrl-C) there leaves the commit made, CHERRY_PICK_HEAD, and the
    # lock. `cherry-pick --abort` and `--quit` then exit 0 without ending the
    # pick: the pick is ours (the mark says so), and the lock is what to fix.
    topic = new_topic(home_repo)
    made = [f"pick {i}" for i in range(picks)]
    for i, subject in enumerate(made):
        commit(topic.worktrees["home"], f"f{i}.py", f"f = {i}\n", subject)
    main_before = git(home_repo, "rev-parse", "main")
    lock = home_repo / ".git" / lock_name
    # post-commit runs just before git deletes CHERRY_PICK_HEAD: the kill lands there.
    _teardown_killed_after_a_picks_commit(home_repo, topic, then=f"touch '{lock}'")
    assert lock.exists() and (home_repo / ".git/CHERRY_PICK_HEAD").exists()
    assert git(home_repo, "log", "--format=%s", "-1", "main") == "pick 0"

    for _ in range(2):  # refused as often as it is run while the lock stays
        locked = teardown(topic, "--integrate")
        assert locked.code == 1, locked.out + locked.err
        assert locked.json["error"]["code"] == "git-locked", locked.json["error"]
        assert f"remove {lock}" in locked.json["error"]["message"]
        assert _integrating_mark(home_repo, topic.id) is not None  # still ours to end
        assert topic.worktrees["home"].exists() and topic.branch in branches(home_repo)

    lock.unlink()  # the fix the refusal names
    again = teardown(topic, "--integrate")
    assert again.code == 0, again.out + again.err
    subjects = git(home_repo, "log", "--format=%s", f"{main_before}..main").splitlines()
    assert subjects == made[::-1]  # each once, in order
    assert status(home_repo) == ""
    assert not (home_repo / ".git/CHERRY_PICK_HEAD").exists()
    assert not (home_repo / ".git/sequencer").exists()
    assert worktree_paths(home_repo) == [str(home_repo)] and branches(home_repo) == ["main"]
    assert _integrating_mark(home_repo, topic.id) is None


def test_our_pick_that_abort_and_quit_leave_in_progress_is_refused_as_ours_naming_the_fix(
    home_repo, tmp_path
):
    # Killed right after the pick's commit (CHERRY_PICK_HEAD still there), and a
    # git whose --abort and --quit end nothing: the record's mark proves the pick
    # ours, so the refusal says so and names the command that ends it, never
    # "a cherry-pick team-router did not start".
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "pick 0")
    _teardown_killed_after_a_picks_commit(home_repo, topic)
    assert (home_repo / ".git/CHERRY_PICK_HEAD").exists()
    picked = git(home_repo, "rev-parse", "main")
    stuck = git_wrapper(tmp_path / "bin", "cherry-pick --", "exit 0")
    res = run("teardown", topic.id, "--integrate", "--json", cwd=home_repo, env=stuck)
    assert res.code == 1, res.out + res.err
    error = res.json["error"]
    assert error["code"] == "primary-busy", error
    assert "did not start" not in error["message"]
    assert f"git -C {home_repo} cherry-pick --quit" in error["message"], error
    assert _integrating_mark(home_repo, topic.id) is not None  # still ours to end
    assert git(home_repo, "rev-parse", "main") == picked  # its commit is kept
    git(home_repo, "cherry-pick", "--quit")  # the fix the refusal names
    again = teardown(topic, "--integrate")
    assert again.code == 0, again.out + again.err
    assert git(home_repo, "log", "--format=%s", "-1", "main") == "pick 0"
    assert status(home_repo) == "" and _integrating_mark(home_repo, topic.id) is None


def test_integrate_without_a_git_identity_is_refused_no_identity_naming_the_fix(
    workspace, monkeypatch
):
    web = make_repo(workspace, "web")
    topic = new_topic(web)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    for name in ("NAME", "EMAIL"):
        monkeypatch.delenv(f"GIT_COMMITTER_{name}")
        monkeypatch.delenv(f"GIT_AUTHOR_{name}")
    # No identity anywhere, and git may not guess one from the host name.
    git(web, "config", "--global", "user.useConfigOnly", "true")
    before = snapshot_of(web)
    res = teardown(topic, "--integrate")
    assert res.code == 1
    error = res.json["error"]
    assert error["code"] == "no-identity", error
    assert "user.name" in error["message"] and "user.email" in error["message"]
    assert snapshot_of(web) == before
    assert topic.worktrees["home"].exists()


# -- item: a kill during `git worktree remove` ----------------------------------------------


def _half_removed(topic, tmp_path: Path, *flags: str, git_file: bool = False):
    """Teardown killed inside ``git worktree remove`` after it deleted part of the tree.

    git deletes the tree file by file (the .git file among them, in directory
    order) and the registration last; the stand-in deletes README.md (and the
    .git file when asked) and leaves the rest.
    """
    gone = '"$wt/README.md"' + (' "$wt/.git"' if git_file else "")
    env = git_killer(
        tmp_path / "killer-bin", "worktree remove", f"for wt; do :; done; rm -f {gone}", real=False
    )
    return run("teardown", topic.id, "--json", *flags, cwd=topic.home, env=env, new_group=True)


@pytest.mark.parametrize("git_file", [False, True], ids=["git-file-left", "git-file-gone"])
def test_a_removal_killed_half_way_is_finished_by_the_rerun_never_read_as_work(
    home_repo, tmp_path, git_file
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    killed = _half_removed(topic, tmp_path, git_file=git_file)
    assert killed.code == KILLED, killed.err
    assert wt.is_dir() and not (wt / "README.md").exists()
    assert str(wt) in worktree_paths(home_repo)

    again = teardown(topic)
    assert again.code == 0, again.out + again.err
    remove = steps_of(again.json, "home")["remove"]
    assert remove["outcome"] == "done" and "interrupted" in remove["detail"]
    assert "commit" not in again.out
    assert worktree_paths(home_repo) == [str(home_repo)]
    assert not wt.exists() and branches(home_repo) == ["main"]
    assert status(home_repo) == ""
    record = state.read_record(home_repo / ".git", topic.id)
    assert record is not None and record.removing is None


def test_a_forced_removal_killed_half_way_keeps_its_snapshot_and_is_finished(home_repo, tmp_path):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    write(wt / "draft.txt", "uncommitted work\n")
    killed = _half_removed(topic, tmp_path, "--force", git_file=True)
    assert killed.code == KILLED, killed.err
    again = teardown(topic, "--force")
    assert again.code == 0, again.out + again.err
    assert not wt.exists() and worktree_paths(home_repo) == [str(home_repo)]
    snapshot = f"refs/team-router/snapshots/{topic.branch}"
    assert git(home_repo, "show", f"{snapshot}:draft.txt") == "uncommitted work"


def test_a_file_written_into_a_half_removed_worktree_is_kept_and_named(home_repo, tmp_path):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    killed = _half_removed(topic, tmp_path)
    assert killed.code == KILLED, killed.err
    time.sleep(0.05)  # the file below is written after the removal began
    write(wt / "notes.txt", "written after the kill\n")
    before = snapshot_of(home_repo)
    res = teardown(topic)
    assert res.code == 1
    assert res.json["error"]["code"] == "removal-interrupted"
    assert "notes.txt" in res.json["error"]["message"]
    assert "commit" not in res.json["error"]["message"]
    assert (wt / "notes.txt").read_text() == "written after the kill\n"
    assert snapshot_of(home_repo) == before
    # Once the file is moved out, the rerun finishes the removal.
    (wt / "notes.txt").rename(tmp_path / "notes.txt")
    again = teardown(topic)
    assert again.code == 0, again.out
    assert not wt.exists()


def test_a_file_moved_into_a_half_removed_worktree_with_an_old_time_is_kept(home_repo, tmp_path):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    killed = _half_removed(topic, tmp_path)
    assert killed.code == KILLED, killed.err
    # Work made yesterday, moved in after the kill: its modification time is
    # older than the removal, only its change time tells the move.
    draft = write(tmp_path / "draft.txt", "yesterday's work\n")
    day_ago = time.time() - 86400
    os.utime(draft, (day_ago, day_ago))
    draft.rename(wt / "draft.txt")
    res = teardown(topic)
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "removal-interrupted"
    assert "draft.txt" in res.json["error"]["message"]
    assert (wt / "draft.txt").read_text() == "yesterday's work\n"


def test_new_never_hands_back_a_worktree_a_killed_teardown_was_removing(home_repo, tmp_path):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    killed = _half_removed(topic, tmp_path)
    assert killed.code == KILLED, killed.err
    before = snapshot_of(home_repo)
    again = ("new", "Add rate limiting", "--id", topic.id, "--json")

    res = run(*again, cwd=home_repo)  # its deletions would be committed as work
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "removal-interrupted"
    assert f"team-router teardown {topic.id}" in res.json["error"]["message"]
    assert snapshot_of(home_repo) == before and not (wt / "README.md").exists()
    assert teardown(topic).code == 0  # the fix it names
    made = run(*again, cwd=home_repo)
    assert made.code == 0, made.out + made.err
    assert made.json["home"]["status"] == "created"
    assert status(wt) == "" and (wt / "README.md").exists()


def test_a_removal_mark_left_by_a_kill_does_not_outlive_the_worktree_made_again_there(
    home_repo, tmp_path
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    killed = _half_removed(topic, tmp_path)
    assert killed.code == KILLED, killed.err
    # The removal is finished by hand; later the same topic is made again, at the same path.
    git(home_repo, "worktree", "remove", "--force", str(wt))
    assert run("new", "Add rate limiting", "--id", topic.id, "--json", cwd=home_repo).code == 0
    assert status(wt) == "" and (wt / "README.md").exists()
    # Work whose files carry an old time (copied with cp -p, unpacked from an archive).
    write(wt / "notes.txt", "my notes\n")
    old = time.time() - 24 * 3600
    for rel in tree(wt):
        os.utime(wt / rel, (old, old), follow_symlinks=False)

    res = teardown(topic)
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "dirty-worktree", res.json["error"]
    assert (wt / "notes.txt").read_text() == "my notes\n"
    assert worktree_paths(home_repo) == [str(home_repo), str(wt)]
    (wt / "notes.txt").unlink()
    again = teardown(topic)
    assert again.code == 0, again.out + again.err
    remove = steps_of(again.json, "home")["remove"]
    assert remove["outcome"] == "done" and "interrupted" not in remove["detail"], remove
    assert not wt.exists()


# -- item: Ctrl-C (a real SIGINT to the process group, as a terminal sends it) ---------------


def _wait_for(*paths: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        assert time.monotonic() < deadline, f"never appeared: {[str(p) for p in paths]}"
        time.sleep(0.05)


def _ctrl_c(proc) -> None:
    os.killpg(proc.pid, signal.SIGINT)


def test_ctrl_c_stops_every_repo_at_a_step_boundary_prints_json_and_exits_130(workspace, tmp_path):
    topic = ship(multi_topic(workspace, ("api",)))
    fast = tmp_path / "fast"
    for name, repo in topic.repos.items():
        slow = f"touch {tmp_path / name}-1; sleep 30"
        text = f"if [ ! -e {fast} ]; then {slow}; fi\ntouch {tmp_path / name}-2\n"
        commit(repo, ".teamteardown", text, "declare teardown")
        git(repo, "push", "-q", "origin", "main")
    proc = spawn("teardown", topic.id, "--json", cwd=topic.home, new_group=True)
    _wait_for(tmp_path / "home-1", tmp_path / "api-1")  # both repos are in their slow line
    started = time.monotonic()
    _ctrl_c(proc)
    done = finish(proc, timeout=60)
    assert time.monotonic() - started < 15, done.out + done.err  # not the 30 s the lines would take
    assert done.code == 130, done.err
    data = done.json  # exactly one JSON object on stdout
    assert data["ok"] is False and data["error"]["code"] == "interrupted"
    for name in ("home", "api"):
        local = steps_of(data, name)["local-state"]
        assert local["outcome"] == "skipped" and "interrupted" in local["detail"]
        assert not (tmp_path / f"{name}-2").exists()  # no line started after Ctrl-C
    # The steps before it finished; the rerun resumes at local-state and completes.
    for repo in topic.repos.values():
        assert worktree_paths(repo) == [str(repo)] and branches(repo) == ["main"]
    fast.touch()
    again = teardown(topic)
    assert again.code == 0, again.out + again.err
    assert (tmp_path / "home-2").exists() and (tmp_path / "api-2").exists()


def test_ctrl_c_during_the_plan_removes_nothing_and_still_prints_json(home_repo, tmp_path):
    topic = new_topic(home_repo)
    started = tmp_path / "fetch-started"
    env = slow_git(tmp_path / "slow-bin", "fetch", started)
    before = snapshot_of(home_repo)
    proc = spawn("teardown", topic.id, "--json", cwd=home_repo, env=env, new_group=True)
    _wait_for(started)
    _ctrl_c(proc)
    done = finish(proc, timeout=60)
    assert done.code == 130, done.err
    assert done.json["ok"] is False and done.json["error"]["code"] == "interrupted"
    assert snapshot_of(home_repo) == before
    assert topic.worktrees["home"].is_dir()
    again = teardown(topic)
    assert again.code == 0, again.out + again.err
    assert not topic.worktrees["home"].exists()


def test_ctrl_c_during_local_state_kills_the_running_line_and_starts_no_other(home_repo, tmp_path):
    topic = new_topic(home_repo)
    first = tmp_path / "first"
    text = f"touch {first}; sleep 30; touch {first}-finished\ntouch {tmp_path / 'second'}\n"
    commit(home_repo, ".teamteardown", text, "declare teardown")
    git(home_repo, "push", "-q", "origin", "main")
    proc = spawn("local-state", topic.id, "--json", cwd=home_repo, new_group=True)
    _wait_for(first)
    _ctrl_c(proc)
    done = finish(proc, timeout=60)
    assert done.code == 130, done.err
    assert done.json["ok"] is False and done.json["error"]["code"] == "interrupted"
    assert [c["outcome"] for c in done.json["commands"]] == ["interrupted"]
    assert not (tmp_path / "second").exists()
    time.sleep(0.5)
    assert not (tmp_path / "first-finished").exists()  # the line's process group was killed


# A terminal's Ctrl-C reaches git as well: the git process dies mid-step, and the
# mark the step wrote must survive it so the rerun can finish the job.
HALF_PICKED = '"$REAL_GIT" "$@"; "$REAL_GIT" -C "$2" reset -q --soft HEAD~1'
HALF_REMOVED = 'for wt; do :; done; rm -f "$wt/README.md" "$wt/.git"'


@pytest.mark.parametrize(
    ("when", "then", "flags"),
    [(PICK, HALF_PICKED, ("--integrate",)), ("worktree remove", HALF_REMOVED, ())],
    ids=["cherry-pick", "worktree-remove"],
)
def test_ctrl_c_killing_git_mid_step_keeps_the_mark_and_the_rerun_finishes(
    home_repo, tmp_path, when, then, flags
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    if flags:
        commit(wt, "a.py", "a = 1\n", "first")
    started = tmp_path / "git-started"
    env = git_wrapper(tmp_path / "bin", when, f"{then}\ntouch '{started}'\nsleep 30")
    proc = spawn("teardown", topic.id, "--json", *flags, cwd=home_repo, env=env, new_group=True)
    _wait_for(started)
    _ctrl_c(proc)  # git (the sleeping wrapper) dies of it too
    done = finish(proc, timeout=60)
    assert done.code == 130, done.out + done.err
    assert done.json["error"]["code"] == "interrupted"
    assert wt.is_dir()  # half done, nothing more
    again = teardown(topic, *flags)
    assert again.code == 0, again.out + again.err
    assert "commit them" not in again.out
    assert not wt.exists() and worktree_paths(home_repo) == [str(home_repo)]
    assert status(home_repo) == ""
    if flags:
        assert git(home_repo, "log", "--format=%s", "main").splitlines().count("first") == 1


# -- item: a kill inside `git worktree add` ---------------------------------------------

NEW = ("new", "Add thing", "--date", "2026-05-01", "--json")
NEW_ID = "2026-05-01-add-thing"

# What a `git worktree add` killed before its checkout finished leaves: git
# registered the worktree (locked with team-router's reason, which --lock
# --reason writes where git would write "initializing"), created the branch
# and pointed HEAD at it, but wrote no index and no (or only some) files. The
# stand-in runs the real add with --no-checkout.
_HALF_ADD = r"""
for a; do
  shift
  [ "$prev" = "--" ] && [ -z "$wt" ] && wt="$a"
  prev="$a"
  if [ "$a" = add ]; then set -- "$@" add --no-checkout; else set -- "$@" "$a"; fi
done
"$REAL_GIT" "$@" || exit 1
admin=$(sed -n 's/^gitdir: //p' "$wt/.git")
"""

_HALF_STATES = {
    "unpopulated": "",
    # git writes the files one by one and the index last
    "some-files-written": '"$REAL_GIT" -C "$wt" cat-file blob HEAD:src/app.py >/dev/null\n'
    'mkdir -p "$wt/src" && "$REAL_GIT" -C "$wt" cat-file blob HEAD:src/app.py > "$wt/src/app.py"',
    # killed before git pointed HEAD at the branch (it writes a null id first),
    # with the ref lock of that update left behind
    "head-unset": 'echo 0000000000000000000000000000000000000000 > "$admin/HEAD"\n'
    'touch "$admin/HEAD.lock"',
    # killed while writing the .git file: git cannot even remove that worktree
    "git-file-empty": 'rm -f "$admin/HEAD" "$admin/commondir"\n: > "$wt/.git"',
}


def _kill_inside_add(repo: Path, tmp_path: Path, then: str = "", *args: str):
    env = git_killer(tmp_path / "killer-bin", "worktree add", _HALF_ADD + then, real=False)
    return run(*(args or NEW), cwd=repo, env=env, new_group=True)


def _with_two_files(repo: Path) -> Path:
    commit(repo, "src/app.py", "app = 1\n", "app")
    git(repo, "push", "-q", "origin", "main")
    return repo


@pytest.mark.parametrize("left", list(_HALF_STATES))
def test_a_worktree_add_killed_before_its_checkout_is_made_again_never_reused_half_made(
    home_repo, tmp_path, left
):
    _with_two_files(home_repo)
    wt = home_repo / ".claude/worktrees" / NEW_ID
    killed = _kill_inside_add(home_repo, tmp_path, _HALF_STATES[left])
    assert killed.code == KILLED, killed.err
    assert lock_reason(home_repo, wt) == own_lock(NEW_ID)
    assert not (wt / "README.md").exists()

    again = run(*NEW, cwd=home_repo)
    assert again.code == 0, again.out + again.err
    assert again.json["home"]["status"] == "created"  # never "existing" for a half-made one
    assert any("half-made" in w for w in again.json["warnings"])
    assert status(wt) == ""  # every file checked out, none "deleted"
    assert (wt / "README.md").read_text() == "# web\n"
    assert (wt / "src/app.py").read_text() == "app = 1\n"
    assert lock_reason(home_repo, wt) == own_lock(NEW_ID)
    assert worktree_paths(home_repo) == [str(home_repo), str(wt)]
    assert branches(home_repo) == [NEW_ID, "main"]
    assert git(home_repo, "rev-parse", NEW_ID) == git(home_repo, "rev-parse", "origin/main")
    record = state.read_record(home_repo / ".git", NEW_ID)
    assert record is not None and "record" in record.steps and record.branch_created
    assert run(*NEW, cwd=home_repo).json["home"]["status"] == "existing"


def test_a_worktree_add_killed_for_a_secondary_repo_is_made_again_by_the_worktrees_rerun(
    workspace, tmp_path
):
    topic = new_topic(make_repo(workspace, "web"))
    api = make_repo(workspace, "api")
    write_repos_md(topic, {"api": api})
    args = ("worktrees", str(topic.plan_dir), "--json")
    killed = _kill_inside_add(topic.home, tmp_path, "", *args)
    assert killed.code == KILLED, killed.err
    wt = api / ".claude/worktrees" / topic.id
    assert lock_reason(api, wt) == own_lock(topic.id)

    again = run(*args, cwd=topic.home)
    assert again.code == 0, again.out + again.err
    (report,) = [r for r in again.json["repos"] if r["name"] == "api"]
    assert report["status"] == "created" and report["worktree"] == str(wt)
    assert status(wt) == "" and (wt / "README.md").read_text() == "# api\n"
    assert lock_reason(api, wt) == own_lock(topic.id)


# Killed mid-checkout (what a real kill leaves): README.md written whole,
# src/app.py cut short while git wrote it, the checkout's index.lock left in
# the registration.
_MID_CHECKOUT = (
    '"$REAL_GIT" -C "$wt" cat-file blob HEAD:README.md > "$wt/README.md"\n'
    'mkdir -p "$wt/src"\n'
    '"$REAL_GIT" -C "$wt" cat-file blob HEAD:src/app.py | head -c 4 > "$wt/src/app.py"\n'
    'touch "$admin/index.lock"'
)


def test_a_worktree_add_killed_mid_checkout_of_a_secondary_is_rolled_back_and_made_again(
    workspace, tmp_path
):
    topic = new_topic(make_repo(workspace, "web"))
    api = _with_two_files(make_repo(workspace, "api"))
    write_repos_md(topic, {"api": api})
    args = ("worktrees", str(topic.plan_dir), "--json")
    killed = _kill_inside_add(topic.home, tmp_path, _MID_CHECKOUT, *args)
    assert killed.code == KILLED, killed.err
    wt = api / ".claude/worktrees" / topic.id
    lock = api / ".git/worktrees" / topic.id / "index.lock"
    assert lock.exists() and (wt / "src/app.py").read_text() == "app "

    again = run(*args, cwd=topic.home)
    assert again.code == 0, again.out + again.err
    (report,) = [r for r in again.json["repos"] if r["name"] == "api"]
    assert report["status"] == "created" and report["worktree"] == str(wt)
    assert any("half-made" in w for w in again.json["warnings"])
    assert status(wt) == "" and (wt / "src/app.py").read_text() == "app = 1\n"
    assert (wt / "README.md").read_text() == "# api\n"
    assert lock_reason(api, wt) == own_lock(topic.id)
    assert not list((api / ".git/worktrees").glob("*/*.lock"))


# Killed while undoing its own add (a SIGKILL right after the SIGTERM, as a
# service manager sends them): git had removed the registration and some of the
# files it wrote; the rest stay at the topic's path, which no registration names.
_UNDO_CUT_SHORT = (
    'for a; do [ "$prev" = "--" ] && [ -z "$wt" ] && wt="$a"; prev="$a"; done\n'
    'rm -rf "$(sed -n \'s/^gitdir: //p\' "$wt/.git")"\n'
    'rm -f "$wt/README.md"'
)


def _kill_undoing_add(repo: Path, tmp_path: Path, then: str = ""):
    env = git_killer(tmp_path / "killer-bin", "worktree add", f"{_UNDO_CUT_SHORT}\n{then}")
    return run(*NEW, cwd=repo, env=env, new_group=True)


def test_an_add_killed_while_undoing_itself_is_cleared_from_the_record_and_made_again(
    home_repo, tmp_path
):
    _with_two_files(home_repo)
    wt = home_repo / ".claude/worktrees" / NEW_ID
    killed = _kill_undoing_add(home_repo, tmp_path)
    assert killed.code == KILLED, killed.err
    assert (wt / "src/app.py").is_file() and worktree_paths(home_repo) == [str(home_repo)]

    again = run(*NEW, cwd=home_repo)
    assert again.code == 0, again.out + again.err
    assert again.json["home"]["status"] == "created", again.json  # never a path-taken fallback
    assert any("no registration" in w for w in again.json["warnings"]), again.json
    assert status(wt) == "" and (wt / "README.md").read_text() == "# web\n"
    assert (wt / "src/app.py").read_text() == "app = 1\n"
    assert lock_reason(home_repo, wt) == own_lock(NEW_ID)
    assert status(home_repo) == ""


def test_a_file_of_someone_else_in_an_add_killed_while_undoing_itself_is_kept(home_repo, tmp_path):
    wt = home_repo / ".claude/worktrees" / NEW_ID
    killed = _kill_undoing_add(home_repo, tmp_path, 'echo mine > "$wt/notes.txt"')
    assert killed.code == KILLED, killed.err

    again = run(*NEW, cwd=home_repo)
    assert again.code == 0, again.out + again.err
    assert again.json["home"]["status"] == "fallback", again.json
    assert any("path-taken" in w for w in again.json["warnings"]), again.json
    assert (wt / "notes.txt").read_text() == "mine\n"  # nothing of it was removed


def test_a_half_made_worktree_a_live_process_still_uses_is_refused_and_kept(home_repo, tmp_path):
    _with_two_files(home_repo)
    wt = home_repo / ".claude/worktrees" / NEW_ID
    written = _HALF_STATES["some-files-written"] + '\ntouch "$admin/index.lock"'
    killed = _kill_inside_add(home_repo, tmp_path, written)
    assert killed.code == KILLED, killed.err
    lock = home_repo / ".git/worktrees" / NEW_ID / "index.lock"
    # A git the kill missed, still checking out: it holds the index lock open.
    checkout = hold_open(lock)
    try:
        before = {p: (wt / p).read_bytes() for p in tree(wt) if (wt / p).is_file()}
        refused = run(*NEW, cwd=home_repo)
        assert refused.code == 1, refused.out + refused.err
        assert refused.json["error"]["code"] == "half-made-worktree"
        assert str(checkout.pid) in refused.json["error"]["message"]
        assert {p: (wt / p).read_bytes() for p in tree(wt) if (wt / p).is_file()} == before
        assert lock.exists() and worktree_paths(home_repo) == [str(home_repo), str(wt)]
    finally:
        checkout.kill()
        checkout.wait()
    again = run(*NEW, cwd=home_repo)  # the git is gone: the rerun makes the worktree again
    assert again.code == 0, again.out + again.err
    assert again.json["home"]["status"] == "created"
    assert status(wt) == "" and (wt / "src/app.py").read_text() == "app = 1\n"


_WORK = {
    "untracked-file": 'echo "my notes" > "$wt/notes.txt"',
    "changed-file": 'mkdir -p "$wt/src" && echo "app = 2" > "$wt/src/app.py"',
    # the commit a half-made worktree makes: it deletes every file of the branch
    "commit": '"$REAL_GIT" -C "$wt" -c user.name=u -c user.email=u@e commit -qm gone',
}


@pytest.mark.parametrize("work", list(_WORK))
def test_a_half_made_worktree_holding_work_is_refused_and_kept_as_it_is(home_repo, tmp_path, work):
    _with_two_files(home_repo)
    wt = home_repo / ".claude/worktrees" / NEW_ID
    killed = _kill_inside_add(home_repo, tmp_path, _WORK[work])
    assert killed.code == KILLED, killed.err
    before = {p: (wt / p).read_bytes() for p in tree(wt) if (wt / p).is_file()}
    tip = git(home_repo, "rev-parse", NEW_ID)

    again = run(*NEW, cwd=home_repo)
    assert again.code == 1, again.out + again.err
    error = again.json["error"]
    assert error["code"] == "half-made-worktree"
    assert f"worktree remove --force --force {wt}" in error["message"]
    assert {p: (wt / p).read_bytes() for p in tree(wt) if (wt / p).is_file()} == before
    assert git(home_repo, "rev-parse", NEW_ID) == tip  # the branch (and any commit) kept
    assert worktree_paths(home_repo) == [str(home_repo), str(wt)]
    assert lock_reason(home_repo, wt) == own_lock(NEW_ID)


def test_a_half_made_worktree_holding_work_is_refused_in_full_words(home_repo, tmp_path):
    # The refusal is said from its reasons (how git left the worktree, why it is kept): the
    # whole output, text and JSON, and nothing of the worktree or the branch is touched.
    wt = home_repo / ".claude/worktrees" / NEW_ID
    killed = _kill_inside_add(home_repo, tmp_path, 'echo "my notes" > "$wt/notes.txt"')
    assert killed.code == KILLED, killed.err
    tip = git(home_repo, "rev-parse", NEW_ID)
    message = (
        f"home: {wt} is a worktree `git worktree add` left half-made (the record shows its "
        "`git worktree add` never finished) and it holds files that are not its branch's "
        "(notes.txt); copy out anything you need from it, then run "
        f"`git -C {home_repo} worktree remove --force --force {wt}` and run this again"
    )

    refused = run(*NEW, cwd=home_repo)
    assert (refused.code, refused.err) == (1, ""), refused.out + refused.err
    assert refused.json == {
        "ok": False,
        "command": "new",
        "warnings": [],
        "error": {"code": "half-made-worktree", "message": message},
    }, refused.json
    text = run(*NEW[:-1], cwd=home_repo)
    assert (text.code, text.out) == (1, ""), text.out + text.err
    assert text.err == f"team-router: {message} [half-made-worktree]\n"
    assert (wt / "notes.txt").read_text() == "my notes\n"
    assert git(home_repo, "rev-parse", NEW_ID) == tip
    assert worktree_paths(home_repo) == [str(home_repo), str(wt)]
    assert lock_reason(home_repo, wt) == own_lock(NEW_ID)


def test_a_half_made_worktree_the_record_does_not_show_under_way_is_refused(home_repo, tmp_path):
    wt = home_repo / ".claude/worktrees" / NEW_ID
    killed = _kill_inside_add(home_repo, tmp_path)
    assert killed.code == KILLED, killed.err
    state.delete_record(home_repo / ".git", NEW_ID)  # made by hand, as far as anyone knows

    again = run("new", "Add thing", "--id", NEW_ID, "--json", cwd=home_repo)
    assert again.code == 1, again.out + again.err
    assert again.json["error"]["code"] == "half-made-worktree"
    assert "record" in again.json["error"]["message"]
    assert wt.is_dir() and worktree_paths(home_repo) == [str(home_repo), str(wt)]
    assert branches(home_repo) == [NEW_ID, "main"]


def test_a_branch_lock_left_by_a_killed_add_is_refused_then_the_rerun_creates(home_repo, tmp_path):
    lock = home_repo / ".git/refs/heads" / f"{NEW_ID}.lock"
    # git was killed while creating the branch: its ref lock stays behind.
    killed = _kill_inside_add_without_git(home_repo, tmp_path, f"touch '{lock}'")
    assert killed.code == KILLED, killed.err

    refused = run(*NEW, cwd=home_repo)
    assert refused.code == 1, refused.out + refused.err
    assert refused.json["error"]["code"] == "git-locked"
    assert str(lock) in refused.json["error"]["message"]
    assert "remove" in refused.json["error"]["message"]
    assert worktree_paths(home_repo) == [str(home_repo)] and branches(home_repo) == ["main"]
    # The killed run's empty claim went with the refusal: no stray directory
    # for the rerun to take as another run's (and give the topic a new id).
    assert not (home_repo / ".claude/worktrees" / NEW_ID).exists()

    lock.unlink()
    again = run(*NEW, cwd=home_repo)
    assert again.code == 0, again.out + again.err
    assert again.json["id"] == NEW_ID and again.json["home"]["status"] == "created"
    assert status(home_repo / ".claude/worktrees" / NEW_ID) == ""


def _kill_inside_add_without_git(repo: Path, tmp_path: Path, then: str):
    env = git_killer(tmp_path / "killer-bin", "worktree add", then, real=False)
    return run(*NEW, cwd=repo, env=env, new_group=True)


def test_a_registration_left_unreadable_by_a_killed_add_is_dropped_and_the_rerun_creates(
    home_repo, tmp_path
):
    # Killed between opening commondir and writing it: the file is empty, and
    # every `git worktree` command in the repo fails until it is dealt with.
    wt = home_repo / ".claude/worktrees" / NEW_ID
    killed = _kill_inside_add(home_repo, tmp_path, ': > "$admin/commondir"')
    assert killed.code == KILLED, killed.err
    broken = git(home_repo, "worktree", "list", check=False)
    assert broken == ""  # git itself cannot list the worktrees now
    stash = commit(home_repo, "notes.txt", "kept\n", "unrelated work on main")

    again = run(*NEW, cwd=home_repo)
    assert again.code == 0, again.out + again.err
    assert again.json["home"]["status"] == "created"
    assert any("unreadable" in w for w in again.json["warnings"])
    assert status(wt) == "" and (wt / "README.md").read_text() == "# web\n"
    assert worktree_paths(home_repo) == [str(home_repo), str(wt)]
    assert lock_reason(home_repo, wt) == own_lock(NEW_ID)
    assert git(home_repo, "rev-parse", "main") == stash  # nothing of the primary was touched
    assert status(home_repo) == ""


def test_an_unreadable_registration_the_record_does_not_show_under_way_is_left_alone(
    home_repo, tmp_path
):
    killed = _kill_inside_add(home_repo, tmp_path, ': > "$admin/commondir"')
    assert killed.code == KILLED, killed.err
    admin = home_repo / ".git/worktrees" / NEW_ID
    record = state.read_record(home_repo / ".git", NEW_ID)
    assert record is not None
    state.write_record(home_repo / ".git", replace(record, steps=("inspect",)))
    again = run(*NEW, cwd=home_repo)
    assert again.code != 0 and again.json["error"]["message"]
    assert (admin / "locked").read_text().strip() == own_lock(NEW_ID)  # not ours to drop: kept


# What a `git worktree add` SIGHUPed (or SIGTERMed) with team-router leaves when
# team-router's own exit SIGKILLs it part-way through its clean-up: the checkout
# was done, git began deleting the registration's files in directory order
# (here gitdir, locked, logs) and was killed before the rest and the checkout.
# `git worktree list` no longer shows the worktree, whose `.git` still points there.
_FULL_ADD = r"""
for a; do
  [ "$prev" = "--" ] && [ -z "$wt" ] && wt="$a"
  prev="$a"
done
"$REAL_GIT" "$@" || exit 1
admin=$(sed -n 's/^gitdir: //p' "$wt/.git")
"""
_TORN_STATES = {
    "clean-up-cut-short": 'rm -rf "$admin/gitdir" "$admin/locked" "$admin/logs"',
    # the same, after the checkout's plan dir was made (empty)
    "with-an-empty-plan-dir": 'rm -rf "$admin/gitdir" "$admin/locked" "$admin/logs"\n'
    f'mkdir -p "$wt/docs/plans/{NEW_ID}"',
    "head-gone-too": 'rm -rf "$admin/gitdir" "$admin/locked" "$admin/logs" "$admin/HEAD"',
    "head-a-placeholder": 'rm -f "$admin/gitdir"\n'
    'echo 0000000000000000000000000000000000000000 > "$admin/HEAD"',
}


def _tear_inside_add(repo: Path, tmp_path: Path, then: str, *args: str):
    env = git_killer(tmp_path / "killer-bin", "worktree add", _FULL_ADD + then, real=False)
    return run(*(args or NEW), cwd=repo, env=env, new_group=True)


@pytest.mark.parametrize("left", list(_TORN_STATES))
def test_a_worktree_whose_registration_a_killed_add_tore_is_made_again_never_a_fallback(
    home_repo, tmp_path, left
):
    _with_two_files(home_repo)
    wt = home_repo / ".claude/worktrees" / NEW_ID
    killed = _tear_inside_add(home_repo, tmp_path, _TORN_STATES[left])
    assert killed.code == KILLED, killed.err
    assert (wt / "README.md").read_text() == "# web\n"  # the checkout is whole
    assert worktree_paths(home_repo) == [str(home_repo)]  # but git no longer sees it

    again = run(*NEW, cwd=home_repo)
    assert again.code == 0, again.out + again.err
    home = again.json["home"]
    assert home["status"] == "created" and home["worktree"] == str(wt)  # never the main tree
    assert any("torn" in w and str(wt) in w for w in again.json["warnings"])
    assert status(wt) == "" and (wt / "src/app.py").read_text() == "app = 1\n"
    assert lock_reason(home_repo, wt) == own_lock(NEW_ID)
    assert worktree_paths(home_repo) == [str(home_repo), str(wt)]
    assert sorted(p.name for p in (home_repo / ".git/worktrees").iterdir()) == [NEW_ID]
    assert git(home_repo, "rev-parse", NEW_ID) == git(home_repo, "rev-parse", "origin/main")
    record = state.read_record(home_repo / ".git", NEW_ID)
    assert record is not None and "record" in record.steps
    assert record.worktree == str(wt)
    assert status(home_repo) == ""
    assert run(*NEW, cwd=home_repo).json["home"]["status"] == "existing"


def test_a_torn_registration_of_a_secondary_is_made_again_by_the_worktrees_rerun(
    workspace, tmp_path
):
    topic = new_topic(make_repo(workspace, "web"))
    api = make_repo(workspace, "api")
    write_repos_md(topic, {"api": api})
    args = ("worktrees", str(topic.plan_dir), "--json")
    killed = _tear_inside_add(topic.home, tmp_path, _TORN_STATES["clean-up-cut-short"], *args)
    assert killed.code == KILLED, killed.err
    wt = api / ".claude/worktrees" / topic.id

    again = run(*args, cwd=topic.home)
    assert again.code == 0, again.out + again.err
    (report,) = [r for r in again.json["repos"] if r["name"] == "api"]
    assert report["status"] == "created" and report["worktree"] == str(wt)
    assert status(wt) == "" and (wt / "README.md").read_text() == "# api\n"
    assert lock_reason(api, wt) == own_lock(topic.id)


_TORN_WORK = {
    "untracked-file": 'echo "my notes" > "$wt/notes.txt"',
    "plan-dir-artifact": f'mkdir -p "$wt/docs/plans/{NEW_ID}"\n'
    f'echo "# Repos" > "$wt/docs/plans/{NEW_ID}/repos.md"',
    "changed-file": 'echo "# mine" > "$wt/README.md"',
}


@pytest.mark.parametrize("work", list(_TORN_WORK))
def test_a_torn_worktree_holding_work_is_refused_and_kept(home_repo, tmp_path, work):
    wt = home_repo / ".claude/worktrees" / NEW_ID
    torn = _TORN_STATES["clean-up-cut-short"] + "\n" + _TORN_WORK[work]
    killed = _tear_inside_add(home_repo, tmp_path, torn)
    assert killed.code == KILLED, killed.err
    admin = home_repo / ".git/worktrees" / NEW_ID
    before = {p: (wt / p).read_bytes() for p in tree(wt) if (wt / p).is_file()}
    registration = sorted(p.name for p in admin.iterdir())

    again = run(*NEW, cwd=home_repo)
    assert again.code == 1, again.out + again.err
    error = again.json["error"]
    assert error["code"] == "half-made-worktree"
    assert f"rm -rf {wt} {admin}" in error["message"]
    assert {p: (wt / p).read_bytes() for p in tree(wt) if (wt / p).is_file()} == before
    assert sorted(p.name for p in admin.iterdir()) == registration
    assert branches(home_repo) == [NEW_ID, "main"]
    assert not (home_repo / "docs/plans" / NEW_ID).exists()  # no fallback to the main tree


def test_a_torn_worktree_holding_work_is_refused_in_full_words(home_repo, tmp_path):
    # The torn registration's refusal is said from its reasons: the whole message.
    wt = home_repo / ".claude/worktrees" / NEW_ID
    torn = _TORN_STATES["clean-up-cut-short"] + '\necho "my notes" > "$wt/notes.txt"'
    killed = _tear_inside_add(home_repo, tmp_path, torn)
    assert killed.code == KILLED, killed.err
    admin = home_repo / ".git/worktrees" / NEW_ID

    again = run(*NEW, cwd=home_repo)
    assert (again.code, again.err) == (1, ""), again.out + again.err
    assert again.json["error"] == {
        "code": "half-made-worktree",
        "message": (
            f"home: {wt} is a worktree whose git registration {admin} a killed `git worktree "
            "add` left torn (its gitdir file is missing or empty), so git no longer sees it, "
            "and it holds files that are not its branch's (notes.txt); nothing was touched. "
            f"Copy out anything you need from {wt}, then run `rm -rf {wt} {admin}` and run "
            "this again"
        ),
    }, again.json
    assert (wt / "notes.txt").read_text() == "my notes\n"


def test_a_pick_that_fails_after_writing_a_file_keeps_its_mark_and_the_rerun_undoes_it(
    home_repo, tmp_path
):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "src/new.py", "x = 1\n", "adds a file")
    main_before = git(home_repo, "rev-parse", "main")
    # git writes the file, then fails to write the index (a lock, a full disk):
    # nothing is left for `cherry-pick --abort`, but the file is there.
    once = tmp_path / "failed-once"
    fail = (
        f'if [ -e "{once}" ]; then exec "$REAL_GIT" "$@"; fi\ntouch "{once}"\n'
        '"$REAL_GIT" "$@" >/dev/null 2>&1\n'
        '"$REAL_GIT" -C "$2" reset -q --mixed HEAD~1\n'
        'rm -f "$2/.git/CHERRY_PICK_HEAD"\n'
        'echo "fatal: unable to write new index file" >&2\nexit 128'
    )
    env = git_wrapper(tmp_path / "bin", f" {PICK} ", fail)
    first = run("teardown", topic.id, "--integrate", "--json", cwd=home_repo, env=env)
    assert first.code == 1, first.out + first.err
    assert "src/new.py" in first.json["error"]["message"], first.json["error"]
    assert git(home_repo, "rev-parse", "main") == main_before
    assert _integrating_mark(home_repo, topic.id) is not None  # the rerun may undo it
    assert (home_repo / "src/new.py").exists()

    again = run("teardown", topic.id, "--integrate", "--json", cwd=home_repo, env=env)
    assert again.code == 0, again.out + again.err
    assert git(home_repo, "log", "--format=%s", "main").splitlines().count("adds a file") == 1
    assert status(home_repo) == "" and branches(home_repo) == ["main"]


# -- item: a kill during update-default's fast-forward -----------------------------------


@pytest.mark.parametrize("real", [True, False], ids=["after-the-merge", "before-the-merge"])
def test_a_kill_at_the_default_branchs_fast_forward_is_finished_by_the_rerun(
    home_repo, tmp_path, real
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    sha = commit(wt, "f.py", "f = 1\n", "work")
    git(wt, "push", "-q", "origin", topic.branch)
    merged = merge_on_origin(home_repo, topic.branch)
    env = git_killer(tmp_path / "bin", " merge --ff-only ", real=real)
    killed = run("teardown", topic.id, "--json", cwd=home_repo, env=env, new_group=True)
    assert killed.code == KILLED, killed.out + killed.err
    res = teardown(topic)
    assert res.code == 0, res.out + res.err
    # main reached origin's merge (which holds the work), clean; the worktree and branch are gone.
    assert git(home_repo, "rev-parse", "main") == merged
    assert "main" in git(home_repo, "branch", "--contains", sha)
    assert status(home_repo) == ""
    assert not wt.exists() and topic.branch not in branches(home_repo)


def test_a_rerun_while_git_still_cleans_the_half_made_worktree_says_to_run_it_again(
    home_repo, tmp_path
):
    _with_two_files(home_repo)
    wt = home_repo / ".claude/worktrees" / NEW_ID
    killed = _kill_inside_add(home_repo, tmp_path, _HALF_STATES["unpopulated"])
    assert killed.code == KILLED, killed.err
    # Another git (a `git worktree remove` of it) deletes the half-made directory
    # and then its registration, while the rerun is judging it.
    admin = home_repo / ".git" / "worktrees" / NEW_ID
    env = git_then(tmp_path / "cleaner-bin", "ls-tree", f"rm -rf '{wt}' '{admin}'")
    raced = run(*NEW, cwd=home_repo, env=env)
    assert raced.code == 1, raced.out + raced.err
    assert raced.json["error"] == {
        "code": "io-error",
        "message": f"home: accessing {wt}: No such file or directory; it vanished while this "
        "command was working on it: another process (git) is still working there; run the "
        "command again once it finishes",
    }
    again = run(*NEW, cwd=home_repo)  # git is done: the rerun finishes the job
    assert again.code == 0, again.out + again.err
    assert again.json["home"]["status"] == "created"
    assert status(wt) == "" and (wt / "src/app.py").read_text() == "app = 1\n"
    assert worktree_paths(home_repo) == [str(home_repo), str(wt)]
