"""``.worktreeinclude`` copies: a 200 MB, 20,000-file ``node_modules`` copied into a new worktree.

Two filesystems, each side by side in one run:

- a reflink one made here (an XFS image with ``reflink=1`` on a loop device,
  or with ``--fs btrfs`` a btrfs one; root only): team-router's copy (the ``.worktreeinclude`` stage: git's list
  of ignored paths, the walk and the copy) against a byte copy of the same
  tree (``cp -a --reflink=never``). Targets: <= 0.1x its time and <= 5% of
  its new disk blocks.
- the temp dir's own filesystem (ext4 here, no reflink): team-router's copy
  against ``cp -a``. Target: <= 1.1x.

Each side ends with ``syncfs`` of the filesystem measured, so the data written
is paid for, and starts from an empty destination with no dirty data
anywhere (``sync``). team-router's copy runs in this process, as ``new``
runs it (no interpreter start-up); the baseline is a ``cp`` process. The
tree: 20,000 files of 1-19 KiB (10 KiB on average, random bytes) in 400
packages, listed as ``node_modules/`` in ``.worktreeinclude`` and ignored.
For comparison (no target), the same bytes in 20 files of 10 MiB on the reflink filesystem:
there the data, not the creation of files, is what a byte copy pays for.

    python bench/bench_copies.py [--files N] [--runs N] [--workers N] [--fs xfs|btrfs]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from _fixture import ENV, children_cpu, cleanup, load, median, sh, workdir

FILES = 20_000
RUNS = 3
AVERAGE = 10_240  # bytes: 20,000 files make 200 MB
LIBC = ctypes.CDLL(None, use_errno=True)


class Run(NamedTuple):
    wall: float
    cpu: float
    blocks: int  # bytes of the filesystem's free space the copy took


def make_tree(repo: Path, files: int, average: int = AVERAGE) -> int:
    """A repo whose ignored ``node_modules`` is listed in ``.worktreeinclude``; returns its bytes."""
    repo.mkdir(parents=True)
    sh("git", "init", "-q", "-b", "main", cwd=repo)
    for name in (".gitignore", ".worktreeinclude"):
        (repo / name).write_text("node_modules/\n")
    sh("git", "add", ".", cwd=repo)
    sh("git", "commit", "-q", "-m", "include node_modules", cwd=repo)
    rng = random.Random(7)
    total = 0
    for i in range(files):
        folder = repo / "node_modules" / f"pkg{i % 400}" / ("lib" if i % 3 else "dist")
        folder.mkdir(parents=True, exist_ok=True)
        size = rng.randint(average // 10, 2 * average - average // 10)
        (folder / f"m{i}.js").write_bytes(rng.randbytes(size))
        total += size
    return total


def free(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bfree * st.f_frsize


def syncfs(path: Path) -> None:
    """Write out the one filesystem measured (``os.sync`` would wait for every other's too)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if LIBC.syncfs(fd) != 0:
            raise OSError(ctypes.get_errno(), "syncfs failed", str(path))
    finally:
        os.close(fd)


def cpu_now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime + children_cpu()


def measure(copy: Callable[[], object], fs: Path) -> Run:
    os.sync()
    before, cpu = free(fs), cpu_now()
    start = time.perf_counter()
    copy()
    syncfs(fs)
    wall = time.perf_counter() - start
    return Run(wall, cpu_now() - cpu, before - free(fs))


def ours(repo: Path, dest: Path, workers: int | None) -> Callable[[], object]:
    """The ``.worktreeinclude`` stage as ``new`` runs it, in this process (already started)."""
    from router import filecopy
    from router.create.include import copy_included

    if workers:
        filecopy.WORKERS = workers
    return lambda: copy_included(repo, dest)


def theirs(argv: list[str]) -> Callable[[], object]:
    return lambda: subprocess.run(argv, env=ENV, check=True, stdout=subprocess.DEVNULL)


def side_by_side(
    repo: Path, tool: list[str], runs: int, workers: int | None
) -> tuple[list[Run], list[Run]]:
    """Each run's pair back to back, alternating who goes first; destinations emptied between."""
    mine: list[Run] = []
    base: list[Run] = []
    dest = repo.parent / "dest"
    for run in range(runs):
        pair = ["ours", "base"] if run % 2 == 0 else ["base", "ours"]
        for who in pair:
            cleanup(dest)
            dest.mkdir()
            if who == "ours":
                mine.append(measure(ours(repo, dest, workers), repo))
            else:
                argv = [*tool, str(repo / "node_modules"), str(dest)]
                base.append(measure(theirs(argv), repo))
        cleanup(dest)
    return mine, base


def show(label: str, runs: list[Run]) -> None:
    walls = ", ".join(f"{r.wall:.2f}" for r in runs)
    print(
        f"{label}: median {median([r.wall for r in runs]):.2f} s wall ({walls}), "
        f"{median([r.cpu for r in runs]):.2f} s CPU, "
        f"{median([r.blocks for r in runs]) / 1048576:.1f} MiB of new blocks"
    )


# How each reflink filesystem the benchmark can make is made: its mkfs and options.
MKFS = {
    "xfs": ["mkfs.xfs", "-q", "-m", "reflink=1"],  # (xfsprogs)
    "btrfs": ["mkfs.btrfs", "-q"],  # (btrfs-progs) reflinks always; metadata DUP by default
}


class Reflink:
    """A reflink filesystem image (``MKFS``) mounted on a loop device for the benchmark's life."""

    def __init__(self, root: Path, fs: str) -> None:
        self.fs = fs
        self.image = root / f"{fs}.img"
        self.mnt = root / fs

    def __enter__(self) -> Path | None:
        mkfs = MKFS[self.fs]
        if shutil.which(mkfs[0]) is None or os.geteuid() != 0:
            print(f"no reflink filesystem: {mkfs[0]} and root are needed")
            return None
        with open(self.image, "wb") as fh:
            fh.truncate(2 << 30)  # sparse
        sh(*mkfs, str(self.image))
        self.mnt.mkdir()
        done = subprocess.run(["mount", "-o", "loop", str(self.image), str(self.mnt)])
        return self.mnt if done.returncode == 0 else None

    def __exit__(self, *exc: object) -> None:
        if self.mnt.is_mount():
            subprocess.run(["umount", str(self.mnt)], check=False)


def on_reflink(root: Path, args: argparse.Namespace) -> list[tuple[str, float, float]]:
    name = args.fs.upper() if args.fs == "xfs" else args.fs
    with Reflink(root, args.fs) as mnt:
        if mnt is None:
            return [("reflink filesystem: none could be made", 1.0, 0.0)]
        repo = mnt / "web"
        size = make_tree(repo, args.files)
        print(f"{name} on a loop device: {args.files} files, {size / 1e6:.0f} MB")
        mine, base = side_by_side(repo, ["cp", "-a", "--reflink=never"], args.runs, args.workers)
        show("  team-router's copy", mine)
        show("  byte copy (cp -a --reflink=never)", base)
        time_ratio = median([m.wall / b.wall for m, b in zip(mine, base, strict=True)])
        block_ratio = median([m.blocks / b.blocks for m, b in zip(mine, base, strict=True)])
        cleanup(repo)
        big_files(mnt / "big", args, name)
        return [
            (f"{name}: copy / byte copy, time", time_ratio, 0.1),
            (f"{name}: new blocks", block_ratio, 0.05),
        ]


def big_files(repo: Path, args: argparse.Namespace, name: str) -> None:
    """The same bytes in 20 files (10 MiB each): where the data, not the files, is the cost."""
    size = make_tree(repo, 20, average=10 << 20)
    print(f"{name}, for comparison: 20 files, {size / 1e6:.0f} MB (no target)")
    mine, base = side_by_side(repo, ["cp", "-a", "--reflink=never"], args.runs, args.workers)
    show("  team-router's copy", mine)
    show("  byte copy (cp -a --reflink=never)", base)
    ratio = median([m.wall / b.wall for m, b in zip(mine, base, strict=True)])
    print(f"  copy / byte copy, time: {ratio:.3f}x")
    cleanup(repo)


def on_disk(root: Path, args: argparse.Namespace) -> list[tuple[str, float, float]]:
    repo = root / "disk" / "web"
    size = make_tree(repo, args.files)
    fs = sh("stat", "-f", "-c", "%T", str(repo))
    print(f"the temp dir's filesystem ({fs}): {args.files} files, {size / 1e6:.0f} MB")
    mine, base = side_by_side(repo, ["cp", "-a"], args.runs, args.workers)
    show("  team-router's copy", mine)
    show("  cp -a", base)
    ratio = median([m.wall / b.wall for m, b in zip(mine, base, strict=True)])
    return [(f"{fs}: copy / cp -a, time", ratio, 1.1)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=FILES)
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--workers", type=int, default=None, help="copy threads (default: ours)")
    parser.add_argument("--fs", choices=sorted(MKFS), default="xfs", help="the reflink filesystem")
    args = parser.parse_args()
    root = workdir()
    try:
        rows = on_reflink(root, args) + on_disk(root, args)
    finally:
        cleanup(root)
    print(load())
    missed = 0
    for label, ratio, target in rows:
        ok = ratio <= target
        missed += not ok
        print(f"{label}: {ratio:.3f}x (target <= {target}x) {'PASS' if ok else 'FAIL'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
