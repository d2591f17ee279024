"""A full disk (a size-limited tmpfs): every I/O error names what was done and where; the rerun
after space is freed finishes the job, and nothing is lost."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.faults import git_then, run
from helpers.repos import branches, commit, git, make_repo, status, worktree_paths
from helpers.topics import new_topic, teardown


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MB tmpfs mounted for the test (we are root), unmounted after it whatever happens."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"a full disk needs a tmpfs mount, and mount failed: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path) -> str:
    """Shell text that fills ``disk`` to the last block (a file ``filler`` takes all that is left)."""
    return f"dd if=/dev/zero of='{disk}/filler' bs=64k 2>/dev/null; sync"


def test_a_disk_full_in_the_middle_of_integrate_names_the_write_and_its_path(small_disk, tmp_path):
    home = make_repo(small_disk / "ws", "web")
    topic = new_topic(home)
    commit(topic.worktrees["home"], "a.py", "a = 1\n", "work")
    # The disk fills right after the cherry-pick committed: the next write of ours fails.
    env = git_then(tmp_path / "bin", "cherry-pick --no-edit", _fill(small_disk))
    full = run("teardown", topic.id, "--integrate", "--json", cwd=home, env=env)
    assert full.code == 1, full.out + full.err
    record = home / ".git/team-router/topics" / f"{topic.id}.json"
    assert full.json["error"] == {
        "code": "io-error",
        "message": f"writing {record}: No space left on device; check space and permissions",
    }

    (small_disk / "filler").unlink()  # space is freed: the rerun finishes, the pick landed once
    again = teardown(topic, "--integrate")
    assert again.code == 0, again.out + again.err
    assert git(home, "log", "--format=%s", "main").splitlines() == ["work", "initial"]
    assert status(home) == ""
    assert worktree_paths(home) == [str(home)] and branches(home) == ["main"]
