"""``team-router new --sparse`` vs a full ``git worktree add`` of a 100,000-file repo (target <= 0.25x).

The repo has 100 top-level directories of 1,000 files each; ``--sparse`` names
ten of them (a tenth of the files). Both sides create a worktree for a fresh
branch in the same repo, alternating which goes first, and every worktree is
removed (untimed) before the next run. Building the repo takes a while, so it
is made once with ``git fast-import`` and kept (``--cache DIR``, default under
the system's temp dir) for the next run; ``--fresh`` builds it again.

    python bench/bench_sparse.py [--tmpfs] [--fresh] [--cache DIR]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from _fixture import (
    ENV,
    Timing,
    cleanup,
    median_timing,
    paired,
    sh,
    team_router,
    timed,
    verdict,
)

RUNS = 3
DIRS = 100  # top-level directories
PER_DIR = 1000  # files in each (in 10 subdirectories of 100)
SIZE = 1024  # bytes per file
CONE = [f"dir{n:02d}" for n in range(0, DIRS, DIRS // 10)]  # a tenth of the tree
TARGET = 0.25
VERSION = "1"  # bump when the fixture's shape changes: a cached one is then built again


def fast_import_stream() -> bytes:
    """One commit holding every file, each a blob of its own (fast-import's own format)."""
    parts = [
        b"commit refs/heads/main\n"
        b"committer Bench <bench@example.com> 1777636800 +0000\n"
        b"data 8\ninitial\n"
    ]
    filler = b"x" * 63 + b"\n"
    for d in range(DIRS):
        for f in range(PER_DIR):
            path = f"dir{d:02d}/sub{f % 10}/file{f}.txt".encode()
            body = f"{d}/{f}\n".encode() + filler * (SIZE // 64)
            parts.append(b"M 100644 inline " + path + b"\ndata %d\n" % len(body) + body + b"\n")
    parts.append(b"M 100644 inline README.md\ndata 7\n# mono\n\n")
    return b"".join(parts)


def build(root: Path) -> Path:
    """``root/ws/mono`` on main with every file, pushed to ``root/origins/mono.git``."""
    repo = root / "ws" / "mono"
    repo.mkdir(parents=True)
    sh("git", "init", "-q", "-b", "main", cwd=repo)
    subprocess.run(
        ["git", "fast-import", "--quiet"], cwd=repo, env=ENV, input=fast_import_stream(), check=True
    )
    sh("git", "reset", "-q", "--hard", "main", cwd=repo)  # the primary's own checkout
    bare = root / "origins" / "mono.git"
    bare.parent.mkdir(parents=True)
    sh("git", "init", "-q", "--bare", "-b", "main", str(bare))
    sh("git", "remote", "add", "origin", str(bare), cwd=repo)
    sh("git", "push", "-q", "-u", "origin", "main", cwd=repo)
    sh("git", "remote", "set-head", "origin", "main", cwd=repo)
    (root / "ready").write_text(VERSION)
    return repo


def fixture(cache: Path, *, fresh: bool) -> Path:
    ready = cache / "ready"
    if fresh or not ready.exists() or ready.read_text() != VERSION:
        cleanup(cache)
        print(f"building the {DIRS * PER_DIR:,}-file repo in {cache} ...", flush=True)
        return build(cache)
    return cache / "ws" / "mono"


def remove(repo: Path, branch: str) -> None:
    """The worktree, the branch and team-router's record of it: the repo as it was."""
    path = repo / ".claude" / "worktrees" / branch
    for args in (("worktree", "remove", "--force", "--force", str(path)), ("branch", "-D", branch)):
        subprocess.run(["git", *args], cwd=repo, env=ENV, capture_output=True, check=False)
    (repo / ".git" / "team-router" / "topics" / f"{branch}.json").unlink(missing_ok=True)


def one_round(repo: Path, cli: list[str], i: int) -> tuple[Timing, Timing]:
    path = repo / ".claude" / "worktrees" / f"bare-{i}"
    full = ("git", "worktree", "add", "-q", "-b", f"bare-{i}", str(path), "origin/HEAD")
    topic = f"BENCH-{i}-sparse"
    ours = (*cli, "-C", str(repo), "new", "x", "--id", topic, "--sparse", ",".join(CONE))
    if i % 2:
        b, o = timed(sh, *full, cwd=repo), timed(sh, *ours, "--json")
    else:
        o, b = timed(sh, *ours, "--json"), timed(sh, *full, cwd=repo)
    remove(repo, f"bare-{i}")
    remove(repo, topic)
    return b, o


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tmpfs", action="store_true", help="keep the fixture in /dev/shm")
    parser.add_argument("--fresh", action="store_true", help="build the fixture again")
    parser.add_argument("--cache", type=Path, help="where the fixture is kept between runs")
    args = parser.parse_args()
    base = Path("/dev/shm") if args.tmpfs else Path(tempfile.gettempdir())
    repo = fixture(args.cache or base / f"team-router-bench-sparse-v{VERSION}", fresh=args.fresh)
    cli = team_router()
    for branch in sh("git", "branch", "--format=%(refname:short)", cwd=repo).split():
        if branch != "main":  # what a run cut short left
            remove(repo, branch)
    bare: list[Timing] = []
    ours: list[Timing] = []
    for i in range(RUNS):
        b, o = one_round(repo, cli, i)
        bare.append(b)
        ours.append(o)
    print(f"git worktree add (all {DIRS * PER_DIR:,} files): median {median_timing(bare)}")
    print(f"team-router new --sparse ({len(CONE)} of {DIRS} dirs): median {median_timing(ours)}")
    wall, cpu = paired(ours, bare)
    print(f"CPU new --sparse / git worktree add: {cpu:.2f}x")
    return verdict("new --sparse / git worktree add", wall, TARGET)


if __name__ == "__main__":
    sys.exit(main())
