"""Every repo of a topic, for commands that act on all of them (teardown, restore, local-state).

The plan dir's ``repos.md`` names the repos while the plan dir exists; the
home record (in the home repo's common git dir) keeps the same list so a
second run, after teardown removed the plan dir, still knows every repo.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from router.errors import BadInput, ErrorCode, RouterError
from router.git import WorktreeEntry
from router.names import ID_RE, branch_for, parse_id
from router.parallel import parallel_map
from router.plandir.artifacts import HOME, read_temp_paths
from router.plandir.reposmd import REPOS_MD, ReposFile, WorktreeLine, read_repos_md, worktree_lines
from router.reasons import Reason, Why
from router.records import record
from router.topic import state
from router.topic.containment import Containment, contain_all
from router.topic.model import repo_places
from router.topic.planpath import PlanDirSymlink
from router.topic.target import home_repo, resolve
from router.topic.workspace import Repo, open_repo


@record
class RepoTarget:
    """One repo of the topic, with what its own record says about the topic."""

    name: str
    path: Path  # the repo's primary root (as listed, when it cannot be opened)
    branch: str
    worktree: Path | None  # recorded worktree; never trusted to be a linked one
    repo: Repo | None = None  # None when ``unusable`` says why it cannot be used
    record: state.TopicRecord | None = None
    is_home: bool = False
    unusable: Why | None = None  # a repo-unusable reason
    # The repo's worktree list as this command read it while resolving (the
    # home's, when a plan dir was found); None: not read yet.
    entries: tuple[WorktreeEntry, ...] | None = None


@record
class TopicScope:
    id: str
    branch: str
    home: Repo
    plan_dir: Path | None  # None when it is gone (resolved from the home record)
    repos: tuple[RepoTarget, ...]
    temp_paths: tuple[str, ...]
    warnings: tuple[str, ...] = ()

    def repo_paths(self) -> tuple[Path, ...]:
        """Every primary clone, worktree and git dir the topic names (never a temp path)."""
        paths = [self.home.primary, self.home.common_dir]
        for t in self.repos:
            paths += [t.path, *([t.worktree] if t.worktree else [])]
            if t.repo is not None:
                paths += [t.repo.primary, t.repo.common_dir]
        return tuple(dict.fromkeys(paths))

    def only(self, name: str | None) -> tuple[RepoTarget, ...]:
        if name is None:
            return self.repos
        picked = tuple(r for r in self.repos if r.name == name)
        if not picked:
            names = ", ".join(r.name for r in self.repos)
            raise RouterError(
                ErrorCode.NO_REPO, f"{self.id} has no repo named {name!r} (it has: {names})"
            )
        return picked


def resolve_topic(cwd: Path, target: str) -> TopicScope:
    """The topic named by ``target`` (id or plan dir), its plan dir if any, and every repo."""
    try:
        home, plan, entries, _missing = resolve(cwd, target, listed=True)
    except BadInput as exc:
        if exc.code != ErrorCode.NO_PLAN_DIR:
            raise
        return _from_record(cwd, target, exc)
    except PlanDirSymlink as exc:
        # What lies behind the link is not read (its repos.md, its temp-paths):
        # the record alone names the repos, as after the plan dir is gone.
        return _from_record(cwd, target, exc)
    warnings: list[str] = []
    record = state.read_record_or_none(home.common_dir, plan.id, warnings)
    parsed, section = _repos_md(plan.path, record, warnings)
    repos = _targets(home, plan.id, record, parsed, warnings, entries, section)
    temps = topic_temp_paths(record, plan.path)
    return TopicScope(plan.id, branch_for(plan.id), home, plan.path, repos, temps, tuple(warnings))


def _from_record(cwd: Path, target: str, original: RouterError) -> TopicScope:
    topic_id = Path(target).name if not ID_RE.fullmatch(target) else target
    if not ID_RE.fullmatch(topic_id):
        if _meant_as_id(cwd, target):
            parse_id(target)  # raises invalid-id, naming the rule the id breaks
        raise original
    # From a secondary repo its record names the home, where the home record is.
    home = home_repo(open_repo(cwd), topic_id)
    linked = isinstance(original, PlanDirSymlink)
    warnings: list[str] = [original.message] if linked else []
    record = state.read_record_or_none(home.common_dir, topic_id, warnings)
    if record is None or record.repo != HOME:
        if linked:
            raise original
        raise RouterError(
            ErrorCode.NO_PLAN_DIR,
            f"no plan dir and no home record for {topic_id!r} in {home.primary}; run this from "
            "the topic's home repo, or check the id with `team-router status`",
        )
    repos = _targets(home, topic_id, record, None, warnings)
    return TopicScope(
        topic_id,
        record.branch or branch_for(topic_id),
        home,
        None,
        repos,
        topic_temp_paths(record),
        tuple(warnings),
    )


def _meant_as_id(cwd: Path, target: str) -> bool:
    """A bare word that names no file: an id with a typo, not a plan dir path."""
    return "/" not in target and target not in {".", ".."} and not (cwd / target).exists()


def topic_temp_paths(record: state.TopicRecord | None, *plan_dirs: Path) -> tuple[str, ...]:
    """A topic's temp paths: its plan dir's list, else what its home record kept.

    The first of ``plan_dirs`` whose temp-paths file lists any answers; the
    record's copy answers once the plan dir is gone (teardown records them
    before it deletes the plan dir), so every command names the same paths.
    """
    for plan_dir in plan_dirs:
        found = read_temp_paths(plan_dir)
        if found:
            return tuple(found)
    return tuple(record.temp_paths) if record else ()


def _repos_md(
    plan_dir: Path, record: state.TopicRecord | None, warnings: list[str]
) -> tuple[ReposFile | None, list[WorktreeLine]]:
    """repos.md parsed, and its ``## Worktrees`` lines.

    A malformed one does not stop a command acting on the topic when the home
    record exists: the record and the ``## Worktrees`` section the router wrote
    name every repo that has a worktree (``status`` lists them the same way), so
    the error is a warning. Without a home record repos.md is the only list,
    and its error stands.
    """
    path = plan_dir / REPOS_MD
    if not path.is_file():
        return None, []
    try:
        parsed = read_repos_md(path)
    except BadInput as exc:
        if exc.code != ErrorCode.REPOS_MD or record is None:
            raise
        warnings.append(f"{exc.message}; the topic's records name its repos, so this went on")
        return None, _section(path)
    return parsed, worktree_lines(parsed)


def _section(path: Path) -> list[WorktreeLine]:
    """The ``## Worktrees`` lines of a repos.md that does not parse as a whole ([] if unreadable)."""
    try:
        return worktree_lines(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return []


def _targets(
    home: Repo,
    topic_id: str,
    record: state.TopicRecord | None,
    parsed: ReposFile | None,
    warnings: list[str],
    home_entries: tuple[WorktreeEntry, ...] | None = None,
    lines: Sequence[WorktreeLine] = (),
) -> tuple[RepoTarget, ...]:
    """Home first, then the secondaries in ``repos.md`` order, then any only the record knows."""
    listed = {ln.name: ln.placed for ln in lines if ln.placed}
    entries = {e.name: e for e in record.repos} if record else {}
    in_repos_md = [(s.name, s.path) for s in parsed.secondaries] if parsed else []
    places = repo_places(home.primary, None, record, in_repos_md, lines)
    jobs = [
        (p.name, Path(p.primary), Path(p.worktree) if p.worktree else None)
        for p in places[1:]
        if p.primary is not None  # only the section names it: no repo to act on
    ]
    verdicts = contain_all([path for _, path, _ in jobs], home)
    secondaries = parallel_map(
        lambda n: _secondary(*jobs[n][:2], topic_id, jobs[n][2], verdicts[n], warnings),
        list(range(len(jobs))),
    )
    return (_home_target(home, topic_id, record, listed, entries, home_entries), *secondaries)


def _home_target(home, topic_id, record, listed, entries, worktree_list=None) -> RepoTarget:
    worktree = record.worktree if record else None
    if worktree is None and HOME in entries and entries[HOME].worktree:
        worktree = entries[HOME].worktree
    path = Path(worktree) if worktree else listed.get(HOME)
    branch = record.branch if record and record.branch else branch_for(topic_id)
    return RepoTarget(
        HOME, home.primary, branch, path, home, record, is_home=True, entries=worktree_list
    )


def _secondary(
    name: str,
    path: Path,
    topic_id: str,
    worktree: Path | None,
    verdict: Containment,
    warnings: list[str],
) -> RepoTarget:
    branch: str = branch_for(topic_id)
    repo = verdict.repo
    if repo is None:
        # A duplicate is the same repository as an earlier entry: acting on it
        # again would integrate the same commits into the same primary twice.
        warnings.append(f"{name}: {verdict.detail}; nothing done there")
        return RepoTarget(name, path, branch, worktree, unusable=_unusable(verdict))
    record = state.read_record_or_none(repo.common_dir, topic_id, warnings)
    if record is not None:
        branch = record.branch or branch
        worktree = Path(record.worktree) if record.worktree else worktree
    return RepoTarget(name, repo.primary, branch, worktree, repo, record)


def _unusable(verdict: Containment) -> Why:
    """Why a listed repo cannot be used: its error code and the containment's kind and facts."""
    return Why(
        Reason.REPO_UNUSABLE,
        code=str(verdict.reason or ""),
        kind=str(verdict.kind or ""),
        path=verdict.path,
        items=tuple(p for p in (verdict.at, verdict.where) if p),
    )
