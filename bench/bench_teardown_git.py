"""Benchmark: git processes of ``team-router teardown --integrate`` on a 3-repo topic.

Fixture: three sibling repos (home ``web``, ``api``, ``db``), each with a local
bare origin and a worktree of one topic (``new`` + ``worktrees``), one commit
on the topic branch in each, not on origin: teardown cherry-picks it onto the
default branch in each primary clone, then removes the worktrees and branches.
A ``git`` wrapper first on PATH logs every git process; the figure is their
number for the whole command, with a breakdown by git command and the wall and
CPU time. Target: <= 30 git processes (each git fact asked once).

    python bench/bench_teardown_git.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _fixture import cleanup, make_repo, sh, team_router, workdir
from bench_status import git_counter, run_once
from helpers.faults import git_verbs

TARGET = 30
TOPIC = "BENCH-3-integrate"


def build(root: Path) -> Path:
    ws = root / "ws"
    repos = [make_repo(ws, name, files=20) for name in ("web", "api", "db")]
    home = repos[0]
    cli = team_router()
    out = sh(*cli, "new", "integrate three repos", "--id", TOPIC, "--json", cwd=home)
    plan = Path(json.loads(out)["plan_dir"])
    items = "".join(f"- **name:** {p.name}\n  **path:** {p}\n  **role:** part\n" for p in repos[1:])
    (plan / "repos.md").write_text(
        f"# Repos\n\n## Home repo\n- **name:** web\n- **path:** {home}\n\n## Additional repos\n{items}"
    )
    made = json.loads(sh(*cli, "worktrees", TOPIC, "--json", cwd=home))
    for repo in made["repos"]:
        worktree = Path(repo["worktree"])
        (worktree / f"{repo['name']}-feature.txt").write_text("work\n")
        sh("git", "add", "-A", "--", f"{repo['name']}-feature.txt", cwd=worktree)
        sh("git", "commit", "-q", "-m", f"feature in {repo['name']}", cwd=worktree)
    # The run has shipped (its work kept without a PR): teardown refuses an unshipped one.
    sh(*cli, "record", "pr", TOPIC, "--local", cwd=home)
    return home


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--show", action="store_true", help="print every git call")
    args = parser.parse_args()
    counts, walls, cpus = [], [], []
    by_verb: Counter[str] = Counter()
    for _ in range(args.runs):
        root = workdir()
        try:
            home = build(root)
            env, log = git_counter(root)
            wall, cpu, out = run_once(
                [*team_router(), "teardown", TOPIC, "--integrate", "--json"], cwd=home, env=env
            )
            data = json.loads(out)
            if not data.get("ok", True) or len(data["repos"]) != 3:
                raise SystemExit(f"unexpected teardown answer: {out[:400]}")
            if args.show:
                print(log.read_text(), end="")
            by_verb = git_verbs(log)
            counts.append(sum(by_verb.values()))
            walls.append(wall)
            cpus.append(cpu)
        finally:
            cleanup(root)
    count = max(counts)
    ok = count <= TARGET
    print(f"teardown --integrate, 3 repos, {args.runs} runs (fresh fixture each)")
    print(f"git processes (last run): {', '.join(f'{k} {v}' for k, v in sorted(by_verb.items()))}")
    print(f"median wall {statistics.median(walls):.0f} ms, CPU {statistics.median(cpus):.0f} ms")
    print(f"git processes: {count} (target <= {TARGET}) {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
