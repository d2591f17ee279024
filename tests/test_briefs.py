"""The phase briefs and artifact skeletons against the agents that follow them and the CLI
that renders them: what a brief hands over is what the agent expects, rendered, not guessed."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from helpers.plans import artifact
from helpers.repos import commit, make_repo, run_cli
from helpers.topics import new_topic, write_repos_md

from router.plandir.templates import render

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ROOT / "agents"
TEMPLATES = ROOT / "templates"


def next_of(cwd: Path, *args: str) -> dict:
    res = run_cli("next", *args, "--json", cwd=cwd)
    assert res.code == 0, res.err + res.out
    return res.json


def skeleton(name: str) -> str:
    return render(f"artifacts/{name}.j2", topic="t", date="2026-05-01", id="2026-05-01-t")


def format_block(agent: str) -> str:
    """The markdown block an agent's prompt shows as the format of what it writes."""
    text = (AGENTS / f"{agent}.md").read_text(encoding="utf-8")
    return re.search(r"```markdown\n(.*?)```", text, re.S).group(1)


def field_keys(text: str) -> set[str]:
    """``- key:`` fields of list items (``- test: ...`` -> ``test``)."""
    return set(re.findall(r"^\s*- ([a-z]+): ", text, re.M))


# -- skeletons match the agents -----------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "name"), [("planner", "plan.md"), ("structure-planner", "structure.md")]
)
def test_each_skeleton_has_every_field_its_agent_writes(agent: str, name: str) -> None:
    wanted = field_keys(format_block(agent))
    assert wanted, agent
    assert wanted <= field_keys(skeleton(name)), (agent, wanted - field_keys(skeleton(name)))
    # The slices carry the same heading shape, so the implementers find them by number.
    assert re.search(r"^#+ Slice 1: .* \[repo: ", skeleton(name), re.M)
    assert re.search(r"^#+ Slice 1: .* \[repo: ", format_block(agent), re.M)


def test_the_plan_names_each_repos_checks_and_each_slice_how_to_run_its_test() -> None:
    plan = skeleton("plan.md")
    assert "## Checks" in plan and "- run: " in plan and "- test: " in plan


def _bold_names(text: str) -> list[str]:
    return re.findall(r"\*\*([A-Z][A-Za-z ]+?)\*\*", " ".join(text.split()))


def test_the_design_brief_the_author_and_the_skeleton_name_the_same_sections() -> None:
    author = (AGENTS / "design-author.md").read_text(encoding="utf-8")
    sections = _bold_names(author.split("Sections, in order", 1)[1].split("No code beyond", 1)[0])
    assert sections[0] == "Summary" and len(sections) == 8
    brief = (TEMPLATES / "briefs" / "design.md.j2").read_text(encoding="utf-8")
    done_when = brief.split("Done when `design.md` has these sections", 1)[1].split("No code", 1)[0]
    assert _bold_names(done_when) == sections
    assert re.findall(r"^## (.+)$", skeleton("design.md"), re.M) == sections


# -- what next renders -------------------------------------------------------------------


def test_the_research_brief_lists_every_repo_of_repos_md_worktree_or_not(workspace: Path) -> None:
    home = make_repo(workspace, "web")
    api = make_repo(workspace, "api")
    topic = new_topic(home)
    write_repos_md(topic, {"api": api})  # written at QUESTION: api has no worktree yet
    for name in ("task.md", "questions.md"):
        artifact(topic.plan_dir, name)
    data = next_of(home, topic.id)
    assert data["resume_at"] == "RESEARCH"
    listed = re.findall(r"^- (\S+): (\S+)$", data["brief"], re.M)
    assert listed == [("home", str(topic.worktrees["home"])), ("api", str(api))]


def test_no_piece_leaves_the_default_branch_for_a_helper_to_guess() -> None:
    docs = [*AGENTS.glob("*.md"), *TEMPLATES.rglob("*.j2"), *(ROOT / "skills").glob("*/SKILL.md")]
    assert not [d for d in docs if "<default-branch>" in d.read_text(encoding="utf-8")]


def test_the_implement_and_pr_briefs_render_each_repos_default_branch(home_repo: Path) -> None:
    made = new_topic(home_repo)
    artifact(made.plan_dir, "plan.md")
    commit(made.worktrees["home"], "a.py", "a = 1\n", "slice")
    assert run_cli("record", "tests", made.id, "RED", cwd=home_repo).code == 0
    wt = made.worktrees["home"]
    brief = next_of(home_repo, made.id)["brief"]
    assert "- home: `origin/main...HEAD`" in brief
    assert f"- home: {wt} (commits since `origin/main`)" in brief
    assert run_cli("record", "review", made.id, "PASS", cwd=home_repo).code == 0
    brief = next_of(home_repo, made.id)["brief"]
    assert f"- home: {wt} (branch `{made.id}`, commits since `origin/main`)" in brief


def test_the_halted_implement_brief_gives_a_way_on_that_runs_as_written(home_repo: Path) -> None:
    made = new_topic(home_repo)
    artifact(made.plan_dir, "plan.md")
    commit(made.worktrees["home"], "a.py", "a = 1\n", "slice")
    for _ in range(5):
        assert run_cli("record", "review", made.id, "FAIL", cwd=home_repo).code == 0
    data = next_of(home_repo, made.id)
    assert (data["resume_at"], data["halted"]) == ("IMPLEMENT", True)
    lines = [ln.strip() for ln in data["brief"].splitlines()]
    command = next(ln for ln in lines if ln.startswith("team-router record review"))
    args = shlex.split(command)[1:]
    decision = home_repo.parent / "decision.md"
    decision.write_text("The user accepts the work as it is.\n", encoding="utf-8")
    args[args.index("<their-decision.md>")] = str(decision)
    res = run_cli(*args, cwd=home_repo)
    assert res.code == 0, res.err + res.out
    after = next_of(home_repo, made.id)
    assert (after["resume_at"], after["halted"]) == ("PR", False)


# -- the request is read, not guessed --------------------------------------------------


def _github_home(workspace: Path) -> Path:
    from helpers.fakegh import make_github_repo

    return make_github_repo(workspace, "web")


def test_an_issue_url_is_read_through_gh_and_quoted_in_the_question_brief(
    workspace, tmp_path, monkeypatch
):
    from helpers.fakegh import install_fake_gh

    home = _github_home(workspace)
    issue = {
        "repo": "acme/web",
        "number": 12,
        "title": "Login is not rate limited",
        "body": "Anyone can try passwords forever.\nLimit to 5 per minute.",
        "state": "OPEN",
        "url": "https://github.com/acme/web/issues/12",
    }
    fake = install_fake_gh(tmp_path, monkeypatch, issues=(issue,))
    made = new_topic(home, "https://github.com/acme/web/issues/12")
    data = next_of(home, made.id)
    assert data["resume_at"] == "QUESTION"
    assert data["issue"] == {
        "ref": issue["url"],
        "read": {k: issue[k] for k in ("number", "title", "body", "state", "url")},
        "reason": None,
    }
    brief = data["brief"]
    assert "> **Login is not rate limited**" in brief
    assert "> Anyone can try passwords forever.\n> Limit to 5 per minute." in brief
    assert "ask the user once" not in brief
    asked = [c for c in fake.calls() if c[:2] == ["issue", "view"]]
    assert asked == [
        ["issue", "view", "12", "--repo=acme/web", "--json=number,title,body,state,url"]
    ]
    # Read at QUESTION only: the later phases never ask gh for it again.
    for name in ("task.md", "questions.md"):
        artifact(made.plan_dir, name)
    assert next_of(home, made.id)["issue"] is None
    assert len([c for c in fake.calls() if c[:2] == ["issue", "view"]]) == 1


@pytest.mark.parametrize("request_", ["https://github.com/acme/web/issues/12", "ENG-1234"])
def test_a_request_nothing_can_read_makes_the_brief_ask_the_user_once(
    workspace, tmp_path, monkeypatch, request_
):
    from helpers.fakegh import hide_gh

    home = _github_home(workspace)
    made = new_topic(home, request_)
    hide_gh(tmp_path, monkeypatch)
    data = next_of(home, made.id)
    assert data["issue"]["ref"] == request_ and data["issue"]["read"] is None
    assert data["issue"]["reason"]
    flat = " ".join(data["brief"].split())
    assert "Before anything is dispatched or written, ask the user once" in flat


def test_a_request_with_words_and_no_issue_reads_nothing(home_repo: Path) -> None:
    made = new_topic(home_repo, "ENG-1234 add rate limiting to the login endpoint")
    data = next_of(home_repo, made.id)
    assert data["issue"] is None and "ask the user once" not in data["brief"]


# -- run or stop at a phase -------------------------------------------------------------


def test_next_until_stops_once_the_run_is_past_that_phases_gate(home_repo: Path) -> None:
    made = new_topic(home_repo)
    plan = made.plan_dir
    for name in ("task.md", "questions.md", "research.md", "design.md"):
        artifact(plan, name)
    data = next_of(home_repo, made.id, "--until", "design")
    assert (data["resume_at"], data["step"]) == ("DESIGN", "review")  # not past it yet
    assert run_cli("record", "verdict", made.id, "APPROVE", cwd=home_repo).code == 0
    data = next_of(home_repo, made.id, "--until", "DESIGN")
    assert (data["resume_at"], data["step"], data["expects"]) == ("STRUCTURE", "until", [])
    assert data["brief"].startswith(f"# STOP after DESIGN: {made.id}\n")
    assert f"`/team {made.id}`" in data["brief"]
    # Without --until the run goes on where it stands.
    assert (next_of(home_repo, made.id)["step"]) is None
    bad = run_cli("next", made.id, "--until", "lunch", "--json", cwd=home_repo)
    assert (bad.code, bad.json["error"]["code"]) == (2, "invalid-value")


def test_a_fix_goes_question_plan_implement_with_no_research_or_design(home_repo: Path) -> None:
    res = run_cli(
        "new", "the login page 500s on an empty password", "--fix", "--json", cwd=home_repo
    )
    assert res.code == 0, res.out + res.err
    topic_id, plan = res.json["id"], Path(res.json["plan_dir"])
    data = next_of(home_repo, topic_id)
    assert (data["resume_at"], data["expects"]) == ("QUESTION", [str(plan / "task.md")])
    assert "track: fix" in data["brief"] and str(plan / "questions.md") not in data["brief"]
    artifact(plan, "task.md", track="fix")
    data = next_of(home_repo, topic_id)
    assert (data["resume_at"], data["expects"]) == ("PLAN", [str(plan / "plan.md")])
    assert "A bug fix (`track: fix`)" in data["brief"] and "structure.md" not in data["brief"]
    artifact(plan, "plan.md")
    assert next_of(home_repo, topic_id)["resume_at"] == "IMPLEMENT"
    phase = run_cli("phase", topic_id, "--json", cwd=home_repo).json
    assert phase["completed"] == ["WORKTREE", "QUESTION", "PLAN"]


# -- the test-first gate, the verifier, the PR -------------------------------------------


def test_the_tests_step_has_the_orchestrator_run_and_record_the_gate(home_repo: Path) -> None:
    made = new_topic(home_repo)
    artifact(made.plan_dir, "plan.md")
    data = next_of(home_repo, made.id)
    assert (data["step"], data["expects"]) == ("tests", [str(made.plan_dir / "tests-1.md")])
    flat = " ".join(data["brief"].split())
    assert "The test-first gate: you run it." in flat and "commits nothing" in flat
    for verdict in ("RED", "BROKEN"):
        assert f"team-router record tests {made.id} {verdict} --body-file <gate.md> --json" in flat
    assert "team-router:implementer" not in data["brief"]  # the slices wait for the gate
    assert run_cli("record", "tests", made.id, "RED", cwd=home_repo).code == 0
    flat = " ".join(next_of(home_repo, made.id)["brief"].split())
    assert "team-router:verifier" in flat and "team-router:security-reviewer" in flat
    assert f"team-router record verify {made.id} PASS --body-file <report.md> --json" in flat
    assert "security CRITICAL or HIGH" in flat


def test_the_pr_brief_opens_drafts_from_the_body_template_and_closes_the_issue_from_home_only(
    workspace, tmp_path, monkeypatch
):
    from helpers.fakegh import hide_gh

    home = _github_home(workspace)
    hide_gh(tmp_path, monkeypatch)
    made = new_topic(home, "https://github.com/acme/web/issues/12 limit logins")
    plan = made.plan_dir
    artifact(plan, "plan.md")
    (plan / "design.md").write_text(
        "---\ntopic: limit-logins\ndate: 2026-05-01\nphase: design\n---\n\n# Design\n\n"
        "## Summary\nLogins are limited to 5 a minute per account.\n\n## Current state\nNone.\n",
        encoding="utf-8",
    )
    commit(made.worktrees["home"], "a.py", "a = 1\n", "slice")
    assert run_cli("record", "review", made.id, "PASS", cwd=home).code == 0
    brief = next_of(home, made.id)["brief"]
    assert "gh pr create --draft --head" in brief
    assert "   ## Summary\n   Logins are limited to 5 a minute per account.\n" in brief
    for heading in ("## Testing", "## Verification", "## Review notes", "## Companion PRs"):
        assert f"   {heading}\n" in brief
    assert "   Closes #12\n" in brief
    assert "The closing\n   line `Closes #12` goes on the home repo's PR only" in brief


# -- after the PR ------------------------------------------------------------------------


def test_a_shipped_topic_lists_each_prs_open_review_threads_to_address(
    workspace, tmp_path, monkeypatch
):
    from helpers.fakegh import install_fake_gh, make_github_repo, thread

    home = make_github_repo(workspace, "web")
    api = make_github_repo(workspace, "api")
    made = new_topic(home)
    write_repos_md(made, {"api": api})
    assert run_cli("worktrees", made.id, "--json", cwd=home).code == 0
    commit(made.worktrees["home"], "a.py", "a = 1\n", "slice")
    web_url, api_url = "https://github.com/acme/web/pull/3", "https://github.com/acme/api/pull/4"
    assert run_cli("record", "pr", made.id, web_url, cwd=home).code == 0
    assert run_cli("record", "pr", made.id, api_url, "--repo", "api", cwd=home).code == 0
    fake = install_fake_gh(
        tmp_path,
        monkeypatch,
        repos=("acme/web", "acme/api"),
        threads={
            "acme/web#3": [
                thread("a.py", 1, ("rev", "Name this constant.\nIt is magic."), ("me", "ok")),
                thread("b.py", 9, ("rev", "Done already."), resolved=True),
            ],
            "acme/api#4": [],
        },
    )
    data = next_of(home, made.id)
    assert (data["resume_at"], data["step"]) == ("SHIPPED", "teardown")
    assert data["threads"] == [
        {
            "repo": "home",
            "url": web_url,
            "threads": [
                {
                    "path": "a.py",
                    "line": 1,
                    "outdated": False,
                    "comments": [
                        {"author": "rev", "body": "Name this constant.\nIt is magic."},
                        {"author": "me", "body": "ok"},
                    ],
                }
            ],
            "reason": None,
        },
        {"repo": "api", "url": api_url, "threads": [], "reason": None},
    ]
    brief = data["brief"]
    assert "**Review threads are open.**" in brief and "team-router:implementer" in brief
    assert (
        f"home: {web_url}\n1. `a.py:1`\n   > rev: Name this constant.\n   > It is magic.\n"
        "   > me: ok\n"
    ) in brief
    assert "Done already." not in brief  # resolved
    asked = [c for c in fake.calls() if c[:2] == ["api", "graphql"]]
    assert len(asked) == 2  # once per PR, no polling


def test_without_gh_a_shipped_topic_says_its_threads_were_not_read(
    home_repo, tmp_path, monkeypatch
):
    from helpers.fakegh import hide_gh

    made = new_topic(home_repo)
    commit(made.worktrees["home"], "a.py", "a = 1\n", "slice")
    url = "https://github.com/acme/web/pull/3"
    assert run_cli("record", "pr", made.id, url, cwd=home_repo).code == 0
    hide_gh(tmp_path, monkeypatch)
    data = next_of(home_repo, made.id)
    assert data["threads"][0]["threads"] is None and "gh" in data["threads"][0]["reason"]
    assert f"(The review threads of {url} were not read: " in data["brief"]
    assert "Nothing more runs until it is merged" in data["brief"]
