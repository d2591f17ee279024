"""What a worktree's submodules borrow from the primary survives the primary's ``git gc``.

A worktree's submodule git dir borrows the primary's objects (``clone
--shared``'s risk): the commit it is checked out at is pinned by a ref in the
primary's git dir of that submodule until the worktree is removed. Real
submodules from local bare origins; the primary is made to lose every ref
reaching the recorded commit, as an upstream force-push and a pruning fetch
do, then gc'd with every reflog expired.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.faults import git_logger, git_verbs, git_wrapper, run
from helpers.repos import commit, git, run_cli, status
from helpers.submodules import common_dir, recorded, web_with_submodules

from router.git.files import SETTLED_NS

ID = "2026-05-01-add-thing"
NEW = ("new", "Add thing", "--date", "2026-05-01", "--json")
PIN = f"refs/team-router/borrowed/{ID}/checkout"
KEPT = f"refs/team-router/borrowed/{ID}/kept/"


def _pins(module: Path) -> str:
    return git(module, "for-each-ref", "--format=%(objectname) %(refname)", "refs/team-router/")


def _fsck(checkout: Path) -> tuple[int, str]:
    """``git fsck --connectivity-only``: every object every ref and HEAD reach is there."""
    proc = subprocess.run(
        ["git", "-C", str(checkout), "fsck", "--connectivity-only", "--no-dangling"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr


def _primary_forgets(web: Path, path: str) -> str:
    """Upstream force-pushes its branch one commit back, the primary's copy of ``path``
    follows (its checkout, its branch, a pruning fetch), every reflog expires and gc prunes:
    no ref of the primary's own reaches the commit the superproject records. That commit."""
    sub = web / path
    gone = git(sub, "rev-parse", "HEAD")
    back = git(sub, "rev-parse", "HEAD^")
    git(sub, "checkout", "-q", "--detach", back)
    git(sub, "push", "-q", "--force", "origin", f"{back}:refs/heads/main")
    git(sub, "branch", "-q", "-f", "main", back)
    git(sub, "fetch", "-q", "--prune", "origin")
    module = common_dir(web) / "modules" / path
    git(module, "reflog", "expire", "--expire=now", "--all")
    git(module, "gc", "-q", "--prune=now")
    return gone


@pytest.mark.parametrize("git_format", ["sha1", "sha256"], indirect=True)
def test_a_worktrees_submodule_stays_whole_when_the_primary_prunes_its_commit(workspace):
    web = web_with_submodules(workspace)
    res = run(*NEW, cwd=web)
    assert res.code == 0, res.err
    worktree = web / ".claude/worktrees" / ID
    sub = worktree / "libs/one"
    at = recorded(worktree, "libs/one")
    # A commit of the user's own in the borrowed submodule: its objects are the
    # worktree's, its parent and the blobs its tree shares are the primary's.
    mine = commit(sub, "notes.txt", "mine\n", "only in the worktree's submodule")
    module = common_dir(web) / "modules/libs/one"

    assert _primary_forgets(web, "libs/one") == at

    assert _fsck(sub) == (0, "")
    # Only the pin keeps it in the primary.
    assert git(module, "for-each-ref", "--contains", at, "--format=%(refname)") == PIN
    assert git(sub, "log", "--format=%H", "-2").splitlines() == [mine, at]
    assert git(sub, "show", f"{at}:lib.py") == "name = 'one'"
    assert status(sub) == ""
    # The other submodule lost nothing either, and teardown still sees the user's commit.
    assert _fsck(worktree / "libs/two") == (0, "")
    refused = run_cli("teardown", ID, "--json", cwd=web)
    assert refused.code == 1 and refused.json["error"]["code"] == "nested-work", refused.out
    assert git(sub, "rev-parse", "HEAD") == mine


def test_teardown_drops_the_pins_of_every_submodule_nested_ones_too(workspace):
    web = web_with_submodules(workspace, nested=True)
    assert run(*NEW, cwd=web).code == 0
    worktree = web / ".claude/worktrees" / ID
    modules = common_dir(web) / "modules"
    pinned = {
        "libs/one": recorded(worktree, "libs/one"),
        "libs/one/modules/deps/deep": recorded(worktree / "libs/one", "deps/deep"),
        "libs/two": recorded(worktree, "libs/two"),
    }
    for module, at in pinned.items():
        assert _pins(modules / module) == f"{at} {PIN}", module
    res = run_cli("teardown", ID, "--json", cwd=web)
    assert res.code == 0, res.out
    assert not worktree.exists()
    for module in pinned:
        assert _pins(modules / module) == "", module
    assert status(web / "libs/one/deps/deep") == "" and status(web) == ""


def test_doctor_lists_a_pin_whose_worktree_git_removed_and_repair_drops_it(workspace):
    web = web_with_submodules(workspace)
    assert run(*NEW, cwd=web).code == 0
    worktree = web / ".claude/worktrees" / ID
    at = {n: recorded(worktree, f"libs/{n}") for n in ("one", "two")}
    clean = run_cli("doctor", "--json", cwd=web)
    assert clean.code == 0 and clean.json["findings"] == [], clean.out
    # git alone knows nothing of the pins: they stay behind.
    git(web, "worktree", "remove", "--force", "--force", str(worktree))
    modules = common_dir(web) / "modules"

    found = run_cli("doctor", "--json", cwd=web)
    assert found.code == 0, found.out
    assert [
        (f["kind"], f["path"], f["repaired"], f["detail"])
        for f in found.json["findings"]
        if f["kind"] == "stale-borrow-pin"
    ] == [
        (
            "stale-borrow-pin",
            str(modules / f"libs/{n}"),
            False,
            f"{PIN} keeps {at[n][:12]} for the worktree registered as {ID!r}, which is gone: "
            "harmless (it keeps objects `git gc` would prune); "
            "`team-router doctor --repair` drops it",
        )
        for n in ("one", "two")
    ]
    for n in ("one", "two"):
        assert _pins(modules / f"libs/{n}") == f"{at[n]} {PIN}"

    repaired = run_cli("doctor", "--repair", "--json", cwd=web)
    assert repaired.code == 0, repaired.out
    dropped = [f for f in repaired.json["findings"] if f["kind"] == "stale-borrow-pin"]
    assert [(f["repaired"], f["detail"].rpartition("; ")[2]) for f in dropped] == [
        (True, f"dropped {PIN}")
    ] * 2
    for n in ("one", "two"):
        assert _pins(modules / f"libs/{n}") == ""
    after = run_cli("doctor", "--json", cwd=web)
    assert not [f for f in after.json["findings"] if f["kind"] == "stale-borrow-pin"], after.out


def test_restore_pins_each_submodule_where_the_snapshot_had_it(workspace):
    web = web_with_submodules(workspace)
    assert run(*NEW, cwd=web).code == 0
    worktree = web / ".claude/worktrees" / ID
    one = git(worktree / "libs/one", "rev-parse", "HEAD~1")
    git(worktree / "libs/one", "checkout", "-q", "--detach", one)
    two = recorded(worktree, "libs/two")
    torn = run_cli("teardown", ID, "--force", "--json", cwd=web)
    assert torn.code == 0, torn.out
    modules = common_dir(web) / "modules"
    assert _pins(modules / "libs/one") == "" and _pins(modules / "libs/two") == ""

    res = run_cli("restore", ID, "--json", cwd=web)
    assert res.code == 0, res.out
    assert git(worktree / "libs/one", "rev-parse", "HEAD") == one
    assert _pins(modules / "libs/one") == f"{one} {PIN}"
    assert _pins(modules / "libs/two") == f"{two} {PIN}"


def test_a_submodule_git_dir_that_cannot_be_made_leaves_no_pin(workspace, tmp_path):
    web = web_with_submodules(workspace)
    # git refuses to make libs/two's git dir (after the pin was written, before
    # anything borrows): the submodule is a warning, and nothing pins for it.
    env = git_wrapper(
        tmp_path / "bin", "libs/two.team-router-making -- ", 'echo "fatal: no room" >&2; exit 128'
    )
    res = run(*NEW, cwd=web, env=env)
    assert res.code == 0, res.err
    worktree = web / ".claude/worktrees" / ID
    one, two = res.json["home"]["submodules"]
    assert (one["status"], two["status"], two["detail"]) == (
        "checked-out",
        "failed",
        "fatal: no room",
    )
    modules = common_dir(web) / "modules"
    assert _pins(modules / "libs/one") == f"{recorded(worktree, 'libs/one')} {PIN}"
    assert _pins(modules / "libs/two") == ""


def test_doctor_pins_what_a_worktree_made_without_pins_stands_on(workspace):
    web = web_with_submodules(workspace)
    assert run(*NEW, cwd=web).code == 0
    worktree = web / ".claude/worktrees" / ID
    sub = worktree / "libs/one"
    at = recorded(worktree, "libs/one")
    mine = commit(sub, "notes.txt", "mine\n", "only in the worktree's submodule")
    modules = common_dir(web) / "modules"
    admin = common_dir(web) / "worktrees" / ID
    for n in ("one", "two"):  # as a worktree an earlier version made has them: no pin
        git(modules / f"libs/{n}", "update-ref", "-d", PIN)

    found = run_cli("doctor", "--json", cwd=web)
    assert found.code == 0, found.out
    assert [(f["kind"], f["path"], f["repaired"], f["detail"]) for f in found.json["findings"]] == [
        (
            "unpinned-borrow",
            str(admin / f"modules/libs/{n}"),
            False,
            f"borrows objects from {modules / f'libs/{n}'}, and no ref there keeps them (made by "
            "an earlier version): the primary's `git gc` may prune what its checkout stands "
            f"on; `team-router doctor --repair` pins it ({PIN})",
        )
        for n in ("one", "two")
    ]
    repaired = run_cli("doctor", "--repair", "--json", cwd=web)
    assert repaired.code == 0, repaired.out
    done = [(f["repaired"], f["detail"].rpartition("; ")[2]) for f in repaired.json["findings"]]
    two = recorded(worktree, "libs/two")
    # libs/one's HEAD is the user's own commit: what it stands on is pinned.
    assert done == [(True, f"pinned {at[:12]}"), (True, f"pinned {two[:12]}")]
    assert _pins(modules / "libs/one") == f"{at} {PIN}"
    assert run_cli("doctor", "--json", cwd=web).json["findings"] == []

    _primary_forgets(web, "libs/one")
    assert _fsck(sub) == (0, "")
    assert git(sub, "log", "--format=%H", "-2").splitlines() == [mine, at]


@pytest.mark.parametrize("name", [ID, "web 2", "x..y.lock", ".hidden", "ü@{1}~^:?*[\\"])
def test_a_pin_names_any_registration_in_a_ref_git_accepts_and_gives_it_back(name):
    from router.git import borrow_pin, pinned_borrower

    ref = borrow_pin(name)
    assert subprocess.run(["git", "check-ref-format", ref], check=False).returncode == 0, ref
    assert pinned_borrower(ref) == name
    assert pinned_borrower("refs/team-router/snapshots/main") is None


def _upstream_branch(workspace: Path, web: Path, name: str = "feature") -> str:
    """Upstream gets branch ``name``, one commit past main, and the primary's copy of
    ``libs/one`` fetches it (a new worktree's submodule copies its remote-tracking refs)."""
    lib = workspace / "libone"
    git(lib, "checkout", "-q", "-b", name)
    tip = commit(lib, "feature.py", "feature = 1\n", f"one: {name}")
    git(lib, "push", "-q", "origin", name)
    git(lib, "checkout", "-q", "main")
    git(web / "libs/one", "fetch", "-q", "origin")
    return tip


def _upstream_deletes(workspace: Path, web: Path, name: str = "feature") -> None:
    """Upstream deletes branch ``name``; the primary's copy fetches with ``--prune``, every
    reflog expires and gc prunes: no ref of the primary's own reaches that branch's commits."""
    lib = workspace / "libone"
    git(lib, "push", "-q", "origin", "--delete", name)
    git(lib, "branch", "-q", "-D", name)
    git(web / "libs/one", "fetch", "-q", "--prune", "origin")
    module = common_dir(web) / "modules/libs/one"
    git(module, "reflog", "expire", "--expire=now", "--all")
    git(module, "gc", "-q", "--prune=now")


def _work_on_upstream_branch(workspace: Path, web: Path) -> tuple[Path, str, str, str]:
    """A worktree made by ``new`` whose ``libs/one`` checks out upstream's ``feature`` (only in
    the primary's objects) and commits on it: (its checkout, the recorded commit, feature's
    tip, the user's commit)."""
    tip = _upstream_branch(workspace, web)
    assert run(*NEW, cwd=web).code == 0
    worktree = web / ".claude/worktrees" / ID
    sub = worktree / "libs/one"
    at = recorded(worktree, "libs/one")
    git(sub, "checkout", "-q", "feature")  # a local branch of upstream's, as `git switch` makes
    mine = commit(sub, "notes.txt", "mine\n", "on upstream's feature branch")
    return sub, at, tip, mine


def _still_whole(web: Path, sub: Path, mine: str, tip: str, at: str) -> None:
    """The borrower's branch stands on objects that are all there, and teardown still refuses
    to lose the user's commit."""
    assert _fsck(sub) == (0, "")
    assert git(sub, "log", "--format=%H", "-3").splitlines() == [mine, tip, at]
    assert git(sub, "show", f"{tip}:feature.py") == "feature = 1"
    assert status(sub) == ""
    refused = run_cli("teardown", ID, "--json", cwd=web)
    assert refused.code == 1 and refused.json["error"]["code"] == "nested-work", refused.out
    assert git(sub, "rev-parse", "HEAD") == mine


@pytest.mark.parametrize("git_format", ["sha1", "sha256"], indirect=True)
def test_work_on_a_branch_only_the_primary_has_survives_its_deletion_upstream(workspace):
    web = web_with_submodules(workspace)
    sub, at, tip, mine = _work_on_upstream_branch(workspace, web)
    # What the pipeline runs at each step keeps what the submodule's branches stand on.
    assert run_cli("phase", ID, "--json", cwd=web).code == 0

    _upstream_deletes(workspace, web)

    module = common_dir(web) / "modules/libs/one"
    assert git(module, "for-each-ref", "--contains", tip, "--format=%(refname)") == f"{KEPT}{tip}"
    _still_whole(web, sub, mine, tip, at)


def _hook(worktree: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``team-router hook session-start`` as the host runs it, from inside ``worktree``."""
    exe = Path(sys.executable).with_name("team-router")
    argv = [str(exe)] if exe.exists() else [sys.executable, "-m", "router.entry"]
    return subprocess.run(
        [*argv, "hook", "session-start"],
        cwd=worktree,
        input=json.dumps({"cwd": str(worktree)}),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
        check=False,
    )


PIN_VERBS = {"rev-list", "cat-file", "update-ref", "for-each-ref"}


def test_the_session_start_hook_keeps_a_detached_commit_and_reads_only_files_after(
    workspace, tmp_path
):
    web = web_with_submodules(workspace)
    tip = _upstream_branch(workspace, web)
    assert run(*NEW, cwd=web).code == 0
    worktree = web / ".claude/worktrees" / ID
    sub = worktree / "libs/one"
    at = recorded(worktree, "libs/one")
    log = tmp_path / "git.log"
    env = git_logger(tmp_path / "bin", log)
    # As made, the checkout pin keeps each submodule's HEAD: nothing to find out.
    made = _hook(worktree, env)
    assert made.returncode == 0 and made.stderr == "", made.stderr
    assert not PIN_VERBS & set(git_verbs(log)), git_verbs(log)
    log.unlink(missing_ok=True)
    git(sub, "checkout", "-q", "--detach", "origin/feature")
    mine = commit(sub, "notes.txt", "mine\n", "on a detached HEAD")

    first = _hook(worktree, env)
    assert first.returncode == 0 and first.stderr == "", first.stderr
    assert set(git_verbs(log)) >= PIN_VERBS, git_verbs(log)
    module = common_dir(web) / "modules/libs/one"
    assert _pins(module).splitlines() == [f"{at} {PIN}", f"{tip} {KEPT}{tip}"]
    # Nothing moved since: the next session start reads files and starts no git for pins.
    log.unlink()
    again = _hook(worktree, env)
    assert (again.returncode, again.stdout) == (0, first.stdout)
    assert not PIN_VERBS & set(git_verbs(log)), git_verbs(log)

    _upstream_deletes(workspace, web)
    assert _fsck(sub) == (0, "")
    assert git(sub, "log", "--format=%H", "-3").splitlines() == [mine, tip, at]


def test_doctor_lists_a_branch_moved_onto_commits_no_pin_keeps_and_repair_pins_them(workspace):
    web = web_with_submodules(workspace)
    sub, at, tip, mine = _work_on_upstream_branch(workspace, web)
    modules = common_dir(web) / "modules"
    admin = common_dir(web) / "worktrees" / ID

    found = run_cli("doctor", "--json", cwd=web)
    assert found.code == 0, found.out
    assert [(f["kind"], f["path"], f["repaired"], f["detail"]) for f in found.json["findings"]] == [
        (
            "unpinned-borrow",
            str(admin / "modules/libs/one"),
            False,
            f"its HEAD or branches stand on {tip[:12]} of {modules / 'libs/one'}, which no pin "
            "there keeps: the primary's `git gc` may prune them once its own refs let go; "
            f"`team-router doctor --repair` pins them (refs/team-router/borrowed/{ID}/kept/...)",
        )
    ]
    repaired = run_cli("doctor", "--repair", "--json", cwd=web)
    assert repaired.code == 0, repaired.out
    done = [(f["repaired"], f["detail"].rpartition("; ")[2]) for f in repaired.json["findings"]]
    assert done == [(True, f"pinned {tip[:12]}")]
    assert _pins(modules / "libs/one").splitlines() == [f"{at} {PIN}", f"{tip} {KEPT}{tip}"]
    assert run_cli("doctor", "--json", cwd=web).json["findings"] == []

    _upstream_deletes(workspace, web)
    _still_whole(web, sub, mine, tip, at)


def test_a_teardown_refused_for_the_submodules_work_keeps_what_it_stands_on(workspace):
    web = web_with_submodules(workspace)
    sub, at, tip, mine = _work_on_upstream_branch(workspace, web)
    refused = run_cli("teardown", ID, "--json", cwd=web)
    assert refused.code == 1 and refused.json["error"]["code"] == "nested-work", refused.out

    _upstream_deletes(workspace, web)
    _still_whole(web, sub, mine, tip, at)


def test_next_pins_a_branch_and_teardown_drops_every_pin_of_the_worktree(workspace):
    web = web_with_submodules(workspace)
    tip = _upstream_branch(workspace, web)
    assert run(*NEW, cwd=web).code == 0
    worktree = web / ".claude/worktrees" / ID
    at = recorded(worktree, "libs/one")
    git(worktree / "libs/one", "checkout", "-q", "feature")  # upstream has it: no work of its own
    assert run_cli("next", ID, "--json", cwd=web).code == 0
    modules = common_dir(web) / "modules"
    assert _pins(modules / "libs/one").splitlines() == [f"{at} {PIN}", f"{tip} {KEPT}{tip}"]

    # The moved gitlink is a change of the worktree's own: --force snapshots it.
    res = run_cli("teardown", ID, "--force", "--json", cwd=web)
    assert res.code == 0, res.out
    assert not worktree.exists()
    assert _pins(modules / "libs/one") == "" and _pins(modules / "libs/two") == ""


def test_doctor_lists_every_pin_a_worktree_git_removed_left_and_repair_drops_them(workspace):
    web = web_with_submodules(workspace)
    tip = _upstream_branch(workspace, web)
    assert run(*NEW, cwd=web).code == 0
    worktree = web / ".claude/worktrees" / ID
    at = recorded(worktree, "libs/one")
    git(worktree / "libs/one", "checkout", "-q", "feature")
    assert run_cli("phase", ID, "--json", cwd=web).code == 0
    git(web, "worktree", "remove", "--force", "--force", str(worktree))
    module = common_dir(web) / "modules/libs/one"

    found = run_cli("doctor", "--json", cwd=web)
    stale = [
        (f["path"], f["detail"].partition(" keeps ")[0] + " " + f["detail"].split()[2])
        for f in found.json["findings"]
        if f["kind"] == "stale-borrow-pin" and f["path"] == str(module)
    ]
    assert stale == [(str(module), f"{PIN} {at[:12]}"), (str(module), f"{KEPT}{tip} {tip[:12]}")]
    repaired = run_cli("doctor", "--repair", "--json", cwd=web)
    assert repaired.code == 0, repaired.out
    assert _pins(module) == "" and _pins(common_dir(web) / "modules/libs/two") == ""


def test_a_cherry_pick_of_a_commit_only_the_primary_has_keeps_the_files_it_took(workspace):
    web = web_with_submodules(workspace)
    tip = _upstream_branch(workspace, web)
    assert run(*NEW, cwd=web).code == 0
    worktree = web / ".claude/worktrees" / ID
    sub = worktree / "libs/one"
    at = recorded(worktree, "libs/one")
    # The picked commit's new file is the primary's object: the commit made here
    # names it, but stands on a commit of its own, whose history does not reach it.
    first = commit(sub, "notes.txt", "mine\n", "a commit of the worktree's own")
    git(sub, "cherry-pick", tip)
    mine = git(sub, "rev-parse", "HEAD")
    blob = git(sub, "rev-parse", f"{mine}:feature.py")
    module = common_dir(web) / "modules/libs/one"
    found = run_cli("doctor", "--json", cwd=web).json["findings"]
    assert [(f["kind"], f["detail"].partition(", which")[0]) for f in found] == [
        (
            "unpinned-borrow",
            "its HEAD or branches stand on 1 tree(s) or file(s) its own commits took from "
            f"other commits of {module}",
        )
    ]
    assert run_cli("phase", ID, "--json", cwd=web).code == 0
    kept = [ref for ref in _pins(module).splitlines() if ref.split()[1].startswith(KEPT)]
    assert len(kept) == 1, _pins(module)
    assert git(module, "ls-tree", kept[0].split()[0]) == f"100644 blob {blob}\t{blob}"

    _upstream_deletes(workspace, web)
    # Its copy of upstream's deleted branch goes as a clone's would (upstream's, not its work).
    git(sub, "fetch", "-q", "--prune", "origin")

    assert _fsck(sub) == (0, "")
    assert git(sub, "show", f"{mine}:feature.py") == "feature = 1"
    assert git(sub, "log", "--format=%H", "-3").splitlines() == [mine, first, at]
    assert run_cli("doctor", "--json", cwd=web).json["findings"] == []


def test_a_refused_pr_cleanup_keeps_what_the_submodules_work_stands_on(
    workspace, tmp_path, monkeypatch
):
    from helpers.fakegh import hide_gh

    web = web_with_submodules(workspace)
    sub, at, tip, mine = _work_on_upstream_branch(workspace, web)
    hide_gh(tmp_path, monkeypatch)
    refused = run_cli("pr-cleanup", ID, "--json", cwd=web)
    assert refused.code == 1, refused.out
    assert [b["code"] for b in refused.json["blockers"]] == ["dirty-worktree", "nested-work"]
    assert sub.is_dir()

    _upstream_deletes(workspace, web)
    _still_whole(web, sub, mine, tip, at)


def _packed_here(git_dir: Path, oid: str) -> bool:
    """``oid`` is in a pack of ``git_dir``'s own (not one it borrows from)."""
    for idx in (git_dir / "objects/pack").glob("*.idx"):
        listed = subprocess.run(
            ["git", "show-index"], stdin=idx.open("rb"), capture_output=True, check=True
        ).stdout.decode()
        if any(line.split()[1] == oid for line in listed.splitlines()):
            return True
    return (git_dir / "objects" / oid[:2] / oid[2:]).exists()


def test_a_pushed_commit_its_repack_left_to_the_primary_stays_kept_after_upstream_drops_it(
    workspace,
):
    web = web_with_submodules(workspace)
    assert run(*NEW, cwd=web).code == 0
    worktree = web / ".claude/worktrees" / ID
    sub = worktree / "libs/one"
    at = recorded(worktree, "libs/one")
    git(sub, "checkout", "-q", "-b", "fix")
    mine = commit(sub, "notes.txt", "mine\n", "a fix of the worktree's own")
    assert run_cli("phase", ID, "--json", cwd=web).code == 0  # its own commit: nothing to pin
    # Pushed, fetched by the primary, then the submodule's own repack drops its copy
    # (`repack -l` packs no object its alternate has): the primary alone has it now.
    git(sub, "push", "-q", "origin", "fix")
    git(web / "libs/one", "fetch", "-q", "origin")
    git(web / "libs/one", "repack", "-q", "-a", "-d")
    borrower = common_dir(web) / "worktrees" / ID / "modules/libs/one"
    git(sub, "repack", "-q", "-a", "-d", "-l")
    assert not _packed_here(borrower, mine)
    assert run_cli("phase", ID, "--json", cwd=web).code == 0  # the primary fetched: it pins
    assert _pins(common_dir(web) / "modules/libs/one").splitlines()[1] == f"{mine} {KEPT}{mine}"

    # Upstream merged it its own way and deleted the branch.
    git(workspace / "libone", "push", "-q", "origin", "--delete", "fix")
    git(web / "libs/one", "fetch", "-q", "--prune", "origin")
    module = common_dir(web) / "modules/libs/one"
    git(module, "reflog", "expire", "--expire=now", "--all")
    git(module, "gc", "-q", "--prune=now")

    git(sub, "fetch", "-q", "--prune", "origin")
    assert _fsck(sub) == (0, "")
    assert git(sub, "log", "--format=%H", "-2").splitlines() == [mine, at]


def test_a_branch_moved_in_packed_refs_within_the_second_it_was_written_is_a_move(
    second_stamped,
):
    # packed-refs rewritten twice in the second the stamp read it: the second copy takes
    # the inode the first freed, the branch's move keeps its size, and the file system
    # stamps whole seconds. Only the content says the branch moved.
    from router.git.borrowing import tips_state

    repo = second_stamped / "module"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    git(repo, "config", "core.fsync", "none")
    git(repo, "commit", "-q", "--allow-empty", "-m", "one")
    git(repo, "commit", "-q", "--allow-empty", "-m", "two")
    first, second = git(repo, "rev-parse", "HEAD~1"), git(repo, "rev-parse", "HEAD")
    git(repo, "branch", "work", first)
    gitdir = str(repo / ".git")
    for _attempt in range(5):
        while time.time() % 1 > 0.2:  # all of it in one second
            time.sleep(0.01)
        start = int(time.time())
        git(repo, "branch", "-f", "work", first)
        git(repo, "pack-refs", "--all")
        packed = os.stat(repo / ".git/packed-refs")
        kept = tips_state(gitdir, gitdir)
        git(repo, "pack-refs", "--all")  # a new copy: the first's inode is free again
        git(repo, "branch", "-f", "work", second)
        git(repo, "pack-refs", "--all")
        now = os.stat(repo / ".git/packed-refs")
        if int(time.time()) == start and packed.st_ino == now.st_ino:
            break
    else:
        pytest.skip("packed-refs was not rewritten onto its inode within one second here")
    assert (packed.st_mtime_ns, packed.st_size) == (now.st_mtime_ns, now.st_size)
    assert git(repo, "rev-parse", "work") == second

    assert tips_state(gitdir, gitdir) != kept


def test_a_borrower_whose_commit_is_lost_is_tried_once_per_move_and_doctor_still_says_so(
    workspace, tmp_path
):
    web = web_with_submodules(workspace)
    assert run(*NEW, cwd=web).code == 0
    worktree = web / ".claude/worktrees" / ID
    sub = worktree / "libs/one"
    at = recorded(worktree, "libs/one")
    lost = commit(sub, "notes.txt", "mine\n", "its object lost")
    borrower = common_dir(web) / "worktrees" / ID / "modules/libs/one"
    (borrower / "objects" / lost[:2] / lost[2:]).unlink()  # a disk that lost it
    log = tmp_path / "git.log"
    env = git_logger(tmp_path / "bin", log)
    # The files the state is read from settle first: one written moments ago is stamped by
    # its content, and a later read of it, settled, by its identity alone.
    time.sleep(SETTLED_NS / 1e9)

    first = _hook(worktree, env)
    assert first.returncode == 0 and first.stderr == "", first.stderr
    assert "rev-list" in git_verbs(log), git_verbs(log)
    # The hook shows no warnings: phase and next name it, from what the hook remembered,
    # in the words of the failure, and start no git for pins to do so.
    said = (
        f"{borrower}: its branches stand on objects no pin keeps (fatal: bad object HEAD); "
        "`team-router doctor` says more"
    )
    log.unlink()
    for command in ("phase", "next"):
        warned = run(command, ID, "--json", cwd=web, env=env)
        assert warned.code == 0, warned.err
        assert json.loads(warned.out)["warnings"] == [said]
    assert not PIN_VERBS & set(git_verbs(log)), git_verbs(log)
    # Nothing moved since: the next session start reads files and starts no git for pins.
    log.unlink()
    again = _hook(worktree, env)
    assert (again.returncode, again.stdout) == (0, first.stdout)
    assert not PIN_VERBS & set(git_verbs(log)), git_verbs(log)

    found = run_cli("doctor", "--json", cwd=web)
    assert [(f["kind"], f["path"]) for f in found.json["findings"]] == [
        ("unpinned-borrow", str(borrower))
    ]
    assert found.json["findings"][0]["detail"].startswith("git cannot walk what its HEAD")

    # Its HEAD moves onto a new commit on one that is whole: the next start pins again.
    git(sub, "checkout", "-q", "--detach", at)
    commit(sub, "notes.txt", "again\n", "made again")
    log.unlink(missing_ok=True)
    moved = _hook(worktree, env)
    assert moved.returncode == 0 and moved.stderr == "", moved.stderr
    assert "rev-list" in git_verbs(log), git_verbs(log)
    assert run_cli("doctor", "--json", cwd=web).json["findings"] == []


def test_a_state_stamped_while_a_file_was_fresh_is_the_same_state_once_it_settled(
    workspace, tmp_path
):
    web = web_with_submodules(workspace)
    assert run(*NEW, cwd=web).code == 0
    worktree = web / ".claude/worktrees" / ID
    sub = worktree / "libs/one"
    commit(sub, "notes.txt", "mine\n", "a move to pin")
    git(web / "libs/one", "fetch", "-q", "origin")  # the source's FETCH_HEAD, written now
    log = tmp_path / "git.log"
    env = git_logger(tmp_path / "bin", log)
    pinned = _hook(worktree, env)
    assert pinned.returncode == 0 and pinned.stderr == "", pinned.stderr
    assert "rev-list" in git_verbs(log), git_verbs(log)
    stamp = common_dir(web) / "worktrees" / ID / "modules/libs/one/team-router-kept"
    fetched = [ln for ln in stamp.read_text().splitlines() if ln.startswith("source FETCH_HEAD")]
    if len(fetched) != 1 or len(fetched[0].split()) != 6:
        pytest.skip("the hook did not run while FETCH_HEAD was fresh (a machine this slow)")

    time.sleep(SETTLED_NS / 1e9)  # FETCH_HEAD settles: the state names it by identity alone
    log.unlink()
    again = _hook(worktree, env)
    assert (again.returncode, again.stdout) == (0, pinned.stdout)
    assert not PIN_VERBS & set(git_verbs(log)), git_verbs(log)
    # The stamp now reads as the state does: the next look is one compare.
    assert fetched[0].rsplit(" ", 1)[0] in stamp.read_text().splitlines()


# The walk of a borrower's history (`unkept`), failing the first time only, as a moment's
# fault does: its git killed by a signal, or ending with an I/O error.
_WALK = "rev-list --parents HEAD --branches"
_ONCE_FAULTS = {
    "killed": "kill -KILL $$",
    "io-error": "echo 'fatal: failed to read object: Input/output error' >&2\nexit 128",
}


@pytest.mark.parametrize("fault", sorted(_ONCE_FAULTS))
def test_a_walk_that_fails_for_a_moment_is_tried_again_and_pins(workspace, tmp_path, fault):
    web = web_with_submodules(workspace)
    sub, at, tip, mine = _work_on_upstream_branch(workspace, web)
    borrower = common_dir(web) / "worktrees" / ID / "modules/libs/one"
    module = common_dir(web) / "modules/libs/one"
    once = tmp_path / "faulted"
    body = f"if [ ! -e '{once}' ]; then\n: > '{once}'\n{_ONCE_FAULTS[fault]}\nfi\n"
    env = git_wrapper(tmp_path / "bin", _WALK, f'{body}exec "$REAL_GIT" "$@"')

    first = run("phase", ID, "--json", cwd=web, env=env)
    assert first.code == 0, first.err
    assert once.exists()  # the fault struck
    if fault == "killed":
        # Not git's answer about the borrower: said, and nothing remembered of it.
        assert json.loads(first.out)["warnings"] == [
            f"{borrower}: its branches stand on objects no pin keeps (git was killed by signal 9 "
            "(SIGKILL)); "
            "`team-router doctor` says more"
        ]
        then = run("phase", ID, "--json", cwd=web, env=env)  # tried again, and pinned
        assert then.code == 0, then.err
        assert json.loads(then.out)["warnings"] == []
    else:
        # git ended by itself: asked once more at once, it walks, and the same run pins.
        assert json.loads(first.out)["warnings"] == []
    assert _pins(module).splitlines() == [f"{at} {PIN}", f"{tip} {KEPT}{tip}"]
    assert run_cli("doctor", "--json", cwd=web).json["findings"] == []

    _upstream_deletes(workspace, web)
    assert _fsck(sub) == (0, "")
    assert git(sub, "log", "--format=%H", "-3").splitlines() == [mine, tip, at]


def test_a_borrower_stamped_unwalkable_without_gits_words_is_walked_again_and_pinned(workspace):
    """An earlier version stamped a borrower unwalkable at any failure of git, one it was
    killed in too, and kept no words of git's: that stamp stops nothing."""
    from router.git.borrowing import tips_state

    web = web_with_submodules(workspace)
    sub, at, tip, mine = _work_on_upstream_branch(workspace, web)
    borrower = common_dir(web) / "worktrees" / ID / "modules/libs/one"
    module = common_dir(web) / "modules/libs/one"
    (borrower / "team-router-unkept").write_text(tips_state(str(borrower), str(module)))

    walked = run_cli("phase", ID, "--json", cwd=web)
    assert walked.code == 0, walked.out
    assert walked.json["warnings"] == []
    assert _pins(module).splitlines() == [f"{at} {PIN}", f"{tip} {KEPT}{tip}"]
    assert not (borrower / "team-router-unkept").exists()

    _upstream_deletes(workspace, web)
    assert _fsck(sub) == (0, "")
    assert git(sub, "log", "--format=%H", "-3").splitlines() == [mine, tip, at]


def test_a_failure_asking_the_primary_is_never_stamped_as_the_borrowers_history(
    workspace, tmp_path
):
    """git fails by itself, again and again, in the primary's submodule (asked which of the
    borrower's objects it holds), not in the walk of the borrower's history: nothing says
    that history cannot be walked, so nothing is stamped; the next run, the fault gone,
    pins, and the branch the borrower stands on can go upstream without a loss."""
    web = web_with_submodules(workspace)
    sub, at, tip, mine = _work_on_upstream_branch(workspace, web)
    borrower = common_dir(web) / "worktrees" / ID / "modules/libs/one"
    module = common_dir(web) / "modules/libs/one"
    count = tmp_path / "faults"
    body = (
        f"n=$(cat '{count}' 2>/dev/null || echo 0)\n"
        f"if [ \"$n\" -lt 2 ]; then echo $((n + 1)) > '{count}'\n"
        "echo 'fatal: unable to open packed-refs: Too many open files' >&2; exit 128; fi\n"
        'exec "$REAL_GIT" "$@"'
    )
    env = git_wrapper(tmp_path / "bin", "cat-file --batch-check=%(objectname) %(objecttype)", body)

    for n in ("1", "2"):  # two runs in a row, each failing so
        failed = run("phase", ID, "--json", cwd=web, env=env)
        assert failed.code == 0, failed.err
        assert count.read_text().strip() == n
        assert json.loads(failed.out)["warnings"] == [
            f"{borrower}: its branches stand on objects no pin keeps (fatal: unable to open "
            "packed-refs: Too many open files); `team-router doctor` says more"
        ]
        assert not (borrower / "team-router-unkept").exists()

    then = run("phase", ID, "--json", cwd=web, env=env)  # the fault is gone: tried, pinned
    assert then.code == 0, then.err
    assert json.loads(then.out)["warnings"] == []
    assert _pins(module).splitlines() == [f"{at} {PIN}", f"{tip} {KEPT}{tip}"]

    _upstream_deletes(workspace, web)
    assert _fsck(sub) == (0, "")
    assert git(sub, "log", "--format=%H", "-3").splitlines() == [mine, tip, at]
