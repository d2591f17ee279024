"""What the setup-commands stage adds to ``team-router new`` when no ``.worktreesetup`` exists.

Side by side on one repo that declares none (2,000 files): ``new`` and
``new --no-setup``, alternating which goes first, every worktree removed
(untimed) before the next run. Both import the stage's modules, so their
import time (``python -X importtime``, in a fresh interpreter) is added to the
median difference: the figure is what the stage costs ``new`` in all
(target <= 20 ms).

    python bench/bench_setup.py [--tmpfs]
"""

from __future__ import annotations

import subprocess
import sys

from _fixture import (
    ENV,
    cleanup,
    load,
    make_repo,
    median,
    median_timing,
    sh,
    team_router,
    timed,
    workdir,
)

RUNS = 15
TARGET_MS = 20.0
# Imported for the stage alone on `new`'s path (router.declared is teardown's too).
STAGE_MODULES = ("router.create.setupcmds", "router.declared")


def _remove(repo, branch: str) -> None:
    path = str(repo / ".claude" / "worktrees" / branch)
    sh("git", "worktree", "remove", "--force", "--force", path, cwd=repo)  # ours are locked
    sh("git", "branch", "-D", branch, cwd=repo)


def import_ms() -> float:
    """Self time of the stage's modules when ``new``'s creation code is imported, in ms."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import router.create.topic"],
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    )
    total = 0
    for line in proc.stderr.splitlines():
        fields = [f.strip() for f in line.removeprefix("import time:").split("|")]
        if len(fields) == 3 and fields[2].strip() in STAGE_MODULES:
            total += int(fields[0])
    return total / 1000


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tmpfs", action="store_true", help="build the fixture in /dev/shm")
    root = workdir(tmpfs=parser.parse_args().tmpfs)
    try:
        repo = make_repo(root / "ws", "app", files=2000, size=8192)
        cli = team_router()
        with_stage, without = [], []
        for i in range(RUNS):
            sides = [("with", with_stage, ()), ("without", without, ("--no-setup",))]
            for name, out, extra in sides if i % 2 == 0 else sides[::-1]:
                topic = f"BENCH-{i}-{name}"
                args = (*cli, "-C", str(repo), "new", "x", "--id", topic, *extra, "--json")
                out.append(timed(sh, *args))
                _remove(repo, topic)
        print(f"team-router new: median {median_timing(with_stage)}")
        print(f"team-router new --no-setup: median {median_timing(without)}")
        diff = median([(a.wall - b.wall) * 1000 for a, b in zip(with_stage, without, strict=True)])
        imports = median([import_ms() for _ in range(5)])
        print(f"median difference per pair: {diff:.1f} ms; the stage's imports: {imports:.1f} ms")
        total = max(diff, 0.0) + imports
        ok = total <= TARGET_MS
        print(load())
        print(
            f"setup stage, no .worktreesetup: {total:.1f} ms added to new "
            f"(target <= {TARGET_MS:.0f} ms) {'PASS' if ok else 'FAIL'}"
        )
        return 0 if ok else 1
    finally:
        cleanup(root)


if __name__ == "__main__":
    sys.exit(main())
