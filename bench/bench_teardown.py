"""``team-router teardown`` of an 8-repo topic vs the same git commands run repo after repo.

Fixture (built afresh for every timed run, identically): 8 sibling repos of
FILES files, each with a local bare origin and a worktree of one topic (made by
``team-router new`` and ``worktrees``), one commit on the topic branch in each
but the last, pushed and merged on origin with a merge commit, the branch
deleted on origin: the usual state after the pull requests are merged, one repo
left untouched (see ``settle``).

The baseline is a Python loop that runs, repo after repo, the git commands
seed 002's teardown steps name for this state: fetch, the dirty check
(``status --porcelain --untracked-files=all``), ``git cherry`` against
origin/main, ``worktree remove``, ``branch -D``, the verify-gone ``worktree
list``, the primary clone's clean-and-on-main check (``status``,
``symbolic-ref``), ``pull --rebase origin main``, ``remote prune origin``, the plan dir's
``ls-files`` (home), the sweep's ``worktree list`` and ``git show
origin/main:.teamteardown``. team-router runs at least those (plus its merge
proof, records and lock) from its installed entry point, the repos in
parallel after the plan. Target: <= 0.7x. ``--tmpfs`` builds the fixtures in
memory (see ``_fixture.workdir``). ``--baseline DIR`` also runs DIR's
``router/`` (a ``git worktree add --detach DIR main``) on a fixture of its own
in every run, side by side, and prints its figures and this tree's over it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _fixture import (
    ENV,
    Timing,
    cleanup,
    load,
    make_repo,
    median,
    median_timing,
    paired,
    sh,
    sides,
    team_router,
    timed,
    verdict,
    workdir,
)

REPOS = 8
UNTOUCHED = 1  # the last repos: a worktree the topic never changed (no commit, no git since)
FILES = 2000
RUNS = 5
TOPIC = "BENCH-1-teardown"

FIXED = {
    **ENV,
    "GIT_AUTHOR_DATE": "2026-05-01T12:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-05-01T12:00:00+00:00",
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), *args], env=FIXED, check=True, capture_output=True, text=True
    ).stdout.strip()


def repos_md(home: Path, others: list[Path]) -> str:
    items = "".join(f"- **name:** {p.name}\n  **path:** {p}\n  **role:** part\n" for p in others)
    return (
        f"# Repos\n\n## Home repo\n- **name:** {home.name}\n- **path:** {home}\n\n"
        f"## Additional repos\n{items}"
    )


def build(root: Path, cli: list[str]) -> list[Path]:
    """The merged-topic fixture under ``root``; returns the primary clones, home first."""
    ws = root / "ws"
    repos = [make_repo(ws, f"repo{i}", files=FILES) for i in range(REPOS)]
    out = sh(*cli, "-C", str(repos[0]), "new", "x", "--id", TOPIC, "--json")
    plan = Path(json.loads(out)["plan_dir"])
    (plan / "repos.md").write_text(repos_md(repos[0], repos[1:]))
    sh(*cli, "-C", str(plan), "worktrees", "--json")
    for repo in repos[:-UNTOUCHED]:
        wt = repo / ".claude" / "worktrees" / TOPIC
        (wt / "feature.txt").write_text(f"feature for {repo.name}\n")
        git(wt, "add", "feature.txt")
        git(wt, "commit", "-q", "-m", "feature")
        git(wt, "push", "-q", "origin", f"{TOPIC}:{TOPIC}")
        merge_on_origin(repo, root)
    # The run has shipped: teardown refuses to delete an unshipped run's artifacts.
    sh(*cli, "-C", str(repos[0]), "record", "pr", TOPIC, "--local", "--json")
    return repos


def merge_on_origin(repo: Path, root: Path) -> None:
    scratch = root / "scratch" / repo.name
    git(root, "clone", "-q", git(repo, "remote", "get-url", "origin"), str(scratch))
    git(scratch, "merge", "-q", "--no-ff", "-m", "Merge feature", f"origin/{TOPIC}")
    git(scratch, "push", "-q", "origin", "main", f":{TOPIC}")


def sequential(repos: list[Path]) -> None:
    """The seed's teardown commands for this state, one repo after another."""
    for n, repo in enumerate(repos):
        wt = repo / ".claude" / "worktrees" / TOPIC
        git(repo, "fetch", "--quiet", "origin")
        git(wt, "status", "--porcelain", "--untracked-files=all")
        git(repo, "cherry", "origin/main", TOPIC)
        # Every worktree team-router makes is locked (DESIGN §10): lifted by hand first.
        git(repo, "worktree", "unlock", str(wt))
        git(repo, "worktree", "remove", str(wt))
        git(repo, "branch", "-D", TOPIC)
        git(repo, "worktree", "list", "--porcelain")
        os.path.lexists(wt)
        git(repo, "status", "--porcelain", "--untracked-files=all")  # the primary must be clean
        git(repo, "symbolic-ref", "--short", "HEAD")  # and on main
        git(repo, "pull", "--quiet", "--rebase", "origin", "main")
        git(repo, "remote", "prune", "origin")
        if n == 0:
            git(repo, "ls-files", "--", f"docs/plans/{TOPIC}")
        git(repo, "worktree", "list", "--porcelain")
        subprocess.run(
            ["git", "-C", str(repo), "show", "origin/main:.teamteardown"],
            env=FIXED,
            capture_output=True,
            check=False,
        )


def ours(cli: list[str], home: Path, env: dict[str, str] | None = None) -> None:
    proc = subprocess.run(
        [*cli, "-C", str(home), "teardown", TOPIC, "--json"],
        env={**FIXED, **(env or {})},
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"teardown failed: {proc.stdout}{proc.stderr}")


def settle(*sides: list[Path]) -> None:
    """Age the fixture as hours of use would: on disk, and each used index newer than its files.

    A real teardown removes files written hours ago: deleting files still in
    the page cache would cost neither side anything. A file written in the
    same second as its index is "racily clean": every git that reads it
    hashes it again until some git rewrites that index later. Right after the
    fixture is built every checkout is in that state; a teardown meets it only
    in a worktree no git touched since it was made. So a second later the
    primary clones and the worktrees with a commit get their index refreshed,
    as the user's git would have, and the untouched worktrees keep theirs.
    """
    os.sync()
    time.sleep(1.1)
    for repos in sides:
        for repo in repos:
            git(repo, "update-index", "-q", "--refresh")
        for repo in repos[:-UNTOUCHED]:
            git(repo / ".claude" / "worktrees" / TOPIC, "update-index", "-q", "--refresh")
    os.sync()


def gone(repos: list[Path]) -> bool:
    wt_gone = all(not (r / ".claude" / "worktrees" / TOPIC).exists() for r in repos)
    return wt_gone and all(TOPIC not in git(r, "branch", "--list", TOPIC) for r in repos)


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tmpfs", action="store_true", help="build the fixtures in /dev/shm")
    parser.add_argument("--runs", type=int, default=RUNS, help="runs per side, each on a fixture")
    parser.add_argument("--baseline", metavar="DIR", help="also time DIR's router/, side by side")
    args = parser.parse_args()
    root = workdir(tmpfs=args.tmpfs)
    cli = team_router()
    # The code each side of ours runs: this tree, and the baseline's router/ by PYTHONPATH.
    codes = {
        name: {"PYTHONPATH": env["PYTHONPATH"]} if "PYTHONPATH" in env else {}
        for name, env in sides(args.baseline).items()
    }
    try:
        base: list[Timing] = []
        mine: dict[str, list[Timing]] = {name: [] for name in codes}
        for run in range(args.runs):
            fixtures = {"base": build(root / f"base-{run}", cli)}
            for n, name in enumerate(codes):
                fixtures[name] = build(root / f"ours{n}-{run}", cli)
            settle(*fixtures.values())
            # Rotate who goes first, so no side always runs on the warmer machine.
            order = list(fixtures)
            order = order[run % len(order) :] + order[: run % len(order)]
            for who in order:
                repos = fixtures[who]
                if who == "base":
                    base.append(timed(sequential, repos))
                else:
                    mine[who].append(timed(ours, cli, repos[0], codes[who]))
                if not gone(repos):
                    print(f"{who}: the topic is not gone")
                    return 1
        print(f"{args.runs} runs per side, a fresh fixture each; {load()}")
        print(f"sequential teardown commands x{REPOS}: median {median_timing(base)}")
        for name, timings in mine.items():
            wall, cpu = paired(timings, base)
            print(f"team-router teardown ({name}): median {median_timing(timings)}")
            # Each run's pair is timed back to back on the same machine state; the
            # median of those ratios is steadier than a ratio of medians on a shared host.
            ratios = [m.wall / s.wall for m, s in zip(timings, base, strict=True)]
            print(f"  / sequential: {wall:.2f}x wall, {cpu:.2f}x CPU")
            print("  per-run ratios: " + ", ".join(f"{r:.2f}" for r in ratios))
        ratios = [m.wall / s.wall for m, s in zip(mine["this tree"], base, strict=True)]
        if args.baseline:
            this, other = mine["this tree"], next(t for n, t in mine.items() if n != "this tree")
            wall, cpu = paired(this, other)
            print(f"this tree / baseline: {wall:.2f}x wall, {cpu:.2f}x CPU")
        return verdict("teardown / sequential", median(ratios), 0.7)
    finally:
        cleanup(root)


if __name__ == "__main__":
    sys.exit(main())
