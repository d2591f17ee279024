"""``team-router new`` on a repo with three 2,000-file submodules vs git's own two ways.

Targets: ``new`` (which checks the submodules out) <= 1.2x a bare ``git worktree
add`` followed by ``git submodule update --init --reference`` to the primary's
copy of each submodule, and strictly less than the same without
``--reference`` (a full clone of each from its local origin). The three sides
run alternating in each round on the same repo, and every worktree is removed
(untimed) before the next round. ``--tmpfs`` builds the fixture in memory (see
``_fixture.workdir``).

    python bench/bench_submodules.py [--tmpfs]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _fixture import (
    ENV,
    cleanup,
    load,
    make_repo,
    median,
    median_timing,
    team_router,
    timed,
    verdict,
    workdir,
)

RUNS = 3
LIBS = ("liba", "libb", "libc")
# git >= 2.38.1 clones a submodule through the file transport only when asked.
GIT_ENV = {
    **ENV,
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "protocol.file.allow",
    "GIT_CONFIG_VALUE_0": "always",
}


def run(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(args, cwd=cwd, env=GIT_ENV, check=True, capture_output=True)


def fixture(root: Path) -> Path:
    """``app`` (200 files) with three 2,000-file submodules, initialised in the primary."""
    app = make_repo(root / "ws", "app", files=200, size=8192)
    for name in LIBS:
        lib = make_repo(root / "ws", name, files=2000, size=8192)
        # file://, as a remote is reached: a plain path would let git hardlink the objects.
        url = (root / "origins" / f"{name}.git").as_uri()
        run("git", "submodule", "add", "-q", url, f"vendor/{name}", cwd=app)
        assert (lib / ".git").is_dir()
    run("git", "commit", "-q", "-m", "three submodules", cwd=app)
    run("git", "push", "-q", "origin", "main", cwd=app)
    return app


def git_side(app: Path, branch: str, *, reference: bool) -> None:
    """``git worktree add -b``, then ``git submodule update --init`` (one per submodule with
    ``--reference`` to the primary's copy of it; one for all of them without)."""
    path = app / ".claude" / "worktrees" / branch
    run("git", "worktree", "add", "-q", "-b", branch, str(path), "origin/HEAD", cwd=app)
    if not reference:
        run("git", "submodule", "update", "-q", "--init", cwd=path)
        return
    for name in LIBS:
        module = app / ".git" / "modules" / f"vendor/{name}"
        args = ("--init", "--reference", str(module), "--", f"vendor/{name}")
        run("git", "submodule", "update", "-q", *args, cwd=path)


def remove(app: Path, branch: str) -> None:
    path = app / ".claude" / "worktrees" / branch
    run("git", "worktree", "unlock", str(path), cwd=app)  # team-router's own are locked
    run("git", "worktree", "remove", "--force", "--force", str(path), cwd=app)
    run("git", "branch", "-D", branch, cwd=app)


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tmpfs", action="store_true", help="build the fixture in /dev/shm")
    root = workdir(tmpfs=parser.parse_args().tmpfs)
    try:
        app = fixture(root)
        cli = team_router()
        referenced, cloned, ours = [], [], []
        for i in range(RUNS):
            referenced.append(timed(git_side, app, f"ref-{i}", reference=True))
            topic = f"BENCH-{i}-new"
            ours.append(timed(run, *cli, "-C", str(app), "new", "x", "--id", topic, "--json"))
            cloned.append(timed(git_side, app, f"clone-{i}", reference=False))
            sub = app / ".claude" / "worktrees" / topic / "vendor" / "liba"
            assert len(list((sub / "pkg0").iterdir())) == 50, "new did not check liba out"
            for branch in (f"ref-{i}", topic, f"clone-{i}"):
                if branch != topic:
                    run("git", "worktree", "lock", str(app / ".claude/worktrees" / branch), cwd=app)
                remove(app, branch)
        print(f"worktree add + submodule update --reference: median {median_timing(referenced)}")
        print(f"worktree add + submodule update (clones):    median {median_timing(cloned)}")
        print(f"team-router new:                             median {median_timing(ours)}")
        against_clone = median([o.wall / c.wall for o, c in zip(ours, cloned, strict=True)])
        cpu = median([o.cpu / r.cpu for o, r in zip(ours, referenced, strict=True)])
        print(f"CPU new / --reference: {cpu:.2f}x")
        cloning = "PASS" if against_clone < 1.0 else "FAIL"
        print(f"{load()}\nnew / without --reference: {against_clone:.2f}x (target < 1x) {cloning}")
        wall = median([o.wall / r.wall for o, r in zip(ours, referenced, strict=True)])
        missed = verdict("new / with --reference", wall, 1.2)
        return missed or (0 if against_clone < 1.0 else 1)
    finally:
        cleanup(root)


if __name__ == "__main__":
    sys.exit(main())
