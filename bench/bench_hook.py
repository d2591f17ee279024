"""Benchmark: the session-start recovery hook on a home repo with 50 topics and 10 worktrees.

Runs the installed ``team-router hook session-start`` as the host does (JSON on
stdin, from inside the newest topic's worktree), N times, and prints the median
wall time of the whole process on its last line. Target (DESIGN §15): <= 60 ms.

    python bench/bench_hook.py [--runs N] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _fixture import (
    ENV,
    Timing,
    children_cpu,
    cleanup,
    compile_package,
    load,
    make_repo,
    median_timing,
    sh,
    sides,
    team_router,
    workdir,
)

TARGET_MS = 60.0
ARTIFACTS = ("task.md", "questions.md", "research.md", "design.md", "structure.md", "plan.md")


def build_topics(root: Path, *, topics: int, worktrees: int) -> tuple[Path, Path, str]:
    """A home repo with ``topics`` plan dirs, the first ``worktrees`` of them in worktrees.

    Returns (home primary, the newest topic's worktree, its id). The newest
    topic is at IMPLEMENT with one commit on its branch; the others are spread
    over the earlier phases.
    """
    home = make_repo(root / "ws", "web", files=4)
    exclude = home / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    exclude.write_text("/.claude/worktrees/\n/docs/plans/\n")
    base = time.time() - 10 * topics
    newest: tuple[Path, str] | None = None
    for i in range(topics):
        topic_id = f"2026-05-{i % 28 + 1:02d}-topic-number-{i}"
        checkout = home
        if i < worktrees:
            checkout = home / ".claude" / "worktrees" / topic_id
            sh(
                "git",
                "worktree",
                "add",
                "-q",
                "-b",
                topic_id,
                str(checkout),
                "origin/main",
                cwd=home,
            )
        plan = checkout / "docs" / "plans" / topic_id
        _write_record(home, topic_id, checkout if i < worktrees else None, plan)
        _write_artifacts(plan, topic_id, count=1 + i % len(ARTIFACTS))
        stamp = base + (10 * topics if i == 0 else i)
        for path in [*plan.iterdir(), plan]:
            os.utime(path, (stamp, stamp))
        if i == 0:
            (checkout / "feature.txt").write_text("work\n")
            sh("git", "add", "feature.txt", cwd=checkout)
            sh("git", "commit", "-q", "-m", "first slice", cwd=checkout)
            _write_artifacts(plan, topic_id, count=len(ARTIFACTS))
            for path in [*plan.iterdir(), plan]:
                os.utime(path, (stamp, stamp))
            newest = (checkout, topic_id)
    assert newest is not None
    return home, newest[0], newest[1]


def _write_record(home: Path, topic_id: str, worktree: Path | None, plan: Path) -> None:
    """The home record `new` writes: discovery counts only the runs this machine started."""
    record = {
        "id": topic_id,
        "repo": "home",
        "branch": topic_id,
        "worktree": str(worktree) if worktree else None,
        "plan_dir": str(plan),
        "steps": ["inspect", "base", "claim", "add", "verify", "setup", "record"],
        "schema": 2,
    }
    path = home / ".git" / "team-router" / "topics" / f"{topic_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


def _write_artifacts(plan: Path, topic_id: str, *, count: int) -> None:
    plan.mkdir(parents=True, exist_ok=True)
    topic = topic_id.split("-", 3)[3]
    for name in ARTIFACTS[:count]:
        phase = name.removesuffix(".md")
        extra = "revision: 1\n" if name == "design.md" else ""
        (plan / name).write_text(
            f"---\ntopic: {topic}\ndate: 2026-05-01\nphase: {phase}\n{extra}---\n\n# {phase}\n\ntext\n"
        )
    if count >= ARTIFACTS.index("structure.md") + 1:
        (plan / "design-review-1.md").write_text(
            f"---\ntopic: {topic}\ndate: 2026-05-01\nphase: design-review\nverdict: APPROVE\n---\n"
        )


def run_timed(
    argv: list[str], *, cwd: Path, stdin: str, runs: int, env: dict[str, str] | None = None
) -> tuple[Timing, str]:
    """Median wall and CPU time of ``argv`` over ``runs`` (after one warm-up), and the last stdout."""
    found = run_sides({"": env or ENV}, argv, cwd=cwd, stdin=stdin, runs=runs)
    return found[""]


def run_sides(
    envs: dict[str, dict[str, str]],
    argv: list[str] | dict[str, list[str]],
    *,
    cwd: Path,
    stdin: str,
    runs: int,
) -> dict[str, tuple[Timing, str]]:
    """:func:`run_timed` of each side (by name, its environment; ``argv`` the same for each,
    or each side's own), run by run side by side, alternating which goes first, so that
    the machine's load weighs on each alike."""
    times: dict[str, list[Timing]] = {name: [] for name in envs}
    outs = dict.fromkeys(envs, "")
    for n in range(runs + 1):
        for name in list(envs) if n % 2 else list(envs)[::-1]:
            words = argv[name] if isinstance(argv, dict) else argv
            cpu = children_cpu()
            start = time.perf_counter()
            proc = subprocess.run(
                words, cwd=cwd, env=envs[name], input=stdin, capture_output=True, text=True
            )
            elapsed = Timing(time.perf_counter() - start, children_cpu() - cpu)
            if proc.returncode != 0:
                raise SystemExit(
                    f"{name}: {' '.join(words)} exited {proc.returncode}: {proc.stderr}"
                )
            outs[name] = proc.stdout
            if n:
                times[name].append(elapsed)
    return {name: (median_timing(times[name]), outs[name]) for name in envs}


def report(found: dict[str, tuple[Timing, str]]) -> None:
    """One line per side but the first (this tree, whose figure the last line gives)."""
    mine = next(iter(found.values()))[0]
    for name, (timing, _out) in list(found.items())[1:]:
        print(
            f"{name}: {timing} (this tree: {mine.wall / timing.wall:.2f}x wall, {mine.cpu / timing.cpu:.2f}x CPU)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=41)
    parser.add_argument("--baseline", metavar="DIR", help="also time DIR's router/, side by side")
    args = parser.parse_args()
    root = workdir()
    try:
        compile_package()
        _home, worktree, topic_id = build_topics(root, topics=50, worktrees=10)
        stdin = json.dumps({"cwd": str(worktree), "session_id": "bench", "source": "startup"})
        argv = [*team_router(), "hook", "session-start"]
        found = run_sides(sides(args.baseline), argv, cwd=worktree, stdin=stdin, runs=args.runs)
        for _timing, out in found.values():
            context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
            expected = f"Phase: IMPLEMENT | Id: {topic_id}"
            if expected not in context:
                raise SystemExit(f"unexpected notice: {context!r}")
    finally:
        cleanup(root)
    timing = found["this tree"][0]
    ms = timing.wall * 1000
    ok = ms <= TARGET_MS
    print(f"hook session-start, 50 topics x 10 worktrees, median of {args.runs} runs")
    report(found)
    print(f"{load()}; CPU {timing.cpu * 1000:.1f} ms")
    print(f"recovery hook: {ms:.1f} ms (target <= {TARGET_MS:.0f} ms) {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
