"""``team-router new`` vs a bare ``git worktree add -b`` on a 2,000-file repo (target <= 1.25x).

Both sides create a worktree for a fresh branch in the same repo, alternating,
and every worktree is removed (untimed) before the next run. ``--tmpfs`` builds
the fixture in memory (see ``_fixture.workdir``). With ``--baseline DIR``
another checkout's ``router/`` runs ``new`` too in each round, beside this
tree's (alternating which goes first), and its figures are printed beside them.

    python bench/bench_new.py [--tmpfs] [--runs N] [--baseline DIR]
"""

from __future__ import annotations

import sys

from _fixture import (
    Timing,
    cleanup,
    make_repo,
    median_timing,
    paired,
    sh,
    sides,
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
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--baseline", metavar="DIR", help="also time DIR's router/, side by side")
    args = parser.parse_args()
    root = workdir(tmpfs=args.tmpfs)
    try:
        repo = make_repo(root / "ws", "app", files=2000, size=8192)
        cli = team_router()
        codes = sides(args.baseline)  # "this tree" first
        bare: list[Timing] = []
        ours: dict[str, list[Timing]] = {name: [] for name in codes}
        for i in range(args.runs):
            path = repo / ".claude" / "worktrees" / f"bare-{i}"
            args_ = ("git", "worktree", "add", "-q", "-b", f"bare-{i}", str(path), "origin/HEAD")
            bare.append(timed(sh, *args_, cwd=repo))
            order = list(codes) if i % 2 == 0 else list(reversed(codes))
            branches = [f"bare-{i}"]
            for n, name in enumerate(order):
                topic = f"BENCH-{i}-{n}-new"
                argv = (*cli, "-C", str(repo), "new", "x", "--id", topic, "--json")
                ours[name].append(timed(sh, *argv, cwd=repo, env=codes[name]))
                branches.append(topic)
            for branch in branches:
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
        for name, timings in ours.items():
            print(f"team-router new ({name}): median {median_timing(timings)}")
            if name != "this tree":
                wall, cpu = paired(timings, bare)
                print(f"  its new / git worktree add -b: {wall:.2f}x wall, {cpu:.2f}x CPU")
        mine = ours["this tree"]
        wall, cpu = paired(mine, bare)
        print(f"CPU new / git worktree add -b: {cpu:.2f}x")
        return verdict("new / git worktree add -b", wall, 1.25)
    finally:
        cleanup(root)


if __name__ == "__main__":
    sys.exit(main())
