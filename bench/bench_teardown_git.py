"""Benchmark: git processes of ``team-router teardown --integrate`` on a 3-repo topic.

Fixture: three sibling repos (home ``web``, ``api``, ``db``), each with a local
bare origin and a worktree of one topic (``new`` + ``worktrees``), one commit
on the topic branch in each, not on origin: teardown cherry-picks it onto the
default branch in each primary clone, then removes the worktrees and branches.
A ``git`` wrapper first on PATH logs every git process; the figure is their
number for the whole command, with a breakdown by git command and the wall and
CPU time (the wrapper's shell included, on both sides alike). With
``--baseline DIR`` the same runs of another checkout's ``router/`` go side by
side, alternating which goes first, each on a fixture of its own. Target: <= 30
git processes (each git fact asked once).

    python bench/bench_teardown_git.py [--runs N] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _fixture import (
    Timing,
    children_cpu,
    cleanup,
    load,
    make_repo,
    median_timing,
    sh,
    sides,
    team_router,
    workdir,
)
from helpers.faults import git_logger, git_verbs

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


def run_once(root: Path, env: dict[str, str], *, show: bool) -> tuple[Timing, Counter[str]]:
    """One timed teardown on a fresh fixture under ``root``: its time and its git processes."""
    home = build(root)
    log = root / "git-calls.log"
    env = {**env, **git_logger(root / "counting-bin", log)}
    argv = [*team_router(), "teardown", TOPIC, "--integrate", "--json"]
    cpu = children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=home, env=env, capture_output=True, text=True, check=False)
    timing = Timing(time.perf_counter() - start, children_cpu() - cpu)
    data = json.loads(proc.stdout) if proc.stdout.startswith("{") else {}
    if proc.returncode != 0 or not data.get("ok") or len(data["repos"]) != 3:
        raise SystemExit(f"unexpected teardown answer: {proc.stdout[:400]}{proc.stderr[:400]}")
    if show:
        print(log.read_text(), end="")
    return timing, git_verbs(log)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--show", action="store_true", help="print every git call")
    parser.add_argument("--baseline", metavar="DIR", help="a checkout to time side by side")
    args = parser.parse_args()
    envs = sides(args.baseline)
    times: dict[str, list[Timing]] = {name: [] for name in envs}
    counts: dict[str, list[int]] = {name: [] for name in envs}
    verbs: dict[str, Counter[str]] = {name: Counter() for name in envs}
    for n in range(args.runs):
        for name in list(envs) if n % 2 else list(envs)[::-1]:
            root = workdir()
            try:
                timing, by_verb = run_once(root, envs[name], show=args.show)
            finally:
                cleanup(root)
            times[name].append(timing)
            counts[name].append(sum(by_verb.values()))
            verbs[name] = by_verb
    print(
        f"teardown --integrate, 3 repos, {args.runs} runs per side (fresh fixture each); {load()}"
    )
    for name in envs:
        print(
            f"{name}: git processes {max(counts[name])}: "
            f"{', '.join(f'{k} {v}' for k, v in sorted(verbs[name].items()))}"
        )
        print(f"{name}: median {median_timing(times[name])}")
    count = max(counts["this tree"])
    ok = count <= TARGET
    print(f"git processes: {count} (target <= {TARGET}) {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
