"""A removal of ours is journaled file by file, so whatever stops it half-way, the rerun finishes it.

The faults are real: a ``git`` first on PATH that SIGKILLs the calling
``team-router`` mid-removal (``helpers.faults.git_killer``), libfaketime
running the killed command with its clock stepped, ``chattr +i`` and a
read-only bind mount inside the worktree, ``.claude/worktrees`` on its own
``tmpfs``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.fakegh import install_fake_gh, make_github_repo, pr
from helpers.faults import CRASHED, KILLED, argv, finish, git_killer, mounted_tmpfs, run
from helpers.origin import merge_on_origin
from helpers.repos import (
    CliResult,
    branches,
    commit,
    git,
    run_cli,
    status,
    worktree_paths,
    write,
)
from helpers.topics import TOPIC_ID, Topic, new_topic, snapshot_of, steps_of, teardown

from router.teardown.snapshot import snapshot_ref
from router.topic import state

# libfaketime itself, preloaded: the faketime wrapper keeps a semaphore and a shared-memory
# segment named by its pid, which a SIGKILL leaves behind, and a later wrapper given that
# pid then fails ("sem_open: File exists"). The library alone keeps no such state.
LIBFAKETIME = next(
    (
        path
        for path in (
            "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
            "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
            "/usr/lib/faketime/libfaketime.so.1",
        )
        if os.path.exists(path)
    ),
    None,
)


@pytest.fixture
def web(workspace: Path) -> Path:
    return make_github_repo(workspace, "web")


def tip_of(repo: Path, branch: str = TOPIC_ID) -> str:
    return git(repo, "rev-parse", f"refs/heads/{branch}")


def _spawn_with_clock(args: list[str], *, cwd: Path, env: dict[str, str], clock: str) -> CliResult:
    """``team-router`` run as a new process group, its clock (and its git's) stepped by ``clock``
    (libfaketime's ``FAKETIME``, say ``+1d``) unless that is empty."""
    full = {**os.environ, **env}
    full.pop("TEAM_ROUTER_CRASH_AT", None)
    if clock:
        full |= {"LD_PRELOAD": str(LIBFAKETIME), "FAKETIME": clock}
    proc = subprocess.Popen(
        argv(*args, cwd=cwd),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=full,
        start_new_session=True,
    )
    return finish(proc)


def _half_removed(topic, tmp_path: Path, *flags: str, clock: str = "") -> CliResult:
    """Teardown killed inside ``git worktree remove`` after it deleted README.md and the .git file.

    git deletes the tree file by file and the registration last; the stand-in
    deletes two files and leaves the rest, as a kill part-way through does.
    """
    if clock and LIBFAKETIME is None:
        pytest.skip("libfaketime is not installed (Debian's faketime package)")
    env = git_killer(
        tmp_path / "killer-bin",
        "worktree remove",
        'for wt; do :; done; rm -f "$wt/README.md" "$wt/.git"',
        real=False,
    )
    return _spawn_with_clock(
        ["teardown", topic.id, "--json", *flags], cwd=topic.home, env=env, clock=clock
    )


CLOCKS = {
    "clock-right": "",
    # An NTP step, a resumed VM, a file server's clock: the killed run's clock was a day ahead.
    "clock-ahead": "+1d",
    "clock-behind": "-1d",
}


@pytest.mark.parametrize("clock", list(CLOCKS.values()), ids=list(CLOCKS))
def test_a_file_written_into_a_half_removed_worktree_is_kept_whatever_the_clock_said(
    home_repo, tmp_path, clock
):
    commit(home_repo, "src/app.py", "app = 1\n", "app")
    git(home_repo, "push", "-q", "origin", "main")
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    killed = _half_removed(topic, tmp_path, clock=clock)
    assert killed.code == KILLED, killed.err
    assert wt.is_dir() and not (wt / "README.md").exists()
    # Written after the kill: a new file, and an edit of one git had not deleted yet.
    write(wt / "notes.txt", "written after the kill\n")
    with (wt / "src/app.py").open("a") as fh:
        fh.write("edited = True\n")
    before = snapshot_of(home_repo)

    res = teardown(topic)
    assert res.code == 1, res.out + res.err
    assert res.json["error"] == {
        "code": "removal-interrupted",
        "message": (
            f"home: remove refused: removing {wt} was interrupted, and notes.txt, src/app.py "
            "were written there since (they are not what the removal judged): kept; move them "
            f"out of {wt}, then run teardown again to finish the removal"
        ),
    }
    assert (wt / "notes.txt").read_text() == "written after the kill\n"
    assert (wt / "src/app.py").read_text() == "app = 1\nedited = True\n"
    assert snapshot_of(home_repo) == before
    record = state.read_record(home_repo / ".git", topic.id)
    assert record is not None and record.removing is not None

    # Once they are moved out, the rerun finishes the removal.
    (wt / "notes.txt").rename(tmp_path / "notes.txt")
    (wt / "src/app.py").rename(tmp_path / "app.py")
    again = teardown(topic)
    assert again.code == 0, again.out + again.err
    remove = steps_of(again.json, "home")["remove"]
    assert remove == {
        "name": "remove",
        "outcome": "done",
        "reason": "finished",
        "detail": f"removed {wt} (finished a removal that was interrupted)",
    }
    assert not wt.exists() and worktree_paths(home_repo) == [str(home_repo)]
    assert branches(home_repo) == ["main"] and status(home_repo) == ""


@pytest.mark.parametrize("clock", list(CLOCKS.values()), ids=list(CLOCKS))
def test_a_half_removed_worktree_nobody_touched_is_finished_whatever_the_clock_said(
    home_repo, tmp_path, clock
):
    commit(home_repo, ".gitignore", "build/\n", "ignore build")
    git(home_repo, "push", "-q", "origin", "main")
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    write(
        wt / "build/out.o", "ignored build output\n"
    )  # git deletes ignored files with the worktree
    killed = _half_removed(topic, tmp_path, clock=clock)
    assert killed.code == KILLED, killed.err
    assert (wt / "build/out.o").exists()

    again = teardown(topic)
    assert again.code == 0, again.out + again.err
    assert steps_of(again.json, "home")["remove"]["detail"] == (
        f"removed {wt} (finished a removal that was interrupted)"
    )
    assert not wt.exists() and worktree_paths(home_repo) == [str(home_repo)]
    record = state.read_record(home_repo / ".git", topic.id)
    assert record is not None and record.removing is None


INDEXES = {
    # A plain index: the journal is that index and the files it does not track.
    "plain-index": (),
    # A split index (entries in a shared file) is not read here: every file is journaled.
    "split-index": ("update-index", "--split-index"),
}


@pytest.mark.parametrize("index", list(INDEXES.values()), ids=list(INDEXES))
def test_a_clean_worktrees_removal_journals_its_index_and_finishes_only_what_is_unchanged(
    home_repo, tmp_path, index
):
    commit(home_repo, ".gitignore", "build/\n", "ignore build")
    commit(home_repo, "src/app.py", "app = 1\n", "app")
    commit(home_repo, "src/util.py", "util = 1\n", "util")
    git(home_repo, "push", "-q", "origin", "main")
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    write(wt / "build/out.o", "ignored build output\n")
    write(wt / "build/cache.o", "ignored cache\n")
    if index:
        git(wt, *index)
    killed = _half_removed(topic, tmp_path)
    assert killed.code == KILLED, killed.err
    assert not (wt / "README.md").exists() and (wt / "src/app.py").exists()
    removing = state.read_record(home_repo / ".git", topic.id).removing
    assert removing is not None
    tracked = [".gitignore", "src/app.py", "src/util.py"]  # README.md: deleted by the kill
    ignored = [".git", "build/cache.o", "build/out.o"]
    journaled = sorted(f.path for f in removing.files)
    if index:
        assert not removing.index and journaled == sorted([*tracked, "README.md", *ignored])
    else:
        assert removing.index and removing.index_hash == "sha1" and journaled == ignored

    # After the kill: a tracked file rewritten with its own content (new stamps, the
    # same blob: kept only where every file was journaled by its stamps), a tracked
    # file and an ignored file changed (the same sizes), a new file.
    (wt / "src/util.py").write_text("util = 1\n")
    (wt / "src/app.py").write_text("app = 2\n")
    (wt / "build/cache.o").write_text("ignored CACHE\n")
    write(wt / "notes.txt", "written after the kill\n")
    changed = ["build/cache.o", "notes.txt", "src/app.py", *(["src/util.py"] if index else [])]
    before = snapshot_of(home_repo)
    res = teardown(topic)
    assert res.code == 1, res.out + res.err
    assert res.json["error"] == {
        "code": "removal-interrupted",
        "message": (
            f"home: remove refused: removing {wt} was interrupted, and {', '.join(changed)} "
            "were written there since (they are not what the removal judged): kept; move them "
            f"out of {wt}, then run teardown again to finish the removal"
        ),
    }
    assert snapshot_of(home_repo) == before
    assert (wt / "src/app.py").read_text() == "app = 2\n"
    assert (wt / "build/cache.o").read_text() == "ignored CACHE\n"

    for kept in changed:
        (wt / kept).rename(tmp_path / kept.replace("/", "-"))
    again = teardown(topic)
    assert again.code == 0, again.out + again.err
    assert steps_of(again.json, "home")["remove"]["detail"] == (
        f"removed {wt} (finished a removal that was interrupted)"
    )
    assert not wt.exists() and worktree_paths(home_repo) == [str(home_repo)]
    assert branches(home_repo) == ["main"] and status(home_repo) == ""
    assert (tmp_path / "src-app.py").read_text() == "app = 2\n"


# -- a file git cannot delete: the removal stops half-way, and the rerun finishes it -----------


def _merged_topic(repo: Path) -> Path:
    """A topic with one commit (src/limits.py) pushed and merged on origin; its worktree."""
    worktree = new_topic(repo, "Add rate limiting", topic_id=TOPIC_ID).worktrees["home"]
    commit(worktree, "src/limits.py", "LIMIT = 10\n", "add limits")
    git(worktree, "push", "-q", "origin", f"{TOPIC_ID}:{TOPIC_ID}")
    merge_on_origin(repo, TOPIC_ID, how="merge")
    return worktree


def _mounted(path: Path) -> bool:
    """Something is mounted at ``path`` (the kernel's table: a bind mount of the same disk too)."""
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        return any(line.split(" ")[4] == str(path) for line in fh)


def _sh(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, check=False)


@contextlib.contextmanager
def _undeletable(worktree: Path, how: str) -> Iterator[Callable[[], None]]:
    """``src/limits.py`` in ``worktree`` made undeletable; yields the fix that clears it.

    ``immutable``: ``chattr +i`` on the file. ``read-only-mount``: ``src``
    bind-mounted read-only over itself. Whatever the test does, the flag and
    the mount are cleared at the end.
    """
    target = worktree / "src" / "limits.py"
    src = worktree / "src"
    if how == "immutable":
        made = _sh("chattr", "+i", str(target))
        if made.returncode != 0:
            pytest.skip(f"chattr +i is not possible here: {made.stderr.strip()}")

        def clear() -> None:
            _sh("chattr", "-i", str(target))

    else:
        bound = _sh("mount", "--bind", str(src), str(src))
        if bound.returncode != 0:
            pytest.skip(f"a bind mount is not possible here: {bound.stderr.strip()}")
        made = _sh("mount", "-o", "remount,bind,ro", str(src))
        if made.returncode != 0:
            _sh("umount", str(src))
            pytest.skip(f"a read-only bind mount is not possible here: {made.stderr.strip()}")

        def clear() -> None:
            while _mounted(src):
                if _sh("umount", str(src)).returncode != 0:
                    break

    try:
        yield clear
    finally:
        clear()


def _cause(worktree: Path, how: str) -> str:
    target = worktree / "src" / "limits.py"
    if how == "immutable":
        return (
            f"Operation not permitted: {target} is immutable or append-only "
            f"(`lsattr -d {target}` shows it; `chattr -i -a {target}` clears it)"
        )
    return (
        f"on a read-only filesystem mounted at {worktree / 'src'}: unmount it or mount it "
        "read-write"
    )


BLOCKERS = ["immutable", "read-only-mount"]


@pytest.mark.parametrize("how", BLOCKERS)
def test_a_teardown_a_file_stops_half_way_names_it_and_the_rerun_finishes(web, how):
    worktree = _merged_topic(web)
    with _undeletable(worktree, how) as clear:
        first = teardown(Topic(TOPIC_ID, web, worktree), "--json")
        assert first.code == 1, first.out + first.err
        remove = steps_of(first.json, "home")["remove"]
        assert remove == {
            "name": "remove",
            "outcome": "failed",
            "reason": "half-removed",
            "code": "removal-blocked",
            "detail": (
                f"removing {worktree} stopped half-way: cannot delete src/limits.py "
                f"({_cause(worktree, how)}); the rest is deleted, and the record keeps what the "
                "removal judged; once that is cleared, run teardown again to finish the removal"
            ),
        }
        # git dropped the registration; the file that blocks is all that is left.
        assert worktree_paths(web) == [str(web)]
        assert sorted(p.relative_to(worktree).as_posix() for p in worktree.rglob("*")) == [
            "src",
            "src/limits.py",
        ]
        clear()
    again = teardown(Topic(TOPIC_ID, web, worktree), "--json")
    assert again.code == 0, again.out + again.err
    assert steps_of(again.json, "home")["remove"] == {
        "name": "remove",
        "outcome": "done",
        "reason": "finished",
        "detail": f"removed {worktree} (finished a removal that was interrupted)",
    }
    assert not worktree.exists() and worktree_paths(web) == [str(web)]
    assert branches(web) == ["main"] and status(web) == ""
    record = state.read_record(web / ".git", TOPIC_ID)
    assert record is not None and record.removing is None


@pytest.mark.parametrize("how", BLOCKERS)
def test_a_pr_cleanup_a_file_stops_half_way_names_it_and_the_rerun_finishes(
    web, tmp_path, monkeypatch, how
):
    worktree = _merged_topic(web)
    merge = git(web, "rev-parse", "origin/main")
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(12, TOPIC_ID, tip_of(web), merge_commit=merge),))
    with _undeletable(worktree, how) as clear:
        first = run_cli("pr-cleanup", TOPIC_ID, "--json", cwd=web)
        assert first.code == 1, first.out + first.err
        remove = {s["name"]: s for s in first.json["steps"]}["remove"]
        assert remove == {
            "name": "remove",
            "outcome": "failed",
            "reason": "half-removed",
            "code": "removal-blocked",
            "detail": (
                f"removing {worktree} stopped half-way: cannot delete src/limits.py "
                f"({_cause(worktree, how)}); the rest is deleted, and the record keeps what the "
                "removal judged; once that is cleared, run pr-cleanup again to finish the removal"
            ),
        }
        clear()
    again = run_cli("pr-cleanup", TOPIC_ID, "--json", cwd=web)
    assert again.code == 0, again.out + again.err
    assert {s["name"]: s for s in again.json["steps"]}["remove"] == {
        "name": "remove",
        "outcome": "done",
        "reason": "finished",
        "detail": f"removed {worktree} (finished a removal that was interrupted)",
    }
    assert not worktree.exists() and worktree_paths(web) == [str(web)]
    assert branches(web) == ["main"] and status(web) == ""


# -- .claude/worktrees on its own filesystem: the plan dir's move copies, verifies, removes ----

FALLBACK_ID = TOPIC_ID


def _fallen_back(home_repo: Path) -> Path:
    """A topic whose `new` fell back to the main tree (a file was in the way of .claude); its plan dir."""
    write(home_repo / ".claude", "a file where the directory goes\n")
    res = run_cli("new", "Add rate limiting", "--id", FALLBACK_ID, "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    assert res.json["home"]["status"] == "fallback"
    plan = home_repo / "docs" / "plans" / FALLBACK_ID
    write(plan / "task.md", "# Task\n")
    write(plan / "notes" / "research.md", "what was found\n")
    (home_repo / ".claude").unlink()  # the cause, fixed
    return plan


PLAN_FILES = {"task.md": "# Task\n", "notes/research.md": "what was found\n"}


def _files(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): p.read_text() for p in folder.rglob("*") if p.is_file()
    }


def _assert_moved(home_repo: Path, res: CliResult) -> None:
    moved = home_repo / ".claude" / "worktrees" / FALLBACK_ID / "docs" / "plans" / FALLBACK_ID
    assert res.code == 0, res.out + res.err
    assert res.json["plan_dir"] == str(moved)
    assert res.json["warnings"] == []
    assert _files(moved) == PLAN_FILES
    assert not (home_repo / "docs").exists() and status(home_repo) == ""
    assert sorted(os.listdir(moved.parent)) == [FALLBACK_ID]  # no copy left beside it
    record = state.read_record(home_repo / ".git", FALLBACK_ID)
    assert record is not None and record.removing is None
    assert record.plan_dir == str(moved)


def test_a_fallen_back_plan_dir_moves_into_a_worktree_on_another_filesystem(home_repo):
    _fallen_back(home_repo)
    with mounted_tmpfs(home_repo / ".claude" / "worktrees", "64m"):
        res = run_cli("worktrees", FALLBACK_ID, "--json", cwd=home_repo)
        _assert_moved(home_repo, res)
        phase = run_cli("phase", FALLBACK_ID, "--json", cwd=home_repo).json
        assert phase["plan_dir"] == res.json["plan_dir"]


@pytest.mark.parametrize("step", ["plan-dir-copied", "plan-dir-placed"])
def test_a_plan_dir_move_across_filesystems_killed_in_the_middle_is_finished_by_the_rerun(
    home_repo, step
):
    plan = _fallen_back(home_repo)
    with mounted_tmpfs(home_repo / ".claude" / "worktrees", "64m"):
        killed = run("worktrees", FALLBACK_ID, "--json", cwd=home_repo, crash_at=step)
        assert killed.code == CRASHED, killed.out + killed.err
        assert _files(plan) == PLAN_FILES  # the original is whole until the copy is in place
        again = run_cli("worktrees", FALLBACK_ID, "--json", cwd=home_repo)
        _assert_moved(home_repo, again)


def test_a_plan_dir_move_the_disk_cannot_hold_keeps_it_in_place_then_the_rerun_moves_it(home_repo):
    plan = _fallen_back(home_repo)
    big = "x" * (3 * 1024 * 1024)
    write(plan / "research.md", big)
    folder = home_repo / ".claude" / "worktrees"
    with mounted_tmpfs(folder, "2m"):
        full = run_cli("worktrees", FALLBACK_ID, "--json", cwd=home_repo)
        assert full.code == 0, full.out + full.err
        assert full.json["plan_dir"] == str(plan)
        dst = folder / FALLBACK_ID / "docs" / "plans" / FALLBACK_ID
        assert full.json["warnings"] == [
            f"home: the plan dir stays in the main tree ({plan}): copying it to {dst} failed "
            f"(No space left on device writing {dst.parent / ('.' + FALLBACK_ID + '.copying')}"
            "/research.md); nothing was moved; run this again once that is fixed"
        ]
        assert _files(plan) == {**PLAN_FILES, "research.md": big}
        assert sorted(os.listdir(dst.parent)) == []  # the partial copy is gone
        # Space is freed: the rerun moves it.
        assert _sh("mount", "-o", "remount,size=64m", str(folder)).returncode == 0
        again = run_cli("worktrees", FALLBACK_ID, "--json", cwd=home_repo)
        assert again.code == 0, again.out + again.err
        assert again.json["plan_dir"] == str(dst) and again.json["warnings"] == []
        assert _files(dst) == {**PLAN_FILES, "research.md": big}
        assert not (home_repo / "docs").exists() and status(home_repo) == ""


# -- a worktree whose disk is not mounted is not gone -------------------------------------------


@contextlib.contextmanager
def _disk(tmp_path: Path) -> Iterator[Path]:
    """A small disk of its own (a ``tmpfs``), unmounted, with whatever is bound from it, at the end."""
    disk = tmp_path / "disk"
    with mounted_tmpfs(disk, "64m"):
        try:
            yield disk
        finally:
            for line in reversed(Path("/proc/self/mountinfo").read_text().splitlines()):
                point = line.split(" ")[4]
                if point.startswith(str(tmp_path / "ws")):
                    _sh("umount", point)


def _bind(disk: Path, at: Path) -> None:
    at.mkdir(parents=True, exist_ok=True)
    bound = _sh("mount", "--bind", str(disk), str(at))
    assert bound.returncode == 0, bound.stderr


def _unmount(at: Path) -> None:
    done = _sh("umount", str(at))
    assert done.returncode == 0, done.stderr


def _kept_whole(home_repo: Path, wt: Path) -> None:
    """Registration, branch and record all still there (nothing doctor could have lost)."""
    assert worktree_paths(home_repo) == [str(home_repo), str(wt)]
    assert sorted(branches(home_repo)) == sorted(["main", TOPIC_ID])
    record = state.read_record(home_repo / ".git", TOPIC_ID)
    assert record is not None and record.worktree == str(wt)


@pytest.mark.parametrize(
    "mounted_at", [".claude/worktrees", ".claude"], ids=["empty-mount-point", "parent-gone"]
)
def test_doctor_repair_keeps_a_worktree_whose_disk_is_not_mounted(home_repo, tmp_path, mounted_at):
    with _disk(tmp_path) as disk:
        point = home_repo / mounted_at
        _bind(disk, point)
        topic = new_topic(home_repo)
        wt = topic.worktrees["home"]
        write(wt / "notes.txt", "uncommitted work\n")
        _unmount(point)  # the disk is not mounted: its mount point is an empty directory
        assert not wt.exists() and os.listdir(point) == []

        res = run_cli("doctor", "--repair", "--json", cwd=home_repo)
        assert res.code == 0, res.out + res.err
        missing = home_repo / ".claude" / "worktrees"
        held = (
            f"{point} is an empty directory where the worktree's disk was mounted"
            if mounted_at == ".claude/worktrees"
            else f"{missing} is missing"
        )
        assert [
            (f["kind"], f["path"], f["repaired"], f["detail"]) for f in res.json["findings"]
        ] == [
            (
                "registration-dir-gone",
                str(wt),
                False,
                f"its directory is not there because its filesystem is not mounted ({held}); "
                f"kept: mount it at {point}; if it is really gone, run "
                f"`git worktree remove {wt}`",
            ),
            (
                "record-dir-gone",
                str(state.record_path(home_repo / ".git", TOPIC_ID)),
                False,
                f"its worktree {wt} is not there because its filesystem is not mounted ({held}); "
                f"kept: mount it at {point}",
            ),
        ]
        _kept_whole(home_repo, wt)

        _bind(disk, point)  # the disk is back: nothing was lost
        assert (wt / "notes.txt").read_text() == "uncommitted work\n"
        assert git(wt, "status", "--porcelain") == "?? notes.txt"
        _kept_whole(home_repo, wt)
        assert run_cli("doctor", "--json", cwd=home_repo).json["findings"] == []


@pytest.mark.parametrize("flags", [(), ("--force",)], ids=["plain", "force"])
def test_teardown_refuses_a_worktree_whose_disk_is_not_mounted_and_loses_nothing(
    home_repo, tmp_path, flags
):
    with _disk(tmp_path) as disk:
        point = home_repo / ".claude" / "worktrees"
        _bind(disk, point)
        topic = new_topic(home_repo)
        wt = topic.worktrees["home"]
        write(wt / "notes.txt", "uncommitted work\n")
        _unmount(point)

        res = teardown(topic, *flags)
        assert res.code == 1, res.out + res.err
        assert res.json["error"] == {
            "code": "not-mounted",
            "message": (
                f"teardown of {TOPIC_ID} refused, nothing was removed in any repo: home: {wt} is "
                "not there because its filesystem is not mounted "
                f"({point} is an empty directory where the worktree's disk was mounted); "
                f"kept: mount it at {point}, then run teardown again (if it is "
                f"really gone, `git worktree remove {wt}` first)"
            ),
        }
        _kept_whole(home_repo, wt)
        # Nor does the run start over in the main tree while its worktree is on that disk.
        again = run_cli("new", "add rate limiting", "--id", TOPIC_ID, "--json", cwd=home_repo)
        assert again.code == 1, again.out + again.err
        assert again.json["error"] == {
            "code": "not-mounted",
            "message": (
                f"home: branch {TOPIC_ID!r} is checked out in {wt}; its filesystem is not "
                f"mounted ({point} is an empty directory where the worktree's disk was mounted): "
                f"mount it at {point}, then run this again"
            ),
        }
        assert not (home_repo / "docs").exists()
        _kept_whole(home_repo, wt)
        _bind(disk, point)
        assert (wt / "notes.txt").read_text() == "uncommitted work\n"
        assert git(wt, "status", "--porcelain") == "?? notes.txt"


def test_mount_tables_are_read_with_the_kernels_escapes(tmp_path):
    from router import mounts

    info = write(
        tmp_path / "mountinfo",
        "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
        "40 27 0:40 / /mnt/my\\040disk rw shared:9 - tmpfs tmpfs rw,size=1024k\n"
        "41 27 0:41 / /home/u/.claude/worktrees rw - autofs systemd-1 rw\n",
    )
    assert mounts.mounts(str(info)) == [
        mounts.Mount("/proc", "proc"),
        mounts.Mount("/mnt/my disk", "tmpfs"),
        mounts.Mount("/home/u/.claude/worktrees", "autofs"),
    ]
    fstab = write(
        tmp_path / "fstab",
        "# <file system> <mount point> <type>\nUUID=1 / ext4 defaults 0 1\n"
        "/dev/sdb1 /srv/work\\040trees ext4 noauto 0 2\nproc /proc proc defaults 0 0\n",
    )
    assert mounts.fstab_points(str(fstab)) == {"/", "/srv/work trees", "/proc"}


def test_the_index_names_the_device_a_checkout_was_on(home_repo, tmp_path):
    from router import git as g

    index = home_repo / ".git" / "index"
    assert g.index_device(str(index)) == os.stat(home_repo / "README.md").st_dev & 0xFFFFFFFF
    assert g.index_device(str(tmp_path / "no-index")) is None
    git(home_repo, "read-tree", "--empty")
    assert g.index_device(str(index)) is None  # no file in it: nothing recorded


def test_a_file_written_after_a_forced_removals_snapshot_then_killed_is_kept(home_repo, tmp_path):
    """Written once the snapshot was made, before git deleted anything: in no snapshot, so no
    journal may name it either (the journal is walked before the snapshot's status)."""
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    write(wt / "draft.txt", "uncommitted work\n")
    late = wt / "late.txt"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = shutil.which("git")
    script = bin_dir / "git"
    script.write_text(
        "#!/bin/sh\n"
        f'case " $* " in\n'
        f'  *"update-ref"*"refs/team-router/snapshots/"*)\n'
        f'    "{real}" "$@"; rc=$?; echo "written after the snapshot" > "{late}"; exit $rc ;;\n'
        f'  *"worktree remove"*)\n'
        f'    rm -f "{wt}/README.md" "{wt}/.git"; kill -KILL 0 ;;\n'
        f'esac\nexec "{real}" "$@"\n'
    )
    script.chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    killed = _spawn_with_clock(
        ["teardown", topic.id, "--json", "--force"], cwd=home_repo, env=env, clock=""
    )
    assert killed.code == KILLED, killed.out + killed.err
    assert late.read_text() == "written after the snapshot\n"

    res = teardown(topic, "--force")
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "removal-interrupted"
    assert "late.txt" in res.json["error"]["message"]
    assert late.read_text() == "written after the snapshot\n"
    snapshot = f"refs/team-router/snapshots/{topic.branch}"
    assert git(home_repo, "show", f"{snapshot}:draft.txt") == "uncommitted work"


# -- files git was told not to look at ---------------------------------------------------------


@pytest.mark.parametrize(
    "flag",
    [
        ("--assume-unchanged",),
        ("--skip-worktree",),
        ("--split-index", "--assume-unchanged"),  # an index read by git, not here
    ],
)
def test_an_edit_git_was_told_not_to_look_at_is_work_a_teardown_keeps(home_repo, flag):
    # git status trusts an assume-unchanged or skip-worktree entry and never reads the file:
    # the edit is invisible to it, and `git worktree remove` would delete it.
    commit(home_repo, "config/local.toml", "debug = false\n", "config")
    git(home_repo, "push", "-q", "origin", "main")
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    git(wt, "update-index", *flag, "config/local.toml")
    (wt / "config/local.toml").write_text("debug = true, my own edit\n")
    assert git(wt, "status", "--porcelain") == ""
    before = snapshot_of(home_repo)

    res = teardown(topic)
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "dirty-worktree", res.json["error"]
    assert res.json["error"]["message"].endswith(
        "has 1 changed tracked file(s): config/local.toml; commit them, or pass --force to "
        "snapshot and remove"
    )
    assert (wt / "config/local.toml").read_text() == "debug = true, my own edit\n"
    assert snapshot_of(home_repo) == before

    # --force snapshots the edit before the worktree goes.
    forced = teardown(topic, "--force")
    assert forced.code == 0, forced.out + forced.err
    assert not wt.exists()
    ref = snapshot_ref(topic.branch)
    assert git(home_repo, "show", f"{ref}:config/local.toml") == "debug = true, my own edit"
