"""doctor: reports what disagrees with git; --repair fixes only what is safe and ours."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers.faults import CRASHED, KILLED, git_killer, git_then, run, run_all, tree
from helpers.repos import (
    FORMATS,
    branches,
    commit,
    git,
    make_repo,
    run_cli,
    unlock,
    worktree_paths,
    write,
)
from helpers.topics import TOPIC_ID

from router.topic import state


def _worktree(repo: Path) -> Path:
    return repo / ".claude/worktrees" / TOPIC_ID


def _doctor(repo: Path, *flags: str) -> list[dict]:
    res = run_cli("doctor", "--json", *flags, cwd=repo)
    assert res.code == 0, res.out + res.err
    return res.json["findings"]


def _kinds(findings: list[dict]) -> list[tuple[str, str, bool]]:
    return [(f["kind"], f["path"], f["repaired"]) for f in findings]


def test_a_healthy_topic_has_no_findings(topic):
    res = run_cli("doctor", "--json", cwd=topic.home)
    assert res.code == 0
    assert res.json["findings"] == []
    assert res.json["repos"] == [str(topic.home)]
    text = run_cli("doctor", cwd=topic.home)
    assert text.out.strip() == f"No problems found in {topic.home}."


def test_doctor_without_repair_changes_nothing(topic):
    shutil.rmtree(_worktree(topic.home))
    (topic.home / ".claude/worktrees/leftover").mkdir()
    before = (
        tree(topic.home),
        git(topic.home, "worktree", "list", "--porcelain"),
        branches(topic.home),
    )
    findings = _doctor(topic.home)
    assert {f["kind"] for f in findings} == {
        "registration-dir-gone",
        "unknown-dir",
        "record-dir-gone",
    }
    assert not any(f["repaired"] for f in findings)
    assert (
        tree(topic.home),
        git(topic.home, "worktree", "list", "--porcelain"),
        branches(topic.home),
    ) == before


def test_repair_unregisters_our_vanished_worktree_and_then_its_empty_branch_and_record(topic):
    shutil.rmtree(_worktree(topic.home))
    findings = _doctor(topic.home, "--repair")
    record = state.record_path(topic.home / ".git", TOPIC_ID)
    assert _kinds(findings) == [
        ("registration-dir-gone", str(_worktree(topic.home)), True),
        ("orphan-branch", f"refs/heads/{TOPIC_ID}", True),
        ("record-dir-gone", str(record), True),
    ]
    assert worktree_paths(topic.home) == [str(topic.home)]
    assert branches(topic.home) == ["main"]
    assert not record.exists()
    assert _doctor(topic.home) == []


def test_repair_keeps_a_branch_that_holds_commits_found_nowhere_else(topic):
    sha = commit(_worktree(topic.home), "work.py", "w = 1\n", "unpushed work")
    shutil.rmtree(_worktree(topic.home))
    findings = _doctor(topic.home, "--repair")
    by_kind = {f["kind"]: f for f in findings}
    assert by_kind["registration-dir-gone"]["repaired"] is True
    assert by_kind["orphan-branch"]["repaired"] is False
    assert "1 commit(s) exist on no other branch" in by_kind["orphan-branch"]["detail"]
    assert by_kind["record-dir-gone"]["repaired"] is False
    assert git(topic.home, "rev-parse", TOPIC_ID) == sha  # the work is still there
    assert state.read_record(topic.home / ".git", TOPIC_ID) is not None


def test_repair_never_unregisters_another_tools_worktree(topic, workspace):
    elsewhere = workspace / "elsewhere"
    git(topic.home, "worktree", "add", "-q", "-b", "theirs", str(elsewhere))
    shutil.rmtree(elsewhere)
    findings = _doctor(topic.home, "--repair")
    [theirs] = [f for f in findings if f["path"] == str(elsewhere)]
    assert (theirs["kind"], theirs["repaired"]) == ("registration-dir-gone", False)
    assert "left for the tool that made it" in theirs["detail"]
    # Still registered: no bare `git worktree prune` ran.
    assert str(elsewhere) in worktree_paths(topic.home)
    assert "theirs" in branches(topic.home)


def test_repair_keeps_a_locked_registration(topic):
    unlock(topic.home, _worktree(topic.home))  # the user's lock replaces ours
    git(topic.home, "worktree", "lock", "--reason", "on a usb disk", str(_worktree(topic.home)))
    shutil.rmtree(_worktree(topic.home))
    findings = _doctor(topic.home, "--repair")
    [entry] = [f for f in findings if f["kind"] == "registration-dir-gone"]
    assert entry["repaired"] is False
    assert "on a usb disk" in entry["detail"]
    assert str(_worktree(topic.home)) in worktree_paths(topic.home)


def test_repair_removes_only_empty_unknown_directories(topic):
    root = topic.home / ".claude/worktrees"
    (root / "empty").mkdir()
    write(root / "busy" / "notes.txt", "keep me\n")
    os.symlink(topic.home, root / "link")
    findings = {f["path"]: f for f in _doctor(topic.home, "--repair")}
    assert findings[str(root / "empty")]["repaired"] is True
    assert findings[str(root / "busy")]["repaired"] is False
    assert "notes.txt" in findings[str(root / "busy")]["detail"]
    assert findings[str(root / "link")]["repaired"] is False
    assert not (root / "empty").exists()
    assert (root / "busy" / "notes.txt").read_text() == "keep me\n"
    assert (root / "link").is_symlink()
    assert _worktree(topic.home).is_dir()  # the live worktree is never touched


def test_a_branch_the_tool_did_not_create_is_never_reported_or_deleted(home_repo):
    git(home_repo, "branch", TOPIC_ID)
    assert run_cli("new", "x", "--id", TOPIC_ID, cwd=home_repo).code == 0
    unlock(home_repo, _worktree(home_repo))
    git(home_repo, "worktree", "remove", str(_worktree(home_repo)))
    findings = _doctor(home_repo, "--repair")
    assert "orphan-branch" not in {f["kind"] for f in findings}
    assert TOPIC_ID in branches(home_repo)


def test_repair_waits_for_the_topic_lock_and_refuses_locked_without_repairing(topic):
    shutil.rmtree(_worktree(topic.home))
    with state.held_lock(topic.home / ".git", TOPIC_ID):
        res = run_cli("doctor", "--repair", "--wait", "0.3", "--json", cwd=topic.home)
    assert res.code == 1
    assert res.json["error"]["code"] == "locked"
    assert str(os.getpid()) in res.json["error"]["message"]
    # Plan, then act: nothing was repaired before the lock was refused.
    assert str(_worktree(topic.home)) in worktree_paths(topic.home)
    assert TOPIC_ID in branches(topic.home)


def test_a_plain_report_does_not_need_the_lock(topic):
    with state.held_lock(topic.home / ".git", TOPIC_ID):
        res = run_cli("doctor", "--wait", "0.1", "--json", cwd=topic.home)
    assert res.code == 0
    assert res.json["findings"] == []


# -- secondaries and repos.md -----------------------------------------------------------


def _multi(workspace: Path, home: Path) -> tuple[Path, Path]:
    api = make_repo(workspace, "api")
    plan = _worktree(home) / "docs/plans" / TOPIC_ID
    repos_md = write(
        plan / "repos.md",
        f"# Repos\n\n## Home repo\n- **name:** web\n- **path:** {home}\n\n"
        f"## Additional repos\n- **name:** api\n  **path:** {api}\n",
    )
    res = run_cli("worktrees", TOPIC_ID, "--json", cwd=home)
    assert res.code == 0, res.err
    return api, repos_md


def test_doctor_checks_the_secondaries_the_home_record_names(topic, workspace):
    api, _ = _multi(workspace, topic.home)
    shutil.rmtree(_worktree(api))
    res = run_cli("doctor", "--repair", "--json", cwd=topic.home)
    assert res.json["repos"] == [str(topic.home), str(api)]
    found = [f for f in res.json["findings"] if f["repo"] == str(api)]
    assert ("registration-dir-gone", str(_worktree(api)), True) in _kinds(found)
    assert worktree_paths(api) == [str(api)]
    assert branches(api) == ["main"]


def test_a_worktrees_section_that_agrees_with_git_is_no_finding(topic, workspace):
    _multi(workspace, topic.home)
    assert _doctor(topic.home) == []


def test_a_worktrees_section_that_disagrees_with_git_is_reported_not_rewritten(topic, workspace):
    api, repos_md = _multi(workspace, topic.home)
    text = repos_md.read_text()
    wrong = text.replace(f"- api: {_worktree(api)}", f"- api: {workspace / 'nowhere'}")
    repos_md.write_text(wrong)
    findings = [f for f in _doctor(topic.home, "--repair") if f["kind"] == "worktrees-section"]
    assert len(findings) == 1
    assert findings[0]["path"] == str(repos_md)
    assert "api: lists" in findings[0]["detail"] and findings[0]["repaired"] is False
    assert repos_md.read_text() == wrong  # the model-written file is never rewritten by doctor


def test_a_worktrees_section_missing_a_repo_with_a_worktree_is_reported(topic, workspace):
    api, repos_md = _multi(workspace, topic.home)
    repos_md.write_text(repos_md.read_text().replace(f"- api: {_worktree(api)}\n", ""))
    [finding] = [f for f in _doctor(topic.home) if f["kind"] == "worktrees-section"]
    assert "api has a worktree" in finding["detail"]


def test_a_repos_md_that_does_not_parse_is_reported_by_doctor(topic, workspace):
    _, repos_md = _multi(workspace, topic.home)
    repos_md.write_bytes(b"\xff\xfe not text")
    [finding] = [f for f in _doctor(topic.home) if f["kind"] == "worktrees-section"]
    assert "cannot be checked" in finding["detail"]


def test_a_reused_feature_worktree_in_the_worktrees_section_is_no_finding(home_repo, workspace):
    feature = workspace / "feature-wt"
    git(home_repo, "worktree", "add", "-q", "-b", "feature", str(feature))
    assert (
        run_cli("new", "Add thing", "--id", TOPIC_ID, "--json", cwd=feature).json["home"]["status"]
        == "reused"
    )
    api = make_repo(workspace, "api")
    repos_md = write(
        feature / "docs/plans" / TOPIC_ID / "repos.md",
        f"# Repos\n\n## Home repo\n- **name:** web\n- **path:** {home_repo}\n\n"
        f"## Additional repos\n- **name:** api\n  **path:** {api}\n",
    )
    assert run_cli("worktrees", TOPIC_ID, "--json", cwd=home_repo).code == 0
    assert f"- home: {feature}\n" in repos_md.read_text()
    assert _doctor(home_repo) == []


def test_repair_keeps_a_vanished_registration_whose_detached_head_holds_the_only_commit(
    home_repo,
):
    """The registration's HEAD is the one ref to a commit made on a detached HEAD: it stays."""
    path = home_repo / ".claude" / "worktrees" / "scratch"
    git(home_repo, "worktree", "add", "-q", "--detach", str(path))
    sha = commit(path, "idea.py", "idea = 1\n", "committed on a detached HEAD")
    shutil.rmtree(path)
    res = run_cli("doctor", "--repair", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    finding = next(f for f in res.json["findings"] if f["kind"] == "registration-dir-gone")
    assert finding["repaired"] is False
    assert str(path) in git(home_repo, "worktree", "list", "--porcelain")
    # Still reachable from a ref or a worktree's HEAD: what git gc keeps.
    assert sha not in git(home_repo, "fsck", "--unreachable", "--no-reflogs")


def test_repair_keeps_a_vanished_registration_whose_index_holds_staged_content(topic):
    """Unregistering deletes the index: a staged file would be left to the next gc."""
    wt = _worktree(topic.home)
    write(wt / "staged.py", "staged = 1\n")
    git(wt, "add", "staged.py")
    blob = git(wt, "rev-parse", ":staged.py")
    shutil.rmtree(wt)
    findings = _doctor(topic.home, "--repair")
    [entry] = [f for f in findings if f["kind"] == "registration-dir-gone"]
    assert entry["repaired"] is False
    assert "staged" in entry["detail"]
    assert str(wt) in worktree_paths(topic.home)
    assert TOPIC_ID in branches(topic.home)
    assert state.read_record(topic.home / ".git", TOPIC_ID) is not None
    # git gc's prune reads every registered worktree's index: the blob stays.
    assert blob not in git(topic.home, "prune", "-n", "--expire=now")


def test_repair_keeps_registrations_whose_parent_directory_is_missing_too(topic, workspace):
    """.claude/worktrees is a link to a disk that is not mounted: nothing is known gone."""
    mounted = workspace / "disk"
    root = topic.home / ".claude/worktrees"
    root.rename(mounted)
    os.symlink(workspace / "unmounted", root)
    findings = _doctor(topic.home, "--repair")
    [entry] = [f for f in findings if f["kind"] == "registration-dir-gone"]
    assert entry["repaired"] is False
    assert "not mounted" in entry["detail"]
    assert str(_worktree(topic.home)) in worktree_paths(topic.home)
    assert TOPIC_ID in branches(topic.home)
    assert state.read_record(topic.home / ".git", TOPIC_ID) is not None
    # "Mounted" again: the worktree is whole and git still knows it.
    root.unlink()
    mounted.rename(root)
    assert git(_worktree(topic.home), "rev-parse", "--abbrev-ref", "HEAD") == TOPIC_ID


def test_repair_keeps_a_branch_that_gets_a_commit_while_doctor_checks_it(topic, tmp_path):
    """The tip doctor judged is the tip it deletes, or nothing: a racing commit keeps the branch."""
    shutil.rmtree(_worktree(topic.home))
    marker = tmp_path / "raced"
    env = git_then(
        tmp_path / "bin",
        f"--exclude={TOPIC_ID}",  # unique_commits, judging the branch about to be deleted
        f"[ -e '{marker}' ] || {{ touch '{marker}'; "
        f"c=$(\"$REAL_GIT\" -C '{topic.home}' commit-tree {TOPIC_ID}^{{tree}} -p {TOPIC_ID} -m late); "
        f'"$REAL_GIT" -C \'{topic.home}\' update-ref refs/heads/{TOPIC_ID} "$c"; '
        f"echo \"$c\" > '{marker}'; }}",
    )
    res = run("doctor", "--repair", "--json", cwd=topic.home, env=env)
    assert res.code == 0, res.out + res.err
    late = marker.read_text().strip()
    assert late
    by_kind = {f["kind"]: f for f in res.json["findings"]}
    assert by_kind["orphan-branch"]["repaired"] is False
    assert git(topic.home, "rev-parse", TOPIC_ID) == late  # the late commit is kept
    assert state.read_record(topic.home / ".git", TOPIC_ID) is not None


def test_repair_keeps_the_registration_of_a_worktree_that_was_moved_not_deleted(topic):
    """A renamed worktree directory is still that worktree: `git worktree repair` is the fix."""
    moved = topic.home / ".claude/worktrees/renamed"
    write(_worktree(topic.home) / "draft.py", "draft = 1\n")  # untracked work
    _worktree(topic.home).rename(moved)
    findings = {f["path"]: f for f in _doctor(topic.home, "--repair")}
    gone = findings[str(_worktree(topic.home))]
    assert (gone["kind"], gone["repaired"]) == ("registration-dir-gone", False)
    assert f"git worktree repair {moved}" in gone["detail"]
    there = findings[str(moved)]
    assert (there["kind"], there["repaired"]) == ("unknown-dir", False)
    assert f"git worktree repair {moved}" in there["detail"]
    assert TOPIC_ID in branches(topic.home)
    assert state.read_record(topic.home / ".git", TOPIC_ID) is not None
    # The fix doctor names works: git knows the checkout again, its work intact.
    git(topic.home, "worktree", "repair", str(moved))
    assert git(moved, "rev-parse", "--abbrev-ref", "HEAD") == TOPIC_ID
    assert (moved / "draft.py").read_text() == "draft = 1\n"


def test_a_copy_of_a_live_worktree_is_not_called_a_move(topic):
    copy = topic.home / ".claude/worktrees/copy"
    shutil.copytree(_worktree(topic.home), copy, symlinks=True)
    findings = {f["path"]: f for f in _doctor(topic.home, "--repair")}
    assert findings[str(copy)]["repaired"] is False
    assert "still there (a copy?)" in findings[str(copy)]["detail"]
    assert "worktree repair" not in findings[str(copy)]["detail"]
    assert (copy / ".git").is_file()


def test_repair_killed_mid_way_is_finished_by_the_next_repair(topic, tmp_path):
    sha = commit(_worktree(topic.home), "work.py", "w = 1\n", "unpushed work")
    git(topic.home, "branch", "safe", sha)  # the work is on another branch too
    shutil.rmtree(_worktree(topic.home))
    env = git_killer(tmp_path / "bin", f"update-ref -d refs/heads/{TOPIC_ID}")  # its deletion
    killed = run("doctor", "--repair", "--json", cwd=topic.home, env=env, new_group=True)
    assert killed.code in (KILLED, CRASHED), killed.out + killed.err
    again = _doctor(topic.home, "--repair")
    assert all(f["repaired"] for f in again), again
    assert {f["kind"] for f in again} >= {"record-dir-gone", "stale-lock"}
    assert _doctor(topic.home) == []
    assert git(topic.home, "rev-parse", "safe") == sha
    assert branches(topic.home) == ["main", "safe"]


def test_two_repairs_at_once_both_finish_and_agree(topic):
    sha = commit(_worktree(topic.home), "work.py", "w = 1\n", "unpushed work")
    shutil.rmtree(_worktree(topic.home))
    first, second = run_all(
        [("doctor", "--repair", "--json"), ("doctor", "--repair", "--json")], cwd=topic.home
    )
    assert (first.code, second.code) == (0, 0), first.err + second.err
    assert git(topic.home, "rev-parse", TOPIC_ID) == sha  # unique work: the branch stays
    assert state.read_record(topic.home / ".git", TOPIC_ID) is not None
    assert worktree_paths(topic.home) == [str(topic.home)]


def test_repair_run_in_a_secondary_repairs_it_and_keeps_its_unique_work(topic, workspace):
    api, _ = _multi(workspace, topic.home)
    sha = commit(_worktree(api), "api.py", "a = 1\n", "api work")
    shutil.rmtree(_worktree(api))
    res = run_cli("doctor", "--repair", "--json", cwd=api)
    assert res.code == 0, res.out + res.err
    assert res.json["repos"] == [str(api)]
    kinds = {f["kind"]: f for f in res.json["findings"]}
    assert kinds["registration-dir-gone"]["repaired"] is True
    assert kinds["orphan-branch"]["repaired"] is False
    assert git(api, "rev-parse", TOPIC_ID) == sha
    assert _worktree(topic.home).is_dir()  # the home's worktree is not doctor's business here
    assert state.read_record(topic.home / ".git", TOPIC_ID) is not None


def test_repair_keeps_the_record_of_a_teardown_stopped_after_its_snapshot(topic):
    """The crashed teardown's rerun finishes it; doctor does not delete the record first."""
    write(_worktree(topic.home) / "draft.py", "draft = 1\n")
    crashed = run("teardown", TOPIC_ID, "--force", "--json", cwd=topic.home, crash_at="verify-gone")
    assert crashed.code == CRASHED
    assert not _worktree(topic.home).exists() and TOPIC_ID not in branches(topic.home)
    findings = _doctor(topic.home, "--repair")
    [record] = [f for f in findings if f["kind"] == "record-dir-gone"]
    assert record["repaired"] is False
    assert f"refs/team-router/snapshots/{TOPIC_ID} holds a snapshot" in record["detail"]
    assert state.read_record(topic.home / ".git", TOPIC_ID) is not None
    again = run_cli("teardown", TOPIC_ID, "--force", "--json", cwd=topic.home)
    assert again.code == 0, again.out + again.err
    assert _doctor(topic.home) == []
    restored = run_cli("restore", TOPIC_ID, "--json", cwd=topic.home)
    assert restored.code == 0, restored.out + restored.err
    assert (_worktree(topic.home) / "draft.py").read_text() == "draft = 1\n"


def test_repair_keeps_a_branch_a_rebase_under_way_works_on(topic):
    """git lists a rebasing worktree as detached; its branch is still checked out there."""
    wt = _worktree(topic.home)
    sha = commit(wt, "f.txt", "ours\n", "ours")
    git(topic.home, "branch", "safe", sha)  # not unique: only the rebase protects the branch
    commit(topic.home, "f.txt", "theirs\n", "theirs")
    git(wt, "rebase", "main", check=False)  # stops on the conflict
    assert (wt / ".git").is_file() and "(no branch" in git(wt, "branch")
    findings = _doctor(topic.home, "--repair")
    [orphan] = [f for f in findings if f["kind"] == "orphan-branch"]
    assert orphan["repaired"] is False
    assert "rebase or bisect under way" in orphan["detail"]
    assert git(topic.home, "rev-parse", TOPIC_ID) == sha
    git(wt, "rebase", "--abort")
    assert git(wt, "rev-parse", "--abbrev-ref", "HEAD") == TOPIC_ID


def _gone_scratch(home: Path, *, branch: str | None = None) -> tuple[Path, str]:
    """A worktree of ours with a commit only its HEAD's reflog will keep, its directory deleted."""
    path = home / ".claude" / "worktrees" / "scratch"
    how = ["-b", branch] if branch else ["--detach"]
    git(home, "worktree", "add", "-q", *how, str(path))
    sha = commit(path, "idea.py", "idea = 1\n", "work no branch keeps")
    if branch:
        git(home, "update-ref", "-d", f"refs/heads/{branch}")  # `git branch -D` refuses it
    else:
        git(path, "checkout", "-q", "--detach", "main")  # HEAD moved on: the reflog remembers
    shutil.rmtree(path)
    return path, sha


def _registration(home: Path, path: Path) -> dict:
    [entry] = [f for f in _doctor(home, "--repair") if f["path"] == str(path)]
    assert entry["kind"] == "registration-dir-gone"
    return entry


@pytest.mark.parametrize("git_format", FORMATS, indirect=True)
def test_repair_keeps_a_vanished_registration_whose_head_reflog_alone_holds_commits(home_repo):
    """Unregistering deletes its HEAD's reflog, the one record of a commit HEAD has left."""
    path, sha = _gone_scratch(home_repo)
    entry = _registration(home_repo, path)
    assert entry["repaired"] is False, entry
    assert "reflog" in entry["detail"] and sha[:12] in entry["detail"], entry
    assert "`git branch <name> <commit>`" in entry["detail"]
    assert str(path) in worktree_paths(home_repo)
    assert sha not in git(home_repo, "fsck", "--unreachable")  # its reflog still keeps it
    # The fix named: the commit on a branch, the registration goes, nothing is lost.
    git(home_repo, "branch", "kept", sha)
    assert _registration(home_repo, path)["repaired"] is True
    assert str(path) not in worktree_paths(home_repo)
    assert git(home_repo, "rev-parse", "kept") == sha


@pytest.mark.parametrize("git_format", FORMATS, indirect=True)
def test_repair_keeps_a_vanished_registration_whose_branch_was_deleted_under_it(
    git_format, home_repo
):
    """Its branch is gone, and with it the branch's reflog: HEAD's reflog is all that is left."""
    path, sha = _gone_scratch(home_repo, branch="feature/gone")
    entry = _registration(home_repo, path)
    assert entry["repaired"] is False, entry
    assert "git worktree remove" not in entry["detail"]  # the fix that would lose the commit
    assert str(path) in worktree_paths(home_repo)
    if git_format == "reftable":
        # git reads no reflog through a HEAD naming a deleted branch, and a reftable keeps
        # no file of it: the fix named makes it readable, and then the commit is named.
        assert "`git branch feature/gone <commit>` (any commit)" in entry["detail"], entry
        git(home_repo, "branch", "feature/gone", "main")
        entry = _registration(home_repo, path)
        assert entry["repaired"] is False and sha[:12] in entry["detail"], entry
        git(home_repo, "update-ref", "refs/heads/feature/gone", sha)
    else:
        assert f"`git branch feature/gone {sha[:12]}`" in entry["detail"], entry
        git(home_repo, "branch", "feature/gone", sha)
    assert _registration(home_repo, path)["repaired"] is True
    assert git(home_repo, "rev-parse", "feature/gone") == sha


@pytest.mark.parametrize("git_format", FORMATS, indirect=True)
def test_repair_unregisters_a_vanished_worktree_whose_amended_commit_its_branch_reflog_keeps(
    topic,
):
    """The commit an amend replaced is in the branch's own reflog too, which stays."""
    wt = _worktree(topic.home)
    commit(wt, "a.py", "a = 1\n", "first try")
    git(wt, "commit", "-q", "--amend", "-m", "second try")
    shutil.rmtree(wt)
    findings = {f["kind"]: f for f in _doctor(topic.home, "--repair")}
    assert findings["registration-dir-gone"]["repaired"] is True, findings
    assert findings["orphan-branch"]["repaired"] is False  # the amended commit: only there
    assert TOPIC_ID in branches(topic.home)


def _keeps_the_move(home: Path, moved: Path, *, run_in: Path) -> None:
    """doctor --repair (run in ``run_in``) keeps the registration and names `git worktree repair`."""
    res = run_cli("doctor", "--repair", "--json", cwd=run_in)
    assert res.code == 0, res.out + res.err
    [gone] = [f for f in res.json["findings"] if f["kind"] == "registration-dir-gone"]
    assert gone["repaired"] is False, gone
    assert f"git worktree repair {moved}" in gone["detail"], gone
    assert str(_worktree(home)) in worktree_paths(home)
    assert TOPIC_ID in branches(home)
    assert state.read_record(home / ".git", TOPIC_ID) is not None
    # The fix named works: git knows the checkout again, its work intact.
    git(home, "worktree", "repair", str(moved))
    assert git(moved, "rev-parse", "--abbrev-ref", "HEAD") == TOPIC_ID
    assert (moved / "draft.py").read_text() == "draft = 1\n"


def test_repair_keeps_the_registration_of_a_worktree_moved_beside_the_primary_clone(topic):
    # Only a rename in .claude/worktrees/ was found: this one was unregistered,
    # its branch deleted, and the moved checkout left naming a registration gone.
    moved = topic.home.parent / "rate-limiting-checkout"
    write(_worktree(topic.home) / "draft.py", "draft = 1\n")
    _worktree(topic.home).rename(moved)
    _keeps_the_move(topic.home, moved, run_in=topic.home)


def test_repair_run_in_a_moved_worktree_finds_it_there(topic, workspace):
    moved = workspace / "elsewhere" / "deeper" / "checkout"
    moved.parent.mkdir(parents=True)
    write(_worktree(topic.home) / "draft.py", "draft = 1\n")
    _worktree(topic.home).rename(moved)
    write(moved / "sub" / "x.py", "x = 1\n")
    _keeps_the_move(topic.home, moved, run_in=moved / "sub")


def test_repair_keeps_a_vanished_registration_whose_head_reflog_it_cannot_read(home_repo):
    """A reflog line git would not write: what only that reflog keeps is unknown, so it stays."""
    path, sha = _gone_scratch(home_repo)
    git(home_repo, "branch", "kept", sha)  # readable, this registration would go
    log = home_repo / ".git" / "worktrees" / "scratch" / "logs" / "HEAD"
    log.write_text(log.read_text() + "not a reflog line\n")
    entry = _registration(home_repo, path)
    assert entry["repaired"] is False, entry
    assert "is unknown" in entry["detail"] and str(log) in entry["detail"], entry
    assert str(path) in worktree_paths(home_repo) and log.is_file()


def test_doctor_reports_a_restore_a_kill_left_half_done_until_restore_finishes_it(topic, tmp_path):
    wt = _worktree(topic.home)
    write(wt / "staged.py", "s = 1\n")
    git(wt, "add", "staged.py")
    assert run_cli("teardown", TOPIC_ID, "--force", "--json", cwd=topic.home).code == 0
    env = git_killer(tmp_path / "bin", "read-tree", real=False)  # files back, index not
    killed = run("restore", TOPIC_ID, "--json", cwd=topic.home, env=env, new_group=True)
    assert killed.code == KILLED, killed.out + killed.err
    findings = _doctor(topic.home, "--repair")  # the killed run's lock owner file: stale
    [finding] = [f for f in findings if f["kind"] != "stale-lock"]
    assert (finding["kind"], finding["path"], finding["repaired"]) == (
        "restore-unfinished",
        str(wt),
        False,
    )
    assert f"`team-router restore {TOPIC_ID}`" in finding["detail"]
    assert git(wt, "diff", "--cached", "--name-only") == ""  # doctor staged nothing
    assert run_cli("restore", TOPIC_ID, "--json", cwd=topic.home).code == 0
    assert git(wt, "diff", "--cached", "--name-only") == "staged.py"
    assert _doctor(topic.home) == []


# -- a `new` killed inside `git worktree add` before git set the worktree's HEAD ------------

NEW_ID = "2026-05-01-add-thing"
NEW = ("new", "Add thing", "--date", "2026-05-01", "--json")

# git registers the worktree (locked with team-router's reason, which --lock --reason
# writes at once), writes its .git file and a placeholder HEAD (the null id), then points
# HEAD at the branch and checks the files out. The stand-in runs the real add with
# --no-checkout, then writes the placeholder back: what a kill right after it leaves.
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


def _new_killed_before_its_head(repo: Path, tmp_path: Path, then: str = "") -> Path:
    env = git_killer(tmp_path / "killer-bin", "worktree add", _HEAD_UNSET + then, real=False)
    killed = run(*NEW, cwd=repo, env=env, new_group=True)
    assert killed.code == KILLED, killed.out + killed.err
    assert git(repo, "rev-list", "--all", check=False) == ""  # git cannot walk the refs
    return repo / ".claude/worktrees" / NEW_ID


def test_doctor_reports_and_repairs_the_registration_a_killed_new_left_with_git_placeholder_head(
    home_repo, tmp_path
):
    wt = _new_killed_before_its_head(home_repo, tmp_path)
    admin = home_repo / ".git/worktrees" / NEW_ID
    found = [f for f in _doctor(home_repo) if f["path"] == str(wt)]
    detail = (
        f"a `team-router new` of {NEW_ID} was killed inside `git worktree add`, before git set "
        f"the worktree's HEAD: git cannot use its registration {admin} (`git rev-list --all` "
        "fails while it is there); `team-router new` (`worktrees` for a repo other than the "
        "topic's home) run again removes it and creates the worktree, "
        "`team-router doctor --repair` removes it"
    )
    assert found == [
        {
            "kind": "half-made-registration",
            "path": str(wt),
            "repaired": False,
            "detail": detail,
            "repo": str(home_repo),
            "topic": NEW_ID,
        }
    ], found
    assert git(home_repo, "rev-list", "--all", check=False) == ""  # doctor changed nothing

    repaired = [f for f in _doctor(home_repo, "--repair") if f["path"] == str(wt)]
    assert [(f["kind"], f["repaired"]) for f in repaired] == [("half-made-registration", True)]
    assert git(home_repo, "rev-list", "--all", check=False) != ""
    assert not wt.exists() and not admin.exists()
    assert worktree_paths(home_repo) == [str(home_repo)]

    again = run_cli(*NEW, cwd=home_repo)
    assert again.code == 0, again.out + again.err
    assert again.json["home"]["status"] == "created"
    assert (wt / "README.md").exists() and git(wt, "status", "--porcelain") == ""
    assert worktree_paths(home_repo) == [str(home_repo), str(wt)]


def test_doctor_repair_keeps_a_users_file_in_the_placeholder_head_worktree_and_names_it(
    home_repo, tmp_path
):
    wt = _new_killed_before_its_head(home_repo, tmp_path, 'echo mine > "$wt/notes.txt"')
    repaired = [f for f in _doctor(home_repo, "--repair") if f["path"] == str(wt)]
    assert [(f["kind"], f["repaired"]) for f in repaired] == [("half-made-registration", False)]
    assert "notes.txt" in repaired[0]["detail"], repaired
    assert (wt / "notes.txt").read_text() == "mine\n"
    assert (home_repo / ".git/worktrees" / NEW_ID).is_dir()


def test_doctor_says_why_repair_keeps_a_finding_and_offers_no_repair_for_it(home_repo):
    res = run_cli("new", "add caching", "--date", "2026-05-01", "--json", cwd=home_repo)
    assert res.code == 0, res.err
    topic_id, worktree = res.json["id"], Path(res.json["home"]["worktree"])
    commit(worktree, "work.py", "w = 1\n", "unpushed work")
    shutil.rmtree(worktree)
    record = home_repo / ".git" / "team-router" / "topics" / f"{topic_id}.json"
    # A run not torn down: the advice is the command that makes its worktree again.
    remake = (
        f"`team-router new 'add caching' --id {topic_id}` makes its worktree again on it, "
        f"commits included, or `team-router teardown {topic_id}` ends the run"
    )
    branch_kept = (
        f"  orphan-branch: refs/heads/{topic_id}",
        "      branch this tool created; no worktree has it checked out; kept: 1 commit(s) "
        f"exist on no other branch, tag or remote; {remake}",
    )
    record_kept = (
        f"  record-dir-gone: {record}",
        f"      its worktree {worktree} is gone; kept: branch {topic_id} still exists; {remake}",
    )

    repaired = run_cli("doctor", "--repair", cwd=home_repo)
    assert (repaired.code, repaired.err) == (0, "")
    assert repaired.out.splitlines() == [
        f"Checked {home_repo}:",
        f"  registration-dir-gone: {worktree} [repaired]",
        "      registered worktree whose directory is gone; unregistered (git worktree remove "
        "of this one path)",
        *branch_kept,
        *record_kept,
    ]
    # Looked at again, each kept finding says why, and --repair is not offered for them.
    again = run_cli("doctor", cwd=home_repo)
    assert (again.code, again.err) == (0, "")
    assert again.out.splitlines() == [f"Checked {home_repo}:", *branch_kept, *record_kept]
    kept = run_cli("doctor", "--json", cwd=home_repo).json["findings"]
    assert [(f["kind"], f["repaired"]) for f in kept] == [
        ("orphan-branch", False),
        ("record-dir-gone", False),
    ]
    # Nothing was lost: the branch keeps its commit, the record is still there.
    assert git(home_repo, "log", "-1", "--format=%s", topic_id) == "unpushed work"
    assert record.is_file()
