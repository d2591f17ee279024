from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers.repos import branches, commit, git, make_repo, run_cli, status, worktree_paths, write
from helpers.topics import NO_SETUP_DECLARED

ID = "2026-05-01-add-rate-limiting-middleware-to-all"
DESC = "Add rate limiting middleware to all API endpoints"


def new(repo: Path, *args: str, desc: str = DESC):
    return run_cli("new", desc, "--date", "2026-05-01", *args, "--json", cwd=repo)


def test_new_creates_the_home_worktree_from_origin_head_and_leaves_the_main_tree_clean(home_repo):
    res = new(home_repo)
    assert res.code == 0, res.err + res.out
    data = res.json
    wt = home_repo / ".claude" / "worktrees" / ID
    assert data == {
        "ok": True,
        "command": "new",
        "id": ID,
        "topic": "add-rate-limiting-middleware-to-all",
        "branch": ID,
        "plan_dir": str(wt / "docs" / "plans" / ID),
        "home": {
            "name": "home",
            "repo": str(home_repo),
            "worktree": str(wt),
            "status": "created",
            "base": git(home_repo, "rev-parse", "origin/HEAD"),
            "on_existing_branch": False,
            "submodules": [],
            "copied": None,
            "sparse": None,
            "setup": NO_SETUP_DECLARED,
        },
        "warnings": [],
    }
    assert Path(data["plan_dir"]).is_dir()
    assert str(wt) in worktree_paths(home_repo)
    assert git(wt, "symbolic-ref", "--short", "HEAD") == ID
    # No upstream: a pull or push in the worktree must not target main.
    assert git(wt, "config", "--get", f"branch.{ID}.merge", check=False) == ""
    assert status(home_repo) == ""


def test_new_branches_from_origin_head_not_from_the_local_checkout(home_repo):
    git(home_repo, "switch", "-q", "-c", "local-work")
    commit(home_repo, "local.txt", "not on origin\n")
    res = new(home_repo)
    assert res.code == 0, res.err
    wt = home_repo / ".claude" / "worktrees" / ID
    assert git(wt, "rev-parse", "HEAD") == git(home_repo, "rev-parse", "origin/main")
    assert not (wt / "local.txt").exists()


def test_new_sees_commits_pushed_to_origin_since_the_last_fetch(home_repo, workspace):
    other = workspace.parent / "other-clone"
    git(workspace, "clone", "-q", str(workspace.parent / "origins" / "web.git"), str(other))
    pushed = commit(other, "remote.txt", "from elsewhere\n")
    git(other, "push", "-q", "origin", "main")
    res = new(home_repo)
    assert res.json["home"]["base"] == pushed


def test_running_new_again_reports_existing_and_creates_nothing_more(home_repo):
    first = new(home_repo)
    second = new(home_repo)
    assert second.code == 0
    assert second.json["id"] == first.json["id"]
    assert second.json["home"]["status"] == "existing"
    assert len(worktree_paths(home_repo)) == 2
    assert branches(home_repo) == [ID, "main"]


def test_a_different_run_with_the_same_id_gets_a_suffix(home_repo):
    new(home_repo)
    git(home_repo, "branch", "2026-05-01-fix-login")  # made by hand: a different run
    res = new(home_repo, desc="Fix login")
    assert res.json["id"] == "2026-05-01-fix-login-2"
    other = new(home_repo, desc="Add rate limiting middleware to all API endpoints!!")
    assert other.json["id"] == ID + "-2"


def test_ticket_prefix(home_repo):
    res = run_cli("new", "Add X", "--ticket", "ENG-1234", "--json", cwd=home_repo)
    assert res.json["id"] == "ENG-1234-add-x"


def test_a_request_led_by_an_issue_url_gets_the_ticket_prefix_and_keeps_its_words(home_repo):
    request = "https://github.com/org/web/issues/42 add rate limit"
    res = run_cli("new", request, "--json", cwd=home_repo)
    assert res.code == 0, res.err
    assert res.json["id"] == "web-42-add-rate-limit"
    again = run_cli("next", "web-42-add-rate-limit", "--json", cwd=home_repo)
    assert again.json["request"] == request


def test_explicit_id_is_used_verbatim_and_rerun_is_existing(home_repo):
    res = run_cli("new", "ignored words", "--id", "ENG-7-custom", "--json", cwd=home_repo)
    assert res.json["id"] == "ENG-7-custom"
    again = run_cli("new", "other words", "--id", "ENG-7-custom", "--json", cwd=home_repo)
    assert again.json["home"]["status"] == "existing"


@pytest.mark.parametrize(
    "args",
    [
        ("--id", "no-prefix"),
        ("--id", "2026-05-01-UPPER"),
        ("--id", "2026-99-01-bad-month"),
        ("--id", "ENG-1-" + "x" * 120),
        ("--id", "ENG-1-a;rm -rf"),
        ("--id", "ENG-1-$(touch pwned)"),
        ("--ticket", "not a ticket"),
        ("--date", "yesterday"),
    ],
)
def test_an_invalid_id_is_exit_2_and_creates_nothing(home_repo, args):
    before = sorted(p.name for p in home_repo.iterdir())
    res = run_cli("new", "Some work", *args, "--json", cwd=home_repo)
    assert res.code == 2
    assert res.json["ok"] is False and res.json["error"]["code"] == "invalid-id"
    assert sorted(p.name for p in home_repo.iterdir()) == before
    assert branches(home_repo) == ["main"]
    assert len(worktree_paths(home_repo)) == 1
    assert not (home_repo / "pwned").exists()


@pytest.mark.parametrize("description", ["", "   ", "!!!"])
def test_an_empty_slug_is_topic(home_repo, description):
    res = run_cli("new", description, "--date", "2026-05-01", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    assert (res.json["id"], res.json["topic"], res.json["home"]["status"]) == (
        "2026-05-01-topic",
        "topic",
        "created",
    )


def test_text_output_names_the_artifact_directory(home_repo):
    res = run_cli("new", DESC, "--date", "2026-05-01", cwd=home_repo)
    assert (res.code, res.err) == (0, "")
    worktree = home_repo / ".claude" / "worktrees" / ID
    base = git(home_repo, "rev-parse", "--short=12", "origin/main")
    assert res.out == (
        f"Topic {ID} (branch {ID})\n"
        f"home: created {worktree} from {base}\n"
        f"Artifact directory: {worktree}/docs/plans/{ID}\n"
    )


def test_run_inside_a_linked_worktree_on_a_feature_branch_reuses_it(home_repo, workspace):
    wt = workspace / "feature-wt"
    git(home_repo, "worktree", "add", "-q", "-b", "feature", str(wt))
    res = new(wt)
    assert res.code == 0, res.err
    assert res.json["home"]["status"] == "reused"
    assert res.json["home"]["worktree"] == str(wt)
    assert res.json["plan_dir"] == str(wt / "docs" / "plans" / ID)
    assert branches(home_repo) == ["feature", "main"]  # no new branch
    assert len(worktree_paths(home_repo)) == 2


def test_a_reused_worktree_reports_and_records_the_branch_really_checked_out(home_repo, workspace):
    wt = workspace / "feature-wt"
    git(home_repo, "worktree", "add", "-q", "-b", "feature-x", str(wt))
    res = new(wt)
    assert res.code == 0, res.err
    assert res.json == {
        "ok": True,
        "command": "new",
        "id": ID,
        "topic": "add-rate-limiting-middleware-to-all",
        "branch": "feature-x",
        "plan_dir": str(wt / "docs" / "plans" / ID),
        "home": {
            "name": "home",
            "repo": str(home_repo),
            "worktree": str(wt),
            "status": "reused",
            "base": git(home_repo, "rev-parse", "main"),
            "on_existing_branch": False,
            "submodules": [],
            "copied": None,
            "sparse": None,
            # A checkout the user had: its setup is theirs, nothing runs in it.
            "setup": {
                "status": "skipped",
                "lines": 0,
                "done": 0,
                "ran": 0,
                "exit": None,
                "line": None,
                "outcome": None,
                "log": None,
                "note": "not a worktree this run made",
            },
        },
        "warnings": [],
    }
    record = json.loads((home_repo / ".git" / "team-router" / "topics" / f"{ID}.json").read_text())
    assert (record["branch"], record["worktree"], record["branch_created"]) == (
        "feature-x",
        str(wt),
        False,
    )


def test_text_output_of_a_reused_worktree_names_the_branch_really_checked_out(home_repo, workspace):
    wt = workspace / "feature-wt"
    git(home_repo, "worktree", "add", "-q", "-b", "feature-x", str(wt))
    res = run_cli("new", DESC, "--date", "2026-05-01", cwd=wt)
    assert (res.code, res.err) == (0, "")
    base = git(home_repo, "rev-parse", "main")[:12]
    assert res.out == (
        f"Topic {ID} (branch feature-x)\n"
        f"home: reused {wt} from {base}\n"
        f"Artifact directory: {wt}/docs/plans/{ID}\n"
    )


def switched_topic(home_repo: Path, *switch: str) -> Path:
    """A topic made by ``new``, a task.md in its plan dir, its worktree then switched with ``switch``."""
    first = new(home_repo)
    assert first.code == 0, first.err
    wt = Path(first.json["home"]["worktree"])
    write(wt / "docs" / "plans" / ID / "task.md", "the task\n")
    git(wt, "switch", "-q", *switch)
    return wt


@pytest.mark.parametrize("where", ["main clone", "worktree"])
def test_a_rerun_after_the_topic_worktree_switched_branch_reports_it_and_keeps_one_plan_dir(
    home_repo, where
):
    # The rerun took the switched worktree for someone else's path: it fell back
    # and made a second, empty plan dir in the main tree.
    wt = switched_topic(home_repo, "-c", "other")
    res = new(wt if where == "worktree" else home_repo)
    assert res.code == 0, res.err
    assert (res.json["home"]["status"], res.json["branch"]) == ("existing", "other")
    assert res.json["home"]["worktree"] == str(wt)
    assert res.json["plan_dir"] == str(wt / "docs" / "plans" / ID)
    [warning] = res.json["warnings"]
    assert f"on branch 'other', not '{ID}'" in warning
    assert f"`git -C {wt} switch {ID}`" in warning
    assert not (home_repo / "docs").exists() and status(home_repo) == ""
    assert (wt / "docs" / "plans" / ID / "task.md").read_text() == "the task\n"
    assert git(wt, "branch", "--show-current") == "other"
    record = json.loads((home_repo / ".git" / "team-router" / "topics" / f"{ID}.json").read_text())
    assert (record["branch"], record["worktree"]) == (ID, str(wt))  # teardown judges the topic's
    phase = run_cli("phase", ID, "--json", cwd=home_repo)
    assert phase.json["plan_dir"] == res.json["plan_dir"]


def test_a_rerun_after_the_topic_worktree_was_detached_refuses_naming_the_switch(home_repo):
    wt = switched_topic(home_repo, "--detach")
    res = new(home_repo)
    assert res.code == 1, res.out
    assert res.json["error"]["code"] == "default-branch-worktree"
    assert f"`git -C {wt} switch {ID}`" in res.json["error"]["message"]
    assert not (home_repo / "docs").exists() and status(home_repo) == ""
    assert (wt / "docs" / "plans" / ID / "task.md").read_text() == "the task\n"
    assert branches(home_repo) == [ID, "main"] and len(worktree_paths(home_repo)) == 2


def test_run_inside_a_linked_worktree_on_the_default_branch_refuses(home_repo, workspace):
    git(home_repo, "switch", "-q", "-c", "dev")
    wt = workspace / "main-wt"
    git(home_repo, "worktree", "add", "-q", str(wt), "main")
    res = new(wt)
    assert res.code == 1
    assert res.json["error"]["code"] == "default-branch-worktree"
    assert not (wt / "docs").exists()
    assert branches(home_repo) == ["dev", "main"]
    assert len(worktree_paths(home_repo)) == 2


def test_no_origin_branches_from_the_local_default_with_a_warning(workspace):
    repo = make_repo(workspace, "solo", origin=False)
    res = new(repo)
    assert res.code == 0, res.err
    assert res.json["home"]["status"] == "created"
    assert res.json["home"]["base"] == git(repo, "rev-parse", "main")
    assert any("no origin" in w and "main" in w for w in res.json["warnings"])


def test_no_root_commit_refuses_with_the_fix(workspace):
    repo = make_repo(workspace, "empty", origin=False, commit_first=False)
    res = new(repo)
    assert res.code == 1
    assert res.json["error"]["code"] == "no-root-commit"
    assert "first commit" in res.json["error"]["message"]
    assert not (repo / ".claude").exists()


def test_outside_a_repository_is_not_a_repo(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    res = run_cli("new", "x", "--json", cwd=plain)
    assert res.code == 1 and res.json["error"]["code"] == "not-a-repo"


def test_an_existing_branch_no_worktree_holds_is_attached_with_its_tip_kept(home_repo):
    git(home_repo, "switch", "-q", "--orphan", ID)
    tip = commit(home_repo, "orphan.txt", "orphan work\n", "orphan work")
    git(home_repo, "switch", "-q", "main")
    res = run_cli("new", "x", "--id", ID, "--json", cwd=home_repo)
    assert res.code == 0, res.err
    wt = Path(res.json["home"]["worktree"])
    assert res.json["home"]["status"] == "created"
    assert git(wt, "rev-parse", "HEAD") == tip
    assert (wt / "orphan.txt").read_text() == "orphan work\n"


def test_a_branch_checked_out_elsewhere_falls_back_naming_that_worktree(home_repo, workspace):
    elsewhere = workspace / "elsewhere"
    git(home_repo, "worktree", "add", "-q", "-b", ID, str(elsewhere))
    res = run_cli("new", "x", "--id", ID, "--json", cwd=home_repo)
    assert res.code == 0
    home = res.json["home"]
    assert home["status"] == "fallback" and home["worktree"] == str(home_repo)
    assert any("branch-checked-out" in w and str(elsewhere) in w for w in res.json["warnings"])
    assert res.json["plan_dir"] == str(home_repo / "docs" / "plans" / ID)
    assert status(home_repo) == ""  # the in-place plan dir is excluded


def test_a_taken_path_falls_back_and_the_blocker_is_untouched(home_repo):
    blocker = write(home_repo / ".claude" / "worktrees" / ID / "precious.txt", "keep me\n")
    res = run_cli("new", "x", "--id", ID, "--json", cwd=home_repo)
    assert res.code == 0
    assert res.json["home"]["status"] == "fallback"
    assert any("path-taken" in w for w in res.json["warnings"])
    assert blocker.read_text() == "keep me\n"
    assert branches(home_repo) == ["main"]  # the branch this run made was rolled back


def test_excludes_are_added_once(home_repo):
    new(home_repo)
    new(home_repo, desc="Second topic")
    exclude = (home_repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert exclude.count("/.claude/worktrees/") == 1
    assert exclude.count("/docs/plans/") == 1


def test_dash_c_with_a_missing_directory_is_a_clear_error(tmp_path):
    res = run_cli("new", "x", "--json", cwd=tmp_path / "nope")
    assert res.code == 2 and res.json["error"]["code"] == "usage"
    assert "no such directory" in res.out + res.err
    assert "Traceback" not in res.err


def test_worktreeinclude_copies_only_ignored_listed_files(home_repo):
    write(home_repo / ".gitignore", ".env\n.env.local\nsecrets/\nbuild/\n")
    write(
        home_repo / ".worktreeinclude", ".env\n.env.local\nsecrets/\ntracked.cfg\nnotignored.txt\n"
    )
    write(home_repo / "tracked.cfg", "tracked\n")
    git(home_repo, "add", ".gitignore", ".worktreeinclude", "tracked.cfg")
    git(home_repo, "commit", "-q", "-m", "config")
    git(home_repo, "push", "-q", "origin", "main")
    write(home_repo / ".env", "TOKEN=1\n")
    os.chmod(home_repo / ".env", 0o600)
    write(home_repo / "secrets" / "key.pem", "key\n")
    os.symlink(".env", home_repo / ".env.local")
    write(home_repo / "build" / "out.bin", "ignored but not listed\n")
    write(home_repo / "notignored.txt", "listed but not ignored\n")
    write(home_repo / "tracked.cfg", "locally edited\n")
    res = new(home_repo)
    wt = Path(res.json["home"]["worktree"])
    assert (wt / ".env").read_text() == "TOKEN=1\n"
    assert (wt / ".env").stat().st_mode & 0o777 == 0o600
    assert (wt / "secrets" / "key.pem").read_text() == "key\n"
    assert os.path.islink(wt / ".env.local") and os.readlink(wt / ".env.local") == ".env"
    assert not (wt / "build").exists()
    assert not (wt / "notignored.txt").exists()
    assert (wt / "tracked.cfg").read_text() == "tracked\n"


def test_worktreeinclude_never_writes_through_a_tracked_symlinked_directory(home_repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, home_repo / "linked")
    write(home_repo / ".gitignore", "secret.env\n")
    write(home_repo / ".worktreeinclude", "secret.env\n")
    git(home_repo, "add", "linked", ".gitignore", ".worktreeinclude")
    git(home_repo, "commit", "-q", "-m", "tracked symlink to a directory outside")
    git(home_repo, "push", "-q", "origin", "main")
    os.unlink(home_repo / "linked")
    (home_repo / "linked").mkdir()  # in the primary it is a real directory
    write(home_repo / "linked" / "sub" / "secret.env", "TOKEN\n")
    write(home_repo / "secret.env", "TOP\n")
    res = new(home_repo)
    wt = Path(res.json["home"]["worktree"])
    assert (wt / "secret.env").read_text() == "TOP\n"
    assert os.path.islink(wt / "linked")
    assert list(outside.iterdir()) == []


def test_the_same_new_run_from_the_main_clone_finds_the_reused_worktree(home_repo, workspace):
    wt = workspace / "feature-wt"
    git(home_repo, "worktree", "add", "-q", "-b", "feature", str(wt))
    assert new(wt).json["home"]["status"] == "reused"
    res = new(home_repo)
    assert res.code == 0, res.err
    assert (res.json["id"], res.json["home"]["status"]) == (ID, "existing")
    assert res.json["home"]["worktree"] == str(wt)
    assert res.json["plan_dir"] == str(wt / "docs" / "plans" / ID)
    assert branches(home_repo) == ["feature", "main"]  # no second branch
    assert len(worktree_paths(home_repo)) == 2  # and no second worktree
    assert not (home_repo / ".claude" / "worktrees" / ID).exists()
    assert status(home_repo) == ""


def test_a_fallback_leaves_no_half_done_creation_for_doctor(home_repo):
    blocker = write(home_repo / ".claude" / "worktrees" / ID / "precious.txt", "keep me\n")
    assert (
        run_cli("new", DESC, "--id", ID, "--json", cwd=home_repo).json["home"]["status"]
        == "fallback"
    )
    record = json.loads((home_repo / ".git" / "team-router" / "topics" / f"{ID}.json").read_text())
    assert "claim" not in record["steps"]
    assert record["branch_created"] is False  # the rollback deleted it
    res = run_cli("doctor", "--json", cwd=home_repo)
    assert res.code == 0, res.err
    assert "record-incomplete" not in [f["kind"] for f in res.json["findings"]]
    assert blocker.read_text() == "keep me\n"
    assert branches(home_repo) == ["main"]


def test_a_tracked_file_where_docs_plans_goes_is_one_line_setup_failed(home_repo):
    commit(home_repo, "docs", "a file, not a directory\n", "docs is a file")
    git(home_repo, "push", "-q", "origin", "main")
    text = run_cli("new", DESC, "--date", "2026-05-01", cwd=home_repo)
    assert text.code == 1 and text.out == ""
    res = new(home_repo)
    assert (res.code, res.json["error"]["code"]) == (1, "setup-failed")
    # The warnings --json gives (the fallback), then one line, the refusal, and no traceback.
    assert any("Falling back to main tree" in w for w in res.json["warnings"])
    assert text.err == "".join(f"warning: {w}\n" for w in res.json["warnings"]) + (
        f"team-router: {res.json['error']['message']} [setup-failed]\n"
    )
    assert worktree_paths(home_repo) == [str(home_repo)]
    assert branches(home_repo) == ["main"]
    assert (home_repo / "docs").read_text() == "a file, not a directory\n"
    assert status(home_repo) == ""
    doctor = run_cli("doctor", "--json", cwd=home_repo)
    assert "record-incomplete" not in [f["kind"] for f in doctor.json["findings"]]


def tracked_link(repo: Path, link: str, target: str | Path) -> None:
    """``link`` committed as a symlink to ``target`` and pushed: every checkout of main has it."""
    (repo / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, repo / link)
    git(repo, "add", "--", link)
    git(repo, "commit", "-q", "-m", f"{link} lives elsewhere")
    git(repo, "push", "-q", "origin", "main")


def assert_nothing_made(home_repo: Path, elsewhere: Path) -> None:
    assert sorted(p.name for p in elsewhere.rglob("*")) == ["keep.md"]
    assert worktree_paths(home_repo) == [str(home_repo)] and branches(home_repo) == ["main"]
    assert not (home_repo / ".git" / "team-router" / "topics" / f"{ID}.json").exists()
    assert status(home_repo) == ""


@pytest.mark.parametrize(
    ("link", "target"), [("docs", "../elsewhere"), ("docs", "ABS"), ("docs/plans", "ABS")]
)
def test_a_tracked_symlinked_docs_dir_refuses_and_nothing_is_written_where_it_points(
    home_repo, workspace, link, target
):
    # The plan dir went wherever the link pointed: through the worktree's link,
    # or (a relative one dangling there) through the main tree's on the fallback.
    elsewhere = workspace / "elsewhere"
    write(elsewhere / "keep.md", "not this repo's\n")
    tracked_link(home_repo, link, elsewhere if target == "ABS" else target)
    res = new(home_repo)
    assert (res.code, res.json["error"]["code"]) == (1, "plan-dir-symlink"), res.out
    message = res.json["error"]["message"]
    assert f"{home_repo / link} is a symlink" in message and f"replace the link `{link}`" in message
    assert any("Falling back to main tree" in w for w in res.json["warnings"])
    assert_nothing_made(home_repo, elsewhere)


def test_a_fallback_into_a_main_tree_whose_docs_is_a_symlink_writes_nothing_through_it(
    home_repo, workspace
):
    elsewhere = workspace / "elsewhere"
    write(elsewhere / "keep.md", "not this repo's\n")
    os.symlink("../elsewhere", home_repo / "docs")
    git(home_repo, "add", "docs")
    git(home_repo, "commit", "-q", "-m", "docs lives elsewhere (not pushed: the worktree lacks it)")
    blocker = write(home_repo / ".claude" / "worktrees" / ID / "precious.txt", "keep me\n")
    res = run_cli("new", DESC, "--id", ID, "--json", cwd=home_repo)
    assert (res.code, res.json["error"]["code"]) == (1, "plan-dir-symlink"), res.out
    assert any("(path-taken:" in w for w in res.json["warnings"])
    assert blocker.read_text() == "keep me\n"
    assert sorted(p.name for p in elsewhere.rglob("*")) == ["keep.md"]
    assert not (home_repo / ".git" / "team-router" / "topics" / f"{ID}.json").exists()


def test_a_symlinked_claude_dir_falls_back_and_nothing_is_made_where_it_points(home_repo, tmp_path):
    shared = tmp_path / "shared-claude"
    shared.mkdir()
    os.symlink(shared, home_repo / ".claude")
    res = new(home_repo)
    assert res.code == 0, res.err
    assert res.json["home"]["status"] == "fallback"
    assert any("symlink" in w for w in res.json["warnings"])
    assert list(shared.iterdir()) == []
    assert branches(home_repo) == ["main"]


def test_id_with_ticket_or_date_is_a_usage_error_and_creates_nothing(home_repo):
    for extra in (("--ticket", "ENG-1"), ("--date", "2026-05-01")):
        res = run_cli("new", "x", "--id", "ENG-7-custom", *extra, "--json", cwd=home_repo)
        assert res.code == 2 and res.json["error"]["code"] == "usage"
    assert branches(home_repo) == ["main"]
    assert len(worktree_paths(home_repo)) == 1


def test_an_existing_worktree_reports_the_base_it_was_created_from(home_repo):
    first = new(home_repo)
    again = new(home_repo)
    assert again.json["home"]["status"] == "existing"
    assert again.json["home"]["base"] == first.json["home"]["base"] is not None


def test_an_unwritable_state_dir_is_one_line_io_error_not_a_traceback(home_repo):
    state_dir = home_repo / ".git" / "team-router"
    state_dir.mkdir()
    (state_dir / "topics").write_text("a file where the records folder goes\n")
    res = run_cli("new", "x", "--id", "ENG-9-io", "--json", cwd=home_repo)
    assert res.code == 1
    assert res.json["error"]["code"] in {"io-error", "setup-failed"}
    assert "Traceback" not in res.err


def test_an_id_created_again_after_its_teardown_starts_a_fresh_record(home_repo):
    import json

    first = run_cli("new", DESC, "--id", ID, "--json", cwd=home_repo)
    assert first.code == 0
    assert run_cli("teardown", ID, "--json", cwd=home_repo).code == 0
    again = run_cli("new", DESC, "--id", ID, "--json", cwd=home_repo)
    assert again.code == 0 and again.json["home"]["status"] == "created"
    record = json.loads((home_repo / ".git" / "team-router" / "topics" / f"{ID}.json").read_text())
    assert record["teardown"] is None and "extra" not in record
    assert record["steps"] == [
        "inspect",
        "base",
        "claim",
        "add",
        "verify",
        "submodules",
        "setup",
        "record",
        "setup-commands",
    ]
    assert record["branch_created"] is True


def test_a_failing_post_checkout_hook_leaves_no_registration_or_branch_behind(home_repo):
    hook = write(home_repo / ".git" / "hooks" / "post-checkout", "#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    res = new(home_repo)
    assert res.code == 0, res.out + res.err
    assert res.json["home"]["status"] == "fallback"
    assert worktree_paths(home_repo) == [str(home_repo)]
    assert branches(home_repo) == ["main"]
    assert status(home_repo) == ""
    hook.write_text("#!/bin/sh\nexit 0\n")  # the hook fixed
    again = new(home_repo)
    assert again.code == 0, again.out + again.err
    assert (again.json["id"], again.json["home"]["status"]) == (ID, "created")
    assert branches(home_repo) == [ID, "main"]


def test_a_branch_of_that_name_on_origin_only_is_named_with_the_way_to_take_it(
    home_repo, workspace
):
    # Started on another machine and pushed: the new local branch is cut from
    # origin/HEAD as always, and the warning names origin's work and the fix.
    other = workspace.parent / "other-clone"
    git(workspace, "clone", "-q", str(workspace.parent / "origins" / "web.git"), str(other))
    git(other, "switch", "-q", "-c", ID)
    theirs = commit(other, "started.txt", "begun elsewhere\n")
    git(other, "push", "-q", "origin", ID)
    res = new(home_repo)
    assert res.code == 0, res.err
    wt = home_repo / ".claude" / "worktrees" / ID
    assert git(wt, "rev-parse", "HEAD") == git(home_repo, "rev-parse", "origin/main")
    warning = next(w for w in res.json["warnings"] if f"origin already has a branch {ID}" in w)
    assert f"git -C {wt} merge --ff-only origin/{ID}" in warning and theirs[:12] in warning
    git(wt, "merge", "-q", "--ff-only", f"origin/{ID}")  # the named fix takes it
    assert (wt / "started.txt").read_text() == "begun elsewhere\n"


def test_a_merged_branch_of_that_name_on_origin_is_not_named(home_repo):
    git(home_repo, "push", "-q", "origin", f"main:{ID}")  # all of it in origin/HEAD
    res = new(home_repo)
    assert res.code == 0, res.err
    assert not [w for w in res.json["warnings"] if "origin already has" in w]


def test_worktreeinclude_skips_a_file_whose_directory_is_a_file_in_the_checkout(home_repo):
    # The primary is on an older branch where config/ is a directory holding
    # the ignored config/.env; on main (the new worktree's base) config is a
    # file. The checkout wins, as for a file at the target itself: the copy is
    # skipped, the worktree is still made.
    write(home_repo / ".gitignore", ".env\n")
    write(home_repo / ".worktreeinclude", ".env\n")
    write(home_repo / "config", "tracked file on main\n")
    git(home_repo, "add", ".gitignore", ".worktreeinclude", "config")
    git(home_repo, "commit", "-q", "-m", "config is a file")
    git(home_repo, "push", "-q", "origin", "main")
    git(home_repo, "checkout", "-q", "-b", "older")
    git(home_repo, "rm", "-q", "config")
    git(home_repo, "commit", "-q", "-m", "config becomes a directory")
    write(home_repo / "config" / ".env", "TOKEN=1\n")
    write(home_repo / ".env", "TOP=1\n")
    res = new(home_repo)
    assert res.code == 0, res.out + res.err
    assert res.json["home"]["status"] == "created", res.json
    wt = Path(res.json["home"]["worktree"])
    assert (wt / "config").read_text() == "tracked file on main\n"
    assert (wt / ".env").read_text() == "TOP=1\n"
    assert (home_repo / "config" / ".env").read_text() == "TOKEN=1\n"


def test_new_after_its_worktree_directory_was_deleted_by_hand_names_doctor_repair(home_repo):
    import shutil

    first = run_cli("new", "Add limits", "--id", "ENG-7-limits", "--json", cwd=home_repo)
    assert first.code == 0, first.out
    worktree = Path(first.json["home"]["worktree"])
    shutil.rmtree(worktree)
    again = run_cli("new", "Add limits", "--id", "ENG-7-limits", "--json", cwd=home_repo)
    assert again.code == 0, again.out
    assert again.json["home"]["status"] == "fallback"
    assert any("team-router doctor --repair" in w for w in again.json["warnings"]), again.out
    # The fix it names works: doctor unregisters the gone worktree, and `new` makes it again.
    repaired = run_cli("doctor", "--repair", "--json", cwd=home_repo)
    assert repaired.code == 0, repaired.out
    made = run_cli("new", "Add limits", "--id", "ENG-7-limits", "--json", cwd=home_repo)
    assert made.code == 0, made.out
    assert made.json["home"]["worktree"] == str(worktree), made.out
    assert worktree.is_dir() and (worktree / "docs" / "plans" / "ENG-7-limits").is_dir()


def test_new_prints_the_fallback_warning_in_text_when_it_then_refuses(home_repo):
    # A file where the worktree goes: home falls back to its main tree; a file where
    # docs/plans goes there: the plan dir cannot be made, so `new` refuses setup-failed.
    write(home_repo / ".claude" / "worktrees" / ID, "not a worktree\n")
    write(home_repo / "docs", "in the way\n")
    res = run_cli("new", DESC, "--id", ID, cwd=home_repo)
    taken = home_repo / ".claude" / "worktrees" / ID
    assert (res.code, res.out) == (1, ""), res.out + res.err
    assert res.err == (
        f"warning: Worktree creation failed in home (path-taken: {taken} already exists (a file "
        "that is not this topic's worktree); move it away). Falling back to main tree for that "
        "repo.\n"
        f"team-router: cannot create the plan dir {home_repo / 'docs' / 'plans' / ID} (Not a "
        "directory); a file is probably in the way of docs/plans/: move it, then rerun "
        "[setup-failed]\n"
    )
    as_json = run_cli("new", DESC, "--id", ID, "--json", cwd=home_repo)
    assert as_json.code == 1
    assert as_json.json["warnings"] == [res.err.splitlines()[0].removeprefix("warning: ")]
    # Nothing was lost: both files the user had are as they were.
    assert taken.read_text() == "not a worktree\n"
    assert (home_repo / "docs").read_text() == "in the way\n"
