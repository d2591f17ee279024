"""``team-router status``: every topic of the home repo, where it resumes, each repo's state."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from router.parallel import parallel_map
from router.phase import infer as phases
from router.phase.idle import HostWorktree, host_worktree, worktree_dirty
from router.plandir.remembered import Remembered
from router.topic import discovery
from router.topic.discovery import discover_at, repo_place
from router.topic.holders import REMEMBERED_FILE, STATE_DIR
from router.topic.model import works_in_main_tree
from router.topic.planpath import hidden_plan_dirs
from router.topic.runs import RUN, Records
from router.topic.workspace import open_repo


@dataclass(frozen=True, slots=True)
class RepoState:
    name: str
    worktree: str | None  # the checkout carrying the topic's work; None when it has none
    dirty: bool | None  # None: no checkout to ask, or git could not tell
    ahead: int | None  # commits since the merge-base with the default branch; None: unknown
    main_tree: str | None = None  # the primary clone, when the repo fell back to work there
    # The topic's worktree git still lists whose directory is gone (deleted by hand).
    missing: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "worktree": self.worktree,
            "dirty": self.dirty,
            "ahead": self.ahead,
            "missing": self.missing,
        }


@dataclass(frozen=True, slots=True)
class TopicState:
    id: str
    plan_dir: Path
    resume: phases.Resume
    repos: tuple[RepoState, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "plan_dir": str(self.plan_dir),
            "resume_at": self.resume.resume_at,
            "step": self.resume.step,
            "halted": self.resume.halted,
            "repos": [r.to_json() for r in self.repos],
        }


@dataclass(frozen=True, slots=True)
class StatusResult:
    home: Path
    topics: tuple[TopicState, ...]
    warnings: tuple[str, ...] = ()
    # The repo the command ran in: a secondary repo answers with its topics' home.
    asked: Path | None = None
    # The topic `phase` and `next` answer from where status ran (the hook's too): None for none.
    current: str | None = None
    # Worktrees the host asked for, listed apart: no /team run until an artifact is written.
    host_worktrees: tuple[HostWorktree, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "home": str(self.home),
            "current": self.current,
            "topics": [t.to_json() for t in self.topics],
            "host_worktrees": [h.to_json() for h in self.host_worktrees],
        }


def topics_status(cwd: Path) -> StatusResult:
    """Every topic of the home repo with a plan dir (primary clone or any worktree): the runs,
    and apart from them the worktrees the host asked for; marked, the one discovery answers."""
    here = open_repo(cwd)
    found = discover_at(cwd)
    repo = open_repo(Path(found.home.primary))
    warnings: list[str] = []
    refs = phases.RepoRefs()  # every branch tip of a repo in one git process, for all topics
    entries = repo.git.worktree_list()
    # The home's records and plan dirs as discovery read them: each record file and each
    # checkout's docs/plans/ is read once by the whole command.
    records = found.records or Records(repo.common_dir)
    live = sorted(discovery.topics(repo_place(repo, entries), records).items())
    plans = [(i, p) for i, p in live if records.live(i) and p.kind == RUN]
    hosts = [
        host_worktree(repo, i, p.checkout) for i, p in live if records.live(i) and p.kind != RUN
    ]
    warnings += [hidden.message for hidden in hidden_plan_dirs(repo, entries, records)]
    repos_of = [phases.topic_repos(repo, plan, warnings, records=records) for _id, plan in plans]
    flat = [r for repos in repos_of for r in repos]
    for path in dict.fromkeys(r.path for r in flat if r.path):
        if os.path.isdir(path):
            refs.of(path)  # read once, before the workers share it
    # git answers for the topics that have a worktree (or a moved branch): those
    # few questions run side by side; the refs answer for every other topic.
    in_worktrees = [r for r in flat if phases.location(r)[1] == "HEAD"]
    asked = parallel_map(lambda r: _repo_state(r, refs), in_worktrees)
    states = dict(zip(map(id, in_worktrees), asked, strict=True))
    for r in flat:
        if id(r) not in states:
            states[id(r)] = _repo_state(r, refs)
    topics = []
    # Each artifact is read when it changed since a status read it, else remembered.
    remembered = Remembered(os.path.join(repo.common_dir, STATE_DIR, REMEMBERED_FILE))
    for (topic_id, plan), repos in zip(plans, repos_of, strict=True):
        resume, _inv, more = phases.assess(repo, plan, repos, refs, remembered)
        warnings += more
        topics.append(TopicState(topic_id, plan.path, resume, tuple(states[id(r)] for r in repos)))
    remembered.save()
    current = found.plan.id if found.plan is not None else None
    return StatusResult(
        repo.primary,
        tuple(topics),
        tuple(dict.fromkeys(warnings)),
        asked=here.primary,
        current=current,
        host_worktrees=tuple(hosts),
    )


def _repo_state(topic_repo: phases.TopicRepo, refs: phases.RepoRefs) -> RepoState:
    where, rev = phases.location(topic_repo)
    worktree = where if rev == "HEAD" else None
    ahead = phases.commits_ahead(topic_repo, refs)
    fell_back = works_in_main_tree(topic_repo.name, topic_repo.path, topic_repo.worktree)
    main_tree = topic_repo.path if fell_back else None
    gone = topic_repo.worktree if topic_repo.worktree and worktree is None else None
    missing = gone if gone is not None and not os.path.lexists(gone) else None
    dirty = worktree_dirty(worktree)
    return RepoState(topic_repo.name, worktree, dirty, ahead, main_tree, missing)


# A worktree deleted by hand, in the words `phase`, `next` and the recovery hook use for it.
WORKTREE_MISSING = f"(missing: {phases.DIRECTORY_GONE})"
CURRENT = "  <- here"  # the topic `phase` and `next` answer from where status ran


def render_table(result: StatusResult) -> str:
    """The people's view: one block per topic, one row per repo; the host's worktrees apart."""
    lines = []
    if not result.topics:
        where = str(result.home)
        if result.asked is not None and result.asked != result.home:
            where = f"{result.asked} (nor in {result.home}, the home of the topics it was in)"
        lines.append(f"No topics in {where}; start one with `team-router new`.")
    for topic in result.topics:
        step = f" ({topic.resume.step})" if topic.resume.step else ""
        halted = " HALTED" if topic.resume.halted else ""
        here = CURRENT if topic.id == result.current else ""
        lines.append(f"{topic.id}  resume at {topic.resume.resume_at}{step}{halted}{here}")
        lines.append(f"  plan dir  {topic.plan_dir}")
        width = max(len(r.name) for r in topic.repos)
        for r in topic.repos:
            dirty = {True: "dirty", False: "clean", None: "-"}[r.dirty]
            ahead = "?" if r.ahead is None else str(r.ahead)
            lines.append(f"  {r.name:<{width}}  {dirty:<5}  {ahead:>3} ahead  {_where(r)}")
    lines += _host_lines(result)
    return "\n".join(lines)


def _where(repo: RepoState) -> str:
    if repo.main_tree is not None:
        return f"works in its main tree {repo.main_tree}"
    if repo.missing is not None:
        return f"{repo.missing} {WORKTREE_MISSING}"
    return repo.worktree or "(no worktree)"


def _host_lines(result: StatusResult) -> list[str]:
    hosts = result.host_worktrees
    if not hosts:
        return []
    lines = ["", "Worktrees Claude Code asked for (claude --worktree, isolated subagents):"]
    for host in hosts:
        here = CURRENT if host.id == result.current else ""
        lines.append(f"{host.id}  {host.worktree or '(no worktree)'}{here}")
        lines.append(f"  holds {'; '.join(host.holds) or 'nothing'}")
    idle = sum(1 for h in hosts if h.idle)
    if idle:
        lines.append(f"`team-router sweep --host-worktrees` removes the {idle} that hold nothing")
    return lines
