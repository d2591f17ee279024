"""Randomized kill trials, the long run: ``python bench/kill_trials.py --trials 200 --seed N``.

Each trial builds six repos with local bare origins (one of them sparse in the
topic's repos.md, so kills land in creation's sparse stage too) and kills, at a random
moment, every mutating command a topic goes through: ``new``, ``worktrees``,
then one ending (``teardown --integrate``, ``pr-cleanup`` after a merge, or
``restore`` after a forced teardown), then ``doctor --repair``. A kill is
SIGKILL to the process or its group, or SIGINT, SIGTERM or SIGHUP to its group.
Each command is run again, and the trial checks that no commit, uncommitted
file or staged blob was lost (nor a file written into a half-removed worktree
after the kill), that every primary clone is clean and idle, and that every
rerun finished or refused naming a fix (tests/helpers/killtrials.py says
exactly what is checked). ``--clock`` shows each killed run and each rerun a
clock stepped hours or a day ahead or behind (libfaketime, Debian package
``faketime``).

Prints one line per trial, then a summary: trials, kills by kind and by the
phase they landed in, the reruns' outcomes, and every failure with the command
that runs it again (``--only-seed SEED`` with the kill windows it had). Exits 1
on any violation. Not part of the test run; ``tests/test_kill_random.py`` runs a
few trials of the same harness.

A kill lands at a seeded fraction of the command's usual run time, learnt on this
machine; ``--when 'teardown=git worktree remove'`` aims it at one git step instead
(a few milliseconds after that step starts), which reproduces a timing-dependent
failure far more reliably. ``--minutes`` stops starting trials after a time budget.
``--submodules`` gives one repo a submodule its primary has initialised, so kills can
land in creation's submodules stage (``--when 'worktrees=git checkout'`` aims them
there), and each worktree ``worktrees`` made is checked to hold it whole.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _fixture import children_cpu, load
from helpers import killtrials
from helpers.repos import LEAKY_ENV, hermetic_env


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--only-seed", type=int, action="append", default=[], help="run just this trial seed"
    )
    parser.add_argument("--jobs", type=int, default=1, help="trials run at once (default 1)")
    parser.add_argument(
        "--window",
        action="append",
        default=[],
        metavar="COMMAND=SECONDS",
        help="a command's usual run time, e.g. 'teardown=1.6' (default: learnt)",
    )
    parser.add_argument(
        "--clock", action="store_true", help="step the clock at each kill and rerun (libfaketime)"
    )
    parser.add_argument(
        "--when",
        action="append",
        default=[],
        metavar="COMMAND=SUBCOMMAND",
        help="kill COMMAND once it runs this git subcommand, e.g. 'teardown=git worktree remove'",
    )
    parser.add_argument(
        "--submodules",
        action="store_true",
        help="one repo gets a submodule (aim at its checkout: --when 'worktrees=git checkout')",
    )
    parser.add_argument(
        "--minutes", type=float, default=None, help="start no trial after this many minutes"
    )
    parser.add_argument("--out", type=Path, default=None, help="write every trial as JSON lines")
    parser.add_argument("--keep", action="store_true", help="keep the failed trials' directories")
    return parser.parse_args(argv)


PACE = killtrials.Pace()  # one per worker process: it learns how long the commands run here


def _one(
    seed: int,
    root: str,
    fixed: dict[str, float],
    when: dict[str, str],
    clock: bool,
    keep: bool,
    submodules: bool = False,
) -> killtrials.Trial:
    """One trial in its own directory (and, with --jobs, its own process)."""
    PACE.fixed, PACE.when, PACE.clock, PACE.submodules = fixed, when, clock, submodules
    base = Path(root) / f"trial-{seed}"
    for name in LEAKY_ENV:
        os.environ.pop(name, None)
    os.environ.update(hermetic_env(base / "env"))
    try:
        trial = killtrials.run_trial(seed, base / "run", PACE)
    except Exception as exc:  # the harness itself: report it with the seed, keep going
        error = killtrials.Violation("harness-error", f"{type(exc).__name__}: {exc}")
        trial = killtrials.Trial(seed, violations=[error])
    if trial.ok or not keep:
        shutil.rmtree(base, ignore_errors=True)
    return trial


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    commands = killtrials.DEFAULT_WINDOWS
    fixed = {c: float(s) for c, s in (item.split("=", 1) for item in args.window)}
    when = dict(item.split("=", 1) for item in args.when)
    if not set(when) | set(fixed) <= set(commands):
        raise SystemExit(f"--when, --window: COMMAND is one of {', '.join(commands)}")
    if args.clock and killtrials.clock_libraries() is None:
        raise SystemExit("--clock needs libfaketime (apt-get install faketime) and a C compiler")
    seeds = args.only_seed or killtrials.trial_seeds(args.seed, args.trials)
    root = tempfile.mkdtemp(prefix="team-router-kill-")
    pace = f"windows {fixed}" if fixed else "windows learnt from the runs"
    pace += f", killed when running {when}" if when else ""
    pace += ", the clock stepped at each kill and rerun" if args.clock else ""
    pace += ", a submodule in one repo" if args.submodules else ""
    print(f"{len(seeds)} trial(s), seed {args.seed}, {pace}, in {root}", flush=True)
    start, cpu = time.monotonic(), children_cpu()
    deadline = start + args.minutes * 60 if args.minutes else None
    trials: list[killtrials.Trial] = []
    out = args.out.open("w", encoding="utf-8") if args.out else None
    try:
        with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            todo = list(seeds)
            running: list[Future[killtrials.Trial]] = []
            while todo or running:
                while todo and len(running) < max(1, args.jobs):
                    if deadline is not None and time.monotonic() > deadline:
                        print(f"time is up: {len(todo)} trial(s) not run", flush=True)
                        todo = []
                        break
                    running.append(
                        pool.submit(
                            _one,
                            todo.pop(0),
                            root,
                            fixed,
                            when,
                            args.clock,
                            args.keep,
                            args.submodules,
                        )
                    )
                if not running:
                    break
                trial = running.pop(0).result()
                trials.append(trial)
                print(("ok   " if trial.ok else "FAIL ") + trial.describe(), flush=True)
                if out:
                    out.write(json.dumps(trial.to_json()) + "\n")
                    out.flush()
    finally:
        if out:
            out.close()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"\n{killtrials.summary(trials)}")
    print(f"wall: {time.monotonic() - start:.0f}s, CPU: {children_cpu() - cpu:.0f}s; {load()}")
    return 0 if all(t.ok for t in trials) else 1


if __name__ == "__main__":
    sys.exit(main())
