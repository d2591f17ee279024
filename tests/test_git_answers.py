"""git's answers remembered while a command reads its facts: never stale after our own writes.

Every test runs real git in a temporary directory. A change made outside the
git package (the tests' own ``git``) stands for another process: inside a
stretch of remembering it is not seen until something forgets, which is what
proves an answer is remembered at all; a change made through the package is
seen at once, for each kind of change.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.repos import commit, git, make_repo

from router.git import (
    Git,
    add_remote,
    answers,
    cherry_pick,
    config_view,
    forget,
    remembered,
    reset_hard,
    update_ref,
)
from router.topic import state


def test_nothing_is_remembered_outside_a_stretch_of_remembering(tmp_path):
    repo = make_repo(tmp_path / "ws", "r")
    first = Git(repo).rev_parse("refs/heads/main")
    moved = commit(repo, "b.txt", "b\n", "second")
    assert Git(repo).rev_parse("refs/heads/main") == moved != first


def test_inside_one_an_answer_is_asked_once_until_something_forgets(tmp_path):
    repo = make_repo(tmp_path / "ws", "r")
    with remembered():
        first = Git(repo).rev_parse("refs/heads/main")
        # Another process commits: the same question within the stretch is the same fact.
        moved = commit(repo, "b.txt", "b\n", "second")
        assert Git(repo).rev_parse("refs/heads/main") == first
        forget()
        assert Git(repo).rev_parse("refs/heads/main") == moved
    # Leaving the stretch forgets too.
    again = commit(repo, "c.txt", "c\n", "third")
    with remembered():
        assert Git(repo).rev_parse("refs/heads/main") == again


def test_a_checkouts_head_is_never_remembered(tmp_path):
    repo = make_repo(tmp_path / "ws", "r")
    with remembered():
        first = Git(repo).head()
        moved = commit(repo, "b.txt", "b\n", "second")
        assert Git(repo).head() == moved != first
        assert Git(repo).rev_parse("HEAD") == moved


# -- each kind of change made through the package: the next read sees it ------------------


def _worktree(repo: Path) -> Path:
    path = repo.parent / "wt"
    git(repo, "worktree", "add", "-q", "-b", "topic", str(path))
    return path


def _ref_update(repo: Path) -> tuple[Callable[[], object], Callable[[], None]]:
    tip = git(repo, "rev-parse", "main")
    ahead = commit(repo, "b.txt", "b\n", "second")
    git(repo, "update-ref", "refs/heads/side", tip)

    def change() -> None:
        update_ref(Git(repo), "refs/heads/side", ahead, old=tip, message="move")

    return lambda: Git(repo).rev_parse("refs/heads/side"), change


def _branch_delete(repo: Path) -> tuple[Callable[[], object], Callable[[], None]]:
    git(repo, "branch", "side")
    tip = git(repo, "rev-parse", "side")
    return lambda: Git(repo).local_branches(), lambda: Git(repo).branch_delete_at("side", tip)


def _cherry_pick(repo: Path) -> tuple[Callable[[], object], Callable[[], None]]:
    git(repo, "switch", "-q", "-c", "side")
    picked = commit(repo, "side.txt", "side\n", "on side")
    git(repo, "switch", "-q", "main")
    return (
        lambda: Git(repo).ref_tips("refs/heads/", trees=True),
        lambda: cherry_pick(Git(repo), [picked]),
    )


def _reset(repo: Path) -> tuple[Callable[[], object], Callable[[], None]]:
    first = git(repo, "rev-parse", "main")
    commit(repo, "b.txt", "b\n", "second")
    return lambda: Git(repo).commits(["refs/heads/main"]), lambda: reset_hard(Git(repo), first)


def _worktree_add(repo: Path) -> tuple[Callable[[], object], Callable[[], None]]:
    path = repo.parent / "wt"
    return (
        lambda: [e.path for e in Git(repo).worktree_list()],
        lambda: Git(repo).worktree_add(path, "topic", base="main"),
    )


def _worktree_lock(repo: Path) -> tuple[Callable[[], object], Callable[[], None]]:
    path = _worktree(repo)
    return (
        lambda: [(e.path, e.locked) for e in Git(repo).worktree_list()],
        lambda: Git(repo).worktree_lock(path, "mine"),
    )


def _worktree_remove(repo: Path) -> tuple[Callable[[], object], Callable[[], None]]:
    path = _worktree(repo)
    return (
        lambda: [e.path for e in Git(repo).worktree_list()],
        lambda: Git(repo).worktree_remove(path, force=False),
    )


def _config_write(repo: Path) -> tuple[Callable[[], object], Callable[[], None]]:
    return (
        lambda: config_view(Git(repo)).remote_urls(),
        lambda: add_remote(Git(repo), "mirror", str(repo.parent / "mirror.git")),
    )


def _fetch(repo: Path) -> tuple[Callable[[], object], Callable[[], None]]:
    clone = repo.parent / "clone"
    git(repo.parent, "clone", "-q", git(repo, "remote", "get-url", "origin"), str(clone))
    commit(clone, "up.txt", "up\n", "upstream")
    git(clone, "push", "-q", "origin", "main")
    return (
        lambda: Git(repo).rev_parse("refs/remotes/origin/main"),
        lambda: Git(repo).fetch("origin"),
    )


def _fetch_started(repo: Path) -> tuple[Callable[[], object], Callable[[], None]]:
    read, _ = _fetch(repo)
    return read, lambda: Git(repo).start_fetch("origin").wait()


def _worktree_from_a_worktree(repo: Path) -> tuple[Callable[[], object], Callable[[], None]]:
    # A write in a linked worktree changes the refs the primary clone is asked about.
    path = _worktree(repo)
    return (
        lambda: Git(repo).rev_parse("refs/heads/topic"),
        lambda: Git(path).run("commit", "-q", "--allow-empty", "-m", "in the worktree"),
    )


CHANGES = {
    "ref update": _ref_update,
    "branch deletion": _branch_delete,
    "cherry-pick": _cherry_pick,
    "reset": _reset,
    "worktree add": _worktree_add,
    "worktree lock": _worktree_lock,
    "worktree remove": _worktree_remove,
    "config write": _config_write,
    "fetch": _fetch,
    "fetch started": _fetch_started,
    "commit in another checkout": _worktree_from_a_worktree,
}


@pytest.mark.parametrize("kind", list(CHANGES))
def test_a_change_made_through_the_package_is_seen_by_the_next_read(tmp_path, kind):
    repo = make_repo(tmp_path / "ws", "r")
    read, change = CHANGES[kind](repo)
    with remembered():
        before = read()
        change()
        after = read()
    # What git says now, outside any stretch: the remembered answer was not served.
    assert after == read()
    assert after != before


def test_an_answer_read_while_something_changed_is_not_kept(tmp_path):
    # A read that a change overlapped may hold the state from before the change:
    # it is handed out once and never remembered.
    repo = make_repo(tmp_path / "ws", "r")
    tip = git(repo, "rev-parse", "main")
    ahead = commit(repo, "b.txt", "b\n", "second")
    git(repo, "update-ref", "refs/heads/side", tip)
    key = ("side",)

    def read_then_someone_writes() -> object:
        seen = Git(repo).rev_parse("refs/heads/side")
        update_ref(Git(repo), "refs/heads/side", ahead, old=tip, message="move")
        return seen

    with remembered():
        assert answers.recall(key, read_then_someone_writes) == tip
        assert answers.recall(key, lambda: Git(repo).rev_parse("refs/heads/side")) == ahead


def test_a_remembered_list_is_handed_out_as_a_copy(tmp_path):
    repo = make_repo(tmp_path / "ws", "r")
    with remembered():
        entries = Git(repo).worktree_list()
        entries.clear()
        assert [e.path for e in Git(repo).worktree_list()] == [repo]


def test_waiting_for_a_lock_another_holds_forgets_what_was_remembered(tmp_path):
    repo = make_repo(tmp_path / "ws", "r")
    lock = tmp_path / "topic.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    with remembered():
        first = Git(repo).rev_parse("refs/heads/main")
        # The holder commits, then lets go; we waited for it.
        moved = commit(repo, "b.txt", "b\n", "by the holder")
        threading.Timer(0.2, os.close, (fd,)).start()
        os.close(state.acquire(lock, wait=5))
        assert Git(repo).rev_parse("refs/heads/main") == moved != first


@pytest.mark.parametrize(
    ("args", "changes"),
    [
        (("rev-parse", "HEAD"), False),
        (("config", "-l", "-z"), False),
        (("config", "--get", "--", "user.name"), False),
        (("config", "user.name", "x"), True),
        (("config", "--unset", "--get", "x"), True),
        (("symbolic-ref", "-q", "HEAD"), False),
        (("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main"), True),
        (("symbolic-ref", "-d", "refs/remotes/origin/HEAD"), True),
        (("worktree", "list", "--porcelain"), False),
        (("worktree", "prune"), True),
        (("hash-object", "--", "f"), False),
        (("hash-object", "-w", "--", "f"), True),
        (("fetch", "origin"), True),
        (("update-ref", "-d", "refs/heads/x"), True),
        (("gc",), True),
    ],
)
def test_only_commands_known_to_change_nothing_keep_what_is_remembered(args, changes):
    assert answers.read_only(args) is not changes
