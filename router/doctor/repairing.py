"""How doctor repairs: in a safe order, under the locks of what it repairs, stopping on a signal."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from router import interrupt
from router.doctor.findings import Finding, Fix, Kind, NotSafe, Problem
from router.git import GitError
from router.ioerror import describe_io
from router.names import ID_RE
from router.records import replace
from router.topic import state
from router.topic.workspace import Repo

_ORDER = {
    # Registrations before directories and branches (a registration holds its
    # branch); branches before records (a record goes only once its branch has).
    Kind.REGISTRATION_DIR_GONE: 0,
    Kind.UNKNOWN_DIR: 1,
    Kind.ORPHAN_BRANCH: 2,
    Kind.RECORD_DIR_GONE: 3,
    Kind.STALE_HOLDER: 4,
    Kind.STALE_LOCK: 5,
}


def guard_late_repair(problem: Problem, repos: list[Repo], held: set[tuple[str, str]]) -> Problem:
    """A problem that appeared after the locks were taken is reported, not repaired."""

    from router.create.creation import REPO_LOCK

    name = problem.lock_name
    if problem.fix is None or name is None or name == REPO_LOCK:
        return problem
    common = next(str(r.common_dir) for r in repos if r.primary == problem.finding.repo)
    if (common, name) in held:
        return problem

    def later() -> str:
        raise NotSafe(
            "appeared while doctor was repairing; run `team-router doctor --repair` again"
        )

    return replace(problem, fix=later)


def _topic_home(repo: Repo, name: str) -> Repo:
    """The home of the topic ``name`` as seen from ``repo`` (``repo`` itself for a home)."""
    from router.topic.target import home_repo

    return home_repo(repo, name) if ID_RE.fullmatch(name) else repo


def repair_order(problems: list[Problem]) -> list[Problem]:
    return sorted(problems, key=lambda p: _ORDER.get(p.finding.kind, 9))


def apply_repair(problem: Problem) -> Finding:

    finding, fix = problem.finding, problem.fix
    if fix is None:
        return finding
    return interrupt.unless_stopped(
        lambda: _repair(finding, fix),
        lambda why, _started: replace(finding, detail=f"{finding.detail}; {why}"),
    )


def _repair(finding: Finding, fix: Fix) -> Finding:

    try:
        done = fix()
    except NotSafe as exc:
        return replace(finding, detail=f"{finding.detail}; {exc}")
    except GitError as exc:
        return replace(finding, detail=f"{finding.detail}; repair failed: {exc}")
    except OSError as exc:
        why = describe_io(exc)
        return replace(finding, detail=f"{finding.detail}; repair failed: {why}")
    return replace(finding, detail=f"{finding.detail}; {done}", repaired=True)


@contextlib.contextmanager
def repair_locks(
    home: Repo, repos: list[Repo], problems: list[Problem], wait: float
) -> Iterator[set[tuple[str, str]]]:
    """Every topic lock the repairs touch (sorted), then each repo's ``_repo`` lock.

    Creation takes a topic lock and then ``_repo``; taking them in the same
    order here means doctor and a running ``new`` can never wait on each other
    in a circle.
    """
    from router.create.creation import REPO_LOCK

    wanted: set[tuple[str, str]] = set()
    by_dir = {str(r.common_dir): r.common_dir for r in repos}
    homes: dict[str, Path] = {}  # topic homes outside ``repos``: their topic lock only
    for problem in problems:
        name = problem.lock_name
        if problem.fix is None or name is None or name == REPO_LOCK:
            continue
        repo = next(r for r in repos if r.primary == problem.finding.repo)
        wanted.add((str(repo.common_dir), name))
        if problem.finding.kind is not Kind.STALE_LOCK:
            wanted.add((str(home.common_dir), name))
            # Run in a secondary, ``home`` is that repo; teardown and the other
            # commands lock the topic where the secondary's record names its home.
            topic_home = _topic_home(repo, name)
            homes[str(topic_home.common_dir)] = topic_home.common_dir
            wanted.add((str(topic_home.common_dir), name))
    with contextlib.ExitStack() as stack:
        for common, name in sorted(wanted):
            stack.enter_context(state.held_lock({**homes, **by_dir}[common], name, wait=wait))
        for common in sorted(by_dir):
            stack.enter_context(state.held_lock(by_dir[common], REPO_LOCK, wait=wait))
        yield wanted
