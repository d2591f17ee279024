"""Discovery (DESIGN §8): candidates across the primary clone and every worktree, newest wins."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.plans import artifact, touch
from helpers.repos import git, make_repo, run_cli, write
from helpers.topics import all_answer, answers, in_place, multi_topic, new_topic, notice

from router import git as g
from router.topic import discovery
from router.topic.workspace import open_repo


def phase_id(cwd: Path, *args: str) -> str:
    res = run_cli("phase", *args, "--json", cwd=cwd)
    assert res.code == 0, res.err + res.out
    return res.json["id"]


def test_the_newest_artifact_wins_across_worktrees(home_repo):
    older = new_topic(home_repo, "older topic").plan_dir
    newer = new_topic(home_repo, "newer topic").plan_dir
    touch(artifact(older, "task.md"), 2_000_000_000)
    touch(artifact(newer, "task.md"), 1_900_000_000)
    assert phase_id(home_repo) == older.name
    touch(newer / "task.md", 2_100_000_000)
    assert phase_id(home_repo) == newer.name


def test_a_tie_goes_to_the_greater_id(home_repo):
    a = new_topic(home_repo, "alpha", date="2026-05-01").plan_dir
    b = new_topic(home_repo, "alpha", date="2026-05-02").plan_dir
    touch(artifact(a, "task.md"), 2_000_000_000)
    touch(artifact(b, "task.md"), 2_000_000_000)
    assert phase_id(home_repo) == b.name


def test_plan_dirs_of_the_primary_clone_are_candidates(home_repo):
    plan = in_place(home_repo, "ENG-7-in-place-run")
    touch(artifact(plan, "task.md"), 2_000_000_000)
    touch(artifact(new_topic(home_repo).plan_dir, "task.md"), 1_000_000_000)
    assert phase_id(home_repo) == "ENG-7-in-place-run"


def test_an_empty_dir_counts_only_when_its_worktree_exists(home_repo):
    stray = home_repo / "docs" / "plans" / "2026-05-03-stray-dir"
    stray.mkdir(parents=True)
    touch(stray, 2_100_000_000)
    plan = new_topic(home_repo).plan_dir  # empty plan dir in its worktree
    touch(plan, 2_000_000_000)
    assert phase_id(home_repo) == plan.name
    names = {c.id for c in discovery.candidates(open_repo(home_repo))}
    assert names == {plan.name}


def test_from_inside_a_topics_worktree_and_its_subdirectories_the_answer_is_that_topic(
    home_repo,
):
    first = new_topic(home_repo, "first one").plan_dir
    second = new_topic(home_repo, "second one").plan_dir
    touch(artifact(first, "task.md"), 2_000_000_000)
    touch(artifact(second, "task.md"), 1_000_000_000)
    inside = second.parent.parent.parent / "src" / "deep"
    inside.mkdir(parents=True)
    # The newest topic of the home repo is the first; a session in the second's worktree
    # works on the second (DESIGN §8), and the primary clone still answers the newest.
    assert phase_id(inside) == second.name
    assert phase_id(inside, first.name) == first.name
    assert phase_id(home_repo) == first.name


def test_a_target_may_be_the_plan_dir_path(home_repo):
    plan = new_topic(home_repo).plan_dir
    assert phase_id(home_repo, str(plan)) == plan.name


def test_a_worktree_whose_plan_dir_is_gone_resumes_at_question(home_repo):
    plan = new_topic(home_repo).plan_dir
    plan.rmdir()
    res = run_cli("phase", plan.name, "--json", cwd=home_repo)
    assert res.code == 0, res.err
    assert (res.json["resume_at"], res.json["completed"]) == ("QUESTION", ["WORKTREE"])


def test_an_unknown_target_is_exit_2_no_plan_dir(home_repo):
    new_topic(home_repo)
    for target in ("2026-01-01-never-made", "not/a/plan/dir"):
        res = run_cli("phase", target, "--json", cwd=home_repo)
        assert (res.code, res.json["error"]["code"]) == (2, "no-plan-dir")


def test_nothing_to_resume_is_exit_2_no_topic(home_repo):
    res = run_cli("phase", "--json", cwd=home_repo)
    assert (res.code, res.json["error"]["code"]) == (2, "no-topic")


def test_the_fast_reader_agrees_with_git(home_repo, workspace):
    new_topic(home_repo, "one")
    new_topic(home_repo, "two")
    detached = home_repo / ".claude" / "worktrees" / "detached"
    git(home_repo, "worktree", "add", "-q", "--detach", str(detached))
    repo = open_repo(home_repo)
    entries = repo.git.worktree_list()
    for cwd in (home_repo, detached, Path(entries[1].path) / "docs"):
        fast = discovery.locate_fast(str(cwd))
        assert fast == discovery.repo_place(open_repo(cwd), entries)
        assert fast.roots == [os.path.realpath(e.path) for e in entries]
    assert discovery.locate_fast(str(workspace)) is None


def test_the_fast_reader_hands_an_unusual_layout_to_git(workspace):
    repo = make_repo(workspace, "sep", origin=False)
    git(repo, "config", "core.worktree", str(repo))
    with pytest.raises(g.Unsure):
        discovery.locate_fast(str(repo))


def test_an_empty_plan_dir_in_a_reused_feature_worktree_is_found(home_repo, workspace):
    feature = workspace / "feature-wt"
    git(home_repo, "worktree", "add", "-q", "-b", "feature", str(feature))
    older = new_topic(home_repo, "older topic").plan_dir
    touch(artifact(older, "task.md"), 1_000_000_000)
    plan = new_topic(feature, "reuse this checkout").plan_dir  # empty plan dir, branch "feature"
    assert plan.parent.parent.parent == feature
    assert phase_id(home_repo) == plan.name
    assert phase_id(home_repo, plan.name) == plan.name
    res = run_cli("status", "--json", cwd=home_repo)
    assert [t["id"] for t in res.json["topics"]] == sorted([older.name, plan.name])
    res = run_cli("worktrees", plan.name, "--json", cwd=home_repo)
    assert res.code == 0, res.err + res.out
    assert res.json["repos"][0]["status"] == "reused"


def test_the_in_place_plan_dir_of_a_fallback_is_found_by_its_id(home_repo):
    topic_id = "ENG-5-blocked"
    write(home_repo / ".claude" / "worktrees" / topic_id / "precious.txt", "keep me\n")
    res = run_cli("new", "blocked", "--id", topic_id, "--json", cwd=home_repo)
    assert res.json["home"]["status"] == "fallback"
    plan = home_repo / "docs" / "plans" / topic_id
    assert res.json["plan_dir"] == str(plan) and plan.is_dir()
    res = run_cli("next", topic_id, "--json", cwd=home_repo)
    assert res.code == 0, res.err + res.out
    assert (res.json["resume_at"], res.json["plan_dir"]) == ("QUESTION", str(plan))
    assert run_cli("record", "temp", topic_id, "/tmp/x", cwd=home_repo).code == 0
    assert (plan / "temp-paths").read_text() == "/tmp/x\n"


def snapshot_files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("link", ["docs", "docs/plans", "docs/plans/ENG-9-old-layout"])
def test_plan_dirs_behind_a_symlink_are_neither_read_nor_written(home_repo, workspace, link):
    # An older version made plan dirs through a symlinked docs/; new ones never
    # are (plan-dir-symlink), and reading or recording through one is refused the same way.
    elsewhere = workspace / "elsewhere"
    plan = elsewhere / "plans" / "ENG-9-old-layout"
    artifact(plan, "task.md")
    artifact(plan, "plan.md")
    (home_repo / link).parent.mkdir(parents=True, exist_ok=True)
    target = {"docs": elsewhere, "docs/plans": plan.parent}.get(link, plan)
    os.symlink(target, home_repo / link)
    before = snapshot_files(elsewhere)
    fix = f"replace the link `{link}` with a directory"
    through_link = str(home_repo / "docs" / "plans" / "ENG-9-old-layout")
    for args in (
        ("phase",),
        ("phase", "ENG-9-old-layout"),
        ("next", through_link),
        ("record", "review", "ENG-9-old-layout", "PASS"),
        ("record", "temp", through_link, "/tmp/x"),
        ("worktrees", "ENG-9-old-layout"),
    ):
        res = run_cli(*args, "--json", cwd=home_repo)
        assert (res.code, res.json["error"]["code"]) == (1, "plan-dir-symlink"), (args, res.out)
        assert f"{home_repo / link} is a symlink" in res.json["error"]["message"]
        assert fix in res.json["error"]["message"]
    res = run_cli("status", "--json", cwd=home_repo)
    assert res.code == 0 and res.json["topics"] == [], res.out
    assert any(fix in w and "ENG-9-old-layout" in w for w in res.json["warnings"])
    assert snapshot_files(elsewhere) == before
    assert git(home_repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_topic_beside_a_symlinked_plan_dir_is_still_found(home_repo, workspace):
    real = new_topic(home_repo).plan_dir
    touch(artifact(real, "task.md"), 1_000_000_000)
    elsewhere = workspace / "elsewhere" / "ENG-9-old-layout"
    touch(artifact(elsewhere, "task.md"), 2_000_000_000)  # newer, but behind a link
    os.symlink(elsewhere, real.parent / elsewhere.name)
    assert phase_id(home_repo) == real.name


def test_teardown_reads_nothing_behind_a_symlinked_docs_and_works_from_the_record(
    home_repo, workspace
):
    # The worktree's docs/ made a link after the fact: the temp-paths file behind
    # it is not read (its paths are not removed), and teardown still takes the
    # topic's worktree and branch apart, saying why the plan dir was left alone.
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    elsewhere = workspace / "elsewhere"
    scratch = write(Path(os.environ["TMPDIR"]) / "not-read" / "x", "x\n")
    write(elsewhere / "plans" / topic.id / "temp-paths", f"{scratch.parent}\n")
    os.rename(wt / "docs", workspace / "old-docs")
    os.symlink(elsewhere, wt / "docs")
    res = run_cli("local-state", topic.id, "--json", cwd=home_repo)
    assert res.code == 0 and res.json["temp_paths"] == [], res.out
    assert any(f"{wt / 'docs'} is a symlink" in w for w in res.json["warnings"]), res.out
    # --force: the link is an untracked file of the worktree, snapshotted first.
    res = run_cli("teardown", topic.id, "--force", "--json", cwd=home_repo)
    assert res.code == 0, res.out
    assert any(f"{wt / 'docs'} is a symlink" in w for w in res.json["warnings"]), res.out
    assert not wt.exists() and topic.branch not in git(home_repo, "branch", "--list")
    assert scratch.exists() and (elsewhere / "plans" / topic.id / "temp-paths").exists()


# -- only this machine's runs; from inside a topic's worktree, that topic -------------

THEIR_RUN = "2026-04-01-someone-elses-run"


def test_a_plan_dir_committed_to_the_default_branch_is_repository_content_not_a_run(workspace):
    upstream = make_repo(workspace, "upstream")
    theirs = upstream / "docs" / "plans" / THEIR_RUN
    for name in ("task.md", "questions.md", "research.md", "design.md", "plan.md"):
        artifact(theirs, name)
    git(upstream, "add", "-f", "docs")
    git(upstream, "commit", "-q", "-m", "keep the plans")
    git(upstream, "push", "-q", "origin", "main")
    clone = workspace / "clone"
    git(workspace, "clone", "-q", git(upstream, "remote", "get-url", "origin"), str(clone))
    for path in (clone / "docs" / "plans" / THEIR_RUN).iterdir():
        touch(path, 2_100_000_000)  # the newest files of the repository, still not a run

    none = {"hook": None, "phase": "no-topic", "next": "no-topic", "status": None}
    assert answers(clone) == none
    assert run_cli("status", "--json", cwd=clone).json["topics"] == []

    mine = new_topic(clone, "my own work")
    assert answers(clone) == all_answer(mine.id)
    nxt = run_cli("next", "--json", cwd=clone)
    assert (nxt.json["resume_at"], nxt.json["request"]) == ("QUESTION", "my own work")
    assert [t["id"] for t in run_cli("status", "--json", cwd=clone).json["topics"]] == [mine.id]
    # Named, it is read as asked: the user chose it.
    assert phase_id(clone, THEIR_RUN) == THEIR_RUN
    assert git(clone, "status", "--porcelain") == ""  # nothing of theirs was touched


def test_a_session_in_a_topics_worktree_is_about_that_topic_not_the_newest(workspace):
    older = multi_topic(workspace, ("api",), topic_id="2026-05-01-older-topic")
    for name in ("task.md", "questions.md", "research.md", "design.md"):
        artifact(older.plan_dir, name)
    for path in older.plan_dir.iterdir():
        touch(path, 1_000_000_000)
    newer = new_topic(older.home, "newer topic", date="2026-05-02")  # empty: its mtime is now
    api_wt = older.worktrees["api"]
    (api_wt / "src").mkdir()

    for cwd in (older.worktrees["home"], older.plan_dir, api_wt, api_wt / "src"):
        assert answers(cwd) == all_answer(older.id), cwd
        assert f"Phase: DESIGN | Id: {older.id}" in notice(cwd).splitlines()
    for cwd in (older.home, older.repos["api"], newer.worktrees["home"]):
        assert answers(cwd) == all_answer(newer.id), cwd
    nxt = run_cli("next", "--json", cwd=api_wt)
    assert (nxt.json["resume_at"], nxt.json["plan_dir"]) == ("DESIGN", str(older.plan_dir))
