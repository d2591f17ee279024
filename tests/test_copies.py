"""``.worktreeinclude`` copies: copy-on-write where the filesystem can, never hard links,
resumed after a kill, on the machine's own filesystem and on a real reflink one (XFS)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.faults import CRASHED, finish, mounted_tmpfs, run, spawn
from helpers.origin import include
from helpers.repos import make_repo, run_cli, status, write

from router.create.include import CRASH_MID_COPY
from router.filecopy import TEMP_SUFFIX
from router.topic import state

ID = "2026-05-01-add-thing"
NEW = ("new", "Add thing", "--date", "2026-05-01", "--json")


def _fs_type(path: Path) -> str:
    return subprocess.run(
        ["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True, check=True
    ).stdout.strip()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _include(repo: Path, *patterns: str) -> None:
    """``patterns`` both ignored and listed in ``.worktreeinclude``, committed and pushed."""
    include(repo, *patterns)


def _node_modules(repo: Path, files: int, size: int = 2048) -> dict[str, str]:
    """``files`` files in 50 packages, a link farm in ``.bin``; returns rel -> sha256."""
    made: dict[str, str] = {}
    for i in range(files):
        rel = f"node_modules/pkg{i % 50}/lib/f{i}.js"
        data = (f"// {i}\n" * (size // 8)).encode()[:size]
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        made[rel] = hashlib.sha256(data).hexdigest()
    return made


def _tree(root: Path, under: str) -> dict[str, str]:
    """rel -> sha256 (files) or ``-> target`` (links) of every entry below ``root/under``."""
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root / under):
        for name in filenames + [d for d in dirnames if os.path.islink(Path(dirpath, d))]:
            path = Path(dirpath, name)
            rel = str(path.relative_to(root))
            found[rel] = f"-> {os.readlink(path)}" if path.is_symlink() else _digest(path)
    return found


def _size(root: Path, under: str) -> int:
    """The bytes of the regular files below ``root/under`` (links not followed)."""
    return sum(
        os.lstat(Path(d, f)).st_size
        for d, _dirs, files in os.walk(root / under)
        for f in files
        if not os.path.islink(Path(d, f))
    )


# -- the machine's own filesystem -------------------------------------------------------


def test_included_tree_is_copied_never_linked_with_modes_links_and_a_report(home_repo, tmp_path):
    _include(home_repo, "node_modules/", ".env")
    _node_modules(home_repo, 300)
    write(home_repo / ".env", "TOKEN=1\n")
    os.chmod(home_repo / ".env", 0o600)
    tool = write(home_repo / "node_modules/pkg1/bin/tool.js", "#!/usr/bin/env node\n")
    os.chmod(tool, 0o755)
    (home_repo / "node_modules/.bin").mkdir()
    os.symlink("../pkg1/bin/tool.js", home_repo / "node_modules/.bin/tool")
    outside = write(tmp_path / "outside" / "secret", "outside the repo\n")
    os.symlink(outside, home_repo / "node_modules/.bin/escape")
    os.symlink(outside.parent, home_repo / "node_modules/linked-dir")
    res = run_cli(*NEW, cwd=home_repo)
    assert res.code == 0, res.err
    wt = Path(res.json["home"]["worktree"])
    copied = res.json["home"]["copied"]
    want = _tree(home_repo, "node_modules")
    assert _tree(wt, "node_modules") == want
    total = _size(home_repo, "node_modules")
    expected_method = "copy_file_range" if _fs_type(tmp_path) in {"ext2/ext3", "tmpfs"} else None
    assert copied == {
        "files": len(want) + 1,  # and .env
        "bytes": total + len("TOKEN=1\n"),
        "kept": 0,
        "method": expected_method or copied["method"],
        "seconds": copied["seconds"],
    }
    assert copied["method"] in {"reflink", "copy_file_range", "bytes"}
    assert isinstance(copied["seconds"], float) and copied["seconds"] >= 0
    # Links stay links: nothing outside the repo was read through them.
    assert os.readlink(wt / "node_modules/.bin/escape") == str(outside)
    assert os.readlink(wt / "node_modules/linked-dir") == str(outside.parent)
    assert os.readlink(wt / "node_modules/.bin/tool") == "../pkg1/bin/tool.js"
    assert (wt / ".env").stat().st_mode & 0o777 == 0o600
    assert (wt / "node_modules/pkg1/bin/tool.js").stat().st_mode & 0o777 == 0o755
    # Never a hard link: its own inode, and an edit in the worktree stays there.
    for rel in (".env", "node_modules/pkg7/lib/f7.js"):
        ours, theirs = (wt / rel).stat(), (home_repo / rel).stat()
        assert ours.st_ino != theirs.st_ino and ours.st_nlink == 1
    before = _digest(home_repo / "node_modules/pkg7/lib/f7.js")
    with open(wt / "node_modules/pkg7/lib/f7.js", "r+b") as fh:
        fh.write(b"edited in the worktree")
    assert _digest(home_repo / "node_modules/pkg7/lib/f7.js") == before
    # The record names every copy (teardown names them), a folder copied whole as one entry.
    record = state.read_record(home_repo / ".git", ID)
    assert record is not None and record.included == (".env", "node_modules/")
    assert status(wt) == "" and status(home_repo) == ""


def test_teardown_names_a_folder_of_copies_once_and_finds_an_edit_in_it_by_stat(home_repo):
    _include(home_repo, "node_modules/", ".env")
    _node_modules(home_repo, 50)
    write(home_repo / ".env", "TOKEN=1\n")
    os.symlink("pkg1", home_repo / "node_modules/first")
    res = run_cli(*NEW, cwd=home_repo)
    assert res.code == 0, res.err
    wt = Path(res.json["home"]["worktree"])

    def remove_detail() -> str:
        plan = run_cli("teardown", ID, "--force", "--dry-run", "--json", cwd=home_repo)
        assert plan.code == 0, plan.out + plan.err
        return next(s for s in plan.json["repos"][0]["steps"] if s["name"] == "remove")["detail"]

    held = "it held copies placed by .worktreeinclude: .env, node_modules/"
    assert remove_detail().endswith(held)
    with open(wt / "node_modules/pkg7/lib/f7.js", "ab") as fh:
        fh.write(b"// edited in the worktree")
    assert remove_detail().endswith(f"{held} (edited since copied, not kept: node_modules/)")


def test_the_text_report_says_how_many_files_were_copied_which_way_and_how_long(home_repo):
    _include(home_repo, ".env")
    write(home_repo / ".env", "TOKEN=1\n")
    res = run_cli("new", "Add thing", "--date", "2026-05-01", cwd=home_repo)
    assert res.code == 0, res.err
    lines = res.out.splitlines()
    assert lines[0] == f"Topic {ID} (branch {ID})"
    assert lines[1].startswith("home: created ")
    line = lines[2]
    assert line.startswith("  .worktreeinclude: copied 1 file (0.0 MiB) by "), line
    method = line.split(" by ")[1].split(" in ")[0]
    assert method in {"reflink", "copy_file_range", "bytes"}
    assert line.endswith(" s") and lines[3].startswith("Artifact directory: ")


def test_a_repo_without_worktreeinclude_reports_no_copy(home_repo):
    res = run_cli(*NEW, cwd=home_repo)
    assert res.code == 0, res.err
    assert res.json["home"]["copied"] is None


def test_an_existing_file_in_the_worktree_is_never_overwritten(home_repo):
    _include(home_repo, "node_modules/")
    made = _node_modules(home_repo, 5)
    crashed = run(*NEW, cwd=home_repo, crash_at="setup")
    assert crashed.code == CRASHED, crashed.err
    wt = home_repo / ".claude/worktrees" / ID
    mine = write(wt / "node_modules/pkg1/lib/f1.js", "the user's own, newer file\n")
    res = run(*NEW, cwd=home_repo)
    assert res.code == 0, res.err
    assert mine.read_text() == "the user's own, newer file\n"
    assert res.json["home"]["copied"]["files"] == len(made) - 1
    assert _digest(wt / "node_modules/pkg2/lib/f2.js") == made["node_modules/pkg2/lib/f2.js"]
    record = state.read_record(home_repo / ".git", ID)
    assert record is not None and "node_modules/pkg1/lib/f1.js" not in record.included


def _assert_whole_copies_only(primary: Path, wt: Path) -> int:
    """Every file in the worktree's ``node_modules`` is a whole copy; returns how many."""
    there = _tree(wt, "node_modules") if (wt / "node_modules").exists() else {}
    source = _tree(primary, "node_modules")
    assert {rel: source.get(rel) for rel in there} == there  # no half-written file
    assert not [p for p in there if p.endswith(TEMP_SUFFIX)]
    return len(there)


def _assert_resumed(primary: Path, done_before: int, again) -> None:
    assert again.code == 0, again.err
    wt = Path(again.json["home"]["worktree"])
    source = _tree(primary, "node_modules")
    assert _tree(wt, "node_modules") == source
    copied = again.json["home"]["copied"]
    assert (copied["files"], copied["kept"]) == (len(source) - done_before, done_before)
    record = state.read_record(primary / ".git", ID)
    assert record is not None and record.included == ("node_modules/",)
    assert status(wt) == ""


def test_a_copy_killed_halfway_is_finished_by_the_rerun(home_repo):
    _include(home_repo, "node_modules/")
    _node_modules(home_repo, 1200)
    crashed = run(*NEW, cwd=home_repo, crash_at=CRASH_MID_COPY)
    assert crashed.code == CRASHED, crashed.err
    wt = home_repo / ".claude/worktrees" / ID
    done = _assert_whole_copies_only(home_repo, wt)
    assert 0 < done < 1200
    _assert_resumed(home_repo, done, run(*NEW, cwd=home_repo))


def test_sigkill_to_the_process_group_mid_copy_is_resumed_by_the_rerun(home_repo):
    _include(home_repo, "node_modules/")
    _node_modules(home_repo, 4000, size=16384)
    wt = home_repo / ".claude/worktrees" / ID
    proc = spawn(*NEW, cwd=home_repo, new_group=True)
    deadline = time.monotonic() + 60
    while not (wt / "node_modules").exists() and proc.poll() is None:
        assert time.monotonic() < deadline, "the copy never started"
        time.sleep(0.002)
    os.killpg(proc.pid, signal.SIGKILL)
    killed = finish(proc)
    done = _assert_whole_copies_only(home_repo, wt)
    if killed.code == 0:
        pytest.skip("the copy finished before the kill reached it (nothing to resume)")
    assert killed.code == -signal.SIGKILL
    _assert_resumed(home_repo, done, run(*NEW, cwd=home_repo))


def test_a_disk_too_small_for_the_copies_falls_back_and_the_rerun_copies_them_all(home_repo):
    # .claude/worktrees on a disk of its own: no clone across filesystems, and it fills up.
    _include(home_repo, "node_modules/")
    _node_modules(home_repo, 48, size=65536)  # 3 MiB
    source = _tree(home_repo, "node_modules")
    with mounted_tmpfs(home_repo / ".claude/worktrees", "2m") as disk:
        res = run_cli(*NEW, cwd=home_repo)
        assert res.code == 0, res.err
        assert (res.json["home"]["status"], res.json["home"]["copied"]) == ("fallback", None)
        assert "No space left on device" in res.json["warnings"][0], res.json["warnings"]
        assert os.listdir(disk) == []  # the half-set-up worktree was rolled back
        assert _tree(home_repo, "node_modules") == source  # nothing of the primary's touched
        subprocess.run(["mount", "-o", "remount,size=16m", str(disk)], check=True)
        again = run_cli("worktrees", ID, "--json", cwd=home_repo)
        assert again.code == 0, again.err
        [home] = again.json["repos"]
        assert (home["status"], home["copied"]["files"]) == ("created", len(source))
        assert home["copied"]["method"] in {"copy_file_range", "bytes"}
        assert _tree(Path(home["worktree"]), "node_modules") == source
        assert status(home_repo) == ""


# -- a reflink filesystem (XFS on a loop device) ----------------------------------------


@pytest.fixture
def xfs(tmp_path: Path) -> Iterator[Path]:
    """An XFS filesystem with reflink, mounted from an image on a loop device."""
    if shutil.which("mkfs.xfs") is None:
        pytest.skip("mkfs.xfs is not installed (Debian: xfsprogs)")
    if os.geteuid() != 0:
        pytest.skip("mounting a loop device needs root")
    image, mnt = tmp_path / "xfs.img", tmp_path / "xfs"
    with open(image, "wb") as fh:
        fh.truncate(512 << 20)  # sparse: only what is written takes disk
    subprocess.run(["mkfs.xfs", "-q", "-m", "reflink=1", str(image)], check=True)
    mnt.mkdir()
    mounted = subprocess.run(["mount", "-o", "loop", str(image), str(mnt)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount an XFS image here: {mounted.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], check=False)


def _shared_extents(path: Path) -> bool:
    out = subprocess.run(["filefrag", "-v", str(path)], capture_output=True, text=True).stdout
    return "shared" in out


def test_on_xfs_the_copy_shares_blocks_and_an_edit_stays_in_the_worktree(xfs):
    ws = xfs / "ws"
    ws.mkdir()
    repo = make_repo(ws, "web")  # its bare origin is on the XFS too
    _include(repo, "node_modules/")
    made = _node_modules(repo, 200)
    big = repo / "node_modules/pkg0/big.bin"
    big.write_bytes(os.urandom(1 << 20) * 64)  # 64 MiB
    os.sync()
    free_before = os.statvfs(xfs).f_bfree * os.statvfs(xfs).f_frsize
    res = run_cli(*NEW, cwd=repo)
    assert res.code == 0, res.err
    os.sync()
    used = free_before - os.statvfs(xfs).f_bfree * os.statvfs(xfs).f_frsize
    wt = Path(res.json["home"]["worktree"])
    copied = res.json["home"]["copied"]
    assert (copied["method"], copied["files"], copied["kept"]) == ("reflink", len(made) + 1, 0)
    assert copied["bytes"] == _size(repo, "node_modules")
    # The 64 MiB file took no new data blocks (the checkout and metadata take a little).
    assert used < (64 << 20) // 20, used
    assert _shared_extents(wt / "node_modules/pkg0/big.bin")
    assert _shared_extents(big)
    assert _tree(wt, "node_modules") == _tree(repo, "node_modules")
    # Copy-on-write: an edit to the worktree's copy never reaches the primary's file.
    before = _digest(big)
    with open(wt / "node_modules/pkg0/big.bin", "r+b") as fh:
        fh.seek(1 << 20)
        fh.write(b"edited in the worktree" * 100)
    os.sync()
    assert _digest(big) == before
    assert _digest(wt / "node_modules/pkg0/big.bin") != before
    assert (wt / "node_modules/pkg0/big.bin").stat().st_ino != big.stat().st_ino


def test_on_xfs_a_kill_halfway_is_resumed_and_the_rest_is_still_cloned(xfs):
    ws = xfs / "ws"
    ws.mkdir()
    repo = make_repo(ws, "web")
    _include(repo, "node_modules/")
    _node_modules(repo, 1200)
    crashed = run(*NEW, cwd=repo, crash_at=CRASH_MID_COPY)
    assert crashed.code == CRASHED, crashed.err
    done = _assert_whole_copies_only(repo, repo / ".claude/worktrees" / ID)
    assert 0 < done < 1200
    again = run(*NEW, cwd=repo)
    _assert_resumed(repo, done, again)
    assert again.json["home"]["copied"]["method"] == "reflink"


# -- no /proc to name an unnamed file: temp names ----------------------------------------

_COPY_TREE = (
    "import json, sys\n"
    "from router.filecopy import copy_tree\n"
    "d = copy_tree(sys.argv[1], sys.argv[2], sys.argv[3:])\n"
    "print(json.dumps([d.files, d.kept, list(d.placed), d.method]))\n"
)


def test_without_proc_a_copy_goes_through_a_temp_name_and_a_stale_one_is_redone(tmp_path):
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("hiding /proc in a mount namespace needs unshare and root")
    src, dst = tmp_path / "src", tmp_path / "dst"
    rels = [f"pkg{i % 3}/f{i}.js" for i in range(600)]
    for i, rel in enumerate(rels):
        write(src / rel, f"file {i}\n" * 100)
    # What a copy killed mid-write left: half a file under the temp name, and a whole copy.
    stale = write(dst / f"{rels[0]}{TEMP_SUFFIX}", "half")
    (dst / rels[1]).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src / rels[1], dst / rels[1])
    hide_proc = 'mount -t tmpfs none /proc && exec "$0" "$@"'
    unshare = ["unshare", "--mount", "--propagation", "private", "sh", "-c", hide_proc]
    done = subprocess.run(
        [*unshare, sys.executable, "-c", _COPY_TREE, str(src), str(dst), *rels],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0 and "unshare" in done.stderr:
        pytest.skip(f"no mount namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    files, kept, placed, method = json.loads(done.stdout)
    assert (files, kept, placed) == (599, 1, sorted(rels))
    assert method in {"reflink", "copy_file_range", "bytes"}
    assert not stale.exists()  # redone under the temp name, then renamed
    assert _tree(tmp_path, "dst") == {f"dst/{r}": _digest(src / r) for r in rels}
