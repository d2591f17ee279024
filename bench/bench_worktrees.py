"""``team-router worktrees`` over 8 sibling repos vs the same fetch + add run repo after repo.

Fixture: 8 sibling repos of 2,000 files (8 KiB each), each with a local bare
origin, and a topic whose repos.md lists the 7 secondaries. The baseline runs
``git fetch origin`` and ``git worktree add -b <branch> <path> origin/HEAD`` in
each of the 7 secondaries in turn; ``team-router worktrees`` does the same work
(plus its checks, records and the repos.md write-back, and the home worktree's
check: it exists already, made untimed by ``new`` as at the STRUCTURE phase).
Each run times the two back to back (alternating which goes first) and the
verdict is the median of those paired ratios; wall and CPU time are printed
for both. Target: <= 0.7x.

``--tmpfs`` builds the fixture in memory (no disk: the processes' own work);
``--hogs N`` keeps N processes spinning on the cores meanwhile (a loaded
machine, the same in every run).

    python bench/bench_worktrees.py [--repos N] [--runs N] [--tmpfs] [--hogs N]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from _fixture import (
    Hogs,
    Timing,
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

REPOS = 8
RUNS = 3


def repos_md(home: Path, others: list[Path]) -> str:
    items = "".join(f"- **name:** {p.name}\n  **path:** {p}\n  **role:** part\n" for p in others)
    return (
        "---\ntopic: bench\ndate: 2026-05-01\nphase: repos\n---\n\n"
        f"## Home repo\n- **name:** {home.name}\n- **path:** {home}\n\n"
        f"## Additional repos\n{items}"
    )


def sequential(repos: list[Path], branch: str) -> None:
    for repo in repos:
        sh("git", "fetch", "--quiet", "origin", cwd=repo)
        path = repo / ".claude" / "worktrees" / branch
        sh("git", "worktree", "add", "-q", "-b", branch, str(path), "origin/HEAD", cwd=repo)


def remove(repos: list[Path], branch: str) -> None:
    for repo in repos:
        path = repo / ".claude" / "worktrees" / branch
        # team-router's worktrees are locked against other tools' cleanup: git asks for --force twice
        sh("git", "worktree", "remove", "--force", "--force", str(path), cwd=repo)
        sh("git", "branch", "-D", branch, cwd=repo)


def start_topic(cli: list[str], home: Path, topic: str, spec: Path) -> Path:
    """`new` (the home worktree, untimed) and the topic's repos.md: the STRUCTURE phase's start."""
    out = sh(*cli, "-C", str(home), "new", "x", "--id", topic, "--json")
    plan = Path(json.loads(out)["plan_dir"])
    (plan / "repos.md").write_text(spec.read_text())
    return plan


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=REPOS, help="repos, the home one included")
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--tmpfs", action="store_true", help="build the fixture in /dev/shm")
    parser.add_argument("--hogs", type=int, default=0, help="CPU-bound processes meanwhile")
    args = parser.parse_args()
    root = workdir(tmpfs=args.tmpfs)
    try:
        ws = root / "ws"
        repos = [make_repo(ws, f"repo{i}", files=2000) for i in range(args.repos)]
        cli = team_router()
        base: list[Timing] = []
        ours: list[Timing] = []
        with Hogs(args.hogs):
            measure(args, repos, cli, root, base, ours)
        n = args.repos - 1
        where = "tmpfs" if args.tmpfs else "the temp dir's disk"
        print(f"fixture on {where}, {args.hogs} CPU hog(s) running")
        print(f"sequential fetch + worktree add in {n} repos: median {median_timing(base)}")
        print(f"team-router worktrees ({n} created, home existing): median {median_timing(ours)}")
        cpu = median([o.cpu / b.cpu for o, b in zip(ours, base, strict=True)])
        ratios = [o.wall / b.wall for o, b in zip(ours, base, strict=True)]
        print("per-run wall ratios: " + ", ".join(f"{r:.2f}" for r in ratios))
        print(f"CPU worktrees / sequential: {cpu:.2f}x")
        return verdict("worktrees / sequential", median(ratios), 0.7)
    finally:
        cleanup(root)


def measure(
    args: argparse.Namespace,
    repos: list[Path],
    cli: list[str],
    root: Path,
    base: list[Timing],
    ours: list[Timing],
) -> None:
    """Each run's pair back to back, alternating who goes first."""
    for run in range(args.runs):
        topic = f"BENCH-{run}-multi"
        spec = root / f"repos-{run}.md"
        spec.write_text(repos_md(repos[0], repos[1:]))
        start_topic(cli, repos[0], topic, spec)
        branch = f"seq-{run}"
        # Neither side always runs on the warmer (or the busier) machine. The
        # command runs in the home repo with the id, as the team skill runs it.
        pair = [("base", branch), ("ours", topic)]
        for who, name in pair if run % 2 == 0 else pair[::-1]:
            if who == "base":
                base.append(timed(sequential, repos[1:], name))
                remove(repos[1:], name)
            else:
                ours.append(timed(sh, *cli, "worktrees", topic, "--json", cwd=repos[0]))
                remove(repos[1:], topic)
            # Each side starts from the same tree: no worktrees but the home's.
        remove(repos[:1], topic)


if __name__ == "__main__":
    sys.exit(main())
