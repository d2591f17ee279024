"""Benchmark: ``team-router status --json`` on a home repo with 500 topics (10 in worktrees).

Builds the fixture of bench_hook.py, counts the git processes of one run (a
``git`` wrapper first on PATH logs each call, then runs the real git), then runs
the installed ``team-router status --json`` and ``phase --json`` from the home
repo N times each, side by side and without the wrapper, and prints the git
processes of one run, the median wall and CPU times (the command and its
children) and the ratio of status to phase. Targets: status <= 500 ms wall, git
processes that grow with the topics that have a worktree (not with all topics),
and status <= 2x phase's time on the same fixture.

    python bench/bench_status.py [--runs N] [--topics N] [--worktrees N] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _fixture import ENV, cleanup, compile_package, load, sides, team_router, workdir
from bench_hook import build_topics, run_sides
from helpers.faults import git_logger, git_verbs

TARGET_MS = 500.0
TARGET_RATIO = 2.0


def git_counter(root: Path) -> tuple[dict[str, str], Path]:
    """An environment whose PATH starts with a ``git`` that logs each call, and the log."""
    log = root / "git-calls.log"
    return {**ENV, **git_logger(root / "counting-bin", log)}, log


def count_git(argv: list[str], *, cwd: Path, root: Path) -> dict[str, int]:
    """The git processes of one run of ``argv``, by verb (after a warm-up run)."""
    env, log = git_counter(root)
    for n in range(2):
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr}")
        if n == 0:
            log.unlink(missing_ok=True)
    return git_verbs(log) if log.exists() else {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--topics", type=int, default=500)
    parser.add_argument("--worktrees", type=int, default=10)
    parser.add_argument("--baseline", metavar="DIR", help="also time DIR's router/, side by side")
    args = parser.parse_args()
    root = workdir()
    try:
        compile_package()
        home, _worktree, _topic_id = build_topics(
            root, topics=args.topics, worktrees=args.worktrees
        )
        status, phase = [*team_router(), "status", "--json"], [*team_router(), "phase", "--json"]
        by_verb = count_git(status, cwd=home, root=root)
        envs = {
            f"{side} {command}": env
            for side, env in sides(args.baseline).items()
            for command in ("status", "phase")
        }
        argvs = {name: status if name.endswith("status") else phase for name in envs}
        found = run_sides(envs, argvs, cwd=home, stdin="", runs=args.runs)
        for name, (_timing, out) in found.items():
            topics = json.loads(out).get("topics")
            if name.endswith("status") and len(topics) != args.topics:
                raise SystemExit(f"{name} listed {len(topics)} topics, not {args.topics}")
    finally:
        cleanup(root)
    print(f"status --json, {args.topics} topics ({args.worktrees} in worktrees), {args.runs} runs")
    print(
        f"git processes per run: {sum(by_verb.values())} ({', '.join(f'{k} {v}' for k, v in sorted(by_verb.items()))})"
    )
    for side in dict.fromkeys(name.rsplit(" ", 1)[0] for name in envs):
        mine, theirs = found[f"{side} status"][0], found[f"{side} phase"][0]
        print(
            f"{side}: status {mine}, phase {theirs}: status/phase "
            f"{mine.wall / theirs.wall:.2f}x wall, {mine.cpu / theirs.cpu:.2f}x CPU"
        )
    print(load())
    timing, base = found["this tree status"][0], found["this tree phase"][0]
    wall, ratio = timing.wall * 1000, timing.wall / base.wall
    ok = wall <= TARGET_MS and ratio <= TARGET_RATIO
    print(
        f"status: {wall:.0f} ms wall (target <= {TARGET_MS:.0f} ms), {ratio:.2f}x phase "
        f"(target <= {TARGET_RATIO:.0f}x) {'PASS' if ok else 'FAIL'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
