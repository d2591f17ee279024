"""Killed at a random moment, every mutating command of a topic loses nothing (6 repos).

A few trials of tests/helpers/killtrials.py with a fixed seed (the long run is
``bench/kill_trials.py``). Each trial kills ``new``, ``worktrees``, one ending
(``teardown --integrate``, ``pr-cleanup`` after a merge, or ``restore`` after a
forced teardown) and ``doctor --repair`` with a real signal — SIGKILL to the
process or its group, or SIGINT, SIGTERM or SIGHUP to the group — after a
seeded random delay, reruns them, and checks that every commit, every
uncommitted file and every staged blob is still reachable (and a file written
into a half-removed worktree after the kill is kept), every primary clone is
clean and idle, and every rerun finished or refused naming the fix. A failure
prints the command that runs the trial again (its seed and the kill windows it
had; the instant a signal lands still varies with the machine's load, and
``--when`` aims a kill at one git step).
"""

from __future__ import annotations

import pytest
from helpers.killtrials import (
    Ending,
    Pace,
    clock_libraries,
    named_locks,
    run_trial,
    trial_seeds,
)

# Chosen so that these trials reach every ending and kill with several kinds of signal.
SEED = 302
TRIALS = 4
PACE = Pace()  # calibrated by the first trial a test process runs, shared by the others


@pytest.mark.parametrize("seed", trial_seeds(SEED, TRIALS))
def test_a_randomly_killed_topic_loses_nothing_and_its_reruns_finish_or_name_a_fix(tmp_path, seed):
    trial = run_trial(seed, tmp_path, PACE)
    assert trial.ok, trial.describe()
    # Every command of the trial was run and killed (or outlived the kill).
    assert trial.ending is not None, trial.describe()
    ending = "restore" if trial.ending is Ending.RESTORE else str(trial.ending)
    commands = ["new", "worktrees", ending, "doctor"]
    assert [k.command for k in trial.kills] == commands, trial.describe()


def test_a_killed_topic_whose_clock_steps_at_each_kill_and_rerun_loses_nothing(tmp_path):
    # An NTP step, a VM resumed a day later, a file server's clock: each killed
    # run and each rerun sees another time. Nothing may be decided by it.
    if clock_libraries() is None:
        pytest.skip("needs libfaketime (Debian package faketime) and a C compiler")
    pace = Pace(clock=True)
    trial = run_trial(trial_seeds(SEED, TRIALS)[0], tmp_path, pace)
    assert trial.ok, trial.describe()
    assert any(k.clock for k in trial.kills), trial.describe()


def test_a_named_git_lock_under_refs_team_router_is_removed_but_not_the_routers_own_lock(tmp_path):
    # A killed snapshot leaves refs/team-router/snapshots/<branch>.lock: git's
    # lock, refused git-locked with "remove <it>", which a user follows. The
    # files in .git/team-router/locks/ are team-router's own (never git's).
    git_dir = tmp_path / "repo/.git"
    index = git_dir / "index.lock"
    snapshot_ref = git_dir / "refs/team-router/snapshots/topic.lock"
    own = git_dir / "team-router/locks/topic.lock"
    for lock in (index, snapshot_ref, own):
        lock.parent.mkdir(parents=True, exist_ok=True)
        lock.touch()
    message = f"remove {index}; remove {snapshot_ref}; {own} is held"
    assert named_locks({"error": {"message": message}}) == sorted([index, snapshot_ref])
