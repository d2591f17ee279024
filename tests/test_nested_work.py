"""Work in another repository inside a worktree, and the index, are never lost by teardown (DESIGN §9)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.faults import KILLED, git_killer, git_then, run
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
from helpers.topics import (
    TOPIC_ID,
    Topic,
    multi_topic,
    new_topic,
    steps_of,
    teardown,
    write_repos_md,
)
from helpers.unreadable import unreadable

from router.teardown.snapshot import snapshot_ref


@pytest.fixture
def sub_topic(workspace: Path) -> Topic:
    """Home repo ``web`` with submodule ``lib`` (its own bare origin), initialised in the topic's worktree."""
    # `submodule add/update` clone through the file transport, which git
    # (since 2.38.1) allows only on request; the test's own HOME is the place.
    git(workspace, "config", "--global", "protocol.file.allow", "always")
    lib = make_repo(workspace, "lib")
    home = make_repo(workspace, "web")
    git(home, "submodule", "add", "-q", git(lib, "remote", "get-url", "origin"), "lib")
    git(home, "commit", "-q", "-m", "add lib as a submodule")
    git(home, "push", "-q", "origin", "main")
    topic = new_topic(home)
    git(topic.worktrees["home"], "submodule", "update", "-q", "--init")
    return topic


def refs_of(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname)")


def error_code(res) -> str:
    return res.json["error"]["code"]


# -- submodules (items: --force and the submodule's own commits and dirt) ---------------


def test_force_refuses_a_submodule_with_unpushed_commits_and_dirt_keeping_all_of_it(sub_topic):
    wt = sub_topic.worktrees["home"]
    sub = wt / "lib"
    sha = commit(sub, "lib.py", "v = 1\n", "only in the worktree's submodule")
    write(sub / "lib.py", "v = 2  # not committed\n")
    write(sub / "notes.txt", "untracked\n")
    home_refs = refs_of(sub_topic.home)

    for flags in (("--force",), ()):
        res = teardown(sub_topic, *flags)
        assert res.code == 1, res.out
        assert error_code(res) == "nested-work", res.out
        message = res.json["error"]["message"]
        assert "submodule lib" in message and "1 commit(s)" in message, message
        assert "notes.txt" in message and "lib.py" in message, message

    assert wt.is_dir() and git(sub, "cat-file", "-t", sha) == "commit"
    assert git(sub, "rev-parse", "HEAD") == sha
    assert (sub / "lib.py").read_text() == "v = 2  # not committed\n"
    assert (sub / "notes.txt").read_text() == "untracked\n"
    assert refs_of(sub_topic.home) == home_refs  # no branch deleted, no snapshot written
    assert sub_topic.branch in branches(sub_topic.home)


def test_teardown_refuses_a_deinitialised_submodule_whose_git_dir_holds_unpushed_commits(
    sub_topic,
):
    wt = sub_topic.worktrees["home"]
    sha = commit(wt / "lib", "lib.py", "v = 1\n", "committed, then the submodule deinitialised")
    git(wt, "commit", "-q", "-am", "bump lib")
    git(wt, "submodule", "deinit", "-q", "--", "lib")  # keeps the git dir, commits and all
    assert not (wt / "lib" / ".git").exists() and status(wt) == ""
    module = Path(
        git(sub_topic.home, "rev-parse", "--path-format=absolute", "--git-common-dir")
    ).resolve()
    module = module / "worktrees" / wt.name / "modules" / "lib"

    for flags in (("--force",), ()):
        res = teardown(sub_topic, *flags)
        assert res.code == 1, res.out
        assert error_code(res) == "nested-work", res.out
        assert f"submodule git dir {module} (1 commit(s)" in res.json["error"]["message"]
    assert git(module, "cat-file", "-t", sha) == "commit" and wt.is_dir()


def test_teardown_removes_a_worktree_whose_submodule_holds_nothing_unpushed(sub_topic):
    wt = sub_topic.worktrees["home"]
    assert (wt / "lib" / ".git").exists()
    res = teardown(sub_topic)
    assert res.code == 0, res.out
    remove = next(s for s in res.json["repos"][0]["steps"] if s["name"] == "remove")
    assert remove["outcome"] == "done" and "submodule lib" in remove["detail"], remove
    assert not wt.exists() and sub_topic.branch not in branches(sub_topic.home)
    assert teardown(sub_topic).code == 0


def test_teardown_refuses_files_in_an_uninitialised_submodules_directory_git_does_not_see(
    sub_topic,
):
    wt = sub_topic.worktrees["home"]
    git(wt, "submodule", "deinit", "-q", "--all")  # lib/ stays, empty, a gitlink's directory
    write(wt / "lib" / "notes" / "plan.txt", "copied in by hand\n")
    assert status(wt) == ""  # git does not look inside it

    for flags in (("--force",), ()):
        res = teardown(sub_topic, *flags)
        assert res.code == 1, res.out
        assert error_code(res) == "nested-work", res.out
        message = res.json["error"]["message"]
        assert "uninitialised submodule lib (1 untracked file(s): notes/plan.txt" in message
    assert (wt / "lib" / "notes" / "plan.txt").read_text() == "copied in by hand\n"
    assert git(sub_topic.home, "for-each-ref", "refs/team-router/") == ""

    shutil.rmtree(wt / "lib" / "notes")  # the fix the message names: moved out
    assert teardown(sub_topic).code == 0


def test_teardown_refuses_an_unreadable_folder_in_an_uninitialised_submodules_directory(
    sub_topic,
):
    wt = sub_topic.worktrees["home"]
    git(wt, "submodule", "deinit", "-q", "--all")
    write(wt / "lib" / "notes" / "plan.txt", "copied in by hand\n")

    with unreadable(wt / "lib" / "notes"):  # what it holds cannot be ruled out
        for flags in (("--force",), ()):
            res = teardown(sub_topic, *flags)
            assert res.code == 1, res.out
            assert error_code(res) == "io-error", res.out
            assert res.json["error"]["message"] == (
                f"teardown of {sub_topic.id} refused, nothing was removed in any repo: "
                f"home: home: checking the repo failed: accessing {wt}/lib/notes: "
                "Permission denied"
            )
    assert (wt / "lib" / "notes" / "plan.txt").read_text() == "copied in by hand\n"
    assert git(sub_topic.home, "for-each-ref", "refs/team-router/") == ""
    assert wt.is_dir() and sub_topic.branch in branches(sub_topic.home)


def _restore_warning(path: Path, moved: str, home: Path) -> str:
    """restore's warning for ``lib``, moved to ``moved``, a commit the primary's copy lacks."""
    module = home / ".git/modules/lib"
    return (
        f"home: submodule lib was not checked out in {path} (commit {moved[:12]} is not in "
        f"{module}: fetch it there first); the worktree is made without it: `git -C {path} "
        f"submodule update --init -- lib` fetches it, then `git -C {path}/lib checkout --detach "
        f"{moved}` puts it where it was"
    )


def test_force_with_a_clean_submodule_snapshots_and_restore_says_how_to_bring_it_back(
    sub_topic,
):
    home, wt = sub_topic.home, sub_topic.worktrees["home"]
    recorded = git(wt, "rev-parse", "HEAD:lib")
    moved = commit(wt / "lib", "lib.py", "v = 1\n", "pushed, the gitlink not committed")
    git(wt / "lib", "push", "-q", "origin", "HEAD:main")
    write(wt / "draft.txt", "draft\n")
    res = teardown(sub_topic, "--force")
    assert res.code == 0, res.out
    assert not wt.exists()

    # The primary's copy of lib never fetched that commit: restore does not fetch it
    # either, and says how to.
    res = run_cli("restore", sub_topic.id, "--json", cwd=home)
    assert res.code == 0, res.out
    restored = res.json["repos"][0]
    path = Path(restored["worktree"])
    assert res.json["warnings"] == [_restore_warning(path, moved, home)]
    assert (path / "draft.txt").read_text() == "draft\n"
    git(path, "submodule", "update", "-q", "--init", "--", "lib")
    assert git(path / "lib", "rev-parse", "HEAD") == recorded
    git(path / "lib", "checkout", "-q", "--detach", moved)
    assert sorted(status(path).split("\n")) == ["?? draft.txt", "M lib"]


def test_restore_names_where_a_submodule_was_even_when_its_changes_are_ignored(sub_topic):
    home, wt = sub_topic.home, sub_topic.worktrees["home"]
    git(home, "config", "submodule.lib.ignore", "all")  # as `ignore = all` in .gitmodules
    moved = commit(wt / "lib", "lib.py", "v = 1\n", "pushed, the gitlink not committed")
    git(wt / "lib", "push", "-q", "origin", "HEAD:main")
    write(wt / "draft.txt", "draft\n")
    assert teardown(sub_topic, "--force").code == 0

    res = run_cli("restore", sub_topic.id, "--json", cwd=home)
    assert res.code == 0, res.out
    path = Path(res.json["repos"][0]["worktree"])
    assert res.json["warnings"] == [_restore_warning(path, moved, home)]


def test_integrate_with_a_pushed_submodule_bump_finishes_and_leaves_the_primary_clean(sub_topic):
    home, wt = sub_topic.home, sub_topic.worktrees["home"]
    sub_sha = commit(wt / "lib", "lib.py", "v = 1\n", "lib change")
    git(wt / "lib", "push", "-q", "origin", "HEAD:main")
    git(wt, "commit", "-q", "-am", "bump lib")

    res = teardown(sub_topic, "--integrate")
    assert res.code == 0, res.out
    assert not wt.exists() and sub_topic.branch not in branches(home)
    assert git(home, "log", "-1", "--format=%s", "main") == "bump lib"
    assert git(home, "rev-parse", "main:lib") == sub_sha
    assert status(home) == ""  # the primary's submodule follows the picked gitlink
    assert git(home / "lib", "rev-parse", "HEAD") == sub_sha
    again = teardown(sub_topic, "--integrate")
    assert again.code == 0, again.out


def test_integrate_run_again_once_the_refused_submodule_commit_is_pushed_leaves_the_primary_clean(
    sub_topic,
):
    home, wt = sub_topic.home, sub_topic.worktrees["home"]
    sub_sha = commit(wt / "lib", "lib.py", "v = 1\n", "lib change, pushed later")
    git(wt, "commit", "-q", "-am", "bump lib")
    first = teardown(sub_topic, "--integrate")
    assert first.code == 1 and error_code(first) == "nested-work", first.out
    git(wt / "lib", "push", "-q", "origin", "HEAD:main")  # the fix the refusal names

    again = teardown(sub_topic, "--integrate")
    assert again.code == 0, again.out
    assert git(home, "log", "-1", "--format=%s", "main") == "bump lib"
    assert git(home, "rev-parse", "main:lib") == sub_sha
    assert status(home) == ""  # invariant 1: the primary's submodule follows the picked gitlink
    assert git(home / "lib", "rev-parse", "HEAD") == sub_sha
    assert steps_of(again.json, "home")["integrate"]["detail"].endswith(
        "; submodule(s) lib checked out at their new commit"
    )
    assert not wt.exists() and sub_topic.branch not in branches(home)


@pytest.mark.parametrize("killed", ["before", "during"])
def test_a_kill_before_the_primarys_submodule_follows_the_picked_bump_is_finished_by_the_rerun(
    sub_topic, tmp_path, killed
):
    home, wt = sub_topic.home, sub_topic.worktrees["home"]
    sub_sha = commit(wt / "lib", "lib.py", "v = 1\n", "lib change")
    git(wt / "lib", "push", "-q", "origin", "HEAD:main")
    git(wt, "commit", "-q", "-am", "bump lib")
    env = git_killer(tmp_path / "bin", "submodule update", real=killed == "during")
    first = run(
        "teardown", sub_topic.id, "--integrate", "--json", cwd=home, env=env, new_group=True
    )
    assert first.code == KILLED, first.out + first.err
    assert git(home, "rev-parse", "main:lib") == sub_sha  # picked

    again = teardown(sub_topic, "--integrate")
    assert again.code == 0, again.out
    assert status(home) == ""  # invariant 1: the primary's submodule follows the picked gitlink
    assert git(home / "lib", "rev-parse", "HEAD") == sub_sha
    assert not wt.exists() and sub_topic.branch not in branches(home)
    # The rerun says what it finished: the submodule the killed run's pick moved.
    followed = f"submodule(s) lib checked out at the commit {home} records; " * (killed == "before")
    assert steps_of(again.json, "home")["update-default"]["detail"] == (
        f"{followed}main already holds origin/main as this command fetched it: nothing to pull; "
        f"no origin/{sub_topic.branch} ref: nothing to prune"
    )


def test_integrate_refuses_before_picking_a_bump_to_a_submodule_commit_that_is_nowhere_else(
    sub_topic,
):
    home, wt = sub_topic.home, sub_topic.worktrees["home"]
    sub_sha = commit(wt / "lib", "lib.py", "v = 1\n", "lib change, not pushed")
    git(wt, "commit", "-q", "-am", "bump lib")
    main_before = git(home, "rev-parse", "main")

    res = teardown(sub_topic, "--integrate")
    assert res.code == 1, res.out
    assert error_code(res) == "nested-work", res.out
    assert git(home, "rev-parse", "main") == main_before  # nothing integrated
    assert status(home) == ""
    assert git(wt / "lib", "cat-file", "-t", sub_sha) == "commit"
    assert sub_topic.branch in branches(home) and wt.is_dir()


# -- nested clones ---------------------------------------------------------------------


def test_force_refuses_a_nested_clone_with_unpushed_commits(sub_topic, workspace):
    wt = sub_topic.worktrees["home"]
    clone = wt / "vendor" / "tool"
    git(workspace, "clone", "-q", str(workspace.parent / "origins" / "lib.git"), str(clone))
    sha = commit(clone, "tool.py", "t\n", "only in the nested clone")

    res = teardown(sub_topic, "--force")
    assert res.code == 1, res.out
    assert error_code(res) == "nested-work"
    assert "nested repository vendor/tool" in res.json["error"]["message"]
    assert git(clone, "rev-parse", "HEAD") == sha and (clone / "tool.py").read_text() == "t\n"
    assert git(sub_topic.home, "for-each-ref", "refs/team-router/") == ""


def test_a_nested_clone_with_work_in_one_repo_stops_the_whole_forced_teardown(workspace):
    topic = multi_topic(workspace, ("api",))
    clone = topic.worktrees["api"] / "tools" / "gen"
    git(workspace, "init", "-q", "-b", "main", str(clone))
    sha = commit(clone, "gen.py", "g\n", "a repository that exists only here")
    write(topic.worktrees["home"] / "draft.txt", "draft\n")
    before = {name: refs_of(path) for name, path in topic.repos.items()}

    res = teardown(topic, "--force")
    assert res.code == 1, res.out
    assert error_code(res) == "nested-work"
    assert "api: " in res.json["error"]["message"]
    assert {name: refs_of(path) for name, path in topic.repos.items()} == before
    assert all(wt.is_dir() for wt in topic.worktrees.values())
    assert (topic.worktrees["home"] / "draft.txt").read_text() == "draft\n"
    assert git(clone, "rev-parse", "HEAD") == sha


def test_teardown_refuses_a_nested_clone_under_an_ignored_directory(home_repo, workspace):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    write(wt / ".gitignore", "scratch/\n")
    commit(wt, ".gitignore", "scratch/\n", "ignore scratch")
    git(wt, "push", "-q", "origin", f"{topic.branch}:{topic.branch}")
    clone = wt / "scratch" / "experiment"
    git(workspace, "init", "-q", "-b", "main", str(clone))
    sha = commit(clone, "idea.py", "idea\n", "a local-only repository")
    assert status(wt) == ""  # git status does not show it at all

    res = teardown(topic)
    assert res.code == 1, res.out
    assert error_code(res) == "nested-work"
    assert "nested repository scratch/experiment" in res.json["error"]["message"]
    assert git(clone, "rev-parse", "HEAD") == sha


def test_restore_names_where_a_nested_clone_that_went_with_the_worktree_came_from(
    home_repo, workspace
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    origin = git(home_repo, "remote", "get-url", "origin")
    clone = wt / "vendor" / "tool"
    git(workspace, "clone", "-q", origin, str(clone))
    pushed = commit(clone, "tool.py", "t\n", "pushed: nothing exists only here")
    git(clone, "push", "-q", "origin", "HEAD:refs/heads/tool-fix")
    write(wt / "draft.txt", "draft\n")
    res = teardown(topic, "--force")
    assert res.code == 0, res.out
    assert not wt.exists()

    res = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert res.code == 0, res.out
    detail = res.json["repos"][0]["detail"]
    how = f"git clone {origin} vendor/tool && git -C vendor/tool checkout {pushed[:12]}"
    assert f"`{how}`" in detail, detail
    path = Path(res.json["repos"][0]["worktree"])
    git(path, "clone", "-q", origin, "vendor/tool")
    git(path / "vendor" / "tool", "checkout", "-q", pushed[:12])
    assert (path / "vendor" / "tool" / "tool.py").read_text() == "t\n"


def test_force_removes_an_empty_nested_repository(home_repo, workspace):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    git(workspace, "init", "-q", str(wt / "empty"))  # no commit, no file: nothing to lose
    write(wt / "draft.txt", "draft\n")
    res = teardown(topic, "--force")
    assert res.code == 0, res.out
    assert not wt.exists()
    assert git(home_repo, "show", f"{snapshot_ref(topic.branch)}:draft.txt") == "draft"


def test_force_snapshots_around_an_ignored_empty_repository_inside_a_submodule(
    sub_topic, workspace
):
    wt = sub_topic.worktrees["home"]
    exclude = Path(
        git(wt / "lib", "rev-parse", "--path-format=absolute", "--git-path", "info/exclude")
    )
    write(exclude, "vendor/\n")
    git(workspace, "init", "-q", str(wt / "lib" / "vendor" / "x"))
    write(wt / "draft.txt", "draft\n")
    res = teardown(sub_topic, "--force")
    assert res.code == 0, res.out
    assert not wt.exists()
    assert git(sub_topic.home, "show", f"{snapshot_ref(sub_topic.branch)}:draft.txt") == "draft"


# -- the index -------------------------------------------------------------------------


def test_force_and_restore_keep_partially_staged_content(home_repo):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "app.py", "a = 1\nb = 1\n", "app")
    write(wt / "app.py", "a = 2\nb = 1\n")
    git(wt, "add", "--", "app.py")  # staged: a = 2
    write(wt / "app.py", "a = 2\nb = 2\n")  # on top, not staged: b = 2
    write(wt / "new.py", "staged then edited\n")
    git(wt, "add", "--", "new.py")
    write(wt / "new.py", "staged then edited, twice\n")
    write(wt / "loose.txt", "untracked\n")
    before = (git(wt, "diff", "--cached"), git(wt, "diff"), status(wt))

    res = teardown(topic, "--force")
    assert res.code == 0, res.out
    assert not wt.exists()
    ref = snapshot_ref(topic.branch)
    assert git(home_repo, "show", f"{ref}^2:app.py") == "a = 2\nb = 1"

    res = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert res.code == 0, res.out
    path = Path(res.json["repos"][0]["worktree"])
    assert (git(path, "diff", "--cached"), git(path, "diff"), status(path)) == before


def test_restore_still_brings_back_a_snapshot_without_an_index(home_repo):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    head = commit(wt, "app.py", "a = 1\n", "app")
    write(wt / "app.py", "a = 2\n")
    git(wt, "add", "--", "app.py")
    tree = git(wt, "write-tree")
    # The one-parent form earlier versions wrote: HEAD plus the files, no index.
    old = git(home_repo, "commit-tree", tree, "-p", head, "-m", "team-router snapshot")
    git(home_repo, "update-ref", snapshot_ref(topic.branch), old)
    unlock(home_repo, wt)
    git(home_repo, "worktree", "remove", "--force", str(wt))
    git(home_repo, "branch", "-D", topic.branch)

    res = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert res.code == 0, res.out
    assert (wt / "app.py").read_text() == "a = 2\n"
    assert git(wt, "rev-parse", "HEAD") == head
    assert status(wt) == "M app.py" and git(wt, "diff", "--cached") == ""


def test_force_refuses_a_worktree_whose_index_has_unmerged_paths(home_repo):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "app.py", "a = 1\n", "app")
    git(wt, "switch", "-q", "-c", "side", "HEAD~1")
    commit(wt, "app.py", "a = 3\n", "side")
    git(wt, "switch", "-q", topic.branch)
    commit(wt, "app.py", "a = 2\n", "main line")
    assert git(wt, "merge", "side", check=False) is not None
    conflicted = (wt / "app.py").read_text()
    assert "<<<<<<<" in conflicted

    res = teardown(topic, "--force")
    assert res.code == 1, res.out
    remove = next(s for s in res.json["repos"][0]["steps"] if s["name"] == "remove")
    assert remove["code"] == "snapshot-failed" and "unmerged" in remove["detail"], remove
    assert wt.is_dir() and (wt / "app.py").read_text() == conflicted
    assert topic.branch in branches(home_repo)


def test_the_walk_finds_every_git_entry_outermost_first_and_follows_no_link(tmp_path):
    from router.teardown.nested import repositories_below

    root = tmp_path / "wt"
    (root / ".git").parent.mkdir()
    (root / ".git").write_text("gitdir: elsewhere\n")  # the worktree's own: not a nested repo
    for rel in ("b/.git", "a/deep/x/.git", "a/.git/objects/inner/.git"):
        (root / rel).mkdir(parents=True)
    (root / "c").mkdir()
    (root / "c" / ".git").write_text("gitdir: ../x\n")  # a gitfile counts
    (root / "d").mkdir()
    (root / "d" / ".git").symlink_to(tmp_path / "missing")  # so does a link, even broken
    (root / "e").symlink_to(root / "a")  # a link to a directory is not entered
    assert repositories_below(root)[0] == ["a", "a/deep/x", "b", "c", "d"]


# -- commits only a reflog or a vanished remote keeps --------------------------------------


def test_teardown_refuses_a_submodule_commit_only_its_reflog_still_reaches(sub_topic):
    wt = sub_topic.worktrees["home"]
    sub = wt / "lib"
    sha = commit(sub, "lib.py", "v = 1\n", "made on the submodule's detached HEAD")
    git(sub, "checkout", "-q", "main")  # left behind: on no branch, only in HEAD's reflog
    assert status(wt) == "" and git(sub, "branch", "--contains", sha) == ""

    for flags in (("--force",), ()):
        res = teardown(sub_topic, *flags)
        assert res.code == 1, res.out
        assert error_code(res) == "nested-work", res.out
        message = res.json["error"]["message"]
        assert "submodule lib (1 commit(s)" in message and "--reflog" in message, message
    assert wt.is_dir() and git(sub, "cat-file", "-t", sha) == "commit"
    assert sub_topic.branch in branches(sub_topic.home)


def test_an_amended_submodule_commit_refuses_until_the_reflog_expiry_the_message_names(sub_topic):
    wt = sub_topic.worktrees["home"]
    sub = wt / "lib"
    git(sub, "switch", "-q", "main")
    commit(sub, "lib.py", "v = 1\n", "first wording")
    git(sub, "commit", "-q", "--amend", "-m", "second wording")  # the first: reflog only
    git(sub, "push", "-q", "origin", "main")
    git(sub, "switch", "-q", "--detach", "HEAD~1")  # back at the recorded commit: wt is clean

    res = teardown(sub_topic)
    assert res.code == 1 and error_code(res) == "nested-work", res.out
    expire = "git reflog expire --expire-unreachable=now --all"
    assert expire in res.json["error"]["message"]
    git(sub, *expire.split()[1:])
    res = teardown(sub_topic)
    assert res.code == 0, res.out


def test_teardown_refuses_a_submodule_whose_commits_only_a_deleted_local_origin_held(
    sub_topic,
):
    wt = sub_topic.worktrees["home"]
    sub = wt / "lib"
    git(sub, "switch", "-q", "-c", "feature")
    sha = commit(sub, "lib.py", "v = 1\n", "pushed to an origin that is then deleted")
    git(sub, "push", "-q", "origin", "feature")
    git(sub, "switch", "-q", "--detach", "HEAD~1")  # the gitlink's commit: nothing to snapshot
    shutil.rmtree(git(sub, "remote", "get-url", "origin"))
    assert status(wt) == "" and git(sub_topic.home, "cat-file", "-t", sha, check=False) == ""

    res = teardown(sub_topic)
    assert res.code == 1, res.out
    assert error_code(res) == "nested-work", res.out
    message = res.json["error"]["message"]
    assert "submodule lib (" in message, message
    assert "remote origin points at a path that no longer exists" in message, message
    assert wt.is_dir() and git(sub, "cat-file", "-t", sha) == "commit"


# -- bare repositories and checkouts of other repositories ------------------------------


def local_only_bare(workspace: Path, where: Path) -> str:
    """A bare repository at ``where`` whose two commits exist nowhere else; the newer one."""
    source = make_repo(workspace, "scratch-src", origin=False)
    sha = commit(source, "tool.py", "t\n", "a commit made only here")
    git(workspace, "clone", "-q", "--bare", str(source), str(where))
    shutil.rmtree(source)
    return sha


def test_teardown_refuses_a_bare_repository_under_an_ignored_directory(workspace):
    home = make_repo(workspace, "web")
    commit(home, ".gitignore", "vendor/\n", "ignore vendor")
    git(home, "push", "-q", "origin", "main")
    topic = new_topic(home)
    wt = topic.worktrees["home"]
    sha = local_only_bare(workspace, wt / "vendor" / "cache.git")
    assert status(wt) == ""  # git status does not show it at all

    for flags in (("--force",), ()):
        res = teardown(topic, *flags)
        assert res.code == 1, res.out
        assert error_code(res) == "nested-work", res.out
        message = res.json["error"]["message"]
        assert "nested bare repository vendor/cache.git (2 commit(s)" in message, message
    assert git(wt / "vendor" / "cache.git", "cat-file", "-t", sha) == "commit"
    assert git(home, "for-each-ref", "refs/team-router/") == ""


def test_force_refuses_a_bare_repository_a_snapshot_could_not_bring_back(home_repo, workspace):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    sha = local_only_bare(
        workspace, wt / "cache.git"
    )  # untracked: the snapshot would take its files

    res = teardown(topic, "--force")
    assert res.code == 1, res.out
    assert error_code(res) == "nested-work", res.out
    assert "nested bare repository cache.git" in res.json["error"]["message"]
    assert git(wt / "cache.git", "cat-file", "-t", sha) == "commit"
    assert git(home_repo, "for-each-ref", "refs/team-router/") == ""


def test_a_bare_repository_committed_as_files_is_not_judged_as_one(home_repo, workspace):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    local_only_bare(workspace, wt / "fixtures" / "repo.git")
    git(wt, "add", "--", "fixtures")
    git(wt, "commit", "-q", "-m", "a test fixture: its files are in the branch")
    git(wt, "push", "-q", "origin", f"{topic.branch}:main")

    res = teardown(topic)
    assert res.code == 0, res.out
    assert not wt.exists()


def test_teardown_removes_a_clean_checkout_of_another_repository_which_keeps_its_commits(
    home_repo, workspace
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    other = make_repo(workspace, "other", origin=False)
    git(other, "worktree", "add", "-q", "-b", "feature", str(wt / "ext"))
    sha = commit(wt / "ext", "x.py", "x\n", "on other's branch, in other's object store")

    res = teardown(topic, "--force")
    assert res.code == 0, res.out
    assert not wt.exists()
    assert git(other, "rev-parse", "feature") == sha


def test_teardown_refuses_dirt_and_detached_commits_in_a_checkout_of_another_repository(
    home_repo, workspace
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    other = make_repo(workspace, "other", origin=False)
    git(other, "worktree", "add", "-q", "--detach", str(wt / "ext"))
    sha = commit(wt / "ext", "x.py", "x\n", "on a detached HEAD: gone once git prunes it")

    res = teardown(topic, "--force")
    assert res.code == 1, res.out
    assert "nested repository ext (1 commit(s)" in res.json["error"]["message"]
    git(wt / "ext", "switch", "-q", "-c", "kept")
    write(wt / "ext" / "draft.txt", "draft\n")
    res = teardown(topic, "--force")
    assert res.code == 1, res.out
    assert "nested repository ext (1 untracked file(s): draft.txt)" in res.json["error"]["message"]
    assert (wt / "ext" / "draft.txt").read_text() == "draft\n"
    assert git(other, "rev-parse", "kept") == sha


def test_teardown_refuses_a_nested_clone_whose_linked_worktree_lives_outside(home_repo, workspace):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    origin = git(home_repo, "remote", "get-url", "origin")
    clone = wt / "tools" / "gen"
    git(workspace, "clone", "-q", origin, str(clone))
    outside = workspace / "gen-feature"
    git(clone, "worktree", "add", "-q", "--detach", str(outside))
    write(outside / "staged.py", "staged in the outside checkout\n")
    git(outside, "add", "--", "staged.py")

    for flags in (("--force",), ()):
        res = teardown(topic, *flags)
        assert res.code == 1, res.out
        message = res.json["error"]["message"]
        assert f"its linked worktree(s) {outside} would lose their repository" in message
    assert git(outside, "diff", "--cached", "--name-only") == "staged.py"


# -- the primary's submodules follow the default branch ---------------------------------


def merged_submodule_bump(topic: Topic) -> str:
    """A submodule commit, pushed; the topic's gitlink bump to it merged on origin; that commit."""
    wt = topic.worktrees["home"]
    sub_sha = commit(wt / "lib", "lib.py", "v = 1\n", "lib change")
    git(wt / "lib", "push", "-q", "origin", "HEAD:main")
    git(wt, "commit", "-q", "-am", "bump lib")
    git(wt, "push", "-q", "origin", f"{topic.branch}:{topic.branch}")
    merge_on_origin(topic.home, topic.branch)
    return sub_sha


def test_teardown_pulling_a_merged_submodule_bump_leaves_the_primary_clean(sub_topic):
    home = sub_topic.home
    sub_sha = merged_submodule_bump(sub_topic)

    res = teardown(sub_topic)
    assert res.code == 0, res.out
    assert git(home, "rev-parse", "main:lib") == sub_sha
    assert status(home) == ""
    assert git(home / "lib", "rev-parse", "HEAD") == sub_sha


def test_pr_cleanup_pulling_a_merged_submodule_bump_leaves_the_primary_clean(sub_topic):
    home = sub_topic.home
    sub_sha = merged_submodule_bump(sub_topic)

    res = run_cli("pr-cleanup", sub_topic.branch, "--yes", "--json", cwd=home)
    assert res.code == 0, res.out
    assert not sub_topic.worktrees["home"].exists()
    assert git(home, "rev-parse", "main:lib") == sub_sha
    assert status(home) == ""
    assert git(home / "lib", "rev-parse", "HEAD") == sub_sha


# -- a plan dir in the primary clone -----------------------------------------------------


def test_teardown_keeps_an_in_place_plan_dir_holding_a_repository_with_unpushed_commits(
    home_repo, workspace
):
    write(home_repo / ".claude" / "worktrees" / TOPIC_ID / "blocker.txt", "a taken path\n")
    res = run_cli("new", "x", "--id", TOPIC_ID, "--json", cwd=home_repo)
    assert res.json["home"]["status"] == "fallback", res.out  # the plan dir is in the primary
    plan_dir = Path(res.json["plan_dir"])
    clone = plan_dir / "research" / "scratch"
    git(workspace, "init", "-q", "-b", "main", str(clone))
    sha = commit(clone, "probe.py", "p\n", "a repository that exists only here")

    res = run_cli("teardown", TOPIC_ID, "--json", cwd=home_repo)
    assert res.code == 1, res.out
    step = next(s for s in res.json["repos"][0]["steps"] if s["name"] == "plan-dir")
    assert step["outcome"] == "refused" and step["code"] == "nested-work", step
    assert "nested repository research/scratch (1 commit(s)" in step["detail"], step
    assert git(clone, "cat-file", "-t", sha) == "commit"

    shutil.move(str(clone), str(workspace / "scratch"))  # the fix the message names
    res = run_cli("teardown", TOPIC_ID, "--json", cwd=home_repo)
    assert res.code == 0, res.out
    assert not plan_dir.exists()


# -- a worktree directory deleted by hand: its registration keeps the submodules' git dirs --


def module_dir(topic: Topic) -> Path:
    """Where git keeps the git dir of the topic worktree's submodule ``lib``."""
    common = git(topic.home, "rev-parse", "--path-format=absolute", "--git-common-dir")
    return Path(common).resolve() / "worktrees" / topic.worktrees["home"].name / "modules" / "lib"


def module_has(module: Path, sha: str) -> bool:
    # The module's core.worktree names the deleted checkout: git must be told where it works.
    out = git(module, f"--git-dir={module}", f"--work-tree={module}", "cat-file", "-t", sha)
    return out == "commit"


def unpushed_then_deleted(topic: Topic) -> str:
    """A submodule commit on no remote, left on a branch; then the worktree deleted with rm -rf."""
    wt = topic.worktrees["home"]
    git(wt / "lib", "switch", "-q", "-c", "local-fix")
    sha = commit(wt / "lib", "lib.py", "v = 1\n", "only in this worktree's submodule")
    git(wt / "lib", "switch", "-q", "--detach", "HEAD~1")  # the recorded commit: wt is clean
    shutil.rmtree(wt)
    return sha


def test_teardown_refuses_to_unregister_a_deleted_worktree_whose_submodule_git_dir_holds_commits(
    sub_topic,
):
    sha = unpushed_then_deleted(sub_topic)
    module = module_dir(sub_topic)

    for flags in (("--force",), ()):
        res = teardown(sub_topic, *flags)
        assert res.code == 1, res.out
        assert error_code(res) == "nested-work", res.out
        assert f"submodule git dir {module} (1 commit(s)" in res.json["error"]["message"]
    assert module_has(module, sha)
    assert sub_topic.branch in branches(sub_topic.home)

    res = run_cli(
        "pr-cleanup", sub_topic.branch, "--abandon", "--yes", "--json", cwd=sub_topic.home
    )
    assert res.code == 1 and error_code(res) == "nested-work", res.out
    assert module_has(module, sha)


def test_doctor_repair_keeps_the_registration_of_a_deleted_worktree_whose_submodule_holds_commits(
    sub_topic,
):
    sha = unpushed_then_deleted(sub_topic)
    module = module_dir(sub_topic)

    res = run_cli("doctor", "--repair", "--json", cwd=sub_topic.home)
    finding = next(f for f in res.json["findings"] if f["kind"] == "registration-dir-gone")
    assert not finding["repaired"] and "1 commit(s)" in finding["detail"], finding
    assert module_has(module, sha)


def test_teardown_unregisters_a_deleted_worktree_whose_submodule_git_dir_holds_nothing(sub_topic):
    wt = sub_topic.worktrees["home"]
    shutil.rmtree(wt)
    module = module_dir(sub_topic)
    assert module.is_dir()

    res = teardown(sub_topic)
    assert res.code == 0, res.out
    assert not module.exists() and sub_topic.branch not in branches(sub_topic.home)


# -- a kill inside `git worktree remove`: the rerun re-checks the submodules' git dirs ----


@pytest.mark.parametrize("tree_deleted", [False, True], ids=["before-deleting", "after-deleting"])
def test_the_rerun_after_a_kill_mid_removal_refuses_a_submodule_commit_only_its_git_dir_holds(
    sub_topic, tmp_path, tree_deleted
):
    wt = sub_topic.worktrees["home"]
    module = module_dir(sub_topic)
    # git deletes the tree first and the registration (modules/ with it) last. The kill
    # comes before it deleted anything (the submodule is then still used: a commit that
    # writes no file in the worktree), or right after it deleted the tree while a
    # commit was landing in the submodule.
    late = f'"$REAL_GIT" -C "{wt / "lib"}" commit -q --allow-empty -m "made during the removal"'
    then = f'{late}; rm -rf "{wt}"' if tree_deleted else ":"
    env = git_killer(tmp_path / "killer-bin", "worktree remove", then, real=False)
    killed = run("teardown", sub_topic.id, "--json", cwd=sub_topic.home, env=env, new_group=True)
    assert killed.code == KILLED, killed.out + killed.err
    if not tree_deleted:
        git(wt / "lib", "commit", "-q", "--allow-empty", "-m", "made after the kill")
    assert wt.exists() is not tree_deleted and module.is_dir()
    sha = git(module, f"--git-dir={module}", f"--work-tree={module}", "rev-parse", "HEAD")

    for flags in (("--force",), ()):
        res = teardown(sub_topic, *flags)
        assert res.code == 1, res.out
        assert error_code(res) == "nested-work", res.out
        assert "lib (1 commit(s)" in res.json["error"]["message"], res.out
    assert module_has(module, sha)
    assert sub_topic.branch in branches(sub_topic.home)

    res = run_cli(
        "pr-cleanup", sub_topic.branch, "--abandon", "--yes", "--json", cwd=sub_topic.home
    )
    assert res.code == 1 and error_code(res) == "nested-work", res.out
    assert "nothing was touched" in res.json["error"]["message"], res.out  # before any step
    assert module_has(module, sha)

    # The fix the message names: push it from there; then the rerun finishes the removal.
    where = (f"--git-dir={module}", f"--work-tree={module}")
    git(module, *where, "push", "-q", "origin", f"{sha}:refs/heads/kept")
    res = teardown(sub_topic)
    assert res.code == 0, res.out
    assert not wt.exists() and not module.exists()
    assert sub_topic.branch not in branches(sub_topic.home)


def test_the_rerun_itself_rechecks_the_submodule_git_dir_just_before_finishing_the_removal(
    sub_topic, tmp_path
):
    wt = sub_topic.worktrees["home"]
    module = module_dir(sub_topic)
    env = git_killer(tmp_path / "killer-bin", "worktree remove", ":", real=False)
    killed = run("teardown", sub_topic.id, "--json", cwd=sub_topic.home, env=env, new_group=True)
    assert killed.code == KILLED, killed.out + killed.err
    # The rerun's plan finds nothing; a commit lands in the submodule right after it.
    once = tmp_path / "committed"
    late = (
        f'[ -e "{once}" ] || {{ touch "{once}"; '
        f'"$REAL_GIT" -C "{wt / "lib"}" commit -q --allow-empty -m "made after the plan"; }}'
    )
    # Right after the plan's last read of the submodule (its status).
    env = git_then(tmp_path / "then-bin", "/lib -c core.fsmonitor= status --porcelain", late)
    res = run("teardown", sub_topic.id, "--json", cwd=sub_topic.home, env=env)
    assert once.exists(), "the commit did not land between the plan and the removal"
    assert res.code == 1, res.out
    remove = next(s for s in res.json["repos"][0]["steps"] if s["name"] == "remove")
    assert remove["code"] == "nested-work" and "lib (1 commit(s)" in remove["detail"], remove
    sha = git(module, f"--git-dir={module}", f"--work-tree={module}", "rev-parse", "HEAD")
    assert module_has(module, sha) and (wt / "lib" / ".git").exists()
    assert sub_topic.branch in branches(sub_topic.home)


def test_teardown_refuses_a_nested_bare_repository_whose_linked_worktree_lives_outside(
    home_repo, workspace
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    origin = git(home_repo, "remote", "get-url", "origin")
    bare = wt / "cache" / "web.git"
    git(workspace, "clone", "-q", "--bare", origin, str(bare))
    # Its commits on remote-tracking refs too: nothing in it is unpushed.
    git(bare, "fetch", "-q", "origin", "+refs/heads/*:refs/remotes/origin/*")
    outside = workspace / "web-review"
    git(bare, "worktree", "add", "-q", "--detach", str(outside))
    write(outside / "staged.py", "staged in the outside checkout\n")
    git(outside, "add", "--", "staged.py")

    for flags in (("--force",), ()):
        res = teardown(topic, *flags)
        assert res.code == 1, res.out
        assert error_code(res) == "nested-work", res.out
        message = res.json["error"]["message"]
        assert "nested bare repository cache/web.git (its linked worktree(s)" in message, message
        assert f"{outside} would lose their repository" in message, message
    assert git(outside, "diff", "--cached", "--name-only") == "staged.py"
    assert bare.is_dir() and topic.branch in branches(home_repo)

    git(bare, "worktree", "remove", "--force", str(outside))  # the fix: its checkout gone
    res = teardown(topic, "--force")  # the bare repository's files are untracked
    assert res.code == 0, res.out
    assert not wt.exists()


# -- gitlinks with no .gitmodules entry (`git add` of a nested repository) ------------------


def gitlink_without_gitmodules(topic: Topic, workspace: Path) -> Path:
    """A nested clone ``vendor/tool`` (origin: its own bare repo), added with plain
    ``git add`` and committed on the topic's branch: a gitlink no ``.gitmodules`` names."""
    tool = make_repo(workspace, "tool")
    wt = topic.worktrees["home"]
    nested = wt / "vendor" / "tool"
    git(workspace, "clone", "-q", git(tool, "remote", "get-url", "origin"), str(nested))
    git(wt, "add", "--", "vendor/tool")  # git warns of an embedded repository, and adds it
    git(wt, "commit", "-q", "-m", "vendor the tool")
    assert git(wt, "ls-files", "--stage", "--", "vendor/tool").startswith("160000 ")
    assert not (wt / ".gitmodules").exists()
    return nested


def test_teardown_refuses_unpushed_commits_and_dirt_in_a_gitlink_no_gitmodules_names(
    home_repo, workspace
):
    topic = new_topic(home_repo)
    nested = gitlink_without_gitmodules(topic, workspace)
    sha = commit(nested, "tool.py", "t = 1\n", "only in the embedded repository")
    write(nested / "notes.txt", "untracked in it\n")

    for flags in (("--force",), ()):
        res = teardown(topic, *flags)
        assert res.code == 1, res.out
        assert error_code(res) == "nested-work", res.out
        message = res.json["error"]["message"]
        assert "vendor/tool (1 commit(s)" in message and "notes.txt" in message, message
    assert git(nested, "cat-file", "-t", sha) == "commit"
    assert (nested / "notes.txt").read_text() == "untracked in it\n"
    assert topic.branch in branches(home_repo)


def test_teardown_refuses_files_in_the_directory_of_a_gitlink_no_gitmodules_names(
    home_repo, workspace
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    nested = gitlink_without_gitmodules(topic, workspace)
    git(wt, "push", "-q", "origin", f"{topic.branch}:main")  # the branch's work is integrated
    shutil.rmtree(nested / ".git")  # its repository gone: git no longer looks inside
    assert status(wt) == ""  # the files left there are invisible to git

    for flags in (("--force",), ()):
        res = teardown(topic, *flags)
        assert res.code == 1, res.out
        assert error_code(res) == "nested-work", res.out
        message = res.json["error"]["message"]
        assert "vendor/tool (1 untracked file(s): README.md" in message, message
    assert (nested / "README.md").read_text() == "# tool\n"

    shutil.move(str(nested / "README.md"), str(workspace / "tool-README.md"))  # the fix named
    res = teardown(topic)
    assert res.code == 0, res.out


def test_an_in_place_plan_dir_holding_unpushed_commits_refuses_before_anything_is_removed(
    workspace,
):
    home = make_repo(workspace, "web")
    write(home / ".claude" / "worktrees" / TOPIC_ID / "blocker.txt", "a taken path\n")
    res = run_cli("new", "x", "--id", TOPIC_ID, "--json", cwd=home)
    assert res.json["home"]["status"] == "fallback", res.out  # the plan dir is in the primary
    topic = Topic(TOPIC_ID, home, Path(res.json["plan_dir"]), {"home": home})
    api = make_repo(workspace, "api")
    write_repos_md(topic, {"api": api})
    res = run_cli("worktrees", str(topic.plan_dir), "--json", cwd=home)
    assert res.code == 0, res.out
    api_wt = Path(next(r["worktree"] for r in res.json["repos"] if r["name"] == "api"))
    clone = topic.plan_dir / "research" / "scratch"
    git(workspace, "init", "-q", "-b", "main", str(clone))
    sha = commit(clone, "probe.py", "p\n", "a repository that exists only here")
    before = refs_of(home), refs_of(api), worktree_paths(api)

    for flags in ((), ("--force",)):
        res = teardown(topic, *flags)
        assert res.code == 1, res.out
        assert error_code(res) == "nested-work", res.out
        plan_dir = steps_of(res.json, "home")["plan-dir"]
        assert plan_dir["outcome"] == "refused", plan_dir
        assert "nested repository research/scratch (1 commit(s)" in plan_dir["detail"]
    assert (refs_of(home), refs_of(api), worktree_paths(api)) == before
    assert api_wt.is_dir() and TOPIC_ID in branches(api)
    assert git(clone, "cat-file", "-t", sha) == "commit"


# -- a submodule commit a pushed tag holds -------------------------------------------------


def test_a_submodule_commit_only_a_tag_holds_refuses_until_the_tag_is_on_its_remote(sub_topic):
    wt = sub_topic.worktrees["home"]
    sub = wt / "lib"
    sha = commit(sub, "lib.py", "v = 1\n", "released from a detached HEAD")
    git(sub, "tag", "-a", "-m", "release 1", "v1")  # annotated: the remote's ref names the tag
    git(sub, "tag", "v1-light", sha)
    git(sub, "checkout", "-q", "HEAD~1")  # the recorded commit: only the tags hold sha
    git(sub, "reflog", "expire", "--expire-unreachable=now", "--all")
    assert status(wt) == "" and git(sub, "branch", "--all", "--contains", sha) == ""

    res = teardown(sub_topic)  # the tags exist only here
    assert res.code == 1 and error_code(res) == "nested-work", res.out
    assert "submodule lib (1 commit(s)" in res.json["error"]["message"], res.out

    git(sub, "push", "-q", "origin", "HEAD:refs/tags/v1")  # the remote's v1 is another commit
    res = teardown(sub_topic)
    assert res.code == 1 and error_code(res) == "nested-work", res.out

    git(sub, "push", "-q", "--force", "origin", "v1")
    res = teardown(sub_topic)
    assert res.code == 0, res.out
    assert not wt.exists()
    origin = git(sub_topic.home / "lib", "remote", "get-url", "origin")
    assert git(Path(origin), "rev-parse", "v1^{commit}") == sha
