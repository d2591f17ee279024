"""`team-router next`: the phase plus a brief with absolute paths, frontmatter and gate."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.plans import artifact
from helpers.repos import commit, run_cli
from helpers.topics import new_topic


def next_of(cwd: Path, *args: str) -> dict:
    res = run_cli("next", *args, "--json", cwd=cwd)
    assert res.code == 0, res.err + res.out
    return res.json


def test_question_brief_names_the_files_their_frontmatter_and_the_gate(home_repo):
    plan = new_topic(home_repo).plan_dir
    data = next_of(home_repo)
    assert (data["id"], data["resume_at"], data["plan_dir"]) == (plan.name, "QUESTION", str(plan))
    assert data["expects"] == [str(plan / "task.md"), str(plan / "questions.md")]
    brief = data["brief"]
    assert str(plan / "task.md") in brief and str(plan / "questions.md") in brief
    assert "topic: add-rate-limiting" in brief and "phase: task" in brief
    assert f"team-router next {plan.name} --json" in brief


def test_next_at_question_gives_back_the_request_new_kept_and_only_there(home_repo):
    request = "Add rate limiting: 100 req/min per key, 429 with Retry-After"
    plan = new_topic(home_repo, request).plan_dir
    data = next_of(home_repo, plan.name)
    assert (data["resume_at"], data["request"]) == ("QUESTION", request)
    assert request in data["brief"]
    text = run_cli("next", plan.name, cwd=home_repo).out
    assert f"Request: {request}" in text
    artifact(plan, "task.md")
    artifact(plan, "questions.md")
    data = next_of(home_repo, plan.name)
    assert (data["resume_at"], data["request"]) == ("RESEARCH", None)
    assert request not in data["brief"]


def test_design_review_brief_gives_the_record_command_and_the_round(home_repo):
    plan = new_topic(home_repo).plan_dir
    for name in ("task.md", "questions.md", "research.md", "design.md"):
        artifact(plan, name)
    data = next_of(home_repo, plan.name)
    assert (data["resume_at"], data["step"]) == ("DESIGN", "review")
    assert data["expects"] == [str(plan / "design-review-1.md")]
    assert f'team-router record verdict {plan.name} "REQUEST CHANGES"' in data["brief"]
    assert run_cli("record", "verdict", plan.name, "REQUEST CHANGES", cwd=home_repo).code == 0
    data = next_of(home_repo, plan.name)
    assert (data["step"], data["expects"]) == ("redraft", [str(plan / "design.md")])
    assert "revision: 1" in data["brief"]


def test_implement_brief_lists_the_checkouts_and_the_review_record(home_repo):
    plan = new_topic(home_repo).plan_dir
    artifact(plan, "plan.md")
    commit(plan.parent.parent.parent, "a.py", "a = 1\n", "slice")
    data = next_of(home_repo)
    # A commit does not pass the test-first gate: its record does.
    assert (data["resume_at"], data["step"]) == ("IMPLEMENT", "tests")
    assert data["expects"] == [str(plan / "tests-1.md")]
    assert f"team-router record tests {plan.name} RED" in data["brief"]
    assert run_cli("record", "tests", plan.name, "RED", cwd=home_repo).code == 0
    data = next_of(home_repo)
    assert (data["resume_at"], data["step"]) == ("IMPLEMENT", "slices")
    assert data["expects"] == [str(plan / "review-1.md")]
    assert str(plan.parent.parent.parent) in data["brief"]
    assert f"team-router record review {plan.name} PASS" in data["brief"]


@pytest.mark.parametrize(
    ("files", "resume_at"),
    [
        ({"task.md": {}, "questions.md": {}}, "RESEARCH"),
        ({"research.md": {}}, "DESIGN"),
        ({"design.md": {}, "design-review-1.md": {"verdict": "APPROVE"}}, "STRUCTURE"),
        ({"structure.md": {}}, "PLAN"),
        ({"plan.md": {}}, "IMPLEMENT"),
        (
            {"plan.md": {}, **{f"review-{n}.md": {"verdict": "FAIL"} for n in range(1, 6)}},
            "IMPLEMENT",
        ),
        (
            {
                "design.md": {},
                **{f"design-review-{n}.md": {"verdict": "REQUEST CHANGES"} for n in range(1, 6)},
            },
            "DESIGN",
        ),
        ({"pr.md": {"url": "https://x.test/pull/1"}}, "SHIPPED"),
    ],
)
def test_every_phase_has_a_brief_that_renders(home_repo, files, resume_at):
    plan = new_topic(home_repo).plan_dir
    for name, fields in files.items():
        artifact(plan, name, **fields)
    data = next_of(home_repo)
    assert data["resume_at"] == resume_at
    assert data["brief"].startswith("# ")
    assert str(plan) in data["brief"] or plan.name in data["brief"]
    if data["halted"]:
        assert "HALTED" in data["brief"] and data["expects"] == []


def test_pr_brief_after_a_passing_review(home_repo):
    plan = new_topic(home_repo).plan_dir
    artifact(plan, "plan.md")
    commit(plan.parent.parent.parent, "a.py", "a = 1\n", "slice")
    assert run_cli("record", "review", plan.name, "PASS", cwd=home_repo).code == 0
    data = next_of(home_repo)
    assert (data["resume_at"], data["expects"]) == ("PR", [str(plan / "pr.md")])
    assert f"team-router record pr {plan.name} <pr-url> --repo <repo-name> --json" in data["brief"]


def test_the_halted_design_brief_gives_a_command_that_runs_as_written(home_repo):
    import shlex

    plan = new_topic(home_repo).plan_dir
    for name in ("task.md", "questions.md", "research.md"):
        artifact(plan, name)
    for n in range(1, 6):
        artifact(plan, "design.md", revision=n - 1)
        assert next_of(home_repo, plan.name)["step"] == "review"
        assert run_cli("record", "verdict", plan.name, "REQUEST CHANGES", cwd=home_repo).code == 0
    data = next_of(home_repo, plan.name)
    assert (data["resume_at"], data["step"], data["halted"]) == ("DESIGN", None, True)
    lines = [ln.strip() for ln in data["brief"].splitlines()]
    command = next(ln for ln in lines if ln.startswith("team-router record verdict"))
    res = run_cli(*shlex.split(command)[1:], cwd=home_repo)
    assert res.code == 0, res.err + res.out
    assert (plan / "design-review-6.md").is_file()
    assert next_of(home_repo, plan.name)["resume_at"] == "STRUCTURE"


def test_a_worktree_removed_by_hand_is_made_again_under_the_same_id(home_repo):
    import shlex
    import shutil

    from helpers.repos import git

    made = new_topic(home_repo)
    worktree = made.worktrees["home"]
    commit(worktree, "a.py", "a = 1\n", "slice")
    shutil.rmtree(worktree)  # by hand: git still lists it, prunable
    data = next_of(home_repo, made.id)
    assert data["resume_at"] == "WORKTREE"
    commands = [ln.strip() for ln in data["brief"].splitlines() if ln.startswith("    team-router")]
    # `new` without --id would start another topic (today's date), away from the branch.
    assert all("new " not in c or f"--id {made.id}" in c for c in commands), commands
    for command in commands:
        args = shlex.split(command)[1:]
        if args[0] == "new":
            args[1:2] = ["add rate limiting"]
        res = run_cli(*args, cwd=home_repo)
        assert res.code == 0, (command, res.out, res.err)
    data = next_of(home_repo, made.id)
    assert (data["resume_at"], data["plan_dir"]) == ("QUESTION", str(made.plan_dir))
    assert git(worktree, "log", "-1", "--format=%s") == "slice"  # the branch's work is back


@pytest.mark.parametrize("written", ["task.md", "questions.md"])
def test_the_question_brief_keeps_what_an_interrupted_questioner_already_wrote(home_repo, written):
    plan = new_topic(home_repo).plan_dir
    kept = artifact(plan, written)
    data = next_of(home_repo, plan.name)
    assert data["resume_at"] == "QUESTION"
    brief = data["brief"]
    assert f"An earlier run already wrote `{kept}`" in brief
    assert "never writes over it" in brief and "writes only the files" in brief
    missing = "questions.md" if written == "task.md" else "task.md"
    assert str(plan / missing) in brief
    fresh = next_of(home_repo, new_topic(home_repo, "add caching").plan_dir.name)["brief"]
    assert "An earlier run already wrote" not in fresh


def test_a_pass_is_not_taken_for_a_newer_review_round_that_cannot_be_read(home_repo):
    plan = new_topic(home_repo).plan_dir
    artifact(plan, "plan.md")
    commit(plan.parent.parent.parent, "a.py", "a = 1\n", "slice")
    assert run_cli("record", "review", plan.name, "PASS", cwd=home_repo).code == 0
    assert run_cli("record", "review", plan.name, "FAIL", cwd=home_repo).code == 0
    second = plan / "review-2.md"
    second.write_text(second.read_text().replace("verdict: FAIL", "verdict: FAILED!"))
    data = next_of(home_repo, plan.name)
    assert (data["resume_at"], data["step"]) == ("IMPLEMENT", "review")
    assert data["expects"] == [str(plan / "review-3.md")]
    assert "Review round 2 is not decided" in data["brief"]
    assert any(str(second) in w for w in data["warnings"])


def test_a_topic_named_without_its_prefix_is_told_the_whole_id(home_repo):
    topic = new_topic(home_repo)
    res = run_cli("next", "add-rate-limiting", cwd=home_repo)
    assert (res.code, res.out) == (2, "")
    assert res.err == (
        "team-router: add-rate-limiting is not a plan dir (expected an existing "
        f"docs/plans/<id>/ directory); 'add-rate-limiting' is the topic of {topic.id}: pass "
        "the whole id [no-plan-dir]\n"
    )
    assert run_cli("next", topic.id, "--json", cwd=home_repo).code == 0
