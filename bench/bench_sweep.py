"""``team-router sweep`` vs the shell loop of seed 002 (Ship step 7) on 1,000 leftover directories.

Fixture, built twice identically (one copy per contender, since both delete):
a repo with one live worktree and 1,000 directories under .claude/worktrees/
that git does not know: 600 of late-writer residue (files under tmp/ and
.omc/), 150 holding only a shipped run's docs/plans/ (with its pr.md: the seed's
loop runs at Ship), 150 with a file outside those folders,
50 with a stale .git file and 50 empty. Both runs must keep the same
directories. Target: <= 0.2x the shell loop's wall time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _fixture import ENV, cleanup, sh, team_router, timed, verdict, workdir

LEFTOVERS = 1000

# Seed 002, "Ship (teardown)" step 7, verbatim but for <repo-path>.
SEED_LOOP = (Path(__file__).resolve().parent.parent / "tests" / "seed_sweep_loop.sh").read_text(
    encoding="utf-8"
)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def build(repo: Path) -> None:
    repo.mkdir(parents=True)
    sh("git", "init", "-q", "-b", "main", cwd=repo)
    write(repo / "README.md", "# bench\n")
    sh("git", "add", "README.md", cwd=repo)
    sh("git", "commit", "-q", "-m", "initial", cwd=repo)
    base = repo / ".claude" / "worktrees"
    sh("git", "worktree", "add", "-q", "-b", "live", str(base / "live"), cwd=repo)
    for i in range(LEFTOVERS):
        d = base / f"topic-{i:04d}"
        kind = i % 20
        if kind < 12:
            write(d / "tmp" / "session.json", "{}\n")
            write(d / ".omc" / "state" / "s.json", "{}\n")
        elif kind < 15:
            # A shipped run's artifacts (its pr.md names the PR): the seed's loop runs at
            # Ship. An unshipped run's are kept by sweep (unshipped-run), not by the loop.
            plan = d / "docs" / "plans" / f"2026-05-01-t{i}"
            write(plan / "design.md", "# d\n")
            write(plan / "pr.md", "---\npr: https://example.invalid/pull/1\n---\n")
        elif kind < 18:
            write(d / "tmp" / "x", "x\n")
            write(d / "src" / "main.py", "print('keep')\n")
        elif kind < 19:
            write(d / ".git", "gitdir: /nowhere\n")
        else:
            d.mkdir(parents=True)


def shell_loop(repo: Path) -> set[str]:
    out = subprocess.run(
        ["sh", "-c", SEED_LOOP.replace("<repo-path>", f"'{repo}'")],
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {Path(ln.split(": ", 1)[1]).name for ln in out.splitlines() if ln.startswith("kept")}


def ours(cli: list[str], repo: Path) -> set[str]:
    out = sh(*cli, "-C", str(repo), "sweep", "--json")
    return {Path(k["path"]).name for k in json.loads(out)["kept"]}


def main() -> int:
    root = workdir()
    cli = team_router()
    try:
        a, b = root / "shell" / "repo", root / "ours" / "repo"
        build(a)
        build(b)
        # Leftovers have sat on disk for a while: deleting files still only in
        # the page cache would flatter both sides.
        os.sync()
        time.sleep(1.0)
        kept: dict[str, set[str]] = {}
        base = timed(lambda: kept.setdefault("shell", shell_loop(a)))
        mine = timed(lambda: kept.setdefault("ours", ours(cli, b)))
        if kept["shell"] != kept["ours"]:
            print(f"kept sets differ: {sorted(kept['shell'] ^ kept['ours'])[:10]}")
            return 1
        left = sorted(os.listdir(a / ".claude" / "worktrees"))
        if left != sorted(os.listdir(b / ".claude" / "worktrees")):
            print("the two trees differ after the sweep")
            return 1
        print(f"seed shell loop on {LEFTOVERS} leftovers: {base}")
        print(f"team-router sweep: {mine} (kept {len(kept['ours'])}, same as the loop)")
        print(f"CPU sweep / shell loop: {mine.cpu / base.cpu:.2f}x")
        return verdict("sweep / shell loop", mine.wall / base.wall, 0.2)
    finally:
        cleanup(root)


if __name__ == "__main__":
    sys.exit(main())
