from __future__ import annotations

from pathlib import Path

from helpers.fakegh import hide_gh
from helpers.faults import KILLED, git_killer, git_wrapper
from helpers.faults import run as run_killable
from helpers.repos import (
    branches,
    commit,
    git,
    lock_reason,
    own_lock,
    run_cli,
    status,
    unlock,
    write,
)
from helpers.topics import multi_topic, new_topic, ship, steps_of, teardown

from router.teardown.snapshot import snapshot_ref, snapshot_worktree
from router.topic import state
from router.topic.workspace import open_repo


def make_work(wt: Path) -> str:
    """An unpushed commit, an uncommitted edit, a deletion, an untracked file, an ignored file."""
    write(wt / ".gitignore", "*.log\n")
    write(wt / "gone.txt", "to be deleted\n")
    git(wt, "add", "--", ".gitignore", "gone.txt")
    sha = commit(wt, "lib.py", "v = 1\n", "unpushed work")
    write(wt / "lib.py", "v = 2  # edited, not committed\n")
    (wt / "gone.txt").unlink()
    write(wt / "new" / "idea.py", "print('untracked')\n")
    write(wt / "debug.log", "ignored noise\n")
    return sha


def test_force_writes_a_snapshot_that_restore_brings_back(home_repo):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    sha = make_work(wt)
    res = teardown(topic, "--force")
    assert res.code == 0, res.out
    assert (
        "snapshot"
        in next(s for s in res.json["repos"][0]["steps"] if s["name"] == "remove")["detail"]
    )
    ref = snapshot_ref(topic.branch)
    assert git(home_repo, "rev-parse", f"{ref}^1") == sha
    assert not wt.exists() and topic.branch not in branches(home_repo)
    assert git(home_repo, "show", f"{ref}:new/idea.py") == "print('untracked')"
    assert git(home_repo, "ls-tree", "--name-only", ref, "debug.log") == ""  # ignored: not kept

    res = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert res.code == 0, res.out
    restored = res.json["repos"][0]
    assert restored["status"] == "restored" and restored["branch"] == topic.branch
    path = Path(restored["worktree"])
    assert path == wt
    assert git(path, "rev-parse", "HEAD") == sha  # the commit is back, no extra commit on top
    assert (path / "lib.py").read_text() == "v = 2  # edited, not committed\n"
    assert (path / "new" / "idea.py").read_text() == "print('untracked')\n"
    assert not (path / "gone.txt").exists()
    changes = sorted(tuple(line.split()) for line in status(path).splitlines())
    assert changes == [("??", "new/idea.py"), ("D", "gone.txt"), ("M", "lib.py")]
    assert git(path, "diff", "--cached", "--name-only") == ""  # nothing staged: edits, not a commit


def test_restore_twice_reports_existing(home_repo):
    topic = new_topic(home_repo)
    make_work(topic.worktrees["home"])
    assert teardown(topic, "--force").code == 0
    assert run_cli("restore", topic.id, cwd=home_repo).code == 0
    again = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert again.code == 0
    assert again.json["repos"][0]["status"] == "existing"


def test_restore_uses_a_restored_name_when_the_branch_is_taken(home_repo):
    topic = new_topic(home_repo)
    make_work(topic.worktrees["home"])
    assert teardown(topic, "--force").code == 0
    git(home_repo, "branch", topic.branch, "main")
    res = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert res.code == 0, res.out
    assert res.json["repos"][0]["branch"] == f"{topic.branch}-restored"
    assert git(home_repo, "rev-parse", topic.branch) == git(home_repo, "rev-parse", "main")


def test_restore_one_repo_of_a_multi_repo_topic(workspace):
    topic = multi_topic(workspace, ("api", "types"))
    for name in ("api", "types"):
        write(topic.worktrees[name] / "draft.txt", f"{name} draft\n")
    assert teardown(topic, "--force").code == 0
    res = run_cli("restore", topic.id, "--repo", "api", "--json", cwd=topic.home)
    assert res.code == 0, res.out
    assert [r["name"] for r in res.json["repos"]] == ["api"]
    assert (topic.worktrees["api"] / "draft.txt").read_text() == "api draft\n"
    assert not topic.worktrees["types"].exists()


def test_restore_works_in_the_secondary_repo_that_holds_the_snapshot(workspace):
    topic = ship(multi_topic(workspace, ("api",)))  # home's artifacts are no work to keep
    write(topic.worktrees["api"] / "draft.txt", "api draft\n")
    assert teardown(topic, "--force").code == 0
    api = topic.repos["api"]
    res = run_cli("restore", topic.id, "--json", cwd=api)
    assert res.code == 0, res.out
    snap = git(api, "rev-parse", snapshot_ref(topic.branch))
    # The secondary's record names its home, so the answer is the whole topic's, as
    # from the home repo: the home held nothing to snapshot, the api repo comes back.
    assert res.json["repos"] == [
        {
            "name": "home",
            "status": "skipped",
            "detail": f"no snapshot at {snapshot_ref(topic.branch)}",
            "snapshot": None,
            "branch": None,
            "worktree": None,
            "submodules": [],
        },
        {
            "name": "api",
            "status": "restored",
            "detail": res.json["repos"][1]["detail"],
            "snapshot": snap,
            "branch": topic.branch,
            "worktree": str(topic.worktrees["api"]),
            "submodules": [],
        },
    ]
    assert (topic.worktrees["api"] / "draft.txt").read_text() == "api draft\n"
    assert not (topic.worktrees["home"]).exists()  # nothing to restore there


def test_restore_without_a_snapshot_refuses(home_repo):
    topic = new_topic(home_repo)
    assert teardown(topic).code == 0
    res = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert res.code == 1
    assert res.json["error"]["code"] == "no-snapshot"


def test_the_snapshot_leaves_the_worktrees_own_index_untouched(home_repo):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    write(wt / "staged.txt", "staged\n")
    git(wt, "add", "--", "staged.txt")
    write(wt / "loose.txt", "not staged\n")
    before = (git(wt, "diff", "--cached", "--name-status"), status(wt))
    snap = snapshot_worktree(open_repo(home_repo), wt, topic.branch)
    assert (git(wt, "diff", "--cached", "--name-status"), status(wt)) == before
    assert git(home_repo, "show", f"{snap.commit}:loose.txt") == "not staged"


def test_a_failed_snapshot_keeps_the_worktree(home_repo):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    write(wt / "precious.txt", "only copy\n")
    # A file where the snapshot ref's folder must go: update-ref cannot write it.
    write(home_repo / ".git" / "refs" / "team-router" / "snapshots", "in the way\n")
    res = teardown(topic, "--force")
    assert res.code == 1
    remove = next(s for s in res.json["repos"][0]["steps"] if s["name"] == "remove")
    assert remove["outcome"] == "refused" and remove["code"] == "snapshot-failed"
    said = remove["detail"].removeprefix(f"snapshot of {wt} failed: ")
    assert said != remove["detail"] and said.endswith("; the worktree is kept"), remove
    assert (wt / "precious.txt").read_text() == "only copy\n"
    assert topic.branch in branches(home_repo)


def test_a_lock_a_killed_snapshot_left_is_git_locked_naming_it_and_the_rerun_finishes(home_repo):
    # A teardown killed during the snapshot's update-ref leaves git's lock on the
    # snapshot ref: the rerun names it (git-locked), as for any git lock in the way.
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    write(wt / "precious.txt", "only copy\n")
    lock = home_repo / ".git" / snapshot_ref(topic.branch)
    write(lock.with_name(lock.name + ".lock"), "")
    res = teardown(topic, "--force")
    assert res.code == 1
    remove = next(s for s in res.json["repos"][0]["steps"] if s["name"] == "remove")
    assert remove["outcome"] == "refused" and remove["code"] == "git-locked", remove
    assert f"remove {lock}.lock" in remove["detail"]
    assert (wt / "precious.txt").read_text() == "only copy\n"
    lock.with_name(lock.name + ".lock").unlink()  # what the message says to do
    assert teardown(topic, "--force").code == 0
    assert git(home_repo, "show", f"{snapshot_ref(topic.branch)}:precious.txt") == "only copy"


def test_force_snapshots_a_branch_with_unpushed_commits_and_no_worktree(home_repo):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    sha = commit(wt, "w.py", "w\n", "only here")
    unlock(home_repo, wt)
    git(home_repo, "worktree", "remove", str(wt))
    res = teardown(topic, "--force")
    assert res.code == 0, res.out
    assert topic.branch not in branches(home_repo)
    assert git(home_repo, "rev-parse", f"{snapshot_ref(topic.branch)}^1") == sha


def test_force_snapshots_a_clean_worktree_whose_commits_exist_nowhere_else(home_repo):
    topic = new_topic(home_repo)
    sha = commit(topic.worktrees["home"], "w.py", "w\n", "unpushed")
    res = teardown(topic, "--force")
    assert res.code == 0, res.out
    assert git(home_repo, "rev-parse", f"{snapshot_ref(topic.branch)}^1") == sha
    assert not topic.worktrees["home"].exists()


def test_force_writes_no_snapshot_when_nothing_would_be_lost(home_repo):
    topic = new_topic(home_repo)
    assert teardown(topic, "--force").code == 0
    assert git(home_repo, "for-each-ref", "refs/team-router/") == ""


def test_a_refused_restore_names_its_error(home_repo):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    write(wt / "draft.txt", "draft\n")
    assert teardown(topic, "--force").code == 0
    write(wt / "in-the-way.txt", "someone else's\n")  # the worktree's path is taken
    res = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert res.code == 1 and res.json["ok"] is False
    assert res.json["error"]["code"] == "restore-refused"
    assert "path-taken" in res.json["error"]["message"]
    assert (wt / "in-the-way.txt").read_text() == "someone else's\n"


# -- a branch that is no topic (pr-cleanup --abandon deleted it) ----------------------------


def abandoned_branch(repo: Path, tmp_path: Path, monkeypatch, branch: str = "feature/x") -> str:
    """``branch`` with an unpushed commit and an uncommitted edit, abandoned by pr-cleanup; its tip."""
    wt = repo.parent / "x-checkout"
    git(repo, "worktree", "add", "-q", "-b", branch, str(wt), "main")
    sha = commit(wt, "x.py", "x = 1\n", "x work never pushed")
    write(wt / "x.py", "x = 2  # edited, not committed\n")
    with monkeypatch.context() as m:
        hide_gh(tmp_path, m)  # no gh: the git part of the abandon runs alone
        res = run_cli("pr-cleanup", branch, "--abandon", "--yes", "--json", cwd=repo)
    assert res.code == 0, res.out + res.err
    assert branch not in branches(repo) and not wt.exists()
    return sha


def test_restoring_a_branch_twice_reports_existing_and_makes_no_second_copy(
    home_repo, tmp_path, monkeypatch
):
    # No record is kept for a branch that is no topic: the rerun saw the branch
    # name taken and checked the snapshot out again on feature/x-restored.
    sha = abandoned_branch(home_repo, tmp_path, monkeypatch)
    first = run_cli("restore", "feature/x", "--json", cwd=home_repo)
    assert first.code == 0, first.out + first.err
    back = Path(first.json["repos"][0]["worktree"])
    write(back / "x.py", "x = 3  # the user went on working\n")
    again = run_cli("restore", "feature/x", "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    [repo] = again.json["repos"]
    assert (repo["status"], repo["branch"], repo["worktree"]) == (
        "existing",
        "feature/x",
        str(back),
    )
    assert branches(home_repo) == ["feature/x", "main"]
    assert git(home_repo, "rev-parse", "refs/heads/feature/x") == sha
    assert (back / "x.py").read_text() == "x = 3  # the user went on working\n"


def test_restoring_a_branch_worked_on_since_and_checked_out_nowhere_moves_nothing(
    home_repo, tmp_path, monkeypatch
):
    abandoned_branch(home_repo, tmp_path, monkeypatch)
    back = Path(
        run_cli("restore", "feature/x", "--json", cwd=home_repo).json["repos"][0]["worktree"]
    )
    later = commit(back, "x.py", "x = 4\n", "work after the restore")
    unlock(home_repo, back)
    git(home_repo, "worktree", "remove", str(back))
    again = run_cli("restore", "feature/x", "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    [repo] = again.json["repos"]
    assert (repo["status"], repo["branch"], repo["worktree"]) == ("existing", "feature/x", None)
    assert f"git worktree add {back} feature/x" in repo["detail"]
    assert branches(home_repo) == ["feature/x", "main"] and not back.exists()
    assert git(home_repo, "rev-parse", "refs/heads/feature/x") == later


def test_restoring_a_branch_left_at_the_snapshots_commit_checks_that_branch_out_again(
    home_repo, tmp_path, monkeypatch
):
    # The restored worktree was removed (its edits with it): the branch is the
    # snapshot's own, so the rerun brings the edits back on it, not on a copy.
    sha = abandoned_branch(home_repo, tmp_path, monkeypatch)
    back = Path(
        run_cli("restore", "feature/x", "--json", cwd=home_repo).json["repos"][0]["worktree"]
    )
    unlock(home_repo, back)
    git(home_repo, "worktree", "remove", "--force", str(back))
    again = run_cli("restore", "feature/x", "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    [repo] = again.json["repos"]
    assert (repo["status"], repo["branch"], repo["worktree"]) == (
        "restored",
        "feature/x",
        str(back),
    )
    assert (back / "x.py").read_text() == "x = 2  # edited, not committed\n"
    assert branches(home_repo) == ["feature/x", "main"]
    assert git(home_repo, "rev-parse", "refs/heads/feature/x") == sha


def test_restoring_a_branch_whose_name_holds_other_work_takes_another_name_once(
    home_repo, tmp_path, monkeypatch
):
    abandoned_branch(home_repo, tmp_path, monkeypatch)
    git(home_repo, "branch", "feature/x", "main")  # someone else's work under that name
    main = git(home_repo, "rev-parse", "main")
    for status_ in ("restored", "existing"):
        res = run_cli("restore", "feature/x", "--json", cwd=home_repo)
        assert res.code == 0, res.out + res.err
        [repo] = res.json["repos"]
        assert (repo["status"], repo["branch"]) == (status_, "feature/x-restored")
    assert (Path(repo["worktree"]) / "x.py").read_text() == "x = 2  # edited, not committed\n"
    assert branches(home_repo) == ["feature/x", "feature/x-restored", "main"]
    assert git(home_repo, "rev-parse", "refs/heads/feature/x") == main


# -- work the snapshot and restore must keep ----------------------------------------------


def test_teardown_refuses_hidden_docs_plans_files_and_force_snapshots_them_for_restore(topic):
    wt = topic.worktrees["home"]
    roadmap = write(wt / "docs" / "plans" / "roadmap.md", "mine\n")
    res = run_cli("teardown", topic.id, "--json", cwd=topic.home)
    assert res.code == 1 and res.json["error"]["code"] == "dirty-worktree", res.out
    assert "docs/plans/roadmap.md" in res.json["error"]["message"]
    assert "`git add -f` those under docs/plans/" in res.json["error"]["message"]
    assert roadmap.read_text() == "mine\n"
    res = run_cli("teardown", topic.id, "--json", "--force", cwd=topic.home)
    assert res.code == 0, res.out + res.err
    assert not wt.exists()
    ref = f"refs/team-router/snapshots/{topic.branch}"
    assert git(topic.home, "show", f"{ref}:docs/plans/roadmap.md") == "mine"
    res = run_cli("restore", topic.id, "--json", cwd=topic.home)
    assert res.code == 0, res.out + res.err
    back = Path(res.json["repos"][0]["worktree"])
    assert (back / "docs" / "plans" / "roadmap.md").read_text() == "mine\n"


def test_restore_run_twice_after_the_branch_name_was_taken_reports_existing(topic):
    # README: a rerun is `existing`. The first restore moved the topic to
    # <branch>-restored, whose snapshot ref does not exist: the rerun said no-snapshot, exit 1.
    write(topic.worktrees["home"] / "draft.txt", "draft\n")
    assert run_cli("teardown", topic.id, "--force", cwd=topic.home).code == 0
    git(topic.home, "branch", topic.branch, "main")
    first = run_cli("restore", topic.id, "--json", cwd=topic.home)
    assert first.code == 0, first.out
    back = Path(first.json["repos"][0]["worktree"])
    again = run_cli("restore", topic.id, "--json", cwd=topic.home)
    assert again.code == 0, again.out
    assert again.json["repos"][0]["status"] == "existing"
    assert again.json["repos"][0]["worktree"] == str(back)
    assert (back / "draft.txt").read_text() == "draft\n"


def test_a_snapshot_keeps_the_edits_of_an_ignored_file_staged_with_add_force(topic):
    # The snapshot's files come from `add --all` over HEAD's tree, which skips an
    # ignored path HEAD lacks: the staged version survived (index commit), the
    # later edit was lost, and the restored worktree had no file on disk (`AD`).
    wt = topic.worktrees["home"]
    write(wt / ".gitignore", "*.env\n")
    write(wt / "local.env", "v1 staged\n")
    git(wt, "add", "-f", "local.env")
    write(wt / "local.env", "v2 edited after staging\n")
    assert run_cli("teardown", topic.id, "--force", cwd=topic.home).code == 0
    res = run_cli("restore", topic.id, "--json", cwd=topic.home)
    assert res.code == 0, res.out
    back = Path(res.json["repos"][0]["worktree"])
    assert (back / "local.env").read_text() == "v2 edited after staging\n"
    assert git(back, "show", ":local.env") == "v1 staged"
    assert "AM local.env" in status(back).splitlines()


def test_a_file_under_docs_plans_written_after_the_plan_is_kept(workspace, tmp_path, monkeypatch):
    # The home repo's plan saw its worktree clean; while the api repo's plan is still
    # running (its `git status` held a second), a file lands in the home worktree's
    # docs/plans/, which git's own removal check cannot see (our info/exclude line).
    topic = ship(multi_topic(workspace, ("api",)))
    wt = topic.worktrees["home"]
    late = wt / "docs" / "plans" / "late.md"
    slow = (
        'case "$*" in *"/api/.claude/worktrees/"*)\n'
        f"  sleep 1; mkdir -p '{late.parent}'; echo 'written late' > '{late}' ;;\n"
        'esac\nexec "$REAL_GIT" "$@"'
    )
    monkeypatch.setenv("PATH", git_wrapper(tmp_path / "bin", "status", slow)["PATH"])
    res = run_cli("teardown", topic.id, "--json", cwd=topic.home)
    assert res.code == 1, res.out
    home_remove = steps_of(res.json, "home")["remove"]
    assert home_remove["outcome"] == "refused" and "docs/plans/late.md" in home_remove["detail"]
    assert late.read_text() == "written late\n" and wt.is_dir()


def test_restoring_a_branch_the_user_checked_out_elsewhere_brings_the_edits_back(
    home_repo, tmp_path, monkeypatch
):
    # The user's own checkout of the branch, at the snapshot's commit, is not a
    # restore: none of the snapshot's edits are in it.
    sha = abandoned_branch(home_repo, tmp_path, monkeypatch)
    mine = home_repo.parent / "mine"
    git(home_repo, "worktree", "add", "-q", "-b", "feature/x", str(mine), sha)
    res = run_cli("restore", "feature/x", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    [repo] = res.json["repos"]
    assert repo["status"] == "restored", repo
    back = Path(repo["worktree"])
    assert back != mine and (back / "x.py").read_text() == "x = 2  # edited, not committed\n"
    assert status(mine) == "" and git(home_repo, "rev-parse", "refs/heads/feature/x") == sha


def test_a_restore_killed_before_laying_the_files_over_is_not_taken_for_done(
    home_repo, tmp_path, monkeypatch
):
    # Killed right after `git worktree add`: the branch is checked out at its
    # path, clean, at the snapshot's commit. That is no earlier restore.
    abandoned_branch(home_repo, tmp_path, monkeypatch)
    env = git_killer(tmp_path / "killer-bin", "restore --source", real=False)
    killed = run_killable("restore", "feature/x", "--json", cwd=home_repo, env=env, new_group=True)
    assert killed.code == KILLED, killed.out + killed.err
    again = run_cli("restore", "feature/x", "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    [repo] = again.json["repos"]
    assert repo["status"] == "restored", repo
    back = Path(repo["worktree"])
    assert (back / "x.py").read_text() == "x = 2  # edited, not committed\n", repo
    third = run_cli("restore", "feature/x", "--json", cwd=home_repo)
    assert third.json["repos"][0]["status"] == "existing", third.out
    assert third.json["repos"][0]["worktree"] == str(back)


def test_restoring_a_branch_the_user_works_on_elsewhere_moves_nothing_and_brings_the_edits_back(
    home_repo, tmp_path, monkeypatch
):
    # The branch came back (from origin, say) and the user committed on it in
    # their own checkout: nothing shows the snapshot's edits were ever restored.
    sha = abandoned_branch(home_repo, tmp_path, monkeypatch)
    mine = home_repo.parent / "mine"
    git(home_repo, "worktree", "add", "-q", "-b", "feature/x", str(mine), sha)
    later = commit(mine, "y.py", "y = 1\n", "the user's own work")
    res = run_cli("restore", "feature/x", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    [repo] = res.json["repos"]
    assert (repo["status"], repo["branch"]) == ("restored", "feature/x-restored"), repo
    assert (Path(repo["worktree"]) / "x.py").read_text() == "x = 2  # edited, not committed\n"
    assert git(home_repo, "rev-parse", "refs/heads/feature/x") == later and status(mine) == ""


def test_a_topic_made_again_on_top_of_its_snapshots_commit_is_no_restore_of_it(home_repo):
    # The topic's commit reached main (its PR merged), its uncommitted edits were
    # torn down with --force. The topic made again starts from main, so its new
    # worktree holds the snapshot's commit: the edits were never brought back.
    topic = new_topic(home_repo, topic_id="2026-05-01-add-rate-limiting")
    wt = topic.worktrees["home"]
    sha = make_work(wt)
    git(wt, "push", "-q", "origin", "HEAD:main")
    git(home_repo, "pull", "-q", "--ff-only", "origin", "main")
    assert teardown(topic, "--force").code == 0
    again = new_topic(home_repo, topic_id=topic.id)
    commit(again.worktrees["home"], "more.py", "m = 1\n", "the new run's work")
    res = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    [repo] = res.json["repos"]
    assert repo["status"] == "restored", repo
    back = Path(repo["worktree"])
    assert back != again.worktrees["home"] and git(back, "rev-parse", "HEAD") == sha
    assert (back / "lib.py").read_text() == "v = 2  # edited, not committed\n"


def test_a_branch_moved_while_restore_checks_it_out_gets_no_snapshot_laid_over_it(
    home_repo, tmp_path, monkeypatch
):
    # Between restore's look at the branch (at the snapshot's commit) and its
    # checkout, another program points it at other work. Laid over that, the
    # snapshot's files would read as edits undoing it.
    sha = abandoned_branch(home_repo, tmp_path, monkeypatch)
    back = Path(
        run_cli("restore", "feature/x", "--json", cwd=home_repo).json["repos"][0]["worktree"]
    )
    unlock(home_repo, back)
    git(home_repo, "worktree", "remove", "--force", str(back))
    other = commit(home_repo, "other.py", "o = 1\n", "other work on main")
    git(home_repo, "reset", "-q", "--hard", "HEAD~1")
    move = f'"$REAL_GIT" -C "{home_repo}" update-ref refs/heads/feature/x {other}'
    env = git_wrapper(tmp_path / "mover-bin", "worktree add", f'{move}\nexec "$REAL_GIT" "$@"')
    monkeypatch.setenv("PATH", env["PATH"])
    res = run_cli("restore", "feature/x", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    [repo] = res.json["repos"]
    assert (repo["status"], repo["branch"]) == ("restored", "feature/x-restored"), repo
    restored = Path(repo["worktree"])
    assert git(restored, "rev-parse", "HEAD") == sha
    assert (restored / "x.py").read_text() == "x = 2  # edited, not committed\n"
    assert git(home_repo, "rev-parse", "refs/heads/feature/x") == other and not back.exists()


def _staged_work(wt: Path) -> None:
    """A staged new file edited again after staging, and a staged edit: what the index holds."""
    write(wt / "staged.py", "s = 1  # staged\n")
    git(wt, "add", "staged.py")
    write(wt / "staged.py", "s = 2  # edited after staging\n")


def _assert_staged_back(back: Path) -> None:
    assert git(back, "show", ":staged.py") == "s = 1  # staged"
    assert (back / "staged.py").read_text() == "s = 2  # edited after staging\n"
    assert "AM staged.py" in status(back).splitlines()


def test_a_topic_restore_killed_before_the_index_step_is_finished_by_the_rerun(topic, tmp_path):
    # Killed after the files were laid over, before the index was put back: the
    # rerun took the half-done worktree for someone else's checkout of the
    # branch and restored a second copy on <branch>-restored.
    wt = topic.worktrees["home"]
    _staged_work(wt)
    assert teardown(topic, "--force").code == 0
    env = git_killer(tmp_path / "killer-bin", "read-tree", real=False)
    killed = run_killable("restore", topic.id, "--json", cwd=topic.home, env=env, new_group=True)
    assert killed.code == KILLED, killed.out + killed.err
    again = run_cli("restore", topic.id, "--json", cwd=topic.home)
    assert again.code == 0, again.out + again.err
    [repo] = again.json["repos"]
    assert (repo["status"], repo["branch"], repo["worktree"]) == (
        "restored",
        topic.branch,
        str(wt),
    ), repo
    _assert_staged_back(wt)
    assert branches(topic.home) == [topic.branch, "main"]
    third = run_cli("restore", topic.id, "--json", cwd=topic.home)
    assert third.json["repos"][0]["status"] == "existing", third.out


def test_a_branch_restore_killed_before_the_index_step_is_finished_by_the_rerun(
    home_repo, tmp_path, monkeypatch
):
    # The rerun answered `existing` (its files are laid over) with nothing staged.
    wt = home_repo.parent / "x-checkout"
    git(home_repo, "worktree", "add", "-q", "-b", "feature/x", str(wt), "main")
    commit(wt, "x.py", "x = 1\n", "x work never pushed")
    _staged_work(wt)
    with monkeypatch.context() as m:
        hide_gh(tmp_path, m)
        res = run_cli("pr-cleanup", "feature/x", "--abandon", "--yes", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    env = git_killer(tmp_path / "killer-bin", "read-tree", real=False)
    killed = run_killable("restore", "feature/x", "--json", cwd=home_repo, env=env, new_group=True)
    assert killed.code == KILLED, killed.out + killed.err
    again = run_cli("restore", "feature/x", "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    [repo] = again.json["repos"]
    assert (repo["status"], repo["branch"]) == ("restored", "feature/x"), repo
    back = Path(repo["worktree"])
    _assert_staged_back(back)
    assert branches(home_repo) == ["feature/x", "main"]
    third = run_cli("restore", "feature/x", "--json", cwd=home_repo)
    assert third.json["repos"][0]["status"] == "existing", third.out
    assert git(back, "show", ":staged.py") == "s = 1  # staged"


def test_an_interrupted_restore_edited_since_is_refused_and_nothing_is_changed(topic, tmp_path):
    # Finishing would lay the snapshot's version over the edit made after the kill.
    wt = topic.worktrees["home"]
    _staged_work(wt)
    assert teardown(topic, "--force").code == 0
    env = git_killer(tmp_path / "killer-bin", "read-tree", real=False)
    killed = run_killable("restore", topic.id, "--json", cwd=topic.home, env=env, new_group=True)
    assert killed.code == KILLED, killed.out + killed.err
    write(wt / "staged.py", "s = 3  # edited after the kill\n")
    write(wt / "brand_new.py", "n = 1\n")  # a file the restore never touches: no conflict
    before = (status(wt), git(wt, "ls-files", "--stage"))
    res = run_cli("restore", topic.id, "--json", cwd=topic.home)
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "restore-refused"
    [repo] = res.json["repos"]
    assert repo["status"] == "refused" and "was interrupted" in repo["detail"], repo
    assert "staged.py" in repo["detail"] and "brand_new.py" not in repo["detail"]
    assert (wt / "staged.py").read_text() == "s = 3  # edited after the kill\n"
    assert (status(wt), git(wt, "ls-files", "--stage")) == before
    assert branches(topic.home) == [topic.branch, "main"]
    # The named way out: drop the note, and the rerun restores a full copy beside it.
    marker = git(wt, "rev-parse", "--path-format=absolute", "--git-path", "team-router-restoring")
    assert marker in repo["detail"]
    Path(marker).unlink()
    again = run_cli("restore", topic.id, "--json", cwd=topic.home)
    assert again.code == 0, again.out + again.err
    copy = Path(again.json["repos"][0]["worktree"])
    assert copy != wt
    _assert_staged_back(copy)
    assert (wt / "staged.py").read_text() == "s = 3  # edited after the kill\n"


def test_restoring_a_reused_topic_branch_by_name_records_it_as_restoring_the_topic_does(
    home_repo, workspace
):
    # `new` reused the user's checkout on `feature`; teardown --remove-reused
    # --force snapshotted and removed it. `restore feature` brought the worktree
    # back but left the record saying torn down, at the old path: teardown of
    # the topic then never saw the restored worktree again.
    feature = workspace / "feature-wt"
    git(home_repo, "worktree", "add", "-q", "-b", "feature", str(feature))
    made = run_cli("new", "Add thing", "--id", "2026-05-01-add-thing", "--json", cwd=feature)
    assert made.json["home"]["status"] == "reused", made.out
    write(feature / "draft.py", "draft = 1\n")
    res = run_cli(
        "teardown", "2026-05-01-add-thing", "--force", "--remove-reused", "--json", cwd=home_repo
    )
    assert res.code == 0 and not feature.exists(), res.out + res.err
    res = run_cli("restore", "feature", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    [repo] = res.json["repos"]
    back = Path(repo["worktree"])
    assert (repo["name"], repo["status"], repo["branch"]) == ("home", "restored", "feature")
    assert (back / "draft.py").read_text() == "draft = 1\n"
    record = state.read_record(home_repo / ".git", "2026-05-01-add-thing")
    assert record is not None and record.restored is not None
    assert (record.worktree, record.branch, record.teardown) == (str(back), "feature", None)
    assert record.restored.snapshot == repo["snapshot"]
    again = run_cli("restore", "feature", "--json", cwd=home_repo)
    assert again.json["repos"][0]["status"] == "existing", again.out
    # The topic's teardown sees the restored worktree again (its edits snapshotted anew).
    down = run_cli("teardown", "2026-05-01-add-thing", "--force", "--json", cwd=home_repo)
    assert down.code == 0, down.out + down.err
    assert steps_of(down.json, "home")["remove"]["outcome"] == "done", down.out
    assert not back.exists()
    assert git(home_repo, "show", f"{snapshot_ref('feature')}:draft.py") == "draft = 1"


def test_a_restore_killed_half_way_through_laying_the_files_over_is_finished_by_the_rerun(
    topic, tmp_path
):
    # Killed while `git restore` wrote the files: one is the snapshot's, the
    # other still the commit's. Neither is an edit made since, so the rerun
    # lays the rest over and stages the index.
    wt = topic.worktrees["home"]
    commit(wt, "lib.py", "v = 1\n", "unpushed work")
    write(wt / "lib.py", "v = 2  # edited\n")
    _staged_work(wt)
    assert teardown(topic, "--force").code == 0
    half = f'"$REAL_GIT" -C "{wt}" show HEAD:lib.py > "{wt}/lib.py"'
    env = git_killer(tmp_path / "killer-bin", "restore --source", half)
    killed = run_killable("restore", topic.id, "--json", cwd=topic.home, env=env, new_group=True)
    assert killed.code == KILLED, killed.out + killed.err
    assert (wt / "lib.py").read_text() == "v = 1\n"
    again = run_cli("restore", topic.id, "--json", cwd=topic.home)
    assert again.code == 0, again.out + again.err
    [repo] = again.json["repos"]
    assert (repo["status"], repo["worktree"]) == ("restored", str(wt)), repo
    assert (wt / "lib.py").read_text() == "v = 2  # edited\n"
    _assert_staged_back(wt)
    assert branches(topic.home) == [topic.branch, "main"]


def test_a_topic_restore_killed_right_after_its_checkout_is_finished_in_that_worktree(
    home_repo, tmp_path
):
    # Killed once `git worktree add` is done, before the restore's note is in the new
    # worktree's git dir: a clean checkout of the snapshot's commit, on the branch.
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    sha = make_work(wt)
    assert teardown(topic, "--force").code == 0
    env = git_killer(tmp_path / "killer-bin", "worktree add")
    killed = run_killable("restore", topic.id, "--json", cwd=home_repo, env=env, new_group=True)
    assert killed.code == KILLED, killed.out + killed.err
    assert git(wt, "rev-parse", "HEAD") == sha and status(wt) == ""

    again = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    [repo] = again.json["repos"]
    assert (repo["status"], repo["branch"], repo["worktree"]) == ("restored", topic.branch, str(wt))
    assert (wt / "lib.py").read_text() == "v = 2  # edited, not committed\n"
    assert (wt / "new" / "idea.py").read_text() == "print('untracked')\n"
    assert git(home_repo, "worktree", "list", "--porcelain").count("worktree ") == 2
    assert sorted(branches(home_repo)) == sorted(["main", topic.branch])  # no -restored copy


def test_a_branch_restore_killed_right_after_its_checkout_is_finished_in_that_worktree(
    home_repo, tmp_path, monkeypatch
):
    abandoned_branch(home_repo, tmp_path, monkeypatch)
    env = git_killer(tmp_path / "killer-bin", "worktree add")
    killed = run_killable("restore", "feature/x", "--json", cwd=home_repo, env=env, new_group=True)
    assert killed.code == KILLED, killed.out + killed.err
    again = run_cli("restore", "feature/x", "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    [repo] = again.json["repos"]
    assert (repo["status"], repo["branch"]) == ("restored", "feature/x"), repo
    assert (Path(repo["worktree"]) / "x.py").read_text() == "x = 2  # edited, not committed\n"
    assert sorted(branches(home_repo)) == ["feature/x", "main"]


# What a `git worktree add` killed before it pointed the new worktree's HEAD at
# its branch leaves: git registered the worktree (locked with team-router's
# reason, which --lock --reason writes at once), wrote its .git file and the
# placeholder HEAD (a null id), and checked nothing out. Until that registration
# goes, `git rev-list --all` fails ("bad object worktrees/<id>/HEAD") in the
# repo, and every reachability check with it. The stand-in runs the real add
# with --no-checkout, then writes the placeholder back.
_HEAD_UNSET = r"""
for a; do
  shift
  [ "$prev" = "--" ] && [ -z "$wt" ] && wt="$a"
  prev="$a"
  if [ "$a" = add ]; then set -- "$@" add --no-checkout; else set -- "$@" "$a"; fi
done
"$REAL_GIT" "$@" || exit 1
admin=$(sed -n 's/^gitdir: //p' "$wt/.git")
head=$("$REAL_GIT" -C "$wt" rev-parse HEAD)
echo "$head" | tr 0-9a-f 0 > "$admin/HEAD"
"""


def _restore_killed_before_its_head(topic, tmp_path: Path, then: str = "") -> None:
    env = git_killer(tmp_path / "killer-bin", "worktree add", _HEAD_UNSET + then, real=False)
    killed = run_killable("restore", topic.id, "--json", cwd=topic.home, env=env, new_group=True)
    assert killed.code == KILLED, killed.out + killed.err
    unreadable = git(topic.home, "rev-list", "--all", check=False)
    assert unreadable == "", unreadable  # git itself cannot walk the repo's refs now


def _assert_restored(topic, sha: str) -> None:
    wt = topic.worktrees["home"]
    assert git(topic.home, "rev-list", "--all", check=False) != ""
    assert git(wt, "rev-parse", "HEAD") == sha
    assert (wt / "lib.py").read_text() == "v = 2  # edited, not committed\n"
    assert (wt / "new" / "idea.py").read_text() == "print('untracked')\n"
    assert git(topic.home, "worktree", "list", "--porcelain").count("worktree ") == 2
    assert sorted(branches(topic.home)) == sorted(["main", topic.branch])  # no -restored copy
    assert lock_reason(topic.home, wt) == own_lock(topic.id)


def test_a_restore_killed_before_git_set_the_new_worktrees_head_is_undone_and_made_again(
    home_repo, tmp_path
):
    topic = new_topic(home_repo)
    sha = make_work(topic.worktrees["home"])
    assert teardown(topic, "--force").code == 0
    _restore_killed_before_its_head(topic, tmp_path)

    again = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    [repo] = again.json["repos"]
    assert (repo["status"], repo["worktree"]) == ("restored", str(topic.worktrees["home"])), repo
    _assert_restored(topic, sha)


def test_doctor_repair_undoes_the_registration_a_restore_killed_before_its_head_left(
    home_repo, tmp_path
):
    topic = new_topic(home_repo)
    sha = make_work(topic.worktrees["home"])
    assert teardown(topic, "--force").code == 0
    _restore_killed_before_its_head(topic, tmp_path)
    wt = topic.worktrees["home"]

    found = run_cli("doctor", "--json", cwd=home_repo)
    assert found.code == 0, found.out + found.err
    [finding] = [f for f in found.json["findings"] if f["path"] == str(wt)]
    assert finding["kind"] == "half-made-registration" and not finding["repaired"], finding
    assert f"team-router restore {topic.id}" in finding["detail"]
    repaired = run_cli("doctor", "--repair", "--json", cwd=home_repo)
    assert repaired.code == 0, repaired.out + repaired.err
    [finding] = [f for f in repaired.json["findings"] if f["path"] == str(wt)]
    assert finding["kind"] == "half-made-registration" and finding["repaired"], finding
    assert git(home_repo, "rev-list", "--all", check=False) != ""
    assert not wt.exists() and git(home_repo, "worktree", "list").count("\n") == 0

    again = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    _assert_restored(topic, sha)


def test_a_file_in_the_half_made_worktree_is_kept_and_the_repo_made_readable(home_repo, tmp_path):
    # Anything but git's own .git file in the directory is not the killed add's:
    # nothing there is deleted, the registration is made readable (HEAD on the
    # branch git was checking out), and the refusal says what to do.
    topic = new_topic(home_repo)
    sha = make_work(topic.worktrees["home"])
    assert teardown(topic, "--force").code == 0
    _restore_killed_before_its_head(topic, tmp_path, 'echo mine > "$wt/notes.txt"')
    wt = topic.worktrees["home"]

    again = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert again.code == 1, again.out + again.err
    [repo] = again.json["repos"]
    assert repo["status"] == "refused" and "notes.txt" in repo["detail"], repo
    assert (wt / "notes.txt").read_text() == "mine\n"
    assert git(home_repo, "rev-list", "--all", check=False) != ""
    assert git(wt, "symbolic-ref", "HEAD") == f"refs/heads/{topic.branch}"

    (wt / "notes.txt").rename(tmp_path / "notes.txt")  # what the refusal says to do
    done = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert done.code == 0, done.out + done.err
    _assert_restored(topic, sha)
