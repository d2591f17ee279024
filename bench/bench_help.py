"""Benchmark: ``team-router --help``, the first thing a newcomer runs.

Runs the installed ``team-router --help`` (piped, so 80 columns) N times after
one warm-up and prints the median wall time on its last line, CPU time beside
it. Target: <= 80 ms.

    python bench/bench_help.py [--runs N] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _fixture import compile_package, load, sides, team_router
from bench_hook import report, run_sides

TARGET_MS = 80.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--baseline", metavar="DIR", help="also time DIR's router/, side by side")
    args = parser.parse_args()
    compile_package()
    with tempfile.TemporaryDirectory() as cwd:
        argv = [*team_router(), "--help"]
        found = run_sides(sides(args.baseline), argv, cwd=Path(cwd), stdin="", runs=args.runs)
    for _timing, out in found.values():
        if "Usage: team-router" not in out:
            raise SystemExit(f"unexpected help: {out[:200]!r}")
    timing = found["this tree"][0]
    ms = timing.wall * 1000
    ok = ms <= TARGET_MS
    print(f"team-router --help, median of {args.runs} runs")
    report(found)
    print(f"{load()}; CPU {timing.cpu * 1000:.1f} ms")
    print(f"--help: {ms:.1f} ms (target <= {TARGET_MS:.0f} ms) {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
