"""Benchmark: ``team-router status --json`` on a home repo with 500 topics (10 in worktrees).

Builds the fixture of bench_hook.py, puts a ``git`` wrapper first on PATH that
counts every git process (then runs the real git), runs the installed
``team-router status --json`` from the home repo N times, and prints the git
processes of one run, the median wall time and the median CPU time (the
command and its children). Target (issue 11): <= 500 ms wall, and git processes
that grow with the topics that have a worktree, not with all topics.

    python bench/bench_status.py [--runs N] [--topics N] [--worktrees N]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _fixture import ENV, cleanup, compile_package, team_router, workdir
from bench_hook import build_topics
from helpers.faults import git_logger, git_verbs

TARGET_MS = 500.0


def git_counter(root: Path) -> tuple[dict[str, str], Path]:
    """An environment whose PATH starts with a ``git`` that logs each call, and the log."""
    log = root / "git-calls.log"
    return {**ENV, **git_logger(root / "counting-bin", log)}, log


def run_once(argv: list[str], *, cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """(wall ms, CPU ms of the command and its children, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu, proc.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--topics", type=int, default=500)
    parser.add_argument("--worktrees", type=int, default=10)
    args = parser.parse_args()
    root = workdir()
    try:
        compile_package()
        home, _worktree, _topic_id = build_topics(
            root, topics=args.topics, worktrees=args.worktrees
        )
        env, log = git_counter(root)
        argv = [*team_router(), "status", "--json"]
        run_once(argv, cwd=home, env=env)  # warm-up
        log.unlink()
        walls, cpus = [], []
        out = ""
        for n in range(args.runs):
            wall, cpu, out = run_once(argv, cwd=home, env=env)
            walls.append(wall)
            cpus.append(cpu)
            if n == 0:
                by_verb = git_verbs(log)
        data = json.loads(out)
        if len(data["topics"]) != args.topics:
            raise SystemExit(f"status listed {len(data['topics'])} topics, not {args.topics}")
    finally:
        cleanup(root)
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    ok = wall <= TARGET_MS
    print(f"status --json, {args.topics} topics ({args.worktrees} in worktrees), {args.runs} runs")
    print(
        f"git processes per run: {sum(by_verb.values())} ({', '.join(f'{k} {v}' for k, v in sorted(by_verb.items()))})"
    )
    print(f"median CPU (command + children): {cpu:.0f} ms")
    print(f"status: {wall:.0f} ms wall (target <= {TARGET_MS:.0f} ms) {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
