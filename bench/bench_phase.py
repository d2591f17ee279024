"""Benchmark: ``team-router phase`` (discovery + inference) on a home repo with 500 topics.

Builds the fixture of bench_hook.py with 500 topics (10 in worktrees), runs the
installed ``team-router phase --json`` from the home repo N times, and prints
the median wall time on its last line (the CPU time beside it). Target: <= 150 ms (DESIGN §15).

    python bench/bench_phase.py [--runs N] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _fixture import cleanup, compile_package, load, sides, team_router, workdir
from bench_hook import build_topics, report, run_sides

TARGET_MS = 150.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--baseline", metavar="DIR", help="also time DIR's router/, side by side")
    args = parser.parse_args()
    root = workdir()
    try:
        compile_package()
        home, _worktree, topic_id = build_topics(root, topics=500, worktrees=10)
        argv = [*team_router(), "phase", "--json"]
        found = run_sides(sides(args.baseline), argv, cwd=home, stdin="", runs=args.runs)
        for _timing, out in found.values():
            data = json.loads(out)
            if (data["id"], data["resume_at"], data["step"]) != (topic_id, "IMPLEMENT", "tests"):
                raise SystemExit(f"unexpected answer: {data}")
    finally:
        cleanup(root)
    timing = found["this tree"][0]
    ms = timing.wall * 1000
    ok = ms <= TARGET_MS
    print(f"phase --json, 500 topics (10 in worktrees), median of {args.runs} runs")
    report(found)
    print(f"{load()}; CPU {timing.cpu * 1000:.1f} ms")
    print(f"phase inference: {ms:.1f} ms (target <= {TARGET_MS:.0f} ms) {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
