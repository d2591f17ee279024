"""How many git processes a 3-repo ``teardown --integrate`` starts: each repo fact decided once.

A count is deterministic, unlike a time: a change that reads a fact again
(the primary's status, the merge proof, the worktree layout) shows here.
"""

from __future__ import annotations

from helpers.faults import git_logger, git_verbs, git_wrapper, run
from helpers.repos import branches, commit, git, status
from helpers.topics import multi_topic, new_topic, steps_of

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
    env = git_logger(tmp_path / "bin", log)
    proc = run("teardown", topic.id, "--integrate", "--json", cwd=topic.home, env=env)
    assert proc.code == 0, proc.out + proc.err
    # The work is on each default branch and nothing is left behind.
    for name, repo in topic.repos.items():
        assert f"feature in {name}" in git(repo, "log", "-1", "--format=%s", "main")
        assert status(repo) == ""
        assert not topic.worktrees[name].exists()
    by_command = git_verbs(log)
    total = sum(by_command.values())
    assert total <= MAX_GIT_PROCESSES, f"{total} git processes: {dict(by_command)}"
    # Decided once per repo: the committer, the merge proof, the refs.
    assert by_command["var"] <= 3 and by_command["merge-base"] == 0
    assert by_command["cherry"] <= 3 and by_command["for-each-ref"] <= 3


# What another process can change between the plan and the act is read again
# right before the step that acts on it, once: these prove those re-checks stay.


def test_a_primary_edited_between_the_plan_and_the_pick_is_refused_and_kept(home_repo, tmp_path):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    main_before = git(home_repo, "rev-parse", "main")
    # `git var` is the plan's last question before the act: the edit lands after the plan read the primary.
    edit = f"printf '# edited during the teardown\\n' > '{home_repo}/README.md'"
    env = git_wrapper(tmp_path / "bin", " var ", f'{edit}\nexec "$REAL_GIT" "$@"')
    proc = run("teardown", topic.id, "--integrate", "--json", cwd=home_repo, env=env)
    assert proc.code == 1, proc.out + proc.err
    steps = steps_of(proc.json, "home")
    assert steps["integrate"]["code"] == "primary-busy", steps["integrate"]
    assert "README.md" in steps["integrate"]["detail"]
    # Nothing it guards went: the edit, main, the worktree and the branch stay.
    assert (home_repo / "README.md").read_text() == "# edited during the teardown\n"
    assert git(home_repo, "rev-parse", "main") == main_before
    assert topic.worktrees["home"].exists() and topic.branch in branches(home_repo)


def test_a_primary_edited_right_after_the_pick_keeps_the_edit(home_repo, tmp_path):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    edit = "printf '# edited after the pick\\n' > \"$2/README.md\""
    env = git_wrapper(
        tmp_path / "bin", " cherry-pick ", f'"$REAL_GIT" "$@"\nrc=$?\n{edit}\nexit $rc'
    )
    proc = run("teardown", topic.id, "--integrate", "--json", cwd=home_repo, env=env)
    assert proc.code == 0, proc.out + proc.err
    assert git(home_repo, "log", "-1", "--format=%s", "main") == "work"
    # The default branch is not updated over the edit (git's own refusal), and the edit stays.
    assert steps_of(proc.json, "home")["update-default"]["outcome"] in {"skipped", "failed"}
    assert (home_repo / "README.md").read_text() == "# edited after the pick\n"
