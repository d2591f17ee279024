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
