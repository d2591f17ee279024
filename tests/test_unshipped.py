"""A run that has not shipped keeps its artifacts; --force snapshots them and restore brings the run back.

Over real git: a topic made by ``new``, artifacts written into its plan dir the
way the pipeline writes them, no commit yet.
"""

from __future__ import annotations

import json

from helpers.fakegh import hide_gh
from helpers.faults import CRASHED, run
from helpers.origin import merge_on_origin
from helpers.plans import artifact
from helpers.repos import branches, commit, git, run_cli, worktree_paths, write
from helpers.topics import TOPIC_ID, Topic, multi_topic, new_topic, snapshot_of, steps_of

ARTIFACTS = ("task.md", "questions.md", "research.md", "design.md")
LISTED = "design.md, questions.md, research.md, task.md"


def unfinished(topic: Topic) -> Topic:
    """``topic`` with the artifacts of a run stopped at DESIGN (no commit on its branch)."""
    for name in ARTIFACTS:
        artifact(topic.plan_dir, name)
    return topic


def everything(topic: Topic) -> dict[str, object]:
    """What a refusal must leave alone: refs, worktrees, files of every checkout, the plan dir."""
    found = snapshot_of(topic.home)
    plan = topic.plan_dir
    found["plan"] = (
        {p.name: p.read_bytes() for p in sorted(plan.iterdir())} if plan.exists() else {}
    )
    found["worktree"] = {
        str(p.relative_to(topic.worktrees["home"])): p.read_bytes()
        for p in sorted(topic.worktrees["home"].rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(topic.worktrees["home"]).parts
    }
    return found


def refusal(topic: Topic, command: str) -> str:
    ways = (
        f"`team-router teardown {topic.id} --force` snapshots them and takes the topic apart"
        if command == "pr-cleanup"
        else "pass --force to snapshot them before they go"
    )
    return (
        f"{topic.id} has not shipped (no pr.md), and {command} would delete the run's artifacts: "
        f"{topic.plan_dir} holds {LISTED}; finish the run (`team-router next {topic.id}` says "
        f"what is left; `team-router record pr {topic.id} <url>` once it has shipped), or {ways} "
        f"(`team-router restore {topic.id}` brings the run back)"
    )


def refused_plan(topic: Topic, *, dry_run: bool) -> str:
    """teardown's text when the plan refuses the unshipped run: the refusal, then each
    other step as it would go once the run has shipped."""
    would = "would be " if dry_run else ""
    worktree, home = topic.worktrees["home"], topic.home
    update = (
        "would leave main as it is: it already holds origin/main as last fetched"
        if dry_run
        else "main already holds origin/main as this command fetched it: nothing to pull"
    )
    rows = [
        (
            "integrate",
            "skipped",
            f"nothing to integrate: {topic.id} is empty (nothing on it since it was cut)",
        ),
        ("remove", "done", f"would remove {worktree}"),
        ("branch", "done", f"would delete {topic.branch}"),
        ("verify-gone", "done", f"would re-check that {worktree} is gone"),
        ("update-default", "done", f"{update}; no origin/{topic.branch} ref: nothing to prune"),
        ("sweep", "skipped", f"no residue under {home}/.claude/worktrees"),
        (
            "local-state",
            "skipped",
            "no .teamteardown on main — nothing declared; no temp paths recorded",
        ),
    ]
    head = (
        f"Plan (dry run, nothing changed) of {topic.id}"
        if dry_run
        else f"Refused (nothing was removed in any repo); the plan of {topic.id}"
    )
    width = len(would + "refused") + 1  # the outcome column fits its longest entry
    lines = [
        head,
        f"home  {worktree}",
        f"  {'plan-dir':<15} {would + 'refused':<{width}} {refusal(topic, 'teardown')}",
        f"  {'the rest':<15} {would + 'skipped':<{width}} not done: teardown {would}refused "
        "(unshipped-run here); once it is not, each would go as follows:",
    ]
    lines += [
        f"    {name:<15} {'would be ' + outcome:<16}  {detail}" for name, outcome, detail in rows
    ]
    lines.append(
        f"teardown of {topic.id} {would}refused: 1 refused step(s) above; fix each, then run it again"
    )
    return "\n".join(lines) + "\n"


# -- item: refused, nothing lost -------------------------------------------------------------------


def test_teardown_refuses_an_unshipped_run_and_removes_nothing(home_repo):
    topic = unfinished(new_topic(home_repo))
    before = everything(topic)
    res = run_cli("teardown", topic.id, cwd=home_repo)
    assert res.code == 1
    assert res.out == refused_plan(topic, dry_run=False)
    assert res.err == (
        f"team-router: teardown of {topic.id} refused, nothing was removed in any repo: "
        f"home: {refusal(topic, 'teardown')} [unshipped-run]\n"
    )
    assert everything(topic) == before
    assert topic.branch in branches(home_repo)
    assert str(topic.worktrees["home"]) in worktree_paths(home_repo)


def test_teardown_json_names_unshipped_run_and_the_files(home_repo):
    topic = unfinished(new_topic(home_repo))
    res = run_cli("teardown", topic.id, "--json", cwd=home_repo)
    assert res.code == 1
    error = res.json["error"]
    assert error == {
        "code": "unshipped-run",
        "message": f"teardown of {topic.id} refused, nothing was removed in any repo: "
        f"home: {refusal(topic, 'teardown')}",
    }
    assert sorted(p.name for p in topic.plan_dir.iterdir()) == sorted(ARTIFACTS)


def test_pr_cleanup_refuses_an_unshipped_run_and_removes_nothing(home_repo, tmp_path, monkeypatch):
    hide_gh(tmp_path, monkeypatch)
    topic = unfinished(new_topic(home_repo))
    before = everything(topic)
    res = run_cli("pr-cleanup", topic.branch, cwd=home_repo)
    assert res.code == 1
    assert res.out == ""
    assert res.err == (
        f"team-router: {refusal(topic, 'pr-cleanup')}; nothing was touched [unshipped-run]\n"
    )
    assert everything(topic) == before
    assert topic.branch in branches(home_repo)


def test_pr_cleanup_refuses_an_unshipped_run_even_when_its_commits_are_merged(
    home_repo, tmp_path, monkeypatch
):
    hide_gh(tmp_path, monkeypatch)
    topic = unfinished(new_topic(home_repo))
    worktree = topic.worktrees["home"]
    commit(worktree, "limits.py", "LIMIT = 10\n", "add limits")
    git(worktree, "push", "-q", "origin", f"{topic.branch}:{topic.branch}")
    merge_on_origin(home_repo, topic.branch)
    before = everything(topic)
    # Its plan is refused as the run is, before origin is fetched: not a ref changes.
    plan = run_cli("pr-cleanup", topic.branch, "--dry-run", "--json", cwd=home_repo)
    assert (plan.code, plan.json["error"]["code"]) == (1, "unshipped-run")
    assert everything(topic) == before
    res = run_cli("pr-cleanup", topic.branch, "--json", cwd=home_repo)
    assert res.code == 1
    assert res.json["error"] == {
        "code": "unshipped-run",
        "message": f"{refusal(topic, 'pr-cleanup')}; nothing was touched",
    }
    assert everything(topic) == before


def test_a_shipped_run_is_torn_down_with_its_plan_dir(home_repo):
    topic = unfinished(new_topic(home_repo))
    artifact(topic.plan_dir, "pr.md", url="https://example.com/pr/1")
    res = run_cli("teardown", topic.id, "--json", cwd=home_repo)
    assert res.code == 0, res.out
    assert not topic.worktrees["home"].exists()
    assert topic.branch not in branches(home_repo)


# -- the dry run -----------------------------------------------------------------------------------


def test_the_dry_run_names_the_refusal_and_the_artifacts(home_repo):
    topic = unfinished(new_topic(home_repo))
    before = everything(topic)
    res = run_cli("teardown", topic.id, "--dry-run", cwd=home_repo)
    assert res.code == 1
    assert res.out == refused_plan(topic, dry_run=True)
    assert res.err == (
        "warning: dry run: origin was not fetched, so the plan uses what was fetched before "
        "(a merge made since is not seen: `git fetch origin` first for an up-to-date plan)\n"
        f"team-router: teardown of {topic.id} would be refused, nothing was removed in any repo: "
        f"home: {refusal(topic, 'teardown')} [unshipped-run]\n"
    )
    assert everything(topic) == before


def test_the_forced_dry_run_names_the_artifacts_it_would_snapshot(home_repo):
    topic = unfinished(new_topic(home_repo))
    before = everything(topic)
    res = run_cli("teardown", topic.id, "--force", "--dry-run", "--json", cwd=home_repo)
    assert res.code == 0, res.out
    steps = {s["name"]: s for s in res.json["repos"][0]["steps"]}
    assert steps["remove"] == {
        "name": "remove",
        "outcome": "done",
        "reason": "removed",
        "detail": f"would remove {topic.worktrees['home']} after writing a snapshot holding "
        f"the run's artifacts {LISTED}",
    }
    assert steps["integrate"]["detail"] == (
        f"nothing to integrate: {topic.branch} is empty (nothing on it since it was cut)"
    )
    assert everything(topic) == before


# -- --force, then restore -------------------------------------------------------------------------


def phase_json(topic: Topic) -> dict[str, object]:
    res = run_cli("phase", topic.id, "--json", cwd=topic.home)
    assert res.code == 0, res.out + res.err
    return res.json


def status_json(topic: Topic) -> list[dict[str, object]]:
    res = run_cli("status", "--json", cwd=topic.home)
    assert res.code == 0, res.out + res.err
    return res.json["topics"]


def test_force_then_restore_brings_the_run_back_where_it_was(home_repo):
    topic = unfinished(new_topic(home_repo))
    worktree = topic.worktrees["home"]
    phase, listed = phase_json(topic), status_json(topic)
    assert phase["resume_at"] == "DESIGN"
    res = run_cli("teardown", topic.id, "--force", "--json", cwd=home_repo)
    assert res.code == 0, res.out
    remove = next(s for s in res.json["repos"][0]["steps"] if s["name"] == "remove")
    snap = git(home_repo, "rev-parse", f"refs/team-router/snapshots/{topic.branch}")
    assert remove["detail"] == (
        f"removed {worktree}; its work is in refs/team-router/snapshots/{topic.branch} "
        f"({snap[:12]}), the run's artifacts {LISTED} included"
    )
    assert not worktree.exists()
    restored = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert restored.code == 0, restored.out + restored.err
    assert phase_json(topic) == phase
    assert status_json(topic) == listed
    for name in ARTIFACTS:
        assert (topic.plan_dir / name).read_bytes() == artifact_bytes(topic, name)


def artifact_bytes(topic: Topic, name: str) -> bytes:
    scratch = topic.home.parent / "scratch-plan" / topic.id
    return artifact(scratch, name).read_bytes()


def test_after_restore_the_session_start_hook_names_the_topic_again(home_repo):
    from test_hook import context_of, hook

    topic = unfinished(new_topic(home_repo))
    payload = json.dumps({"cwd": str(home_repo), "session_id": "s-1"}).encode()
    before = context_of(hook(home_repo, payload))
    assert run_cli("teardown", topic.id, "--force", cwd=home_repo).code == 0
    assert run_cli("restore", topic.id, cwd=home_repo).code == 0
    assert context_of(hook(home_repo, payload)) == before
    assert f"Phase: DESIGN | Id: {topic.id}" in before.splitlines()


def test_restore_copies_the_worktreeinclude_files_again(home_repo):
    write(home_repo / ".gitignore", ".env\n")
    write(home_repo / ".worktreeinclude", ".env\n")
    git(home_repo, "add", ".gitignore", ".worktreeinclude")
    git(home_repo, "commit", "-q", "-m", "declare .env")
    git(home_repo, "push", "-q", "origin", "main")
    write(home_repo / ".env", "TOKEN=local\n")
    topic = unfinished(new_topic(home_repo))
    worktree = topic.worktrees["home"]
    assert (worktree / ".env").read_text() == "TOKEN=local\n"
    assert run_cli("teardown", topic.id, "--force", cwd=home_repo).code == 0
    assert not worktree.exists()
    res = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    snap = git(home_repo, "rev-parse", f"refs/team-router/snapshots/{topic.branch}")
    assert res.json["repos"] == [
        {
            "name": "home",
            "status": "restored",
            "detail": f"worktree {worktree} on {topic.branch}; uncommitted edits and untracked "
            "files are back as working-tree changes, what was staged is staged again; copied "
            f"again from {home_repo}: .env; refs/team-router/snapshots/{topic.branch} is kept",
            "snapshot": snap,
            "branch": topic.branch,
            "worktree": str(worktree),
            "submodules": [],
        }
    ]
    assert (worktree / ".env").read_text() == "TOKEN=local\n"
    # Teardown knows the copy again: a second teardown names it as it names a new worktree's.
    again = run_cli("teardown", topic.id, "--force", "--dry-run", "--json", cwd=home_repo)
    remove = next(s for s in again.json["repos"][0]["steps"] if s["name"] == "remove")
    assert remove["detail"].endswith("; it held copies placed by .worktreeinclude: .env")


# -- empty is not merged ---------------------------------------------------------------------------


def test_an_empty_branch_is_torn_down_as_empty_never_as_merged(home_repo):
    topic = new_topic(home_repo)  # no artifact, no commit
    res = run_cli("teardown", topic.id, "--json", cwd=home_repo)
    assert res.code == 0, res.out
    steps = {s["name"]: s for s in res.json["repos"][0]["steps"]}
    assert steps["integrate"] == {
        "name": "integrate",
        "outcome": "skipped",
        "reason": "empty",
        "detail": f"nothing to integrate: {topic.branch} is empty (nothing on it since it was cut)",
    }
    assert steps["branch"] == {
        "name": "branch",
        "outcome": "done",
        "reason": "deleted",
        "detail": f"deleted {topic.branch} (empty: nothing on it since it was cut)",
    }
    assert "merged" not in res.out


def test_pr_cleanup_of_an_empty_branch_refuses_not_merged(home_repo, tmp_path, monkeypatch):
    hide_gh(tmp_path, monkeypatch)
    topic = new_topic(home_repo)
    base = git(home_repo, "rev-parse", "main")
    before = everything(topic)
    res = run_cli("pr-cleanup", topic.branch, cwd=home_repo)
    assert res.code == 1
    assert res.err == (
        f"team-router: {topic.branch} is not proven merged into origin/main: {topic.branch} is "
        f"empty (nothing on it since it was cut at {base[:12]}); nothing was deleted "
        "(nothing was merged, so there is nothing to clean up after: "
        f"`team-router teardown {topic.id}` takes it apart) [not-merged]\n"
    )
    assert everything(topic) == before


def test_a_branch_whose_commits_are_on_main_is_still_merged(home_repo):
    topic = new_topic(home_repo)
    worktree = topic.worktrees["home"]
    commit(worktree, "limits.py", "LIMIT = 10\n", "add limits")
    git(worktree, "push", "-q", "origin", f"{topic.branch}:{topic.branch}")
    merge_on_origin(home_repo, topic.branch)
    res = run_cli("teardown", topic.id, "--json", cwd=home_repo)
    assert res.code == 0, res.out
    steps = {s["name"]: s for s in res.json["repos"][0]["steps"]}
    assert steps["integrate"]["detail"] == (
        f"nothing to integrate: {topic.branch} is merged (its tip is an ancestor of origin/main)"
    )


# -- a run in place: its plan dir in the primary clone ---------------------------------------------


def in_place(home_repo) -> Topic:
    """A run whose home fell back to the primary clone (its worktree path was taken)."""
    write(home_repo / ".claude" / "worktrees" / TOPIC_ID / "precious.txt", "keep me\n")
    res = run_cli("new", "add rate limiting", "--id", TOPIC_ID, "--json", cwd=home_repo)
    assert res.code == 0 and res.json["home"]["status"] == "fallback", res.out
    plan = home_repo / "docs" / "plans" / TOPIC_ID
    assert res.json["plan_dir"] == str(plan)
    return unfinished(Topic(TOPIC_ID, home_repo, plan, {"home": home_repo}, {}))


def test_teardown_refuses_an_unshipped_run_in_place_and_removes_nothing(home_repo):
    topic = in_place(home_repo)
    before = snapshot_of(home_repo), sorted(p.name for p in topic.plan_dir.iterdir())
    res = run_cli("teardown", topic.id, "--json", cwd=home_repo)
    assert res.code == 1
    assert res.json["error"] == {
        "code": "unshipped-run",
        "message": f"teardown of {topic.id} refused, nothing was removed in any repo: "
        f"home: {refusal(topic, 'teardown')}",
    }
    assert (snapshot_of(home_repo), sorted(p.name for p in topic.plan_dir.iterdir())) == before


def test_pr_cleanup_refuses_an_unshipped_run_in_place(home_repo, tmp_path, monkeypatch):
    hide_gh(tmp_path, monkeypatch)
    topic = in_place(home_repo)
    before = snapshot_of(home_repo)
    res = run_cli("pr-cleanup", topic.branch, "--json", cwd=home_repo)
    assert res.code == 1
    assert res.json["error"] == {
        "code": "unshipped-run",
        "message": f"{refusal(topic, 'pr-cleanup')}; nothing was touched",
    }
    assert snapshot_of(home_repo) == before


def test_force_then_restore_puts_a_plan_dir_in_place_back(home_repo):
    topic = in_place(home_repo)
    phase, listed = phase_json(topic), status_json(topic)
    dry = run_cli("teardown", topic.id, "--force", "--dry-run", "--json", cwd=home_repo)
    assert {s["name"]: s for s in dry.json["repos"][0]["steps"]}["plan-dir"] == {
        "name": "plan-dir",
        "outcome": "done",
        "reason": "removed-untracked",
        "detail": f"would remove {topic.plan_dir} (untracked) after writing a snapshot holding "
        f"the run's artifacts {LISTED}",
    }
    res = run_cli("teardown", topic.id, "--force", "--json", cwd=home_repo)
    assert res.code == 0, res.out
    ref = f"refs/team-router/plan-dirs/{topic.id}"
    snap = git(home_repo, "rev-parse", ref)
    assert {s["name"]: s for s in res.json["repos"][0]["steps"]}["plan-dir"] == {
        "name": "plan-dir",
        "outcome": "done",
        "reason": "removed-untracked",
        "detail": f"removed {topic.plan_dir} (untracked); the run's artifacts {LISTED} are in "
        f"{ref} ({snap[:12]})",
    }
    assert not topic.plan_dir.exists()
    restored = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert restored.code == 0, restored.out + restored.err
    assert restored.json["repos"] == [
        {
            "name": "home",
            "status": "restored",
            "detail": f"plan dir {topic.plan_dir} is back in place, as the run left it; "
            f"{ref} is kept",
            "snapshot": snap,
            "branch": None,
            "worktree": None,
            "submodules": [],
        }
    ]
    assert phase_json(topic) == phase
    assert status_json(topic) == listed
    assert git(home_repo, "status", "--porcelain", "--untracked-files=all") == ""
    again = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert (again.code, again.json["repos"][0]["status"]) == (0, "existing")


def test_a_second_forced_teardown_of_a_plan_dir_in_place_keeps_every_file_for_restore(home_repo):
    """Torn down, restored, changed, torn down again: restore brings back the newest content,
    and a file deleted since the first snapshot too (a snapshot never hides an earlier file)."""
    topic = in_place(home_repo)
    files = {p.name: p.read_bytes() for p in topic.plan_dir.iterdir()}
    assert run_cli("teardown", topic.id, "--force", "--json", cwd=home_repo).code == 0
    assert run_cli("restore", topic.id, "--json", cwd=home_repo).code == 0
    write(topic.plan_dir / "research.md", "# research, rewritten\n")
    (topic.plan_dir / "questions.md").unlink()
    assert run_cli("teardown", topic.id, "--force", "--json", cwd=home_repo).code == 0
    assert not topic.plan_dir.exists()
    restored = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert restored.code == 0, restored.out + restored.err
    back = {p.name: p.read_bytes() for p in topic.plan_dir.iterdir()}
    assert back == {**files, "research.md": b"# research, rewritten\n"}


def test_pr_cleanup_abandon_snapshots_a_plan_dir_in_place_and_restore_brings_it_back(
    home_repo, tmp_path, monkeypatch
):
    hide_gh(tmp_path, monkeypatch)
    topic = in_place(home_repo)
    phase = phase_json(topic)
    res = run_cli("pr-cleanup", topic.branch, "--abandon", "--yes", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    ref = f"refs/team-router/plan-dirs/{topic.id}"
    snap = git(home_repo, "rev-parse", ref)
    plan_step = next(s for s in res.json["steps"] if s["name"] == "plan-dir")
    assert plan_step["detail"] == (
        f"removed {topic.plan_dir} (untracked); the run's artifacts {LISTED} are in "
        f"{ref} ({snap[:12]})"
    )
    assert run_cli("restore", topic.id, cwd=home_repo).code == 0
    assert phase_json(topic) == phase


def test_pr_cleanup_dry_runs_name_the_refusal_and_the_artifacts_an_abandon_would_snapshot(
    home_repo, tmp_path, monkeypatch
):
    hide_gh(tmp_path, monkeypatch)
    topic = unfinished(new_topic(home_repo))
    before = everything(topic)
    merged = run_cli("pr-cleanup", topic.branch, "--dry-run", "--json", cwd=home_repo)
    assert merged.code == 1
    assert merged.json["dry_run"] is True
    assert merged.json["error"] == {
        "code": "unshipped-run",
        "message": f"{refusal(topic, 'pr-cleanup')}; nothing was touched",
    }
    dropped = run_cli("pr-cleanup", topic.branch, "--abandon", "--dry-run", "--json", cwd=home_repo)
    assert dropped.code == 0, dropped.out
    remove = next(s for s in dropped.json["steps"] if s["name"] == "remove")
    assert remove == {
        "name": "remove",
        "outcome": "done",
        "reason": "removed",
        "detail": f"would remove {topic.worktrees['home']} after writing a snapshot holding "
        f"the run's artifacts {LISTED}",
    }
    assert everything(topic) == before


def test_pr_cleanup_abandon_snapshots_the_artifacts_and_restore_brings_the_run_back(
    home_repo, tmp_path, monkeypatch
):
    hide_gh(tmp_path, monkeypatch)
    topic = unfinished(new_topic(home_repo))
    phase = phase_json(topic)
    res = run_cli("pr-cleanup", topic.branch, "--abandon", "--yes", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    assert not topic.worktrees["home"].exists()
    remove = next(s for s in res.json["steps"] if s["name"] == "remove")
    assert remove["detail"].endswith(f"the run's artifacts {LISTED} included")
    assert run_cli("restore", topic.id, cwd=home_repo).code == 0
    assert phase_json(topic) == phase


# -- a removed worktree the pipeline wrote into ----------------------------------------------------


def removed_then_written(home_repo) -> Topic:
    """A teardown killed right after it removed the worktree and the (empty) branch; then the
    pipeline, still running, writes the run's artifacts where the worktree was."""
    topic = new_topic(home_repo)
    crashed = run("teardown", topic.id, "--json", cwd=home_repo, crash_at="verify-gone")
    assert crashed.code == CRASHED, crashed.out + crashed.err
    assert not topic.worktrees["home"].exists() and topic.branch not in branches(home_repo)
    return unfinished(topic)


def test_teardown_refuses_a_removed_worktrees_unshipped_artifacts_and_removes_nothing(home_repo):
    topic = removed_then_written(home_repo)
    before = everything(topic)
    res = run_cli("teardown", topic.id, "--json", cwd=home_repo)
    assert res.code == 1, res.out + res.err
    assert res.json["error"] == {
        "code": "unshipped-run",
        "message": f"teardown of {topic.id} refused, nothing was removed in any repo: "
        f"home: {refusal(topic, 'teardown')}",
    }
    assert everything(topic) == before
    assert sorted(p.name for p in topic.plan_dir.iterdir()) == sorted(ARTIFACTS)
    swept = run_cli("sweep", "--json", cwd=home_repo)  # the sweep alone keeps them too
    assert swept.code == 1 and swept.json["error"]["code"] == "unshipped-run"
    assert everything(topic) == before


def test_a_forced_teardown_snapshots_a_removed_worktrees_artifacts_and_restore_brings_them_back(
    home_repo,
):
    topic = removed_then_written(home_repo)
    worktree = topic.worktrees["home"]
    plan = run_cli("teardown", topic.id, "--force", "--dry-run", "--json", cwd=home_repo)
    res = run_cli("teardown", topic.id, "--force", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    # verify-gone takes the directory (plan and run alike): the sweep finds no residue after it.
    nothing = {
        "name": "sweep",
        "outcome": "skipped",
        "reason": "no-residue",
        "detail": f"no residue under {worktree.parent}",
    }
    for data in (plan.json, res.json):
        assert {s["name"]: s for s in data["repos"][0]["steps"]}["sweep"] == nothing
    ref = f"refs/team-router/plan-dirs/{topic.id}"
    snap = git(home_repo, "rev-parse", ref)
    assert {s["name"]: s for s in res.json["repos"][0]["steps"]}["verify-gone"] == {
        "name": "verify-gone",
        "outcome": "done",
        "reason": "came-back",
        "detail": f"{worktree} came back (a late writer) holding the artifacts of a run that has "
        f"not shipped: removed; the run's artifacts {LISTED} are in {ref} ({snap[:12]})",
    }
    assert not worktree.exists()
    restored = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert restored.code == 0, restored.out + restored.err
    in_place = home_repo / "docs" / "plans" / topic.id
    assert [(r["status"], r["detail"]) for r in restored.json["repos"]] == [
        ("restored", f"plan dir {in_place} is back in place, as the run left it; {ref} is kept")
    ]
    for name in ARTIFACTS:
        assert (in_place / name).read_bytes() == artifact_bytes(topic, name)
    assert git(home_repo, "status", "--porcelain", "--untracked-files=all") == ""


def without_base(repo, topic_id: str) -> None:
    """The repo's record of the topic as an older version wrote it: no ``base_commit``."""
    path = repo / ".git" / "team-router" / "topics" / f"{topic_id}.json"
    data = json.loads(path.read_text())
    data.pop("base_commit")
    path.write_text(json.dumps(data))


def test_a_refused_plan_calls_a_branch_whose_record_has_no_base_empty_never_merged(workspace):
    topic = multi_topic(workspace, ("api",))  # its plan dir holds repos.md: not shipped, refused
    api = topic.repos["api"]
    without_base(api, topic.id)
    before = snapshot_of(api), everything(topic)
    empty = f"nothing to integrate: {topic.branch} is empty (nothing on it since it was cut)"
    for flags in (("--dry-run",), ()):
        res = run_cli("teardown", topic.id, "--json", *flags, cwd=topic.home)
        assert res.code == 1, res.out + res.err
        assert res.json["error"]["code"] == "unshipped-run"
        assert steps_of(res.json, "api")["integrate"] == {
            "name": "integrate",
            "outcome": "skipped",
            "reason": "empty",
            "detail": empty,
        }
        assert "merged" not in res.out
        text = run_cli("teardown", topic.id, *flags, cwd=topic.home)
        assert text.code == 1, text.out + text.err
        api_part = text.out.split(f"\napi  {topic.worktrees['api']}\n", 1)[1]
        assert f"    integrate       would be skipped  {empty}\n" in api_part
        assert "merged" not in text.out
    assert (snapshot_of(api), everything(topic)) == before


def test_a_branch_whose_record_has_no_base_and_whose_commits_are_on_main_is_still_merged(
    workspace,
):
    topic = multi_topic(workspace, ("api",))
    api, api_wt = topic.repos["api"], topic.worktrees["api"]
    without_base(api, topic.id)
    commit(api_wt, "api.py", "a = 1\n", "api work")
    git(api_wt, "push", "-q", "origin", f"{topic.branch}:{topic.branch}")
    merge_on_origin(api, topic.branch)  # a fast-forward: the tip is an ancestor of origin/main
    res = run_cli("teardown", topic.id, "--json", cwd=topic.home)
    assert res.code == 1 and res.json["error"]["code"] == "unshipped-run", res.out
    assert steps_of(res.json, "api")["integrate"]["detail"] == (
        f"nothing to integrate: {topic.branch} is merged (its tip is an ancestor of origin/main)"
    )


def test_pr_cleanup_of_an_empty_branch_whose_record_has_no_base_refuses_not_merged(
    home_repo, tmp_path, monkeypatch
):
    hide_gh(tmp_path, monkeypatch)
    topic = new_topic(home_repo)
    without_base(home_repo, topic.id)
    cut = git(home_repo, "rev-parse", "main")  # where git created the branch (its reflog)
    before = everything(topic)
    res = run_cli("pr-cleanup", topic.branch, cwd=home_repo)
    assert res.code == 1
    assert res.err == (
        f"team-router: {topic.branch} is not proven merged into origin/main: {topic.branch} is "
        f"empty (nothing on it since it was cut at {cut[:12]}); nothing was deleted "
        "(nothing was merged, so there is nothing to clean up after: "
        f"`team-router teardown {topic.id}` takes it apart) [not-merged]\n"
    )
    assert everything(topic) == before
