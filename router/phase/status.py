"""``team-router status``: every topic of the home repo, where it resumes, each repo's state."""

from __future__ import annotations

import os
from pathlib import Path

from router.phase import infer as phases
from router.phase.idle import DirtyAll, HostWorktree, host_worktree
from router.plandir.remembered import Remembered, Stamp, stamp
from router.records import record
from router.topic import discovery
from router.topic.discovery import discover_at, repo_place
from router.topic.holders import ANSWERS_FILE, REMEMBERED_FILE, STATE_DIR
from router.topic.model import works_in_main_tree
from router.topic.planpath import hidden_plan_dirs
from router.topic.runs import RUN, PlanDir, Records
from router.topic.workspace import Repo, open_repo


@record
class RepoState:
    name: str
    worktree: str | None  # the checkout carrying the topic's work; None when it has none
    dirty: bool | None  # None: no checkout to ask, or git could not tell
    ahead: int | None  # commits since the merge-base with the default branch; None: unknown
    main_tree: str | None = None  # the primary clone, when the repo fell back to work there
    # The topic's worktree whose directory is gone (deleted by hand).
    missing: str | None = None
    # Whether git still lists it (False: no longer; its branch is kept): text only, the
    # JSON names the missing worktree alike.
    listed: bool = True

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "worktree": self.worktree,
            "dirty": self.dirty,
            "ahead": self.ahead,
            "missing": self.missing,
        }


@record
class TopicState:
    id: str
    plan_dir: str
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


@record
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
    entries = repo.git.worktree_list()
    # The home's records and plan dirs as discovery read them: each record file and each
    # checkout's docs/plans/ is read once by the whole command.
    records = found.records or Records(repo.common_dir)
    live = sorted(discovery.topics(repo_place(repo, entries), records).items())
    runs = [(i, p) for i, p in live if p.kind == RUN]
    hosts = [
        host_worktree(repo, i, p.checkout) for i, p in live if p.kind != RUN and records.live(i)
    ]
    warnings += [hidden.message for hidden in hidden_plan_dirs(repo, entries, records)]
    topics = _topic_states(repo, runs, records, warnings)
    current = found.plan.id if found.plan is not None else None
    return StatusResult(
        repo.primary,
        tuple(topics),
        tuple(dict.fromkeys(warnings)),
        asked=here.primary,
        current=current,
        host_worktrees=tuple(hosts),
    )


def _topic_states(
    repo: Repo, runs: list[tuple[str, PlanDir]], records: Records, warnings: list[str]
) -> list[TopicState]:
    """The state of each run not torn down, its warnings added to ``warnings`` in order."""
    refs = phases.RepoRefs()  # every branch tip of a repo in one git process, for all topics
    # Each topic's answer is worked out again only when a file it follows from changed
    # since a status worked it out; each artifact is read only when it changed itself.
    cache = os.path.join(repo.common_dir, STATE_DIR)
    answers = Remembered(os.path.join(cache, ANSWERS_FILE))
    remembered = Remembered(os.path.join(cache, REMEMBERED_FILE))
    # git answers whether each worktree of a topic holds changes: each one's git starts as
    # soon as the topic's repos are known and runs while this thread works out everything
    # else (the refs answer for every other topic); the answers are read last.
    asked = DirtyAll()
    try:
        kept = _live_topics(repo, runs, records, (answers, remembered), refs, asked)
        for (_id, plan), topic in kept:
            warnings += topic.found
            if topic.resume is None:
                _work_out(topic, repo, plan, refs, remembered, answers, records)
        answers.save()
        remembered.save()
        flat = [r for _run, topic in kept for r in topic.repos]
        at = {id(r): phases.location(r, refs) for r in flat}
        # The worktrees' rows last, their gits the longest under way.
        rows = [r for r in flat if at[id(r)][1] != "HEAD"]
        rows += [r for r in flat if at[id(r)][1] == "HEAD"]
        states = {id(r): _repo_state(r, refs, at[id(r)], asked) for r in rows}
    except BaseException as exc:
        asked.close(exc)
        raise
    asked.close()
    topics = []
    for (topic_id, plan), topic in kept:
        warnings += topic.more
        repos = tuple(states[id(r)] for r in topic.repos)
        assert topic.resume is not None  # worked out above
        topics.append(TopicState(topic_id, plan.dir, topic.resume, repos))
    return topics


def _live_topics(
    repo: Repo,
    runs: list[tuple[str, PlanDir]],
    records: Records,
    memories: tuple[Remembered, Remembered],
    refs: phases.RepoRefs,
    asked: DirtyAll,
) -> list[tuple[tuple[str, PlanDir], _Topic]]:
    """Each run not torn down with its topic, its repos known (recalled, else read), and the
    git of each of their worktrees asked at once."""
    answers, remembered = memories
    kept = []
    for run in runs:
        topic = _recalled(repo, run[1], records, answers, remembered)
        # Only a live topic's answer is remembered, under its record's identity: one
        # recalled is live still, and its record need not be read (a torn-down one's is).
        if topic.resume is None:
            if not records.live(run[0]):
                continue
            topic.repos = phases.topic_repos(repo, run[1], topic.found, records=records)
        for topic_repo in topic.repos:
            where, rev = phases.location(topic_repo, refs)
            if rev == "HEAD" and where is not None:
                asked.ask(where)
        kept.append((run, topic))
    return kept


class _Topic:
    """One topic's answer in the making: its repos and the warnings found reading them, then its
    resume point and the warnings found assessing it (``resume`` None: not worked out yet).
    ``files``: its plan dir as discovery listed it, each file by name with its identity, and
    ``facts`` what else the answer follows from (None: not remembered)."""

    __slots__ = ("facts", "files", "found", "more", "named", "repos", "resume")

    def __init__(
        self,
        files: list[os.DirEntry[str]] | None = None,
        named: list[tuple[str, os.stat_result]] | None = None,
        facts: tuple[str, ...] = (),
    ) -> None:
        self.files, self.named, self.facts = files, named, facts
        self.repos: list[phases.TopicRepo] = []
        self.resume: phases.Resume | None = None
        self.found: list[str] = []
        self.more: list[str] = []


def _recalled(
    repo: Repo, plan: PlanDir, records: Records, answers: Remembered, remembered: Remembered
) -> _Topic:
    """The topic as a status worked it out before, while every file it followed from is as it
    was then: its record, and each file of its plan dir by name (one added or taken away
    changes the answer too), as discovery listed them; else a topic to work out."""
    files = records.files(plan.dir)
    record = records.identity(plan.id)
    if files is None or record is None:
        return _Topic()
    # What else the answer follows from, besides the files: where the repo is, and whether
    # the topic's checkout exists (the WORKTREE evidence); the key names the plan dir.
    primary = str(repo.primary)
    exists = phases.worktree_exists(primary, plan)
    topic = _Topic(files, sorted([(e.name, e.stat()) for e in files]), (primary, str(exists)))
    value = answers.get(plan.dir, _answer_stamp(topic, record))
    if value is not None and _answer_from_json(topic, value):
        # The artifacts' own entries stand behind this answer: kept for the day one changes.
        remembered.keep(e.path for e in files)
    return topic


def _answer_from_json(topic: _Topic, value: object) -> bool:
    """Fill ``topic`` from a remembered answer as :func:`_answer_json` made it; False (and
    ``topic`` as it was) for anything else."""
    if not (type(value) is list and len(value) == 7):
        return False
    at, step, halted, completed, repos, found, more = value
    # JSON gives each value its exact type, never a subclass: one look at each.
    shaped = (
        type(at) is str
        and type(step) in _TEXT_OR_NONE
        and type(halted) is bool
        and _all_of(completed, _TEXT)
        and _all_of(found, _TEXT)
        and _all_of(more, _TEXT)
        and type(repos) is list
        and all(len(r) == 4 and _all_of(r, _TEXT_OR_NONE) for r in repos)
    )
    if not shaped:
        return False
    topic.repos = [phases.TopicRepo(*r) for r in repos]
    topic.resume = phases.Resume(at, step, halted, tuple(completed))
    topic.found, topic.more = found, more
    return True


_TEXT: frozenset[type] = frozenset({str})
_TEXT_OR_NONE: frozenset[type] = frozenset({str, type(None)})


def _all_of(value: object, kinds: frozenset[type]) -> bool:
    """``value`` is a list whose every item is of one of ``kinds`` exactly."""
    return type(value) is list and {*map(type, value)} <= kinds


def _work_out(
    topic: _Topic,
    repo: Repo,
    plan: PlanDir,
    refs: phases.RepoRefs,
    remembered: Remembered,
    answers: Remembered,
    records: Records,
) -> None:
    """Assess the topic from its files; remembered when the answer asked nothing but them."""
    signals: list[str] = []
    resume, _inv, more = phases.assess(
        repo,
        plan,
        topic.repos,
        refs,
        remembered,
        files=topic.files,
        signals=signals,
        records=records,
    )
    topic.resume, topic.more = resume, more
    # Stamped with the record's identity as its bytes were read (topic_repos read them).
    record = records.identity(plan.id)
    if topic.named is not None and record is not None and not signals:
        answers.put(plan.dir, _answer_stamp(topic, record), _answer_json(topic))


def _answer_stamp(topic: _Topic, record: os.stat_result) -> Stamp:
    assert topic.named is not None
    return stamp([("record", record), *topic.named], topic.facts)


def _answer_json(topic: _Topic) -> list[object]:
    resume = topic.resume
    assert resume is not None
    repos = [list(r) for r in topic.repos]
    return [
        resume.resume_at,
        resume.step,
        resume.halted,
        list(resume.completed),
        repos,
        topic.found,
        topic.more,
    ]


def _repo_state(
    topic_repo: phases.TopicRepo, refs: phases.RepoRefs, at: tuple[str | None, str], asked: DirtyAll
) -> RepoState:
    """The repo's row; ``at``: its :func:`~router.phase.infer.location`, ``asked``: where
    its worktree's state is asked."""
    where, rev = at
    worktree = where if rev == "HEAD" else None
    ahead = phases.commits_ahead(topic_repo, refs, at)
    fell_back = works_in_main_tree(topic_repo.name, topic_repo.path, topic_repo.worktree)
    main_tree = topic_repo.path if fell_back else None
    gone = topic_repo.worktree if topic_repo.worktree and worktree is None else None
    missing = gone if gone is not None and not os.path.lexists(gone) else None
    dirty = asked.dirty(worktree) if worktree is not None else None
    # Asked of the repo that had it, home or not: a deleted worktree stays listed until
    # its registration is pruned, and the words say which.
    listed = missing is None or _lists(topic_repo.path, missing)
    return RepoState(topic_repo.name, worktree, dirty, ahead, main_tree, missing, listed)


def _lists(primary: str | None, worktree: str) -> bool:
    """Whether the repo whose primary clone is ``primary`` still lists ``worktree``."""
    from router.git import Git

    return primary is not None and Git(Path(primary)).lists_worktree(Path(worktree))


# A worktree deleted by hand, in the words `phase`, `next` and the recovery hook use for it.
WORKTREE_MISSING = f"(missing: {phases.DIRECTORY_GONE})"
WORKTREE_UNLISTED = f"(missing: {phases.NOT_LISTED})"
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
        return f"{repo.missing} {WORKTREE_MISSING if repo.listed else WORKTREE_UNLISTED}"
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
