"""``team-router new`` on a repo with three 2,000-file submodules vs git's own two ways.

Targets: ``new`` (which checks the submodules out) <= 1.2x a bare ``git worktree
add`` followed by ``git submodule update --init --reference`` to the primary's
copy of each submodule, and strictly less than the same without
``--reference`` (a full clone of each from its local origin). The three sides
run alternating in each round on the same repo, and every worktree is removed
(untimed) before the next round. ``--tmpfs`` builds the fixture in memory (see
``_fixture.workdir``). With ``--baseline DIR`` another checkout's ``router/``
runs ``new`` too in each round, beside this tree's (alternating which goes
first), and its figures are printed beside them.

    python bench/bench_submodules.py [--tmpfs] [--runs N] [--baseline DIR]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _fixture import (
    ENV,
    Timing,
    cleanup,
    load,
    make_repo,
    median_timing,
    paired,
    sides,
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


def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    subprocess.run(args, cwd=cwd, env={**GIT_ENV, **(env or {})}, check=True, capture_output=True)


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
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--baseline", metavar="DIR", help="also time DIR's router/, side by side")
    args = parser.parse_args()
    root = workdir(tmpfs=args.tmpfs)
    try:
        app = fixture(root)
        cli = team_router()
        codes = sides(args.baseline)  # "this tree" first
        referenced: list[Timing] = []
        cloned: list[Timing] = []
        ours: dict[str, list[Timing]] = {name: [] for name in codes}
        for i in range(args.runs):
            referenced.append(timed(git_side, app, f"ref-{i}", reference=True))
            order = list(codes) if i % 2 == 0 else list(reversed(codes))
            for n, name in enumerate(order):
                topic = f"BENCH-{i}-{n}-new"
                argv = (*cli, "-C", str(app), "new", "x", "--id", topic, "--json")
                ours[name].append(timed(run, *argv, env=codes[name]))
                sub = app / ".claude" / "worktrees" / topic / "vendor" / "liba"
                assert len(list((sub / "pkg0").iterdir())) == 50, "new did not check liba out"
                remove(app, topic)
            cloned.append(timed(git_side, app, f"clone-{i}", reference=False))
            for branch in (f"ref-{i}", f"clone-{i}"):
                run("git", "worktree", "lock", str(app / ".claude/worktrees" / branch), cwd=app)
                remove(app, branch)
        print(f"worktree add + submodule update --reference: median {median_timing(referenced)}")
        print(f"worktree add + submodule update (clones):    median {median_timing(cloned)}")
        for name, timings in ours.items():
            print(f"team-router new ({name}): median {median_timing(timings)}")
            if name != "this tree":
                wall, cpu = paired(timings, referenced)
                print(f"  its new / --reference: {wall:.2f}x wall, {cpu:.2f}x CPU")
        mine = ours["this tree"]
        against_clone, _ = paired(mine, cloned)
        wall, cpu = paired(mine, referenced)
        print(f"CPU new / --reference: {cpu:.2f}x")
        cloning = "PASS" if against_clone < 1.0 else "FAIL"
        print(f"{load()}\nnew / without --reference: {against_clone:.2f}x (target < 1x) {cloning}")
        missed = verdict("new / with --reference", wall, 1.2)
        return missed or (0 if against_clone < 1.0 else 1)
    finally:
        cleanup(root)


if __name__ == "__main__":
    sys.exit(main())
