"""``restore`` checks a restored worktree's submodules out as ``new`` does (DESIGN §7, §9).

From the primary's own submodule objects, each at the commit the snapshot's
tree records (where it was), with the submodules' remotes unreachable.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers.faults import CRASHED, KILLED, git_wrapper, run
from helpers.repos import commit, git, run_cli, status
from helpers.submodules import (
    common_dir,
    make_unreachable,
    recorded,
    remote_talk,
    web_with_submodules,
)

from router.teardown.snapshot import snapshot_ref

ID = "2026-05-01-add-thing"
NEW = ("new", "Add thing", "--date", "2026-05-01", "--json")
RESTORE = ("restore", ID, "--json")


@pytest.fixture
def web(workspace: Path) -> Path:
    """Home repo ``web`` with submodules ``libs/one`` and ``libs/two``, initialised in the primary."""
    return web_with_submodules(workspace)


def _torn_down(workspace: Path, web: Path) -> dict[str, str]:
    """A worktree whose submodules were moved, torn down with --force; where each was.

    ``libs/one`` back at its first commit; ``libs/two`` at a commit made in the
    worktree's submodule and pushed, which the primary's copy then fetched. A
    draft file beside them. Then the submodules' remotes become unreachable.
    """
    assert run_cli(*NEW, cwd=web).code == 0
    worktree = web / ".claude/worktrees" / ID
    one = git(worktree / "libs/one", "rev-parse", "HEAD~1")
    git(worktree / "libs/one", "checkout", "-q", "--detach", one)
    two = commit(worktree / "libs/two", "lib.py", "name = 'mine'\n", "made in the worktree")
    git(worktree / "libs/two", "push", "-q", "origin", "HEAD:main")
    git(web / "libs/two", "fetch", "-q", "origin")
    (worktree / "draft.txt").write_text("draft\n")
    make_unreachable(workspace)
    res = run_cli("teardown", ID, "--force", "--json", cwd=web)
    assert res.code == 0, res.out
    assert not worktree.exists()
    return {"libs/one": one, "libs/two": two}


def _assert_back(web: Path, path: Path, where: dict[str, str]) -> None:
    """Each submodule checked out where it was, from the primary's objects; the work back."""
    admin = common_dir(web) / "worktrees" / path.name
    for sub, at in where.items():
        assert git(path / sub, "rev-parse", "HEAD") == at
        assert status(path / sub) == ""
        module = admin / "modules" / sub
        assert Path(git(path / sub, "rev-parse", "--absolute-git-dir")) == module
        alternates = (module / "objects" / "info" / "alternates").read_text().strip()
        assert alternates == str(common_dir(web) / "modules" / sub / "objects")
    assert (path / "libs/two/lib.py").read_text() == "name = 'mine'\n"
    assert (path / "draft.txt").read_text() == "draft\n"
    # As before the teardown: both submodules moved from what the branch records.
    lines = git(path, "status", "--porcelain").splitlines()
    assert sorted(line.strip() for line in lines) == ["?? draft.txt", "M libs/one", "M libs/two"]


def _files_differing(worktree: Path, snap: str) -> list[str]:
    """The files of the snapshot's tree (submodules aside) the worktree does not hold as it has them."""
    differing = []
    for entry in git(worktree, "ls-tree", "-r", snap).splitlines():
        meta, _, path = entry.partition("\t")
        _mode, kind, blob = meta.split()
        if kind == "blob" and git(worktree, "hash-object", "--", path) != blob:
            differing.append(path)
    return differing


def _outcomes(where: dict[str, str], status: str = "checked-out") -> list[dict[str, object]]:
    return [
        {"path": sub, "name": sub, "commit": at, "status": status, "detail": None}
        for sub, at in where.items()
    ]


@pytest.mark.parametrize("git_format", ["sha1", "sha256"], indirect=True)
def test_restore_checks_the_submodules_out_where_they_were_from_the_primarys_objects(
    workspace, web, tmp_path
):
    where = _torn_down(workspace, web)
    trace = tmp_path / "trace.json"
    res = run(*RESTORE, cwd=web, env={"GIT_TRACE2_EVENT": str(trace)})
    assert res.code == 0, res.err
    (repo,) = res.json["repos"]
    assert repo["status"] == "restored"
    assert repo["submodules"] == _outcomes(where)
    assert res.json["warnings"] == []
    _assert_back(web, Path(repo["worktree"]), where)
    assert remote_talk(trace) == []  # restore talked to no remote at all


def test_the_text_report_of_restore_says_what_was_done_for_each_submodule(workspace, web):
    where = _torn_down(workspace, web)
    res = run_cli("restore", ID, cwd=web)
    assert res.code == 0, res.err
    path = web / ".claude/worktrees" / ID
    one, two = (at[:12] for at in where.values())
    lines = res.out.splitlines()
    assert lines[0].startswith(f"home: restored: worktree {path} on {ID}; "), res.out
    assert lines[1:] == [
        f"  submodules: libs/one checked-out at {one}; libs/two checked-out at {two}"
    ]


@pytest.mark.parametrize("kill", ["seam", "mid-checkout"])
def test_a_restore_killed_in_its_submodules_part_is_finished_by_the_rerun(
    workspace, web, tmp_path, kill
):
    where = _torn_down(workspace, web)
    path = web / ".claude/worktrees" / ID
    if kill == "seam":
        killed = run(*RESTORE, cwd=web, crash_at="submodules")
        assert killed.code == CRASHED, killed.err
        # The files are back, the submodules not yet.
        assert (path / "draft.txt").is_file() and os.listdir(path / "libs/one") == []
    else:
        # libs/two's real `git checkout` runs; then, once libs/one's (run at the same
        # time) has finished, as a kill in the middle of libs/two's checkout would
        # leave it, libs/two has no index yet but the lock and only part of its files;
        # then the whole process group is SIGKILLed.
        modules = common_dir(web) / "worktrees" / ID / "modules"
        module, sub = modules / "libs/two", path / "libs/two"
        one_done = (
            f"for _ in $(seq 200); do [ -f '{modules}/libs/one/index' ] && break; sleep 0.05; done"
        )
        cut_short = (
            f"rm -f '{module}/index' '{sub}/lib.py'; : > '{module}/index.lock'\nkill -KILL 0"
        )
        env = git_wrapper(
            tmp_path / "bin",
            f"{sub} -c core.fsmonitor= checkout",
            f'"$REAL_GIT" "$@"\n{one_done}\n{cut_short}',
        )
        killed = run(*RESTORE, cwd=web, env=env, new_group=True)
        assert killed.code == KILLED, killed.err
        assert not (sub / "lib.py").exists() and (module / "index.lock").exists()

    again = run(*RESTORE, cwd=web)
    assert again.code == 0, again.err
    (repo,) = again.json["repos"]
    assert repo["status"] == "restored" and repo["worktree"] == str(path)
    if kill == "seam":
        assert repo["submodules"] == _outcomes(where)
    else:
        assert [s["status"] for s in repo["submodules"]] == ["present", "checked-out"]
    assert again.json["warnings"] == []
    _assert_back(web, path, where)
    # Finished: a third run finds the restore done and changes nothing.
    third = run(*RESTORE, cwd=web)
    assert third.json["repos"][0]["status"] == "existing"


def test_a_submodule_restore_cannot_check_out_is_a_warning_and_nothing_is_lost(workspace, web):
    # libs/two is moved to a commit made in the worktree and pushed, which the primary's
    # copy never fetched; then its remote goes. The restore has nothing to check it out from.
    assert run_cli(*NEW, cwd=web).code == 0
    worktree = web / ".claude/worktrees" / ID
    two = commit(worktree / "libs/two", "lib.py", "name = 'mine'\n", "made in the worktree")
    git(worktree / "libs/two", "push", "-q", "origin", "HEAD:main")
    (worktree / "draft.txt").write_text("draft\n")
    (worktree / "README.md").write_text("# web, edited\n")
    assert run_cli("teardown", ID, "--force", "--json", cwd=web).code == 0
    snap = git(web, "rev-parse", snapshot_ref(ID))
    make_unreachable(workspace)

    res = run(*RESTORE, cwd=web)
    assert res.code == 0, res.err
    (repo,) = res.json["repos"]
    assert repo["status"] == "restored" and repo["worktree"] == str(worktree)
    module = common_dir(web) / "modules/libs/two"
    detail = f"commit {two[:12]} is not in {module}: fetch it there first"
    assert repo["submodules"] == [
        {
            "path": "libs/one",
            "name": "libs/one",
            "commit": recorded(worktree, "libs/one"),
            "status": "checked-out",
            "detail": None,
        },
        {
            "path": "libs/two",
            "name": "libs/two",
            "commit": two,
            "status": "failed",
            "detail": detail,
        },
    ]
    assert res.json["warnings"] == [
        f"home: submodule libs/two was not checked out in {worktree} ({detail}); the worktree "
        f"is made without it: `git -C {worktree} submodule update --init -- libs/two` fetches "
        f"it, then `git -C {worktree}/libs/two checkout --detach {two}` puts it where it was"
    ]
    # Every file of the superproject is back as the snapshot has it; libs/two is left
    # as git leaves a submodule it has not checked out, with no git dir made for it.
    assert (worktree / "draft.txt").read_text() == "draft\n"
    assert (worktree / "README.md").read_text() == "# web, edited\n"
    assert _files_differing(worktree, snap) == []
    assert os.listdir(worktree / "libs/two") == []
    assert not (common_dir(web) / "worktrees" / ID / "modules/libs/two").exists()
    assert git(web, "rev-parse", snapshot_ref(ID)) == snap

    # The commit is on its remote: once that is back, the warning's commands bring it back.
    gone = workspace.parent / "gone"
    shutil.move(gone / "libtwo.git", workspace.parent / "origins" / "libtwo.git")
    git(worktree, "submodule", "update", "-q", "--init", "--", "libs/two")
    git(worktree / "libs/two", "checkout", "-q", "--detach", two)
    assert (worktree / "libs/two/lib.py").read_text() == "name = 'mine'\n"
