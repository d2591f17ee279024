"""Doctor's check of a plan dir's repos.md ``## Worktrees`` section against git."""

from __future__ import annotations

import os
from pathlib import Path

from router.doctor.findings import Kind, Problem, new_finding
from router.errors import BadInput
from router.git import GitError
from router.records import record
from router.topic import state
from router.topic.containment import contain_all
from router.topic.workspace import Repo


def worktrees_section_problems(home: Repo) -> list[Problem]:
    from router.plandir.reposmd import REPOS_MD
    from router.topic.discovery import candidates

    found = []
    seen: set[str] = set()
    for plan in candidates(home):
        if plan.id in seen or not (plan.path / REPOS_MD).is_file():
            continue
        seen.add(plan.id)
        for problem in _section_disagreements(home, plan.id, plan.path / REPOS_MD):
            finding = new_finding(
                home, Kind.WORKTREES_SECTION, plan.path / REPOS_MD, problem, plan.id
            )
            found.append(Problem(finding))
    return found


def _section_disagreements(home: Repo, topic_id: str, path: Path) -> list[str]:
    from router.plandir.reposmd import read_repos_md

    try:
        parsed = read_repos_md(path)
    except BadInput as exc:
        return [f"repos.md cannot be checked: {exc.message}"]
    if parsed.worktrees_span is None:
        return []
    listed = _section_lines(parsed)
    actual = _actual_locations(home, parsed, topic_id)
    problems = []
    for name, where in listed.items():
        if name not in actual:
            problems.append(
                f"lists {name!r}, which is not a repo of this topic that passed containment"
            )
        elif os.path.realpath(where) not in actual[name].all:
            problems.append(f"{name}: lists {where}, but git has no checkout of it there")
    for name, place in actual.items():
        if place.worktrees and name not in listed:
            problems.append(
                f"{name} has a worktree ({place.worktrees[0]}) the section does not list"
            )
    return [f"{p}; run `team-router worktrees {topic_id}` to rewrite it" for p in problems]


@record
class _Places:
    """Where a repo of the topic may be worked on: its main tree (a fallback) or a worktree."""

    primary: str
    worktrees: list[str]

    @property
    def all(self) -> set[str]:
        return {self.primary, *self.worktrees}


def _section_lines(parsed) -> dict[str, str]:
    from router.plandir.reposmd import worktree_lines

    return {line.name: line.path for line in worktree_lines(parsed)}


def _actual_locations(home: Repo, parsed, topic_id: str) -> dict[str, _Places]:
    """Per repo name: its primary root and its worktrees on the topic's branch, per git."""
    from router.names import branch_for

    branch = branch_for(topic_id)
    repos: dict[str, Repo] = {"home": home}
    verdicts = contain_all([spec.path for spec in parsed.secondaries], home)
    for spec, verdict in zip(parsed.secondaries, verdicts, strict=True):
        if verdict.repo is not None:
            repos[spec.name] = verdict.repo
    actual = {}
    for name, repo in repos.items():
        try:
            entries = repo.git.worktree_list()
        except GitError:
            continue
        # A checkout `new` reused keeps its own branch; the repo's record names it.
        wanted = {branch, _recorded_branch(repo, topic_id) or branch}
        on_branch = sorted(os.path.realpath(e.path) for e in entries[1:] if e.branch in wanted)
        actual[name] = _Places(str(repo.primary), on_branch)
    return actual


def _recorded_branch(repo: Repo, topic_id: str) -> str | None:
    record = state.read_record_or_none(repo.common_dir, topic_id)  # corrupt: its own check
    return record.branch if record is not None else None
