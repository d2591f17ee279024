"""How many git processes a 3-repo ``teardown --integrate`` starts: each repo fact decided once.

A count is deterministic, unlike a time: a change that reads a fact again
(the primary's status, the merge proof, the worktree layout) shows here.
"""

from __future__ import annotations

import pytest
from helpers.faults import git_logger, git_then, git_verbs, git_wrapper, run
from helpers.origin import commit_on_origin, merge_on_origin
from helpers.repos import branches, commit, git, status
from helpers.topics import multi_topic, new_topic, ship, steps_of

# Per repo: the config (origin, the committer, the branch's section), fetch,
# the worktree's status, cherry + merge-tree (one target when origin's and the
# local default branch are one commit) and the primary's status in the plan;
# the primary's status right before the pick, the pick, the removal (git's own
# check stands for the worktree's status), and the branch's deletion at the
# judged tip. Read from git's files, no process: the refs and their trees after
# the fetch, the worktree list, the .teamteardown on origin's default branch,
# the worktree's lock lifted. No pull: the default branch was at origin's tip
# as this command fetched it.
MAX_GIT_PROCESSES = 30


@pytest.mark.no_plan_check("it counts the git processes of the one run")
def test_a_three_repo_integrating_teardown_starts_at_most_30_git_processes(tmp_path, workspace):
    topic = ship(multi_topic(workspace, ("api", "db")))
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
        assert topic.branch not in branches(repo)
    by_command = git_verbs(log)
    total = sum(by_command.values())
    assert total <= MAX_GIT_PROCESSES, f"{total} git processes: {dict(by_command)}"
    # Decided once per repo: the config, the merge proof, the refs.
    assert by_command["config"] <= 3 and by_command["merge-base"] == 0
    assert by_command["cherry"] <= 3 and by_command["for-each-ref"] == 0


def test_a_merged_topic_fast_forwards_main_to_what_teardown_fetched_without_a_second_fetch(
    home_repo, tmp_path
):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    git(topic.worktrees["home"], "push", "-q", "origin", topic.branch)
    merged = merge_on_origin(home_repo, topic.branch)
    log = tmp_path / "git.log"
    proc = run("teardown", topic.id, "--json", cwd=home_repo, env=git_logger(tmp_path / "bin", log))
    assert proc.code == 0, proc.out + proc.err
    step = steps_of(proc.json, "home")["update-default"]
    assert step["outcome"] == "done", step
    assert "fast-forwarded to origin/main" in step["detail"]
    # main is origin's merge, the primary clean, and origin was fetched once, not pulled.
    assert git(home_repo, "rev-parse", "main") == merged
    assert status(home_repo) == ""
    by_command = git_verbs(log)
    assert by_command["fetch"] == 1 and by_command["pull"] == 0, dict(by_command)


def test_a_topic_merged_on_origin_is_proven_merged_from_its_commits_with_no_git_process(
    home_repo, tmp_path
):
    # The merge commit on origin's main reaches the branch's tip: read from the commits
    # (each checked against its id), no `git cherry` and no `git merge-base`.
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    git(topic.worktrees["home"], "push", "-q", "origin", topic.branch)
    merge_on_origin(home_repo, topic.branch)
    log = tmp_path / "git.log"
    proc = run("teardown", topic.id, "--json", cwd=home_repo, env=git_logger(tmp_path / "bin", log))
    assert proc.code == 0, proc.out + proc.err
    step = steps_of(proc.json, "home")["integrate"]
    assert step["detail"] == (
        f"nothing to integrate: {topic.branch} is merged (its tip is an ancestor of origin/main)"
    )
    assert topic.branch not in branches(home_repo)
    by_command = git_verbs(log)
    assert by_command["cherry"] == 0 and by_command["merge-base"] == 0, dict(by_command)


# The fetch waits (10 s at most) for a status to start while it runs; each status waits
# for the fetch to have started, then says whether it was still running.
OVERLAP = """D='{d}'
wait_for() {{ i=0; while [ ! -e "$1" ] && [ ! -e "$2" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; }}
case " $* " in
  *" fetch "*)
    touch "$D/fetching"; wait_for "$D/status-started" "$D/none"
    "$REAL_GIT" "$@"; code=$?; touch "$D/fetched"; exit $code ;;
  *" status "*)
    wait_for "$D/fetching" "$D/fetched"
    if [ -e "$D/fetched" ]; then echo after >> "$D/log"
    else echo during >> "$D/log"; touch "$D/status-started"; fi ;;
esac
exec "$REAL_GIT" "$@"
"""


@pytest.mark.no_plan_check("a dry run fetches nothing: its status would be the first one logged")
def test_the_worktree_is_read_while_origin_is_fetched(home_repo, tmp_path):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    git(topic.worktrees["home"], "push", "-q", "origin", topic.branch)
    merge_on_origin(home_repo, topic.branch)
    env = git_wrapper(tmp_path / "bin", "", OVERLAP.format(d=tmp_path))
    proc = run("teardown", topic.id, "--json", cwd=home_repo, env=env)
    assert proc.code == 0, proc.out + proc.err
    # The worktree's status ran during the fetch; the primary's, in a later step, after it.
    assert (tmp_path / "log").read_text().splitlines() == ["during", "after"]
    assert not topic.worktrees["home"].exists()
    assert topic.branch not in branches(home_repo)


def test_a_main_with_commits_of_its_own_is_still_rebased_by_a_pull(home_repo, tmp_path):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    git(topic.worktrees["home"], "push", "-q", "origin", topic.branch)
    merged = merge_on_origin(home_repo, topic.branch)
    mine = commit(home_repo, "LOCAL.md", "not pushed\n", "local work on main")
    proc = run("teardown", topic.id, "--json", cwd=home_repo)
    assert proc.code == 0, proc.out + proc.err
    step = steps_of(proc.json, "home")["update-default"]
    assert "git pull --rebase origin main: main rebased onto origin/main" in step["detail"]
    # The local commit is kept, replayed on top of origin's merge.
    assert git(home_repo, "log", "-1", "--format=%s", "main") == "local work on main"
    assert git(home_repo, "rev-parse", "main~1") == merged
    assert git(home_repo, "rev-parse", "main") != mine
    assert status(home_repo) == ""


def test_a_main_ahead_of_origin_is_left_as_it_is_without_a_pull(home_repo, tmp_path):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    git(topic.worktrees["home"], "push", "-q", "origin", topic.branch)
    merge_on_origin(home_repo, topic.branch)
    git(home_repo, "pull", "-q", "--ff-only", "origin", "main")
    mine = commit(home_repo, "LOCAL.md", "not pushed\n", "local work on main")
    log = tmp_path / "git.log"
    proc = run("teardown", topic.id, "--json", cwd=home_repo, env=git_logger(tmp_path / "bin", log))
    assert proc.code == 0, proc.out + proc.err
    step = steps_of(proc.json, "home")["update-default"]
    assert step["detail"].startswith(
        "main already holds origin/main as this command fetched it: nothing to pull"
    ), step
    assert git(home_repo, "rev-parse", "main") == mine
    assert git_verbs(log)["pull"] == 0


# What another process can change between the plan and the act is read again
# right before the step that acts on it, once: these prove those re-checks stay.


@pytest.mark.no_plan_check("a git wrapper changes the state between the plan and the act")
def test_a_primary_edited_between_the_plan_and_the_pick_is_refused_and_kept(home_repo, tmp_path):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    main_before = git(home_repo, "rev-parse", "main")
    # The edit lands right after the plan read the primary (its status with --branch).
    edit = f"printf '# edited during the teardown\\n' > '{home_repo}/README.md'"
    env = git_then(tmp_path / "bin", " status --porcelain=v2 -z --branch ", edit)
    proc = run("teardown", topic.id, "--integrate", "--json", cwd=home_repo, env=env)
    assert proc.code == 1, proc.out + proc.err
    steps = steps_of(proc.json, "home")
    assert steps["integrate"]["code"] == "primary-busy", steps["integrate"]
    assert "README.md" in steps["integrate"]["detail"]
    # Nothing it guards went: the edit, main, the worktree and the branch stay.
    assert (home_repo / "README.md").read_text() == "# edited during the teardown\n"
    assert git(home_repo, "rev-parse", "main") == main_before
    assert topic.worktrees["home"].exists() and topic.branch in branches(home_repo)


@pytest.mark.no_plan_check("a git wrapper changes the state between the plan and the act")
def test_a_primary_edited_right_after_the_pick_keeps_the_edit(home_repo, tmp_path):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    # Origin moved on: main is behind once fetched, so the pull has work to do.
    commit_on_origin(home_repo, "UPSTREAM.md", "upstream\n")
    edit = "printf '# edited after the pick\\n' > \"$2/README.md\""
    env = git_then(tmp_path / "bin", " cherry-pick ", edit)
    proc = run("teardown", topic.id, "--integrate", "--json", cwd=home_repo, env=env)
    assert proc.code == 0, proc.out + proc.err
    assert git(home_repo, "log", "-1", "--format=%s", "main") == "work"
    # The default branch is not updated over the edit (git's own refusal), and the edit stays.
    assert steps_of(proc.json, "home")["update-default"]["outcome"] in {"skipped", "failed"}
    assert (home_repo / "README.md").read_text() == "# edited after the pick\n"


@pytest.mark.no_plan_check("a git wrapper changes the state between the plan and the act")
@pytest.mark.parametrize("show_untracked", [None, "no"], ids=["default", "showUntrackedFiles-no"])
def test_a_file_added_to_the_worktree_after_the_plan_is_refused_by_git_and_kept(
    home_repo, tmp_path, show_untracked
):
    # git's own check before `worktree remove` is a `git status`: it must see
    # the new file even where the user's status.showUntrackedFiles=no hides it.
    if show_untracked is not None:
        git(home_repo, "config", "status.showUntrackedFiles", show_untracked)
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "f.py", "f = 1\n", "work")
    # The file lands right after the plan read the worktree's status: the act
    # does not read it again, git's own check in `worktree remove` refuses.
    late = wt / "late.txt"
    edit = f"printf 'written during the teardown\\n' > '{late}'"
    env = git_then(tmp_path / "bin", f" {wt} -c core.fsmonitor= status ", edit)
    proc = run("teardown", topic.id, "--integrate", "--json", cwd=home_repo, env=env)
    assert proc.code == 1, proc.out + proc.err
    steps = steps_of(proc.json, "home")
    assert steps["remove"]["code"] == "dirty-worktree", steps["remove"]
    assert "late.txt" in steps["remove"]["detail"]
    # The pick happened (the work is on main); the file, the worktree and the branch stay.
    assert git(home_repo, "log", "-1", "--format=%s", "main") == "work"
    assert late.read_text() == "written during the teardown\n"
    assert wt.is_dir() and topic.branch in branches(home_repo)


@pytest.mark.no_plan_check("a git wrapper changes the state between the plan and the act")
def test_a_commit_on_the_branch_right_before_its_deletion_keeps_the_branch(home_repo, tmp_path):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    # Another process commits onto the branch as the deletion starts: git
    # deletes only at the judged tip, so the branch and its new commit stay.
    branch_ref = f"refs/heads/{topic.branch}"
    once = tmp_path / "moved"
    g = f'"$REAL_GIT" -C "{home_repo}"'
    index = tmp_path / "late.index"
    move = (
        f'if [ ! -e "{once}" ]; then touch "{once}"; '
        f"tip=$({g} rev-parse {branch_ref}); "
        f'blob=$(echo "late work" | {g} hash-object -w --stdin); '
        f'GIT_INDEX_FILE="{index}" {g} read-tree "$tip"; '
        f'GIT_INDEX_FILE="{index}" {g} update-index --add --cacheinfo "100644,$blob,late.txt"; '
        f'tree=$(GIT_INDEX_FILE="{index}" {g} write-tree); '
        f'new=$({g} commit-tree -p "$tip" -m "late work" "$tree"); '
        f'{g} update-ref {branch_ref} "$new"; fi\n'
        'exec "$REAL_GIT" "$@"'
    )
    bin_dir = tmp_path / "bin"
    env = git_wrapper(bin_dir, f" {topic.branch}", move)
    # Only the deletion (by either command git offers for it) moves the branch.
    script = (
        (bin_dir / "git")
        .read_text()
        .replace(
            f'*"{" " + topic.branch}"*) ;;',
            f'*" update-ref -d {branch_ref} "*|*" branch -D -- {topic.branch} "*) ;;',
        )
    )
    (bin_dir / "git").write_text(script)
    proc = run("teardown", topic.id, "--integrate", "--json", cwd=home_repo, env=env)
    assert once.exists(), "the deletion never ran"
    assert proc.code == 1, proc.out + proc.err
    assert steps_of(proc.json, "home")["branch"]["code"] == "unintegrated-commits"
    assert git(home_repo, "log", "-1", "--format=%s", topic.branch) == "late work"


def test_the_deletion_drops_the_branch_config_section_as_branch_d_does(home_repo):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "f.py", "f = 1\n", "work")
    git(wt, "push", "-q", "-u", "origin", topic.branch)
    assert git(home_repo, "config", "--get", f"branch.{topic.branch}.remote") == "origin"
    proc = run("teardown", topic.id, "--integrate", "--json", cwd=home_repo)
    assert proc.code == 0, proc.out + proc.err
    assert topic.branch not in branches(home_repo)
    left = git(home_repo, "config", "--get-regexp", f"^branch\\.{topic.branch}\\.", check=False)
    assert left == ""


def test_an_empty_committer_name_in_the_environment_is_refused_before_the_pick(
    home_repo, monkeypatch
):
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "f.py", "f = 1\n", "work")
    git(home_repo, "config", "user.name", "Config Name")  # config names one; the variable wins
    monkeypatch.setenv("GIT_COMMITTER_NAME", "")
    main_before = git(home_repo, "rev-parse", "main")
    proc = run("teardown", topic.id, "--integrate", "--json", cwd=home_repo)
    assert proc.code == 1, proc.out + proc.err
    assert proc.json["error"]["code"] == "no-identity", proc.json["error"]
    assert git(home_repo, "rev-parse", "main") == main_before
    assert status(home_repo) == "" and topic.worktrees["home"].exists()
