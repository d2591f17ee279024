"""pr-cleanup over real git: merges done on origin, gh faked, every refusal shown to lose nothing."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.fakegh import hide_gh, install_fake_gh, make_github_repo, pr
from helpers.faults import KILLED, git_killer
from helpers.faults import run as run_killable
from helpers.origin import bare_origin, commit_on_origin, include, merge_on_origin
from helpers.repos import (
    FORMATS,
    branches,
    commit,
    git,
    run_cli,
    status,
    unlock,
    worktree_paths,
    write,
)
from helpers.topics import TOPIC_ID, new_topic, two_commits

from router.topic import holders, state

# -- helpers ---------------------------------------------------------------------------


@pytest.fixture
def web(workspace: Path) -> Path:
    return make_github_repo(workspace, "web")


@pytest.fixture
def no_gh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return hide_gh(tmp_path, monkeypatch)


def pushed_topic(repo: Path, topic_id: str = TOPIC_ID, *, push: bool = True) -> Path:
    """A topic made by `team-router new`, two commits on its branch, pushed to origin; its worktree."""
    return two_commits(
        new_topic(repo, "Add rate limiting", topic_id=topic_id), push=push
    ).worktrees["home"]


def tip(repo: Path, branch: str = TOPIC_ID) -> str:
    return git(repo, "rev-parse", f"refs/heads/{branch}")


def cleanup(repo: Path, *args: str, cwd: Path | None = None, stdin: str | None = None):
    return run_cli("pr-cleanup", *args, "--json", cwd=cwd or repo, stdin=stdin)


def steps(data: dict) -> dict[str, dict]:
    return {s["name"]: s for s in data["steps"]}


def refs(repo: Path) -> str:
    """Every ref but origin's tracking refs (a fetch may move those; it loses nothing)."""
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    return "\n".join(line for line in out.splitlines() if not line.startswith("refs/remotes/"))


def world(repo: Path) -> dict[str, object]:
    """What a refusal must leave alone: refs, worktrees, status and files of every checkout."""
    files = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo)
        if rel.parts[0] == ".git" or ".git" in rel.parts:
            continue
        if path.is_file():
            files[str(rel)] = path.read_bytes()
    return {
        "refs": refs(repo),
        "worktrees": worktree_paths(repo),
        "files": files,
        "status": status(repo),
    }


def remote_heads(repo: Path) -> list[str]:
    out = git(repo, "ls-remote", "--heads", "origin")
    return [line.split("\t")[1].removeprefix("refs/heads/") for line in out.splitlines()]


def has_ref(repo: Path, ref: str) -> bool:
    return git(repo, "rev-parse", "-q", "--verify", ref, check=False) != ""


def assert_cleaned(repo: Path, worktree: Path, branch: str = TOPIC_ID) -> None:
    assert not worktree.exists()
    assert worktree_paths(repo) == [str(repo)]
    assert branch not in branches(repo)
    assert status(repo) == ""


# -- merged: each proof --------------------------------------------------------------------


def test_a_merge_commit_is_proven_by_ancestry_and_gh_agrees(web, tmp_path, monkeypatch):
    worktree = pushed_topic(web)
    head = tip(web)
    merge = merge_on_origin(web, TOPIC_ID, how="merge")
    fake = install_fake_gh(tmp_path, monkeypatch, prs=(pr(12, TOPIC_ID, head, merge_commit=merge),))
    res = cleanup(web, "12")
    assert res.code == 0, res.out + res.err
    data = res.json
    assert data["ok"] and data["command"] == "pr-cleanup"
    assert (data["branch"], data["mode"]) == (TOPIC_ID, "merged")
    assert data["proof"] == {
        "content": "ancestor",
        "target": "refs/remotes/origin/main",
        "gh": "agreed",
        "pr": 12,
        "commit": head,
        "merged": True,
        "detail": data["proof"]["detail"],
    }
    assert list(steps(data)) == [
        "remove",
        "verify-gone",
        "update-default",
        "branch",
        "remote-branch",
        "prune",
        "reclaim",
        "plan-dir",
        "local-state",
    ]
    assert_cleaned(web, worktree)
    # The default branch was fast-forwarded to the merge, from the command's own fetch.
    assert git(web, "rev-parse", "main") == merge
    assert "as this command fetched it" in steps(data)["update-default"]["detail"]
    assert all(s["outcome"] in {"done", "skipped"} for s in data["steps"])
    # Every gh call named the repo; nothing asked for PR prose.
    for call in fake.calls():
        if call[0] == "pr":
            assert "--repo=acme/web" in call


def test_a_squash_merge_is_proven_by_content_without_gh(web, no_gh):
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="squash")
    res = cleanup(web, TOPIC_ID)
    assert res.code == 0, res.out + res.err
    proof = res.json["proof"]
    assert (proof["content"], proof["gh"], proof["merged"]) == ("squash", "unavailable", True)
    assert "gh unavailable" in proof["detail"] and "content proof alone" in proof["detail"]
    assert any("content alone" in w for w in res.json["warnings"])
    assert_cleaned(web, worktree)


def test_a_rebase_merge_is_proven_by_patches(web, tmp_path, monkeypatch):
    worktree = pushed_topic(web)
    head = tip(web)
    merged = merge_on_origin(web, TOPIC_ID, how="rebase")
    assert merged != head  # replayed: a new commit with the same patch
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(5, TOPIC_ID, head, merge_commit=merged),))
    res = cleanup(web, TOPIC_ID)
    assert res.code == 0, res.out + res.err
    proof = res.json["proof"]
    assert (proof["content"], proof["gh"], proof["pr"]) == ("patches", "agreed", 5)
    assert_cleaned(web, worktree)


def test_a_squash_later_overwritten_on_main_is_proven_at_the_prs_merge_commit(
    web, tmp_path, monkeypatch
):
    worktree = pushed_topic(web)
    head = tip(web)
    squash = merge_on_origin(web, TOPIC_ID, how="squash")
    # Someone changes the same line afterwards: the squash no longer shows on today's main.
    commit_on_origin(web, "limits.py", "LIMIT = 20\n")
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(6, TOPIC_ID, head, merge_commit=squash),))
    res = cleanup(web, TOPIC_ID)
    assert res.code == 0, res.out + res.err
    proof = res.json["proof"]
    assert (proof["content"], proof["target"], proof["gh"]) == ("squash", squash, "agreed")
    assert_cleaned(web, worktree)


# -- merged: refusals ----------------------------------------------------------------------


def test_an_unmerged_branch_is_refused_and_nothing_is_deleted(web, no_gh):
    worktree = pushed_topic(web)
    before = world(web)
    res = cleanup(web, TOPIC_ID)
    assert res.code == 1
    data = res.json
    assert data["error"]["code"] == "not-merged"
    assert data["proof"]["merged"] is False and data["proof"]["content"] is None
    assert data["steps"] == []
    assert world(web) == before
    assert worktree.is_dir() and TOPIC_ID in branches(web) and TOPIC_ID in remote_heads(web)


def test_a_merged_branch_with_an_extra_local_commit_is_not_merged(web, tmp_path, monkeypatch):
    worktree = pushed_topic(web)
    head = tip(web)
    merge = merge_on_origin(web, TOPIC_ID, how="merge")
    extra = commit(worktree, "more.py", "x = 1\n", "a follow-up never pushed")
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(12, TOPIC_ID, head, merge_commit=merge),))
    before = world(web)
    res = cleanup(web, TOPIC_ID)
    assert res.code == 1
    data = res.json
    assert data["error"]["code"] == "not-merged"
    assert data["proof"]["gh"] == "disagreed" and data["proof"]["content"] is None
    assert world(web) == before
    assert tip(web) == extra and (worktree / "more.py").is_file()


def test_a_merged_branch_with_an_extra_commit_is_not_merged_without_gh_either(web, no_gh):
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="squash")
    commit(worktree, "more.py", "x = 1\n", "a follow-up never pushed")
    res = cleanup(web, TOPIC_ID)
    assert res.code == 1 and res.json["error"]["code"] == "not-merged"
    assert worktree.is_dir() and TOPIC_ID in branches(web)


def test_a_fork_pr_with_the_same_head_never_licenses_a_deletion(web, tmp_path, monkeypatch):
    worktree = pushed_topic(web)
    head = tip(web)
    fork = pr(30, TOPIC_ID, head, merge_commit="c" * 40, fork_owner="mallory")
    install_fake_gh(tmp_path, monkeypatch, prs=(fork,))
    before = world(web)
    res = cleanup(web, TOPIC_ID)
    assert res.code == 1
    data = res.json
    assert data["error"]["code"] == "not-merged"
    assert data["proof"]["gh"] == "no-pr" and "#30 ignored" in data["proof"]["detail"]
    assert world(web) == before
    # Named by number, the fork's PR is refused outright.
    res = cleanup(web, "30")
    assert res.code == 1 and res.json["error"]["code"] == "fork-pr"
    assert world(web) == before and worktree.is_dir()


@pytest.mark.parametrize("fork", [True, False], ids=["only-a-fork-pr", "no-pr"])
def test_gh_knowing_no_merged_pr_of_ours_needs_yes_for_the_content_proof(
    web, tmp_path, monkeypatch, fork
):
    worktree = pushed_topic(web)
    head = tip(web)
    merge_on_origin(web, TOPIC_ID, how="merge")
    prs = (pr(30, TOPIC_ID, head, fork_owner="mallory"),) if fork else ()
    install_fake_gh(tmp_path, monkeypatch, prs=prs)
    git(web, "fetch", "-q", "origin")
    before = world(web)
    for dry in ([], ["--dry-run"]):
        res = cleanup(web, TOPIC_ID, *dry)
        assert res.code == 1, res.out + res.err
        data = res.json
        assert (data["error"]["code"], data["dry_run"], data["steps"]) == (
            "no-merged-pr",
            bool(dry),
            [],
        )
        assert "run again with --yes" in data["error"]["message"]
        assert (data["proof"]["content"], data["proof"]["gh"]) == ("ancestor", "no-pr")
        assert world(web) == before and worktree.is_dir()
    res = cleanup(web, TOPIC_ID, "--yes")
    assert res.code == 0, res.out + res.err
    proof = res.json["proof"]
    assert (proof["content"], proof["gh"], proof["pr"]) == ("ancestor", "no-pr", None)
    assert_cleaned(web, worktree)


def test_an_open_pr_disagrees_with_a_content_proof(web, tmp_path, monkeypatch):
    worktree = pushed_topic(web)
    head = tip(web)
    merge_on_origin(web, TOPIC_ID, how="squash", delete=False)
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(8, TOPIC_ID, head, state="OPEN"),))
    before = world(web)
    res = cleanup(web, TOPIC_ID)
    assert res.code == 1
    data = res.json
    assert data["error"]["code"] == "not-merged"
    assert data["proof"]["content"] == "squash" and data["proof"]["gh"] == "disagreed"
    assert "PR #8 is open" in data["proof"]["detail"]
    assert world(web) == before and worktree.is_dir()


@pytest.mark.no_plan_check("it counts the gh calls of the one run")
def test_an_unauthenticated_gh_leaves_the_content_proof_to_decide(web, tmp_path, monkeypatch):
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="merge")
    fake = install_fake_gh(tmp_path, monkeypatch, authenticated=False)
    res = cleanup(web, TOPIC_ID)
    assert res.code == 0, res.out + res.err
    assert res.json["proof"]["gh"] == "unavailable"
    assert "not authenticated" in res.json["proof"]["detail"]
    assert [c[0] for c in fake.calls()] == ["auth"]
    assert_cleaned(web, worktree)


def test_an_unauthenticated_gh_is_not_read_as_not_merged(web, tmp_path, monkeypatch):
    worktree = pushed_topic(web)
    install_fake_gh(tmp_path, monkeypatch, authenticated=False)
    res = cleanup(web, TOPIC_ID)
    # Not merged because the content says so, and the report says gh could not be asked.
    assert res.code == 1 and res.json["error"]["code"] == "not-merged"
    assert res.json["proof"]["gh"] == "unavailable"
    assert worktree.is_dir()


def test_a_failing_gh_is_neither_merged_nor_not_merged(web, tmp_path, monkeypatch):
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="squash")
    fake = install_fake_gh(tmp_path, monkeypatch)
    fake.update(fail=True)
    res = cleanup(web, TOPIC_ID)
    assert res.code == 0, res.out + res.err
    assert res.json["proof"]["gh"] == "unavailable" and "502" in res.json["proof"]["detail"]
    assert_cleaned(web, worktree)


def test_a_pr_number_needs_gh(web, no_gh):
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="merge")
    res = cleanup(web, "12")
    assert res.code == 1 and res.json["error"]["code"] == "gh-unavailable"
    assert worktree.is_dir() and TOPIC_ID in branches(web)


def test_a_pr_url_names_the_branch_and_must_be_this_repos(web, tmp_path, monkeypatch):
    worktree = pushed_topic(web)
    head = tip(web)
    merge = merge_on_origin(web, TOPIC_ID, how="merge")
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(12, TOPIC_ID, head, merge_commit=merge),))
    other = cleanup(web, "https://github.com/acme/other/pull/12")
    assert other.code == 2 and other.json["error"]["code"] == "invalid-target"
    assert worktree.is_dir()
    res = cleanup(web, "https://github.com/acme/web/pull/12")
    assert res.code == 0, res.out + res.err
    assert res.json["proof"]["pr"] == 12
    assert_cleaned(web, worktree)


# -- names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["MAIN", "main", "Master", "develop", "DEVELOP", "release/1.2", "Release/2"]
)
def test_protected_names_are_refused(web, no_gh, name):
    git(web, "branch", "develop")
    git(web, "branch", "release/1.2")
    before = world(web)
    res = cleanup(web, name)
    assert res.code == 1
    assert res.json["error"]["code"] == "protected-branch"
    assert world(web) == before


@pytest.mark.parametrize("name", ["trunk", "Trunk", "main"])
def test_the_repos_own_default_branch_is_protected(workspace, no_gh, name):
    repo = make_github_repo(workspace, "svc", branch="trunk")
    before = world(repo)
    res = cleanup(repo, name)
    assert res.code == 1 and res.json["error"]["code"] == "protected-branch"
    assert world(repo) == before


def test_the_default_branch_checked_out_here_is_protected(web, no_gh):
    res = cleanup(web)
    assert res.code == 1 and res.json["error"]["code"] == "protected-branch"


UNSAFE = [
    "$(touch x)",
    "`touch x`",
    "a;touch x",
    "a b",
    "-D",
    "--force",
    "a..b",
    "topic\n",
    "topic\x00",
    "tópic",
    "a|b",
    "a@{1}",
    "x.lock",
    "a/",
    "",
]


@pytest.mark.parametrize("name", UNSAFE)
def test_unsafe_names_are_refused_with_no_side_effect(web, tmp_path, monkeypatch, name):
    fake = install_fake_gh(tmp_path, monkeypatch)
    pushed_topic(web)
    before = world(web)
    # After "--" so that a name like "-D" reaches the command as the TARGET.
    res = run_cli("pr-cleanup", "--json", "--", name, cwd=web)
    assert res.code == 2, res.out + res.err
    assert res.json["error"]["code"] == "invalid-branch"
    assert world(web) == before
    assert not list(tmp_path.rglob("x")) and not (Path.cwd() / "x").exists()
    assert not [c for c in fake.calls() if c[0] == "pr"]


@pytest.mark.parametrize("head", ["$(touch x)", "-D", "a..b", "a b"])
def test_an_unsafe_pr_head_is_refused_before_git_sees_it(web, tmp_path, monkeypatch, head):
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(13, head, "a" * 40),))
    pushed_topic(web)
    before = world(web)
    res = cleanup(web, "13")
    assert res.code == 2 and res.json["error"]["code"] == "invalid-branch"
    assert world(web) == before
    assert not list(tmp_path.rglob("x"))


def test_a_branch_is_deleted_only_when_its_name_matches_byte_for_byte(web, no_gh):
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="merge")
    upper = TOPIC_ID.upper()
    before = world(web)
    res = cleanup(web, upper)
    # No branch of that exact name: refused, and nothing of the real branch is touched.
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "unknown-branch"
    assert world(web) == before
    assert worktree.is_dir() and TOPIC_ID in branches(web)


# -- dirty -----------------------------------------------------------------------------------


def test_a_dirty_primary_clone_refuses(web, no_gh):
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="merge")
    write(web / "notes.txt", "mine\n")
    before = world(web)
    res = cleanup(web, TOPIC_ID)
    assert res.code == 1 and res.json["error"]["code"] == "dirty-worktree"
    assert res.json["error"]["message"] == (
        f"the primary clone {web} has 1 untracked file(s): notes.txt; commit or stash them "
        f"(`git -C {web} stash push --include-untracked`), then run this again; "
        "nothing was touched"
    )
    assert world(web) == before
    assert worktree.is_dir() and (web / "notes.txt").read_text() == "mine\n"


@pytest.mark.parametrize("target", [TOPIC_ID, "main"])
def test_a_dry_run_refused_before_its_plan_still_says_dry_run(web, no_gh, target):
    # README: a dry run's JSON says "dry_run": true, refusals included -- also the
    # refusals raised before there is a plan to show (a dirty primary, a protected branch).
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="merge")
    write(web / "notes.txt", "mine\n")
    before = world(web)
    res = cleanup(web, target, "--dry-run")
    code = "dirty-worktree" if target == TOPIC_ID else "protected-branch"
    assert res.code == 1 and res.json["error"]["code"] == code, res.out + res.err
    assert res.json["dry_run"] is True
    assert world(web) == before and worktree.is_dir()
    assert (web / "notes.txt").read_text() == "mine\n"


@pytest.mark.parametrize("change", ["tracked", "untracked", "hidden"])
def test_a_dirty_topic_worktree_refuses(web, no_gh, change):
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="merge")
    if change == "tracked":
        write(worktree / "limits.py", "LIMIT = 99\n")
    elif change == "untracked":
        write(worktree / "scratch.txt", "wip\n")
    else:
        # Another plan dir's notes: git status does not list them (our info/exclude line
        # hides docs/plans/), and they are work all the same, as teardown counts them.
        write(worktree / "docs" / "plans" / "notes" / "idea.md", "an idea\n")
    before = world(web)
    res = cleanup(web, TOPIC_ID)
    assert res.code == 1 and res.json["error"]["code"] == "dirty-worktree", res.out
    assert not res.json.get("steps")  # refused before any step (its plan said so too)
    assert world(web) == before and worktree.is_dir()


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_worktree_git_cannot_read_refuses_git_failed_not_a_traceback(web, no_gh, dry_run):
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="merge")
    write(worktree / "wip.txt", "not committed\n")
    write(worktree / ".git", "gitdir: /nowhere\n")  # a broken link: its status cannot be read
    before = world(web)
    res = cleanup(web, TOPIC_ID, *(["--dry-run"] if dry_run else []))
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "git-failed"
    assert "Traceback" not in res.err
    assert world(web) == before
    assert (worktree / "wip.txt").read_text() == "not committed\n"
    assert TOPIC_ID in branches(web)


# -- where it runs, remote refs ------------------------------------------------------------------


def test_it_runs_from_inside_the_worktree_it_removes(web, tmp_path, monkeypatch):
    worktree = pushed_topic(web)
    head = tip(web)
    merge = merge_on_origin(web, TOPIC_ID, how="squash")
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(12, TOPIC_ID, head, merge_commit=merge),))
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from router.entry import main; sys.exit(main())",
            "pr-cleanup",
            "--json",
        ],
        cwd=worktree,
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["branch"] == TOPIC_ID and data["proof"]["gh"] == "agreed"
    assert_cleaned(web, worktree)


def test_a_stale_tracking_ref_is_pruned_after_a_merge_deleted_the_branch(web, no_gh):
    worktree = pushed_topic(web)
    git(worktree, "fetch", "-q", "origin")
    assert has_ref(web, f"refs/remotes/origin/{TOPIC_ID}")
    merge_on_origin(web, TOPIC_ID, how="squash", delete=True)
    res = cleanup(web, TOPIC_ID)
    assert res.code == 0, res.out + res.err
    prune = steps(res.json)["prune"]
    assert prune["outcome"] == "done" and f"pruned origin/{TOPIC_ID}" in prune["detail"]
    assert not has_ref(web, f"refs/remotes/origin/{TOPIC_ID}")
    assert steps(res.json)["remote-branch"]["detail"].endswith("already gone")


def test_the_remote_branch_stays_unless_asked_and_goes_with_delete_remote(web, no_gh):
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="merge", delete=False)
    res = cleanup(web, TOPIC_ID)
    assert res.code == 0, res.out + res.err
    remote = steps(res.json)["remote-branch"]
    assert remote["outcome"] == "skipped" and "--delete-remote" in remote["detail"]
    assert steps(res.json)["prune"]["outcome"] == "skipped"
    assert TOPIC_ID in remote_heads(web) and has_ref(web, f"refs/remotes/origin/{TOPIC_ID}")
    assert_cleaned(web, worktree)
    # The second run, asked to: the local branch is gone, origin's tip is proven and deleted.
    res = cleanup(web, TOPIC_ID, "--delete-remote")
    assert res.code == 0, res.out + res.err
    assert steps(res.json)["remote-branch"]["outcome"] == "done"
    assert TOPIC_ID not in remote_heads(web)
    assert not has_ref(web, f"refs/remotes/origin/{TOPIC_ID}")


def test_delete_remote_keeps_a_remote_branch_with_commits_that_are_not_merged(web, no_gh):
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="merge", delete=False)
    # Someone pushes a follow-up to the PR branch after the merge.
    other = web.parent.parent / "scratch" / "follow-up"
    git(web.parent, "clone", "-q", str(bare_origin(web)), str(other))
    git(other, "checkout", "-q", TOPIC_ID)
    commit(other, "late.py", "late = True\n", "late follow-up")
    git(other, "push", "-q", "origin", TOPIC_ID)
    res = cleanup(web, TOPIC_ID, "--delete-remote")
    assert res.code == 1
    remote = steps(res.json)["remote-branch"]
    assert remote["outcome"] == "refused" and "not proven merged" in remote["detail"]
    assert TOPIC_ID in remote_heads(web)
    assert not worktree.exists()  # the local part, proven, still went


def test_reclaim_expires_and_gcs_only_on_the_flag(web, no_gh):
    pushed_topic(web)
    orphan = tip(web)
    merge_on_origin(web, TOPIC_ID, how="squash")
    res = cleanup(web, TOPIC_ID)
    assert res.code == 0 and steps(res.json)["reclaim"]["outcome"] == "skipped"
    assert git(web, "cat-file", "-t", orphan) == "commit"  # still in the object store
    other = "2026-05-02-second-topic"
    pushed_topic(web, other)
    merge_on_origin(web, other, how="squash")
    res = cleanup(web, other, "--reclaim")
    assert res.code == 0, res.out + res.err
    assert steps(res.json)["reclaim"]["outcome"] == "done"
    assert git(web, "cat-file", "-t", orphan, check=False) == ""


def test_a_diverged_default_branch_is_reported_never_resolved(web, no_gh):
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="merge")
    local = commit(web, "local.txt", "local\n", "a local commit on main")
    res = cleanup(web, TOPIC_ID)
    assert res.code == 0, res.out + res.err
    update = steps(res.json)["update-default"]
    assert update["outcome"] == "failed" and "--ff-only" in update["detail"]
    assert any("main was not updated" in w for w in res.json["warnings"])
    assert git(web, "rev-parse", "main") == local and status(web) == ""
    assert_cleaned(web, worktree)


def test_a_diverged_default_branch_is_left_to_the_user_in_the_plan_the_record_and_a_rerun(
    web, no_gh
):
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="merge")
    local = commit(web, "local.txt", "local\n", "a local commit on main")
    left = (
        f"main has 1 commit(s) of its own that origin/main lacks, so --ff-only cannot move it; "
        f"rebase them yourself (`git -C {web} pull --rebase origin main`)"
    )
    dry = cleanup(web, TOPIC_ID, "--dry-run")
    assert dry.code == 0, dry.out + dry.err
    assert steps(dry.json)["update-default"] == {
        "name": "update-default",
        "outcome": "failed",
        "reason": "pull-failed",
        "detail": f"would fail and be left to you: {left}",
    }
    res = cleanup(web, TOPIC_ID)
    assert res.code == 0, res.out + res.err
    update = steps(res.json)["update-default"]
    assert update["outcome"] == "failed" and update["detail"].endswith(f"; left to you: {left}")
    assert_cleaned(web, worktree)
    mark = json.loads((web / ".git" / "team-router" / "topics" / f"{TOPIC_ID}.json").read_text())
    assert mark["teardown"] == {
        "done": ["remove", "branch", "verify-gone", "plan-dir", "local-state"],
        "complete": True,
        "left": ["update-default"],
    }
    doctor = run_cli("doctor", "--json", cwd=web)
    assert (doctor.code, doctor.json["findings"]) == (0, [])
    for args in (("--dry-run",), ()):  # a rerun, and its plan, do not fail at it again
        result = cleanup(web, TOPIC_ID, *args)
        assert result.code == 0, result.out + result.err
        assert steps(result.json)["update-default"] == {
            "name": "update-default",
            "outcome": "skipped",
            "reason": "left-earlier",
            "detail": "not done: left to you by an earlier run: main could not be "
            f"updated to origin/main; update it yourself (`git -C {web} pull --rebase "
            "origin main`)",
        }
        assert not any("was not updated" in w for w in result.json["warnings"])
    assert git(web, "rev-parse", "main") == local and status(web) == ""
    assert run_cli("doctor", "--json", cwd=web).json["findings"] == []


def test_the_topic_lock_is_held(web, no_gh):
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="merge")
    with state.held_lock(web / ".git", TOPIC_ID, wait=0):
        res = cleanup(web, TOPIC_ID, "--wait", "0")
    assert res.code == 1 and res.json["error"]["code"] == "locked"
    assert worktree.is_dir() and TOPIC_ID in branches(web)


# -- dry run and reruns --------------------------------------------------------------------------


def test_dry_run_prints_the_plan_and_changes_nothing(web, tmp_path, monkeypatch):
    worktree = pushed_topic(web)
    head = tip(web)
    merge = merge_on_origin(web, TOPIC_ID, how="merge")
    git(web, "fetch", "-q", "origin")
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(12, TOPIC_ID, head, merge_commit=merge),))
    before = world(web)
    res = cleanup(web, TOPIC_ID, "--dry-run", "--delete-remote", "--reclaim")
    assert res.code == 0, res.out + res.err
    data = res.json
    assert data["dry_run"] is True and data["proof"]["merged"] is True
    assert steps(data)["remove"]["detail"].startswith("would remove")
    assert world(web) == before and worktree.is_dir()


def test_a_second_run_exits_0_and_reports_everything_done(web, tmp_path, monkeypatch):
    write(web / ".teamteardown", f'echo once >> "{tmp_path}/ran.log"\n')
    git(web, "add", ".teamteardown")
    git(web, "commit", "-q", "-m", "declare local state")
    git(web, "push", "-q", "origin", "main")
    worktree = pushed_topic(web)
    head = tip(web)
    merge = merge_on_origin(web, TOPIC_ID, how="merge")
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(12, TOPIC_ID, head, merge_commit=merge),))
    first = cleanup(web, "12")
    assert first.code == 0, first.out + first.err
    assert steps(first.json)["local-state"]["outcome"] == "done"
    second = cleanup(web, "12")
    assert second.code == 0, second.out + second.err
    assert all(s["outcome"] in {"done", "skipped"} for s in second.json["steps"])
    assert steps(second.json)["remove"]["detail"].endswith("already gone")
    assert steps(second.json)["branch"]["detail"].endswith("already gone")
    assert (tmp_path / "ran.log").read_text() == "once\n"  # local state ran once
    assert_cleaned(web, worktree)


def test_the_teamteardown_lines_name_the_repo_as_teardown_does(web, no_gh, tmp_path):
    line = f'echo ran >> "{tmp_path}/ran.log"'
    write(web / ".teamteardown", line + "\n")
    git(web, "add", ".teamteardown")
    git(web, "commit", "-q", "-m", "declare local state")
    git(web, "push", "-q", "origin", "main")
    pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="merge")
    res = run_cli("pr-cleanup", TOPIC_ID, cwd=web)
    assert res.code == 0, res.out + res.err
    # The topic's home repo is `home` in every command's output (teardown's, status's).
    assert f"[home] $ {line}\n[home]   -> ok\n" in res.out
    assert "[web]" not in res.out + res.err


def test_the_text_report_names_the_proof_and_gh_once_each(web, no_gh):
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="merge")
    res = run_cli("pr-cleanup", TOPIC_ID, cwd=web)
    assert res.code == 0, res.out + res.err
    lines = res.out.splitlines()
    assert lines[:2] == [
        f"pr-cleanup of {TOPIC_ID} (mode: merged)",
        "proof (ancestor): its tip is an ancestor of origin/main; gh unavailable: gh is not "
        "installed or not on PATH: the content proof alone decides",
    ]
    assert_cleaned(web, worktree)


def test_a_topic_created_again_after_its_cleanup_runs_its_local_state_again(web, no_gh, tmp_path):
    write(web / ".teamteardown", f'echo ran >> "{tmp_path}/ran.log"\n')
    git(web, "add", ".teamteardown")
    git(web, "commit", "-q", "-m", "declare local state")
    git(web, "push", "-q", "origin", "main")
    pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="merge")
    assert cleanup(web, TOPIC_ID).code == 0
    res = run_cli("new", "Add rate limiting again", "--id", TOPIC_ID, "--json", cwd=web)
    assert res.code == 0, res.out + res.err
    worktree = Path(res.json["home"]["worktree"])
    commit(worktree, "limits_v2.py", "LIMIT = 20\n", "raise the limit")
    git(worktree, "push", "-q", "origin", f"{TOPIC_ID}:{TOPIC_ID}")
    merge_on_origin(web, TOPIC_ID, how="merge")
    second = cleanup(web, TOPIC_ID)
    assert second.code == 0, second.out + second.err
    assert (tmp_path / "ran.log").read_text() == "ran\nran\n"
    assert_cleaned(web, worktree)


@pytest.mark.no_plan_check("a .teamteardown line's failure is known only by running it")
def test_a_failed_teardown_line_runs_once_and_the_second_run_exits_0(web, no_gh, tmp_path):
    write(web / ".teamteardown", f'echo ran >> "{tmp_path}/ran.log"\nexit 4\n')
    git(web, "add", ".teamteardown")
    git(web, "commit", "-q", "-m", "declare local state")
    git(web, "push", "-q", "origin", "main")
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="squash")
    first = cleanup(web, TOPIC_ID)
    assert first.code == 1, first.out + first.err
    assert steps(first.json)["local-state"]["outcome"] == "failed"
    assert first.json["error"]["code"] == "step-failed"  # ok: false always names its error
    assert first.json["error"]["message"].startswith("local-state failed: ")
    assert_cleaned(web, worktree)
    second = cleanup(web, TOPIC_ID)
    assert second.code == 0, second.out + second.err
    assert steps(second.json)["local-state"]["outcome"] == "skipped"
    assert (
        f"`team-router local-state {TOPIC_ID}` runs it again"
        in steps(second.json)["local-state"]["detail"]
    )
    assert (tmp_path / "ran.log").read_text() == "ran\n"  # not run a second time


# -- abandoned ---------------------------------------------------------------------------------------


def include_env(repo: Path) -> None:
    """A committed .worktreeinclude that copies the ignored .env into every new worktree."""
    include(repo, ".env", message="copy .env into worktrees")
    write(repo / ".env", "SECRET=1\n")


def test_abandon_closes_the_stack_children_first_and_removes_everything(web, tmp_path, monkeypatch):
    include_env(web)
    worktree = pushed_topic(web)
    assert (worktree / ".env").is_file()
    write(worktree / "wip.py", "half done\n")  # uncommitted work: snapshotted, not lost
    head = tip(web)
    prs = (
        pr(20, TOPIC_ID, head, state="OPEN"),
        pr(21, "child", "b" * 40, state="OPEN", base=TOPIC_ID),
        pr(22, "grandchild", "c" * 40, state="OPEN", base="child"),
        pr(23, "fork-child", "d" * 40, state="OPEN", base=TOPIC_ID, fork_owner="mallory"),
        pr(24, TOPIC_ID, "e" * 40, state="OPEN", fork_owner="mallory"),  # a fork's same-named head
    )
    fake = install_fake_gh(tmp_path, monkeypatch, prs=prs)
    res = cleanup(web, TOPIC_ID, "--abandon", "--yes")
    assert res.code == 0, res.out + res.err
    data = res.json
    assert data["mode"] == "abandoned" and data["proof"] is None
    closed = fake.closed()
    assert closed.index(22) < closed.index(21) < closed.index(20)
    assert sorted(closed) == [20, 21, 22, 23]  # never the fork's PR with the same head name
    assert fake.pr_state(24) == "OPEN"
    assert [p["number"] for p in data["prs"]] == closed
    remove = steps(data)["remove"]
    assert ".env" in remove["detail"] and "worktreeinclude" in remove["detail"]
    assert any(".env" in w for w in data["warnings"])
    assert_cleaned(web, worktree)
    assert TOPIC_ID not in remote_heads(web)
    assert not has_ref(web, f"refs/remotes/origin/{TOPIC_ID}")
    # The abandoned work is recoverable from the snapshot ref.
    snap = f"refs/team-router/snapshots/{TOPIC_ID}"
    assert git(web, "show", f"{snap}:wip.py") == "half done"
    assert git(web, "rev-parse", f"{snap}^1") == head
    assert (web / ".env").read_text() == "SECRET=1\n"  # the original stays


def test_abandon_without_gh_still_does_the_git_part_and_warns(web, no_gh):
    worktree = pushed_topic(web)
    head = tip(web)
    res = cleanup(web, TOPIC_ID, "--abandon", "--yes")
    assert res.code == 0, res.out + res.err
    data = res.json
    assert steps(data)["close-prs"]["outcome"] == "skipped"
    assert any("no PR was closed" in w for w in data["warnings"])
    assert_cleaned(web, worktree)
    assert TOPIC_ID not in remote_heads(web)
    assert git(web, "rev-parse", f"refs/team-router/snapshots/{TOPIC_ID}^{{commit}}") in {
        head,
        git(web, "rev-parse", f"refs/team-router/snapshots/{TOPIC_ID}"),
    }
    assert (
        git(
            web,
            "merge-base",
            "--is-ancestor",
            head,
            f"refs/team-router/snapshots/{TOPIC_ID}",
            check=False,
        )
        == ""
    )


def test_abandon_without_yes_on_a_non_terminal_refuses_and_never_prompts(web, no_gh):
    worktree = pushed_topic(web)
    before = world(web)
    res = cleanup(web, TOPIC_ID, "--abandon", stdin="y\n")
    assert res.code == 1
    assert res.json["error"]["code"] == "confirmation-required"
    assert "--yes" in res.json["error"]["message"]
    assert world(web) == before and worktree.is_dir()


def test_abandon_dry_run_needs_no_yes_and_changes_nothing(web, tmp_path, monkeypatch):
    worktree = pushed_topic(web)
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(20, TOPIC_ID, tip(web), state="OPEN"),))
    before = world(web)
    res = cleanup(web, TOPIC_ID, "--abandon", "--dry-run")
    assert res.code == 0, res.out + res.err
    assert steps(res.json)["close-prs"]["detail"] == "would close #20"
    assert world(web) == before and worktree.is_dir()


def test_a_second_abandon_exits_0(web, tmp_path, monkeypatch):
    worktree = pushed_topic(web)
    fake = install_fake_gh(tmp_path, monkeypatch, prs=(pr(20, TOPIC_ID, tip(web), state="OPEN"),))
    assert cleanup(web, TOPIC_ID, "--abandon", "--yes").code == 0
    res = cleanup(web, TOPIC_ID, "--abandon", "--yes")
    assert res.code == 0, res.out + res.err
    assert steps(res.json)["close-prs"]["detail"].startswith("no open PR")
    assert fake.closed() == [20]
    assert_cleaned(web, worktree)


@pytest.mark.no_plan_check("gh fails to close the PR: a fault the plan cannot foresee")
def test_a_pr_gh_cannot_close_is_reported_and_the_git_part_still_runs(web, tmp_path, monkeypatch):
    worktree = pushed_topic(web)
    fake = install_fake_gh(tmp_path, monkeypatch, prs=(pr(20, TOPIC_ID, tip(web), state="OPEN"),))
    fake.update(close_fails=[20])
    res = cleanup(web, TOPIC_ID, "--abandon", "--yes")
    assert res.code == 1
    close = steps(res.json)["close-prs"]
    assert close["outcome"] == "failed" and "#20" in close["detail"]
    assert res.json["prs"] == [
        {"number": 20, "head": TOPIC_ID, "url": res.json["prs"][0]["url"], "outcome": "failed"}
    ]
    assert_cleaned(web, worktree)
    assert TOPIC_ID not in remote_heads(web)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("answer", "code"), [("n\n", 1), ("y\n", 0)])
def test_abandon_on_a_terminal_asks_first(web, no_gh, monkeypatch, answer, code):
    worktree = pushed_topic(web)
    monkeypatch.setattr(sys, "stdin", _Terminal(answer))
    res = run_cli("pr-cleanup", TOPIC_ID, "--abandon", "--json", cwd=web)
    assert res.code == code, res.out + res.err
    assert "Abandon" in res.err  # the question goes to stderr; stdout stays one JSON object
    if code == 1:
        assert res.json["error"]["code"] == "not-confirmed"
        assert worktree.is_dir() and TOPIC_ID in branches(web)
    else:
        assert_cleaned(web, worktree)


# -- multi-repo topics --------------------------------------------------------------------------


def test_a_multi_repo_topics_other_worktrees_are_named_and_left_alone(workspace, no_gh):
    from helpers.topics import multi_topic, ship

    topic = ship(multi_topic(workspace, ("api",), topic_id=TOPIC_ID))
    home_wt, api_wt = topic.worktrees["home"], topic.worktrees["api"]
    commit(home_wt, "limits.py", "LIMIT = 10\n", "add rate limits")
    git(home_wt, "push", "-q", "origin", f"{TOPIC_ID}:{TOPIC_ID}")
    merge_on_origin(topic.home, TOPIC_ID, how="merge")
    res = cleanup(topic.home, TOPIC_ID)
    assert res.code == 0, res.out + res.err
    assert any("also has worktrees in api" in w for w in res.json["warnings"])
    assert not home_wt.exists()
    assert api_wt.is_dir() and TOPIC_ID in branches(topic.repos["api"])


def test_a_name_longer_than_a_file_name_still_gets_a_lock(web, no_gh):
    from router.topic.branches import MAX_LOCK_NAME, lock_name

    name = "x" * 400
    assert len(lock_name(name)) <= MAX_LOCK_NAME and lock_name(name) != lock_name(name + "y")
    assert lock_name(TOPIC_ID) == TOPIC_ID  # the same lock teardown takes for the topic
    before = world(web)
    res = cleanup(web, name)
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "unknown-branch"
    assert world(web) == before


def test_a_locked_worktree_blocks_the_removal_and_says_so(web, no_gh):
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="merge")
    unlock(web, worktree)  # the user's lock replaces ours
    git(web, "worktree", "lock", "--reason", "an editor session", str(worktree))
    plan = cleanup(web, TOPIC_ID, "--dry-run")
    res = cleanup(web, TOPIC_ID)
    assert res.code == plan.code == 1
    remove = steps(res.json)["remove"]
    assert remove == {
        "name": "remove",
        "outcome": "refused",
        "reason": "locked",
        "detail": f"{worktree} is locked (an editor session); unlock it or pass --force",
        "code": "locked-worktree",
    }
    assert steps(plan.json)["remove"] == remove  # the plan says the refusal, not "would remove"
    assert steps(res.json)["branch"]["outcome"] == "skipped"
    assert worktree.is_dir() and TOPIC_ID in branches(web)


# -- kills, nested repositories, a topic made again ------------------------------------------


def test_a_branch_that_exists_nowhere_is_refused_not_reported_cleaned(web, no_gh):
    pushed_topic(web)
    before = world(web)
    res = cleanup(web, "no-such-branch")
    assert res.code == 1, res.out + res.err
    assert res.json == {
        "ok": False,
        "command": "pr-cleanup",
        "branch": "no-such-branch",
        "mode": "merged",
        "proof": None,
        "steps": [],
        "dry_run": False,
        "prs": [],
        "warnings": [],
        "error": {
            "code": "unknown-branch",
            "message": f"no branch, worktree or plan dir named no-such-branch exists in {web} or "
            "on origin, and no record shows an earlier cleanup of it: check the name "
            "(`git branch -a`); nothing was touched",
        },
    }
    assert world(web) == before


def test_a_dry_run_fetches_and_sees_a_merge_made_since_the_last_fetch(web, no_gh):
    worktree = pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="merge")  # origin merged it; nothing fetched here yet
    before = world(web)
    res = cleanup(web, TOPIC_ID, "--dry-run")
    assert res.code == 0, res.out + res.err
    assert res.json["dry_run"] is True and res.json["proof"]["merged"] is True
    assert world(web) == before and worktree.is_dir()


def test_a_refused_dry_run_says_dry_run_and_never_suggests_abandoning(web, no_gh):
    worktree = pushed_topic(web)
    before = world(web)
    res = cleanup(web, TOPIC_ID, "--dry-run")
    assert res.code == 1
    data = res.json
    assert (data["error"]["code"], data["dry_run"]) == ("not-merged", True)
    assert "abandon" not in data["error"]["message"]
    assert world(web) == before and worktree.is_dir()
    real = cleanup(web, TOPIC_ID)
    assert real.json["error"]["code"] == "not-merged"
    assert "abandon" not in real.json["error"]["message"]


@pytest.mark.parametrize("where", ["primary", "worktree", "worktree-no-target"])
def test_pr_cleanup_works_in_a_clone_made_with_separate_git_dir(web, no_gh, workspace, where):
    clone = workspace / "separated"
    git(
        workspace,
        "clone",
        "-q",
        "--separate-git-dir",
        str(workspace / "separated.git"),
        str(bare_origin(web)),
        str(clone),
    )
    git(clone, "remote", "set-head", "origin", "main")
    worktree = pushed_topic(clone)
    merge_on_origin(clone, TOPIC_ID, how="merge")
    # git lists such a clone's git dir as its main worktree; from inside the
    # worktree the primary clone is still found, and the answer is the same.
    target = () if where == "worktree-no-target" else (TOPIC_ID,)
    res = cleanup(clone, *target, cwd=clone if where == "primary" else worktree)
    assert res.code == 0, res.out + res.err
    assert [(s["name"], s["outcome"]) for s in res.json["steps"]] == [
        ("remove", "done"),
        ("verify-gone", "done"),
        ("update-default", "done"),
        ("branch", "done"),
        ("remote-branch", "skipped"),
        ("prune", "done"),
        ("reclaim", "skipped"),
        ("plan-dir", "skipped"),
        ("local-state", "skipped"),
    ]
    assert not worktree.exists() and TOPIC_ID not in branches(clone)
    assert worktree_paths(clone) == [str(workspace / "separated.git")]
    assert status(clone) == ""


def test_abandoning_a_stack_deletes_every_branch_of_the_chain_with_snapshots(
    web, tmp_path, monkeypatch
):
    worktree = pushed_topic(web)
    head = tip(web)
    git(web, "branch", "child", TOPIC_ID)
    child = commit(worktree, "child.py", "c = 1\n", "child work")  # on the topic's worktree...
    git(web, "branch", "-f", "child", child)
    git(worktree, "reset", "-q", "--hard", head)  # ...then moved to the child branch only
    git(web, "branch", "grandchild", "child")
    git(web, "push", "-q", "origin", "child:child", "grandchild:grandchild")
    git(web, "fetch", "-q", "origin")
    prs = (
        pr(20, TOPIC_ID, head, state="OPEN"),
        pr(21, "child", child, state="OPEN", base=TOPIC_ID),
        pr(22, "grandchild", child, state="OPEN", base="child"),
    )
    fake = install_fake_gh(tmp_path, monkeypatch, prs=prs)
    dry = cleanup(web, TOPIC_ID, "--abandon", "--dry-run")
    assert steps(dry.json)["stack"] == {
        "name": "stack",
        "outcome": "done",
        "reason": "stack-deleted",
        "detail": "would snapshot and delete grandchild, child here and on origin",
    }
    res = cleanup(web, TOPIC_ID, "--abandon", "--yes")
    assert res.code == 0, res.out + res.err
    assert steps(res.json)["stack"] == {
        "name": "stack",
        "outcome": "done",
        "reason": "stack-deleted",
        "detail": "deleted grandchild, child here and on origin (each tip kept in its snapshot ref)",
    }
    assert sorted(fake.closed()) == [20, 21, 22]
    assert branches(web) == ["main"]
    assert remote_heads(web) == ["main"]
    for name in ("child", "grandchild"):
        assert git(web, "rev-parse", f"refs/team-router/snapshots/{name}^1") == child
    assert_cleaned(web, worktree)


def test_a_stacked_branch_checked_out_elsewhere_is_planned_as_kept_and_then_kept(
    web, workspace, tmp_path, monkeypatch
):
    worktree = pushed_topic(web)
    head = tip(web)
    git(web, "branch", "child", TOPIC_ID)
    git(web, "branch", "grandchild", "child")
    git(web, "push", "-q", "origin", "child:child", "grandchild:grandchild")
    checkout = workspace / "child-wt"
    git(web, "worktree", "add", "-q", str(checkout), "child")
    write(checkout / "wip.txt", "the child's own work in progress\n")
    git(web, "fetch", "-q", "origin")
    prs = (
        pr(20, TOPIC_ID, head, state="OPEN"),
        pr(21, "child", head, state="OPEN", base=TOPIC_ID),
        pr(22, "grandchild", head, state="OPEN", base="child"),
    )
    install_fake_gh(tmp_path, monkeypatch, prs=prs)
    kept = f"child (checked out in {checkout}; run `team-router pr-cleanup child --abandon` there)"
    before = status(checkout)
    dry = cleanup(web, TOPIC_ID, "--abandon", "--dry-run")
    # The plan says the stack step stops at the checked-out branch, as the run then does.
    assert steps(dry.json)["stack"] == {
        "name": "stack",
        "outcome": "refused",
        "reason": "stack-kept",
        "detail": f"would delete grandchild; would keep {kept}: every kept one is named with "
        "its cause",
        "code": "stack-kept",
    }
    assert dry.code == 1 and dry.json["error"]["code"] == "stack-kept"
    res = cleanup(web, TOPIC_ID, "--abandon", "--yes")
    assert res.code == 1, res.out + res.err
    assert steps(res.json)["stack"] == {
        "name": "stack",
        "outcome": "refused",
        "reason": "stack-kept",
        "detail": f"deleted grandchild; kept {kept}: every kept one is named with its cause",
        "code": "stack-kept",
    }
    assert res.json["error"]["code"] == "stack-kept"
    assert branches(web) == ["child", "main"] and "child" in remote_heads(web)
    # The child's checkout, its branch and its work: kept.
    assert status(checkout) == before and git(web, "rev-parse", "child") == head
    assert (checkout / "wip.txt").read_text() == "the child's own work in progress\n"
    assert not worktree.exists() and worktree_paths(web) == [str(web), str(checkout)]


def test_a_removal_killed_half_way_is_finished_by_the_rerun_never_read_as_work(
    web, tmp_path, monkeypatch
):
    worktree = pushed_topic(web)
    head = tip(web)
    merge = merge_on_origin(web, TOPIC_ID, how="merge")
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(12, TOPIC_ID, head, merge_commit=merge),))
    # Killed inside `git worktree remove` after it deleted part of the tree.
    env = git_killer(
        tmp_path / "killer-bin",
        "worktree remove",
        'for wt; do :; done; rm -f "$wt/limits.py"',
        real=False,
    )
    killed = run_killable("pr-cleanup", TOPIC_ID, "--json", cwd=web, env=env, new_group=True)
    assert killed.code == KILLED, killed.err
    assert worktree.is_dir() and not (worktree / "limits.py").exists()

    again = cleanup(web, TOPIC_ID)
    assert again.code == 0, again.out + again.err
    remove = steps(again.json)["remove"]
    assert remove["outcome"] == "done" and "interrupted" in remove["detail"], remove
    assert "commit or discard" not in again.out and "commit them" not in again.out
    assert_cleaned(web, worktree)
    assert git(web, "rev-parse", "main") == merge
    record = state.read_record(web / ".git", TOPIC_ID)
    assert record is not None and record.removing is None


def test_a_cleanup_killed_after_deleting_the_branch_is_finished_by_the_rerun(web, no_gh, tmp_path):
    # Nothing is named after the branch any more, here or on origin: only the
    # topic's record knows a cleanup of it was under way.
    write(web / ".teamteardown", f'echo ran >> "{tmp_path}/ran.log"\n')
    git(web, "add", ".teamteardown")
    git(web, "commit", "-q", "-m", "declare local state")
    git(web, "push", "-q", "origin", "main")
    worktree = pushed_topic(web)
    merge = merge_on_origin(web, TOPIC_ID, how="merge")
    # The deletion at the tip the merge proof judged (teardown's own, git checking the tip).
    env = git_killer(tmp_path / "killer-bin", f"update-ref -d refs/heads/{TOPIC_ID}")
    killed = run_killable("pr-cleanup", TOPIC_ID, "--json", cwd=web, env=env, new_group=True)
    assert killed.code == KILLED, killed.err
    assert TOPIC_ID not in branches(web) and not worktree.exists()
    assert not (tmp_path / "ran.log").exists()  # the kill came before the local state

    again = cleanup(web, TOPIC_ID)
    assert again.code == 0, again.out + again.err
    done = steps(again.json)
    assert done["branch"]["detail"] == f"{TOPIC_ID} is already gone"
    assert done["local-state"]["outcome"] == "done", done["local-state"]
    assert (tmp_path / "ran.log").read_text() == "ran\n"
    assert_cleaned(web, worktree)
    assert git(web, "rev-parse", "main") == merge
    third = cleanup(web, TOPIC_ID)
    assert third.code == 0, third.out + third.err
    assert (tmp_path / "ran.log").read_text() == "ran\n"  # once


def test_abandon_refuses_a_nested_clone_holding_unpushed_work_before_closing_any_pr(
    web, workspace, tmp_path, monkeypatch
):
    worktree = pushed_topic(web)
    commit(worktree, ".gitignore", "scratch/\n", "ignore scratch")
    clone = worktree / "scratch" / "experiment"
    git(workspace, "init", "-q", "-b", "main", str(clone))
    sha = commit(clone, "idea.py", "idea\n", "a local-only repository")
    fake = install_fake_gh(tmp_path, monkeypatch, prs=(pr(20, TOPIC_ID, tip(web), state="OPEN"),))
    before = world(web)

    res = cleanup(web, TOPIC_ID, "--abandon", "--yes")
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "nested-work"
    assert "nested repository scratch/experiment" in res.json["error"]["message"]
    assert fake.closed() == []  # refused before anything was done
    assert world(web) == before and git(clone, "rev-parse", "HEAD") == sha
    assert TOPIC_ID in remote_heads(web)


def test_merged_cleanup_refuses_a_nested_clone_holding_unpushed_work_touching_nothing(web, no_gh):
    worktree = pushed_topic(web)
    commit(worktree, ".gitignore", "scratch/\n", "ignore scratch")
    git(worktree, "push", "-q", "origin", f"{TOPIC_ID}:{TOPIC_ID}")
    merge_on_origin(web, TOPIC_ID, how="merge")
    clone = worktree / "scratch" / "experiment"
    git(worktree, "init", "-q", "-b", "main", str(clone))
    sha = commit(clone, "idea.py", "idea\n", "a local-only repository")
    main_before = git(web, "rev-parse", "main")

    res = cleanup(web, TOPIC_ID)
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "nested-work"
    assert git(web, "rev-parse", "main") == main_before  # not even the default branch moved
    assert worktree.is_dir() and TOPIC_ID in branches(web)
    assert git(clone, "rev-parse", "HEAD") == sha


def test_reclaim_keeps_every_stash_entry(web, no_gh):
    """--reclaim expires unreachable reflog entries; refs/stash's older entries are stashes, not log."""
    pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="squash")
    write(web / "README.md", "first stashed edit\n")
    git(web, "stash", "push", "-q", "-m", "first")
    write(web / "README.md", "second stashed edit\n")
    git(web, "stash", "push", "-q", "-m", "second")
    before = git(web, "stash", "list", "--format=%H %gs").splitlines()
    assert len(before) == 2
    res = cleanup(web, TOPIC_ID, "--reclaim")
    assert res.code == 0, res.out + res.err
    assert steps(res.json)["reclaim"]["outcome"] == "done"
    assert git(web, "stash", "list", "--format=%H %gs").splitlines() == before
    assert "first stashed edit" in git(web, "stash", "show", "-p", "stash@{1}")


def test_reclaim_waits_while_another_session_works_in_the_repo(web, no_gh):
    # gc --prune=now deletes unreachable objects at once, also those another
    # session's `git commit` has written and not yet put on a branch.
    pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="squash")
    other = new_topic(web, "Another feature", topic_id="2026-05-02-another").worktrees["home"]
    write(other / "draft.py", "half done\n")
    loose = git(other, "hash-object", "-w", "draft.py")  # written, on no branch yet
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        holder = holders.make_holder(sleeper.pid, session="s-2")
        holders.register(web / ".git", "2026-05-02-another", holder)
        res = cleanup(web, TOPIC_ID, "--reclaim")
    finally:
        sleeper.kill()
        sleeper.wait()
    assert res.code == 1, res.out + res.err
    reclaim = steps(res.json)["reclaim"]
    assert reclaim["outcome"] == "refused" and "session s-2" in reclaim["detail"], reclaim
    assert git(web, "cat-file", "-t", loose) == "blob"  # nothing was pruned
    assert steps(res.json)["branch"]["outcome"] == "done"  # the rest of the cleanup ran
    # The session ended (its holder is stale): the rerun reclaims.
    res = cleanup(web, TOPIC_ID, "--reclaim")
    assert res.code == 0, res.out + res.err
    assert steps(res.json)["reclaim"]["outcome"] == "done"
    assert git(web, "cat-file", "-t", loose, check=False) == ""


@pytest.mark.parametrize("where", ["linked worktree", "primary clone"])
def test_reclaim_waits_while_a_process_without_a_holder_works_in_a_checkout(web, no_gh, where):
    # A user's shell, or an agent that never registered, committing in a
    # checkout of the repo: `gc --prune=now` would delete the objects its
    # `git commit` has written and not yet put on a branch. No holder names it.
    pushed_topic(web)
    merge_on_origin(web, TOPIC_ID, how="squash")
    other = new_topic(web, "Another feature", topic_id="2026-05-02-another").worktrees["home"]
    write(other / "src/draft.py", "half done\n")
    loose = git(other, "hash-object", "-w", "src/draft.py")  # written, on no branch yet
    inside = other / "src" if where == "linked worktree" else web
    shell = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], cwd=inside)
    try:
        name = Path(f"/proc/{shell.pid}/comm").read_text().strip()
        assert holders.topics_with_holders(web / ".git") == []
        dry = cleanup(web, TOPIC_ID, "--reclaim", "--dry-run")
        res = cleanup(web, TOPIC_ID, "--reclaim")
    finally:
        shell.kill()
        shell.wait()
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "held"
    reclaim = steps(res.json)["reclaim"]
    assert reclaim["outcome"] == "refused", reclaim
    checkout = other if where == "linked worktree" else web
    assert f"process {shell.pid} ({name}) in {os.path.realpath(checkout)}" in reclaim["detail"]
    # The dry run says the same: refused, for the same process, and exits as the run does.
    assert steps(dry.json)["reclaim"] == reclaim, dry.json
    assert dry.code == 1 and dry.json["error"]["code"] == "held"
    assert dry.json["error"]["message"].startswith("reclaim would be refused: process ")
    assert git(web, "cat-file", "-t", loose) == "blob"  # nothing was pruned
    assert steps(res.json)["branch"]["outcome"] == "done"  # the rest of the cleanup ran
    # The process is gone: the rerun reclaims.
    res = cleanup(web, TOPIC_ID, "--reclaim")
    assert res.code == 0, res.out + res.err
    assert steps(res.json)["reclaim"]["outcome"] == "done"
    assert git(web, "cat-file", "-t", loose, check=False) == ""


def test_reclaim_in_a_secondary_waits_for_a_session_holding_another_topic_at_its_home(
    workspace, no_gh
):
    # The holder of a topic that spans this repo is written at the topic's home.
    from helpers.topics import merged_in_secondary, write_repos_md

    topic = merged_in_secondary(workspace)
    api = topic.repos["api"]
    second = new_topic(topic.home, "Another feature", topic_id="2026-05-02-another")
    write_repos_md(second, {"api": api})
    made = run_cli("worktrees", second.id, "--json", cwd=topic.home)
    assert made.code == 0, made.out + made.err
    other = api / ".claude/worktrees" / second.id
    write(other / "draft.py", "half done\n")
    loose = git(other, "hash-object", "-w", "draft.py")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        held = run_cli("hold", second.id, "--pid", str(sleeper.pid), "--session", "s-3", cwd=other)
        assert held.code == 0, held.out + held.err
        assert holders.topics_with_holders(api / ".git") == []  # none in the secondary itself
        res = cleanup(api, TOPIC_ID, "--reclaim")
    finally:
        sleeper.kill()
        sleeper.wait()
    assert res.code == 1, res.out + res.err
    reclaim = steps(res.json)["reclaim"]
    assert reclaim["outcome"] == "refused" and "session s-3" in reclaim["detail"], reclaim
    assert git(api, "cat-file", "-t", loose) == "blob"  # nothing was pruned
    assert not topic.worktrees["api"].exists()  # the rest of the cleanup ran


def test_restore_brings_back_a_stacked_branch_abandon_deleted_with_its_unpushed_commit(
    web, tmp_path, monkeypatch
):
    pushed_topic(web)
    head = tip(web)
    git(web, "branch", "feature/child", TOPIC_ID)
    git(web, "push", "-q", "origin", "feature/child:feature/child")
    elsewhere = web.parent / "child-checkout"
    git(web, "worktree", "add", "-q", str(elsewhere), "feature/child")
    unpushed = commit(elsewhere, "child.py", "c = 1\n", "child work never pushed")
    git(web, "worktree", "remove", str(elsewhere))
    prs = (
        pr(20, TOPIC_ID, head, state="OPEN"),
        pr(21, "feature/child", head, state="OPEN", base=TOPIC_ID),
    )
    install_fake_gh(tmp_path, monkeypatch, prs=prs)
    assert cleanup(web, TOPIC_ID, "--abandon", "--yes").code == 0
    assert "feature/child" not in branches(web)

    res = run_cli("restore", "feature/child", "--json", cwd=web)
    assert res.code == 0, res.out + res.err
    [restored] = res.json["repos"]
    assert (restored["status"], restored["branch"]) == ("restored", "feature/child")
    assert git(web, "rev-parse", "refs/heads/feature/child") == unpushed
    assert (Path(restored["worktree"]) / "child.py").read_text() == "c = 1\n"
    assert status(Path(restored["worktree"])) == ""


@pytest.mark.parametrize("mode", ["--abandon", "merged"])
def test_a_branch_being_rebased_in_its_worktree_is_refused_not_reported_gone(
    mode, web, tmp_path, monkeypatch
):
    worktree = pushed_topic(web)
    if mode == "merged":
        merge_on_origin(web, TOPIC_ID, how="squash")
    commit_on_origin(web, "limits.py", "LIMIT = 99\n")
    git(worktree, "fetch", "-q", "origin")
    git(worktree, "rebase", "origin/main", check=False)  # stops on a conflict: detached HEAD
    assert (worktree / ".git").is_file() and "rebase" in git(worktree, "status")
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(20, TOPIC_ID, tip(web), state="OPEN"),))
    before = git(worktree, "status", "--porcelain")
    res = cleanup(web, TOPIC_ID, *(["--abandon", "--yes"] if mode != "merged" else []))
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "branch-checked-out"
    assert f"{worktree} is rebasing or bisecting {TOPIC_ID}" in res.json["error"]["message"]
    # Nothing was removed: the worktree with its stopped rebase, the branch, origin's branch.
    assert worktree.is_dir() and TOPIC_ID in branches(web)
    assert git(worktree, "status", "--porcelain") == before
    if mode != "merged":  # (the merge deleted it on origin)
        assert git(web, "ls-remote", "origin", f"refs/heads/{TOPIC_ID}")


def test_a_reused_checkouts_branch_is_cleaned_up_under_its_topics_lock_and_holders(
    web, no_gh, workspace
):
    # `new` run in the user's own linked worktree reuses it: the topic's branch is
    # the user's (feature-x), not the topic id, and teardown locks the topic's id.
    checkout = workspace / "feature-wt"
    git(web, "worktree", "add", "-q", "-b", "feature-x", str(checkout))
    made = run_cli("new", "Add rate limiting", "--id", TOPIC_ID, "--json", cwd=checkout)
    assert made.code == 0 and made.json["home"]["status"] == "reused", made.out + made.err
    commit(checkout, "limits.py", "LIMIT = 10\n", "add limits")
    git(checkout, "push", "-q", "origin", "feature-x:feature-x")
    merge_on_origin(web, "feature-x", how="merge")
    before = world(web), world(checkout)
    with state.held_lock(web / ".git", TOPIC_ID, wait=0):
        res = cleanup(web, "feature-x", "--wait", "0")
    assert res.code == 1 and res.json["error"]["code"] == "locked", res.out + res.err
    assert (world(web), world(checkout)) == before
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        held = run_cli("hold", TOPIC_ID, "--pid", str(sleeper.pid), "--session", "s-4", cwd=web)
        assert held.code == 0, held.out + held.err
        res = cleanup(web, "feature-x")
    finally:
        sleeper.kill()
        sleeper.wait()
    assert res.code == 1 and res.json["error"]["code"] == "held", res.out + res.err
    assert "session s-4" in res.json["error"]["message"]
    assert (world(web), world(checkout)) == before


@pytest.mark.parametrize("git_format", FORMATS, indirect=True)
def test_a_commit_only_the_worktrees_head_reflog_keeps_refuses_the_cleanup(
    web, tmp_path, monkeypatch
):
    """`git worktree remove` deletes the worktree's HEAD reflog: a detached experiment left
    behind there refuses, merged or abandoned, before any step, naming the commit."""
    worktree = pushed_topic(web)
    head = tip(web)
    git(worktree, "checkout", "-q", "--detach")
    sha = commit(worktree, "experiment.py", "x = 1\n", "experiment")
    git(worktree, "checkout", "-q", TOPIC_ID)
    merge = merge_on_origin(web, TOPIC_ID, how="merge")
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(40, TOPIC_ID, head, merge_commit=merge),))
    before = world(web), world(worktree)
    for args in ((TOPIC_ID,), (TOPIC_ID, "--abandon", "--yes")):
        res = cleanup(web, *args)
        assert res.code == 1, res.out + res.err
        assert res.json["error"]["code"] == "unintegrated-commits"
        assert sha[:12] in res.json["error"]["message"]
        assert (world(web), world(worktree)) == before
        assert git(web, "cat-file", "-t", sha) == "commit"


def test_pr_cleanup_piped_into_a_reader_sitting_in_the_worktree_is_not_refused(
    web, tmp_path, monkeypatch
):
    """`team-router pr-cleanup <branch> --json | cat` typed in the worktree: the reader of the
    output belongs to the command line that asked, not to a process working there."""
    from helpers.faults import argv

    worktree = pushed_topic(web)
    head = tip(web)
    merge = merge_on_origin(web, TOPIC_ID, how="merge")
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(41, TOPIC_ID, head, merge_commit=merge),))
    command = " ".join(f"'{a}'" for a in argv("pr-cleanup", TOPIC_ID, "--json", cwd=worktree))
    done = subprocess.run(
        ["sh", "-c", f"{command} | cat; true"], cwd=worktree, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["ok"] is True, done.stdout
    assert_cleaned(web, worktree)


def test_a_process_working_in_the_worktree_refuses_the_cleanup_touching_nothing(
    web, tmp_path, monkeypatch
):
    """A shell or editor sitting in the worktree would lose its directory: pr-cleanup refuses,
    merged or abandoned, before any step (no PR closed, no branch deleted), naming it."""
    worktree = pushed_topic(web)
    head = tip(web)
    merge = merge_on_origin(web, TOPIC_ID, how="squash")
    (worktree / "src").mkdir()
    before = world(web), world(worktree)
    prs = (
        pr(30, TOPIC_ID, head, merge_commit=merge),
        pr(31, "child", "b" * 40, state="OPEN", base=TOPIC_ID),  # an abandon would close it
    )
    fake = install_fake_gh(tmp_path, monkeypatch, prs=prs)
    shell = subprocess.Popen(["sleep", "60"], cwd=worktree / "src")
    try:
        runs = [
            cleanup(web, TOPIC_ID, "--dry-run"),
            cleanup(web, TOPIC_ID),
            cleanup(web, TOPIC_ID, "--abandon", "--yes"),
        ]
    finally:
        shell.kill()
        shell.wait()
    for res in runs:
        assert res.code == 1, res.out + res.err
        assert res.json["error"]["code"] == "held", res.json["error"]
        message = res.json["error"]["message"]
        assert f"{worktree} is in use by process {shell.pid} (sleep)" in message
        assert "close it" in message and "then run pr-cleanup again" in message
        assert message.endswith("nothing was touched"), message
    assert (world(web), world(worktree)) == before
    assert fake.closed() == []
    res = cleanup(web, TOPIC_ID)
    assert res.code == 0, res.out + res.err
    assert_cleaned(web, worktree)


def reused_checkout(web: Path, workspace: Path) -> Path:
    """The user's own linked worktree on feature-x, which `new` reused for TOPIC_ID; its
    commit merged on origin (feature-x is left there): the plan dir lives in it."""
    checkout = workspace / "feature-wt"
    git(web, "worktree", "add", "-q", "-b", "feature-x", str(checkout))
    made = run_cli("new", "Add rate limiting", "--id", TOPIC_ID, "--json", cwd=checkout)
    assert made.code == 0 and made.json["home"]["status"] == "reused", made.out + made.err
    commit(checkout, "limits.py", "LIMIT = 10\n", "add limits")
    git(checkout, "push", "-q", "origin", "feature-x:feature-x")
    merge_on_origin(web, "feature-x", how="merge")
    assert (checkout / "docs" / "plans" / TOPIC_ID).is_dir()
    return checkout


def test_a_reused_checkout_and_its_branch_are_kept_and_the_topic_marked_torn_down(
    web, no_gh, workspace
):
    """As teardown does: `new` reused the user's checkout and branch, so pr-cleanup keeps
    both (and the plan dir inside) unless --remove-reused, and marks the record torn down."""
    checkout = reused_checkout(web, workspace)
    sha = tip(web, "feature-x")
    dry = cleanup(web, "feature-x", "--dry-run")
    res = cleanup(web, "feature-x")
    assert res.code == 0, res.out + res.err
    kept_wt = (
        f"kept {checkout}: team-router did not create this checkout (`new` reused it); "
        "pass --remove-reused to remove it"
    )
    kept_branch = (
        "kept feature-x: team-router did not create this branch; pass --remove-reused to delete it"
    )
    for data in (dry.json, res.json):
        got = steps(data)
        assert (got["remove"]["outcome"], got["remove"]["detail"]) == ("skipped", kept_wt), data
        assert (got["branch"]["outcome"], got["branch"]["detail"]) == ("skipped", kept_branch)
    verify = steps(res.json)["verify-gone"]
    assert (verify["outcome"], verify["detail"]) == ("skipped", "the worktree is kept")
    assert str(checkout) in worktree_paths(web) and tip(web, "feature-x") == sha
    assert (checkout / "docs" / "plans" / TOPIC_ID).is_dir()
    assert git(web, "rev-parse", "main") == git(web, "rev-parse", "origin/main")  # updated
    record = state.read_record(web / ".git", TOPIC_ID)
    assert record is not None and record.teardown is not None and record.teardown.complete
    assert record.pr_cleanup_mode == "merged"
    assert "--remove-reused" in run_cli("pr-cleanup", "--help").out
    # The flag removes them, with the usual guards.
    res = cleanup(web, "feature-x", "--remove-reused")
    assert res.code == 0, res.out + res.err
    assert not checkout.exists() and "feature-x" not in branches(web)


def test_abandoning_a_reused_checkouts_branch_keeps_the_checkout_and_its_changes(
    web, no_gh, workspace
):
    checkout = reused_checkout(web, workspace)
    sha = tip(web, "feature-x")
    write(checkout / "draft.txt", "the user's own draft\n")
    res = cleanup(web, "feature-x", "--abandon", "--yes")
    assert res.code == 0, res.out + res.err
    got = steps(res.json)
    assert (got["remove"]["outcome"], got["branch"]["outcome"]) == ("skipped", "skipped")
    assert (checkout / "draft.txt").read_text() == "the user's own draft\n"
    assert str(checkout) in worktree_paths(web) and tip(web, "feature-x") == sha
    record = state.read_record(web / ".git", TOPIC_ID)
    assert record is not None and record.torn_down and record.pr_cleanup_mode == "abandoned"


def test_a_rerun_keeping_a_reused_checkout_does_not_run_the_local_state_lines_again(
    web, no_gh, workspace, tmp_path
):
    # The kept checkout is still there on the rerun; it is not the topic "created again".
    write(web / ".teamteardown", f'echo ran >> "{tmp_path}/ran.log"\n')
    git(web, "add", ".teamteardown")
    git(web, "commit", "-q", "-m", "declare local state")
    git(web, "push", "-q", "origin", "main")
    reused_checkout(web, workspace)
    for _ in range(2):
        res = cleanup(web, "feature-x")
        assert res.code == 0, res.out + res.err
    assert "already ran" in steps(res.json)["local-state"]["detail"]
    assert (tmp_path / "ran.log").read_text() == "ran\n"
    record = state.read_record(web / ".git", TOPIC_ID)
    assert record is not None and record.torn_down


@pytest.mark.no_plan_check(
    "the plan judges plan-dir in the primary as it is; the run judges it after update-default brought docs/ as a symlink (not foreseen yet)"
)
def test_temp_paths_behind_a_symlinked_docs_dir_are_never_read(web, no_gh, workspace):
    # docs/ committed as a link on the branch: the plan dir behind it is not this
    # repository's (plan-dir-symlink), so the temp paths it lists are not removed.
    worktree = pushed_topic(web, push=False)
    elsewhere = workspace / "elsewhere"
    scratch = write(Path(os.environ["TMPDIR"]) / "not-ours" / "x", "x\n").parent
    write(elsewhere / "plans" / TOPIC_ID / "temp-paths", f"{scratch}\n")
    shutil.rmtree(worktree / "docs")  # the plan dir `new` made (untracked)
    os.symlink(elsewhere, worktree / "docs")
    git(worktree, "add", "docs")
    git(worktree, "commit", "-q", "-m", "docs live in a shared directory")
    git(worktree, "push", "-q", "origin", f"{TOPIC_ID}:{TOPIC_ID}")
    merge_on_origin(web, TOPIC_ID, how="merge")
    res = cleanup(web, TOPIC_ID)
    assert not worktree.exists() and TOPIC_ID not in git(web, "branch", "--list"), res.out
    assert (scratch / "x").read_text() == "x\n"
    assert str(scratch) not in res.out


# -- a multi-repo topic: each repo's PR as pr.md records it ----------------------------------


@pytest.mark.no_plan_check("it counts the gh calls of the one run")
def test_cleanup_of_the_topic_in_a_secondary_repo_asks_gh_about_the_pr_recorded_for_that_repo(
    workspace, tmp_path, monkeypatch
):
    from helpers.topics import write_repos_md

    web = make_github_repo(workspace, "web")
    api = make_github_repo(workspace, "api")
    topic = new_topic(web)
    write_repos_md(topic, {"api": api})
    made = run_cli("worktrees", TOPIC_ID, "--json", cwd=web)
    assert made.code == 0, made.out + made.err
    api_wt = Path(next(r["worktree"] for r in made.json["repos"] if r["name"] == "api"))
    commit(api_wt, "api.py", "a = 1\n", "api work")
    git(api_wt, "push", "-q", "origin", f"{TOPIC_ID}:{TOPIC_ID}")
    head = tip(api)
    merge = merge_on_origin(api, TOPIC_ID, how="merge")
    for repo, url in (
        ("home", "https://github.com/acme/web/pull/3"),
        ("api", "https://github.com/acme/api/pull/5"),
    ):
        res = run_cli("record", "pr", TOPIC_ID, url, "--repo", repo, "--json", cwd=web)
        assert res.code == 0, res.out + res.err
    # gh knows api's PR #5, and an older PR of the same head that was closed unmerged.
    fake = install_fake_gh(
        tmp_path,
        monkeypatch,
        repo="acme/api",
        prs=(pr(5, TOPIC_ID, head, merge_commit=merge), pr(4, TOPIC_ID, head, state="CLOSED")),
    )
    res = cleanup(api, TOPIC_ID)
    assert res.code == 0, res.out + res.err
    assert (res.json["proof"]["gh"], res.json["proof"]["pr"]) == ("agreed", 5)
    asked = [c[:3] for c in fake.calls() if c[0] == "pr"]
    assert asked == [["pr", "view", "5"]], fake.calls()
    assert not api_wt.exists() and TOPIC_ID not in branches(api)
    # The home repo's worktree is another repo's share of the topic: untouched.
    assert topic.worktrees["home"].is_dir() and TOPIC_ID in branches(web)


# -- a late writer puts the run's artifacts back where the worktree was ---------------------------


def _late_artifact(tmp_path: Path, worktree: Path) -> dict[str, str]:
    """A ``git`` on PATH after whose ``worktree remove`` the pipeline, still running, writes
    an artifact into the removed worktree's plan dir."""
    from helpers.faults import git_then

    plan = worktree / "docs" / "plans" / TOPIC_ID
    return git_then(
        tmp_path / "late-bin",
        "worktree remove",
        # mkdir by its path: the PATH without gh holds only git and sh
        f"/bin/mkdir -p '{plan}' && echo late > '{plan}/notes.md'",
    )


def test_a_shipped_runs_artifact_written_after_the_removal_is_swept_by_verify_gone(
    web, tmp_path, no_gh
):
    from helpers.plans import artifact

    worktree = pushed_topic(web)
    artifact(worktree / "docs" / "plans" / TOPIC_ID, "pr.md", url="https://example.com/pr/1")
    merge_on_origin(web, TOPIC_ID, how="merge")
    res = run_killable(
        "pr-cleanup", TOPIC_ID, "--json", cwd=web, env=_late_artifact(tmp_path, worktree)
    )
    assert res.code == 0, res.out + res.err
    assert steps(json.loads(res.out))["verify-gone"]["detail"] == (
        f"{worktree} came back (a late writer) holding only residue: removed"
    )
    assert_cleaned(web, worktree)


def test_an_abandoned_runs_artifact_written_after_the_removal_is_snapshotted_first(
    web, tmp_path, no_gh
):
    worktree = pushed_topic(web)
    res = run_killable(
        "pr-cleanup",
        TOPIC_ID,
        "--abandon",
        "--yes",
        "--json",
        cwd=web,
        env=_late_artifact(tmp_path, worktree),
    )
    assert res.code == 0, res.out + res.err
    ref = f"refs/team-router/plan-dirs/{TOPIC_ID}"
    snap = git(web, "rev-parse", ref)
    assert steps(json.loads(res.out))["verify-gone"]["detail"] == (
        f"{worktree} came back (a late writer) holding the artifacts of a run that has not "
        f"shipped: removed; the run's artifacts notes.md are in {ref} ({snap[:12]})"
    )
    assert git(web, "show", f"{ref}:docs/plans/{TOPIC_ID}/notes.md") == "late"
    assert not worktree.exists()
