"""How many git processes a 3-repo ``teardown --integrate`` starts: each repo fact decided once.

A count is deterministic, unlike a time: a change that reads a fact again
(the primary's status, the merge proof, the worktree layout) shows here.
"""

from __future__ import annotations

from collections import Counter

from durabilityutil import git_wrapper, run
from gitutil import commit, git, status
from teardownutil import multi_topic

# Per repo: remote, fetch, for-each-ref, worktree list, the worktree's status,
# cherry + merge-tree (one target when origin's and the local default branch
# are one commit), the .teamteardown read, the primary's status and `git var`
# in the plan; the primary's status right before the pick, the pick, the
# worktree's status right before its removal, the removal, the branch's tip
# right before `branch -D`, and the pull. Plus resolving the topic (4).
MAX_GIT_PROCESSES = 55


def test_a_three_repo_integrating_teardown_starts_at_most_55_git_processes(tmp_path, workspace):
    topic = multi_topic(workspace, ("api", "db"))
    for name, worktree in topic.worktrees.items():
        commit(worktree, f"{name}-feature.txt", "work\n", f"feature in {name}")
    log = tmp_path / "git.log"
    env = git_wrapper(tmp_path / "bin", "", f'echo "$*" >> \'{log}\'\nexec "$REAL_GIT" "$@"')
    proc = run("teardown", topic.id, "--integrate", "--json", cwd=topic.home, env=env)
    assert proc.code == 0, proc.out + proc.err
    # The work is on each default branch and nothing is left behind.
    for name, repo in topic.repos.items():
        assert f"feature in {name}" in git(repo, "log", "-1", "--format=%s", "main")
        assert status(repo) == ""
        assert not topic.worktrees[name].exists()
    calls = log.read_text().splitlines()
    by_command = Counter(_command(c.split()) for c in calls)
    assert len(calls) <= MAX_GIT_PROCESSES, f"{len(calls)} git processes: {dict(by_command)}"
    # Decided once per repo: the committer, the merge proof, the refs.
    assert by_command["var"] <= 3 and by_command["merge-base"] == 0
    assert by_command["cherry"] <= 3 and by_command["for-each-ref"] <= 3


def _command(words: list[str]) -> str:
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in ("-c", "-C"):
            skip = True
        elif not word.startswith("-"):
            return word
    return "?"
