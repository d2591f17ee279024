"""Creation's ``submodules`` stage: a new worktree gets the primary's submodules (DESIGN §7).

Real submodules from local bare origins; "unreachable" means those origins
were moved away after the primary was cloned, so any fetch or clone fails.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers.faults import CRASHED, KILLED, git_logger, git_verbs, git_wrapper, run
from helpers.repos import branches, commit, git, make_repo, run_cli, status, worktree_paths
from helpers.submodules import (
    common_dir,
    make_unreachable,
    recorded,
    remote_talk,
    web_with_submodules,
)

from router.topic import state

ID = "2026-05-01-add-thing"
NEW = ("new", "Add thing", "--date", "2026-05-01", "--json")


@pytest.fixture
def web(workspace: Path) -> Path:
    """Home repo ``web`` with submodules ``libs/one`` and ``libs/two``, initialised in the primary."""
    return web_with_submodules(workspace)


def _assert_whole(web: Path, worktree: Path) -> None:
    """Both submodules checked out at the recorded commits, clean, with git dirs git expects."""
    admin = common_dir(web) / "worktrees" / worktree.name
    for name in ("one", "two"):
        path = f"libs/{name}"
        sub = worktree / path
        assert git(sub, "rev-parse", "HEAD") == recorded(worktree, path)
        assert (sub / "lib.py").read_text() == f"name = {name!r}\n"
        assert status(sub) == ""
        module = admin / "modules" / path
        assert Path(git(sub, "rev-parse", "--absolute-git-dir")) == module
        # Connected both ways, as `git submodule update` connects one it clones.
        worktree_of = git(module, "config", "core.worktree")
        assert not os.path.isabs(worktree_of) and (module / worktree_of).resolve() == sub.resolve()
        # The primary's objects are borrowed, not copied.
        alternates = (module / "objects" / "info" / "alternates").read_text().strip()
        assert alternates == str(common_dir(web) / "modules" / path / "objects")
        # Its remote and remote-tracking refs are the primary's copy's, as a clone would have.
        primary_sub = web / path
        assert git(sub, "remote", "get-url", "origin") == git(
            primary_sub, "remote", "get-url", "origin"
        )
        assert git(sub, "rev-parse", "origin/main") == git(primary_sub, "rev-parse", "origin/main")
    assert status(worktree) == ""


@pytest.mark.parametrize("git_format", ["sha1", "sha256"], indirect=True)
def test_new_checks_out_the_primarys_submodules_from_its_objects_with_their_remotes_gone(
    workspace, web, tmp_path
):
    make_unreachable(workspace)
    trace = tmp_path / "trace.json"
    res = run(*NEW, cwd=web, env={"GIT_TRACE2_EVENT": str(trace)})
    assert res.code == 0, res.err
    worktree = web / ".claude/worktrees" / ID
    assert res.json["home"]["status"] == "created"
    assert res.json["warnings"] == []
    assert res.json["home"]["submodules"] == [
        {
            "path": f"libs/{n}",
            "name": f"libs/{n}",
            "commit": recorded(worktree, f"libs/{n}"),
            "status": "checked-out",
            "detail": None,
        }
        for n in ("one", "two")
    ]
    _assert_whole(web, worktree)
    # Nothing was fetched nor cloned for the submodules: the only fetch is the
    # superproject's own, from web's origin.
    network = remote_talk(trace)
    assert network == [
        ["git", "-C", str(web), "-c", "core.fsmonitor=", "fetch", "--quiet", "--prune", "origin"]
    ] or all(argv[2] == str(web) and argv[-1] == "origin" for argv in network), network
    record = state.read_record(web / ".git", ID)
    assert record is not None and "submodules" in record.steps and not record.creating


def test_the_text_report_says_what_was_done_for_each_submodule(web):
    res = run_cli("new", "Add thing", "--date", "2026-05-01", cwd=web)
    assert res.code == 0, res.err
    worktree = web / ".claude/worktrees" / ID
    one, two = (recorded(worktree, f"libs/{n}")[:12] for n in ("one", "two"))
    assert res.out.splitlines() == [
        f"Topic {ID} (branch {ID})",
        f"home: created {worktree} from {git(web, 'rev-parse', 'origin/main')[:12]}",
        f"  submodules: libs/one checked-out at {one}; libs/two checked-out at {two}",
        f"Artifact directory: {worktree}/docs/plans/{ID}",
    ]
    # A second run is about a finished worktree: its submodules are the user's, untouched.
    again = run_cli(*NEW, cwd=web)
    assert again.json["home"]["status"] == "existing"
    assert again.json["home"]["submodules"] == []


def test_a_submodule_that_cannot_be_checked_out_is_a_warning_naming_it_not_a_fallback(
    workspace, web
):
    # libs/two: the branch records a commit the primary's copy does not have
    # (pushed from elsewhere, never fetched here); libs/one: deinitialised in the primary.
    other = workspace / "elsewhere"
    git(workspace, "clone", "-q", git(web / "libs/two", "remote", "get-url", "origin"), str(other))
    new_commit = commit(other, "lib.py", "name = 'newer'\n", "two: only on its origin")
    git(other, "push", "-q", "origin", "main")
    git(web / "libs/two", "checkout", "-q", "--detach")  # keep the primary's copy where it is
    git(web, "update-index", "--cacheinfo", f"160000,{new_commit},libs/two")
    git(web, "commit", "-q", "-m", "bump libs/two to a commit the primary never fetched")
    git(web, "push", "-q", "origin", "main")
    git(web, "submodule", "deinit", "-q", "--", "libs/one")
    make_unreachable(workspace)

    res = run(*NEW, cwd=web)
    assert res.code == 0, res.err
    worktree = web / ".claude/worktrees" / ID
    home = res.json["home"]
    assert home["status"] == "created" and home["worktree"] == str(worktree)
    one, two = home["submodules"]
    assert one["status"] == "skipped" and one["detail"] == f"not initialised in {web}"
    assert two["status"] == "failed" and two["commit"] == new_commit
    module = common_dir(web) / "modules" / "libs/two"
    assert two["detail"] == f"commit {new_commit[:12]} is not in {module}: fetch it there first"
    assert res.json["warnings"] == [
        f"home: submodule libs/two was not checked out in {worktree} ({two['detail']}); the "
        f"worktree is made without it: `git -C {worktree} submodule update --init -- libs/two` "
        "fetches it"
    ]
    # Neither was touched: no git dir made, the directories git left empty as they were.
    admin = common_dir(web) / "worktrees" / ID
    assert not (admin / "modules").exists()
    assert os.listdir(worktree / "libs/one") == [] and os.listdir(worktree / "libs/two") == []


@pytest.mark.parametrize("step", ["submodules", "setup", "record"])
def test_new_killed_at_or_after_the_stage_is_finished_by_running_it_again(workspace, web, step):
    make_unreachable(workspace)
    crashed = run(*NEW, cwd=web, crash_at=step)
    assert crashed.code == CRASHED, crashed.err
    again = run(*NEW, cwd=web)
    assert again.code == 0, again.err
    assert again.json["home"]["status"] == "existing"
    assert again.json["warnings"] == []
    worktree = web / ".claude/worktrees" / ID
    statuses = [s["status"] for s in again.json["home"]["submodules"]]
    # Before the stage ran, the rerun checks both out; after, it finds them there.
    assert statuses == (["checked-out"] * 2 if step == "submodules" else [])
    _assert_whole(web, worktree)
    assert worktree_paths(web) == [str(web), str(worktree)]


def test_a_sigkill_mid_checkout_is_finished_by_the_rerun(workspace, web, tmp_path):
    make_unreachable(workspace)
    # libs/two's real `git checkout` runs; then, once libs/one's (run at the same
    # time) has finished, as a kill in the middle of libs/two's checkout would
    # leave it, libs/two has no index yet but the lock, and only part of its
    # files; then the whole process group is SIGKILLed.
    modules = common_dir(web) / "worktrees" / ID / "modules"
    module = modules / "libs/two"
    sub = web / ".claude/worktrees" / ID / "libs/two"
    one_done = (
        f"for _ in $(seq 200); do [ -f '{modules}/libs/one/index' ] && break; sleep 0.05; done"
    )
    cut_short = f"rm -f '{module}/index' '{sub}/lib.py'; : > '{module}/index.lock'\nkill -KILL 0"
    env = git_wrapper(
        tmp_path / "bin",
        f"{sub} -c core.fsmonitor= checkout",
        f'"$REAL_GIT" "$@"\n{one_done}\n{cut_short}',
    )
    killed = run(*NEW, cwd=web, env=env, new_group=True)
    assert killed.code == KILLED, killed.err
    assert not (sub / "lib.py").exists() and (module / "index.lock").exists()

    again = run(*NEW, cwd=web)
    assert again.code == 0, again.err
    assert [s["status"] for s in again.json["home"]["submodules"]] == ["present", "checked-out"]
    _assert_whole(web, web / ".claude/worktrees" / ID)
    assert not (module / "index.lock").exists()


def test_a_kill_as_a_submodules_git_file_is_made_is_finished_by_the_rerun(workspace, web, tmp_path):
    make_unreachable(workspace)
    # Killed between making libs/two's .git file and writing its one line: no checkout ran
    # (checking it out writes the file again).
    sub = web / ".claude/worktrees" / ID / "libs/two"
    env = git_wrapper(
        tmp_path / "bin", f"{sub} -c core.fsmonitor= checkout", f": > '{sub}/.git'\nkill -KILL 0"
    )
    killed = run(*NEW, cwd=web, env=env, new_group=True)
    assert killed.code == KILLED, killed.err
    assert (sub / ".git").read_text() == ""

    again = run(*NEW, cwd=web)
    assert again.code == 0, again.err
    assert [s["status"] for s in again.json["home"]["submodules"]][1] == "checked-out"
    assert again.json["warnings"] == []
    _assert_whole(web, web / ".claude/worktrees" / ID)


def test_the_submodules_are_checked_out_by_one_git_checkout_each_and_no_git_submodule(
    web, tmp_path
):
    log = tmp_path / "git.log"
    res = run(*NEW, cwd=web, env=git_logger(tmp_path / "bin", log))
    assert res.code == 0, res.err
    worktree = web / ".claude/worktrees" / ID
    verbs = git_verbs(log)
    assert verbs["checkout"] == 2 and "submodule" not in verbs, verbs
    # Per submodule: is the commit there, its remotes, the git dir, its refs.
    assert (verbs["cat-file"], verbs["init"], verbs["for-each-ref"]) == (2, 2, 2), verbs
    _assert_whole(web, worktree)


def test_a_kill_while_a_submodule_git_dir_is_made_leaves_nothing_the_rerun_trips_on(
    workspace, web, tmp_path
):
    make_unreachable(workspace)
    # Killed right after the git dir being made got its refs, before it is renamed into place.
    env = git_wrapper(
        tmp_path / "bin", "update-ref --no-deref --stdin", '"$REAL_GIT" "$@"\nkill -KILL 0'
    )
    killed = run(*NEW, cwd=web, env=env, new_group=True)
    assert killed.code == KILLED, killed.err
    modules = common_dir(web) / "worktrees" / ID / "modules" / "libs"
    assert os.listdir(modules) == ["one.team-router-making"]

    again = run(*NEW, cwd=web)
    assert again.code == 0, again.err
    assert [s["status"] for s in again.json["home"]["submodules"]] == ["checked-out"] * 2
    assert sorted(os.listdir(modules)) == ["one", "two"]
    _assert_whole(web, web / ".claude/worktrees" / ID)


def test_worktrees_checks_out_a_secondarys_submodules_too(workspace, web):
    api = make_repo(workspace, "api")
    lib = make_repo(workspace, "libapi")
    git(api, "submodule", "add", "-q", git(lib, "remote", "get-url", "origin"), "vendor/lib")
    git(api, "commit", "-q", "-m", "add vendor/lib")
    git(api, "push", "-q", "origin", "main")
    made = run_cli(*NEW, cwd=web)
    plan = Path(made.json["plan_dir"])
    (plan / "repos.md").write_text(
        f"# Repos\n\n## Home repo\n- **name:** web\n- **path:** {web}\n\n"
        f"## Additional repos\n- **name:** api\n  **path:** {api}\n",
        encoding="utf-8",
    )
    shutil.move(workspace.parent / "origins" / "libapi.git", workspace.parent / "libapi.moved")
    res = run_cli("worktrees", ID, "--json", cwd=web)
    assert res.code == 0, res.out + res.err
    repos = {r["name"]: r for r in res.json["repos"]}
    worktree = api / ".claude/worktrees" / ID
    assert repos["api"]["submodules"] == [
        {
            "path": "vendor/lib",
            "name": "vendor/lib",
            "commit": recorded(worktree, "vendor/lib"),
            "status": "checked-out",
            "detail": None,
        }
    ]
    assert git(worktree / "vendor/lib", "rev-parse", "HEAD") == recorded(worktree, "vendor/lib")
    assert status(worktree) == ""


# -- submodules of submodules ------------------------------------------------------------


@pytest.mark.parametrize("git_format", ["sha1", "sha256"], indirect=True)
def test_new_checks_out_the_nested_submodules_the_primary_initialised_from_its_nested_git_dirs(
    workspace, tmp_path
):
    web = web_with_submodules(workspace, nested=True)
    make_unreachable(workspace)
    trace = tmp_path / "trace.json"
    res = run(*NEW, cwd=web, env={"GIT_TRACE2_EVENT": str(trace)})
    assert res.code == 0, res.err
    worktree = web / ".claude/worktrees" / ID
    one = worktree / "libs/one"
    deep = recorded(one, "deps/deep")
    assert res.json["warnings"] == []
    assert res.json["home"]["submodules"] == [
        {
            "path": path,
            "name": name,
            "commit": commit,
            "status": "checked-out",
            "detail": None,
        }
        for path, name, commit in (
            ("libs/one", "libs/one", recorded(worktree, "libs/one")),
            ("libs/one/deps/deep", "deps/deep", deep),
            ("libs/two", "libs/two", recorded(worktree, "libs/two")),
        )
    ]
    _assert_whole(web, worktree)
    sub = one / "deps/deep"
    assert git(sub, "rev-parse", "HEAD") == deep
    assert (sub / "deep.py").read_text() == "deep = True\n"
    assert status(sub) == "" and status(one) == ""
    # Its git dir is the worktree's submodule's own, borrowing the primary's nested copy.
    module = common_dir(web) / "worktrees" / ID / "modules/libs/one/modules/deps/deep"
    assert Path(git(sub, "rev-parse", "--absolute-git-dir")) == module
    primary_deep = common_dir(web) / "modules/libs/one/modules/deps/deep"
    alternates = (module / "objects" / "info" / "alternates").read_text().strip()
    assert alternates == str(primary_deep / "objects")
    assert git(sub, "remote", "get-url", "origin") == git(
        web / "libs/one/deps/deep", "remote", "get-url", "origin"
    )
    # Nothing was fetched nor cloned for any of them: only the superproject's own fetch.
    network = remote_talk(trace)
    assert all(argv[2] == str(web) and argv[-1] == "origin" for argv in network), network


def test_new_killed_mid_checkout_of_a_nested_submodule_is_finished_by_the_rerun(
    workspace, tmp_path
):
    web = web_with_submodules(workspace, nested=True)
    make_unreachable(workspace)
    # deps/deep's real `git checkout` runs; then, once libs/two's (run at the same time)
    # has finished, as a kill in the middle of deep's checkout would leave it (no index
    # but the lock, part of its files), the whole process group is SIGKILLed.
    modules = common_dir(web) / "worktrees" / ID / "modules"
    module = modules / "libs/one/modules/deps/deep"
    sub = web / ".claude/worktrees" / ID / "libs/one/deps/deep"
    two_done = (
        f"for _ in $(seq 200); do [ -f '{modules}/libs/two/index' ] && break; sleep 0.05; done"
    )
    cut_short = f"rm -f '{module}/index' '{sub}/deep.py'; : > '{module}/index.lock'\nkill -KILL 0"
    env = git_wrapper(
        tmp_path / "bin",
        f"{sub} -c core.fsmonitor= checkout",
        f'"$REAL_GIT" "$@"\n{two_done}\n{cut_short}',
    )
    killed = run(*NEW, cwd=web, env=env, new_group=True)
    assert killed.code == KILLED, killed.err
    assert not (sub / "deep.py").exists() and (module / "index.lock").exists()

    again = run(*NEW, cwd=web)
    assert again.code == 0, again.err
    assert again.json["warnings"] == []
    found = [(s["path"], s["status"]) for s in again.json["home"]["submodules"]]
    assert found == [
        ("libs/one", "present"),
        ("libs/one/deps/deep", "checked-out"),
        ("libs/two", "present"),
    ]
    _assert_whole(web, web / ".claude/worktrees" / ID)
    assert git(sub, "rev-parse", "HEAD") == recorded(sub.parent.parent, "deps/deep")
    assert (sub / "deep.py").read_text() == "deep = True\n" and status(sub) == ""
    assert not (module / "index.lock").exists()


def test_a_nested_submodule_the_primary_has_not_initialised_is_left_out(workspace):
    web = web_with_submodules(workspace, nested=True)
    git(web / "libs/one", "submodule", "deinit", "-q", "--all")
    make_unreachable(workspace)
    res = run_cli("new", "Add thing", "--date", "2026-05-01", cwd=web)
    assert res.code == 0, res.err
    worktree = web / ".claude/worktrees" / ID
    one, two = (recorded(worktree, f"libs/{n}")[:12] for n in ("one", "two"))
    base = git(worktree, "rev-parse", "--short=12", "HEAD")
    assert res.out == (
        f"Topic {ID} (branch {ID})\n"
        f"home: created {worktree} from {base}\n"
        f"  submodules: libs/one checked-out at {one}; libs/one/deps/deep skipped "
        f"(not initialised in {web}/libs/one); libs/two checked-out at {two}\n"
        f"Artifact directory: {worktree}/docs/plans/{ID}\n"
    )
    assert os.listdir(worktree / "libs/one/deps/deep") == []
    assert not (common_dir(web) / "worktrees" / ID / "modules/libs/one/modules").exists()
    assert status(worktree) == "" and status(worktree / "libs/one") == ""


# -- teardown keeps such worktrees whole ---------------------------------------------------


def test_teardown_refuses_to_lose_a_commit_made_in_such_a_submodule_and_keeps_it(web):
    made = run_cli(*NEW, cwd=web)
    assert made.code == 0
    worktree = web / ".claude/worktrees" / ID
    sub = worktree / "libs/one"
    sha = commit(sub, "lib.py", "name = 'changed'\n", "only in the worktree's submodule")
    # The new commit is the worktree submodule's own object, not the primary's.
    assert not _has_object(web / "libs/one", sha)

    for flags in (("--force",), ()):
        res = run_cli("teardown", ID, *flags, "--json", cwd=web)
        assert res.code == 1, res.out
        assert res.json["error"]["code"] == "nested-work", res.out
        assert "submodule libs/one" in res.json["error"]["message"]
    assert git(sub, "rev-parse", "HEAD") == sha and git(sub, "cat-file", "-t", sha) == "commit"
    assert worktree.is_dir() and ID in branches(web)


def _has_object(repo: Path, sha: str) -> bool:
    return git(repo, "cat-file", "-t", sha, check=False) == "commit"


def test_teardown_removes_such_a_worktree_whole_its_submodule_git_dirs_included(web):
    assert run_cli(*NEW, cwd=web).code == 0
    worktree = web / ".claude/worktrees" / ID
    admin = common_dir(web) / "worktrees" / ID
    assert (admin / "modules" / "libs/one").is_dir()
    res = run_cli("teardown", ID, "--json", cwd=web)
    assert res.code == 0, res.out
    assert not worktree.exists() and not admin.exists()
    assert worktree_paths(web) == [str(web)] and ID not in branches(web)
    # The primary's own submodules are as they were.
    for name in ("one", "two"):
        assert status(web / f"libs/{name}") == ""
    assert status(web) == ""


def test_teardown_removes_such_a_worktree_with_the_submodules_remotes_gone(workspace, web):
    # Every commit the worktree's submodules reach is in the primary's copy, on its
    # refs: deleting the worktree's git dirs loses none, though no remote holds them.
    make_unreachable(workspace)
    assert run(*NEW, cwd=web).code == 0
    worktree = web / ".claude/worktrees" / ID
    res = run_cli("teardown", ID, "--json", cwd=web)
    assert res.code == 0, res.out
    assert not worktree.exists() and not (common_dir(web) / "worktrees" / ID).exists()
    for name in ("one", "two"):
        assert status(web / f"libs/{name}") == ""


def test_a_commit_in_such_a_submodule_is_kept_with_its_remotes_gone_too(workspace, web):
    make_unreachable(workspace)
    assert run(*NEW, cwd=web).code == 0
    sub = web / ".claude/worktrees" / ID / "libs/two"
    sha = commit(sub, "lib.py", "name = 'mine'\n", "only here")
    res = run_cli("teardown", ID, "--force", "--json", cwd=web)
    assert res.code == 1 and res.json["error"]["code"] == "nested-work", res.out
    assert "submodule libs/two (1 commit(s)" in res.json["error"]["message"]
    assert git(sub, "rev-parse", "HEAD") == sha


def test_teardown_removes_a_worktree_with_nested_submodules_whole_their_remotes_gone(workspace):
    web = web_with_submodules(workspace, nested=True)
    make_unreachable(workspace)
    assert run(*NEW, cwd=web).code == 0
    worktree = web / ".claude/worktrees" / ID
    res = run_cli("teardown", ID, "--json", cwd=web)
    assert res.code == 0, res.out
    remove = next(s for s in res.json["repos"][0]["steps"] if s["name"] == "remove")
    assert remove["detail"] == (
        f"removed {worktree}; the repositories inside, holding nothing unpushed, go with it: "
        "submodule libs/one, nested repository libs/one/deps/deep, submodule libs/two"
    )
    assert not worktree.exists() and not (common_dir(web) / "worktrees" / ID).exists()
    assert status(web / "libs/one/deps/deep") == "" and status(web) == ""


def test_teardown_refuses_to_lose_a_commit_made_in_a_nested_submodule_and_keeps_it(workspace):
    web = web_with_submodules(workspace, nested=True)
    assert run(*NEW, cwd=web).code == 0
    deep = web / ".claude/worktrees" / ID / "libs/one/deps/deep"
    sha = commit(deep, "deep.py", "deep = 'mine'\n", "only in the worktree's nested submodule")
    for flags in (("--force",), ()):
        res = run_cli("teardown", ID, *flags, "--json", cwd=web)
        assert res.code == 1 and res.json["error"]["code"] == "nested-work", res.out
        assert "nested repository libs/one/deps/deep (1 commit(s)" in res.json["error"]["message"]
    assert git(deep, "rev-parse", "HEAD") == sha and git(deep, "cat-file", "-t", sha) == "commit"


def test_a_gitmodules_git_cannot_read_is_a_warning_and_the_worktree_is_made(home_repo):
    commit(home_repo, ".gitmodules", '[submodule "lib"\n\tpath = lib\n', "a broken .gitmodules")
    git(home_repo, "push", "-q", "origin", "main")
    res = run_cli(*NEW, cwd=home_repo)
    assert res.code == 0, res.out + res.err
    worktree = home_repo / ".claude/worktrees" / ID
    assert res.json["home"]["status"] == "created" and (worktree / ".gitmodules").is_file()
    (failed,) = res.json["home"]["submodules"]
    assert failed["status"] == "failed" and failed["path"] == ".gitmodules"
    assert (
        failed["detail"]
        == "cannot list the submodules: fatal: bad config line 2 in file .gitmodules"
    )
    # git's own fetch reads .gitmodules too, and says so in a warning of its own.
    assert res.json["warnings"][-1:] == [
        f"home: the submodules of {worktree} were not checked out ({failed['detail']}); the "
        f"worktree is made without them: `git -C {worktree} submodule update --init` fetches them"
    ]
