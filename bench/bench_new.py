"""``team-router new`` vs a bare ``git worktree add -b`` on a 2,000-file repo (target <= 1.25x).

Both sides create a worktree for a fresh branch in the same repo, alternating,
and every worktree is removed (untimed) before the next run. ``--tmpfs`` builds
the fixture in memory (see ``_fixture.workdir``).

    python bench/bench_new.py [--tmpfs]
"""

from __future__ import annotations

import sys

from _fixture import (
    cleanup,
    make_repo,
    median,
    median_timing,
    sh,
    team_router,
    timed,
    verdict,
    workdir,
)

RUNS = 9


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tmpfs", action="store_true", help="build the fixture in /dev/shm")
    root = workdir(tmpfs=parser.parse_args().tmpfs)
    try:
        repo = make_repo(root / "ws", "app", files=2000, size=8192)
        cli = team_router()
        bare, ours = [], []
        for i in range(RUNS):
            path = repo / ".claude" / "worktrees" / f"bare-{i}"
            args = ("git", "worktree", "add", "-q", "-b", f"bare-{i}", str(path), "origin/HEAD")
            bare.append(timed(sh, *args, cwd=repo))
            topic = f"BENCH-{i}-new"
            ours.append(timed(sh, *cli, "-C", str(repo), "new", "x", "--id", topic, "--json"))
            for branch in (f"bare-{i}", topic):
                sh(
                    "git",
                    "worktree",
                    "remove",
                    "--force",
                    "--force",  # team-router's worktrees are locked against other tools' cleanup
                    str(repo / ".claude" / "worktrees" / branch),
                    cwd=repo,
                )
                sh("git", "branch", "-D", branch, cwd=repo)
        print(f"git worktree add -b: median {median_timing(bare)}")
        print(f"team-router new: median {median_timing(ours)}")
        cpu = median([o.cpu / b.cpu for o, b in zip(ours, bare, strict=True)])
        print(f"CPU new / git worktree add -b: {cpu:.2f}x")
        wall = median([o.wall / b.wall for o, b in zip(ours, bare, strict=True)])
        return verdict("new / git worktree add -b", wall, 1.25)
    finally:
        cleanup(root)


if __name__ == "__main__":
    sys.exit(main())
