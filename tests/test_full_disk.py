"""A full disk (a size-limited tmpfs): every I/O error names what was done and where; once space
is freed the rerun finishes the job, and nothing is lost."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.faults import fill_disk, git_then, mounted_tmpfs, run
from helpers.repos import branches, commit, git, make_repo, run_cli, status, worktree_paths, write
from helpers.topics import new_topic, teardown


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "disk", "16m") as disk:
        yield disk


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


def _big(seed: int) -> str:
    """About 1.4 MB of text that does not compress away (git stores it near full size)."""
    import hashlib

    return "".join(hashlib.sha256(f"{seed}-{n}".encode()).hexdigest() + "\n" for n in range(21000))


def test_restore_cut_short_by_a_full_disk_is_finished_once_space_is_freed(small_disk):
    home = make_repo(small_disk / "ws", "web")
    topic = new_topic(home)
    wt = topic.worktrees["home"]
    work = {"one.txt": _big(1), "two.txt": _big(2), "a.py": "edited\n"}
    for rel, text in work.items():
        write(wt / rel, text)
    assert teardown(topic, "--force").code == 0
    filler = fill_disk(small_disk, leave=1 << 20)  # room for the checkout, not for the work

    full = run_cli("restore", topic.id, "--json", cwd=home)
    assert full.code == 1, full.out + full.err
    (repo,) = full.json["repos"]
    assert (repo["status"], repo["worktree"]) == ("refused", None)
    assert "No space left on device" in repo["detail"] or "unable to write" in repo["detail"]
    cut = [rel for rel in ("one.txt", "two.txt") if (wt / rel).read_text() != work[rel]]
    assert cut  # git wrote part of the work before the disk was full

    filler.unlink()
    again = run_cli("restore", topic.id, "--json", cwd=home)
    assert again.code == 0, again.out + again.err
    assert again.json["repos"][0]["status"] == "restored"
    assert again.json["repos"][0]["worktree"] == str(wt)
    for rel, text in work.items():
        assert (wt / rel).read_text() == text
    assert sorted(branches(home)) == sorted(["main", topic.branch])  # no -restored copy
