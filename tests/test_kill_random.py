"""Killed at a random moment, ``worktrees`` and ``teardown --integrate`` lose nothing (6 repos).

A few trials of tests/helpers/killtrials.py with a fixed seed (the long run is
``bench/kill_trials.py``). Each trial kills both commands with a real signal —
SIGKILL to the process, SIGKILL to its process group, or SIGINT to the group —
after a seeded random delay, reruns them, and checks that every commit, every
uncommitted file and every staged blob is still reachable, every primary clone is
clean and idle, and every rerun finished or refused naming the fix. A failure
prints the command that runs the trial again (its seed and the kill windows it
had; the instant a signal lands still varies with the machine's load, and
``--when`` aims a kill at one git step).
"""

from __future__ import annotations

import pytest
from helpers.killtrials import Mode, Pace, named_locks, run_trial, trial_seeds

# Chosen so that these trials kill both commands with every kind of signal and
# tear down in every mode (clean, --force over dirt, refused dirt).
SEED = 302
TRIALS = 4
PACE = Pace()  # calibrated by the first trial a test process runs, shared by the others


@pytest.mark.parametrize("seed", trial_seeds(SEED, TRIALS))
def test_a_randomly_killed_topic_loses_nothing_and_its_reruns_finish_or_name_a_fix(tmp_path, seed):
    trial = run_trial(seed, tmp_path, PACE)
    assert trial.ok, trial.describe()
    # Both commands were run and killed (or outlived the kill), and a teardown mode chosen.
    assert [k.command for k in trial.kills] == ["worktrees", "teardown"], trial.describe()
    assert trial.mode in set(Mode)


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
