"""``doctor [--repair]``: scan the home repo and its secondaries, then repair what is safe."""

from __future__ import annotations

from pathlib import Path

from router import interrupt
from router.doctor.findings import Finding, Kind, Problem
from router.doctor.pins import stale_pin_problems, unpinned_borrow_problems
from router.doctor.records import (
    holder_problems,
    orphan_branch_problems,
    readable_records,
    record_problems,
    stale_lock_problems,
)
from router.doctor.repairing import apply_repair, guard_late_repair, repair_locks, repair_order
from router.doctor.sections import worktrees_section_problems
from router.doctor.worktrees import (
    half_made_add_problems,
    registration_problems,
    unfinished_restore_problems,
    unknown_dir_problems,
    unlocked_problems,
)
from router.errors import ErrorCode, ExitCode
from router.records import field, record
from router.topic import state
from router.topic.containment import contain_all
from router.topic.model import repo_places
from router.topic.workspace import Repo, open_repo

_PASSES = 3


@record
class DoctorResult:
    repos: tuple[Path, ...]
    findings: tuple[Finding, ...]
    repair: bool
    warnings: list[str] = field(default_factory=list)
    stopped_by: int = 0  # the signal that stopped the repairs (router.interrupt), if one did
    # Some finding has a repair to offer: one --repair keeps says why instead (its detail).
    repairable: bool = False

    @property
    def interrupted(self) -> bool:
        return bool(self.stopped_by)

    @property
    def exit_code(self) -> int:
        return ExitCode.for_signal(self.stopped_by) if self.stopped_by else ExitCode.OK

    @property
    def error(self) -> dict[str, str] | None:
        if not self.stopped_by:
            return None
        repaired = sum(f.repaired for f in self.findings)
        left = sum(not f.repaired for f in self.findings)
        where = f"stopped after {repaired} repair(s), {left} finding(s) not repaired"
        return interrupt.interrupted_error(self.stopped_by, where)

    def to_json(self) -> dict[str, object]:
        return {
            "repos": [str(r) for r in self.repos],
            "repair": self.repair,
            "findings": [f.to_json() for f in self.findings],
        }


def doctor(cwd: Path, *, repair: bool = False, wait: float = state.DEFAULT_WAIT) -> DoctorResult:
    """Check this repo (and the secondaries its home records name); optionally repair."""
    home = open_repo(cwd)
    repos, warnings = _repos_to_check(home)
    problems = scan_repos(home, repos, here=cwd)
    if not repair:
        reported = tuple(p.finding for p in problems)
        repairable = any(p.fix is not None for p in problems)
        return DoctorResult(_roots(repos), reported, False, warnings, repairable=repairable)
    # Plan, then act: every lock the repairs need is taken before the first
    # repair, and the scan is repeated under them (the state may have moved).
    with repair_locks(home, repos, problems, wait) as held:
        # Taking a lock rewrites its owner file, so the stale owners are the
        # ones the first scan saw; everything else is scanned again.
        stale_owners = [p for p in problems if p.finding.kind is Kind.STALE_LOCK]
        findings = _repair_passes(home, repos, stale_owners, held, here=cwd)
    stopped = interrupt.received()
    if stopped and not findings:
        findings = [p.finding for p in problems]  # stopped before a repair began
    return DoctorResult(_roots(repos), tuple(findings), True, warnings, stopped_by=stopped)


def _repair_passes(
    home: Repo, repos: list[Repo], first: list[Problem], held: set[tuple[str, str]], *, here: Path
) -> list[Finding]:
    """Repair, then look again: one repair can make the next one safe (an
    unregistered worktree frees its branch; a deleted branch frees its record).

    A signal (router.interrupt) stops them at the next repair: what was
    repaired and what was not are reported as they are then.
    """
    repaired: list[Finding] = []
    extra = first
    for _ in range(_PASSES):
        try:
            problems = repair_order(scan_repos(home, repos, here=here, with_locks=False) + extra)
        except interrupt.Stopped:
            return repaired  # the scan was cut short: nothing more is known
        findings = [apply_repair(guard_late_repair(p, repos, held)) for p in problems]
        extra = []
        done = [f for f in findings if f.repaired]
        repaired += done
        if not done or interrupt.received():
            return repaired + [f for f in findings if not f.repaired]
    return repaired + [f for f in findings if not f.repaired]


def _roots(repos: list[Repo]) -> tuple[Path, ...]:
    return tuple(r.primary for r in repos)


def _repos_to_check(home: Repo) -> tuple[list[Repo], list[str]]:
    """The home repo plus every secondary its home records name (contained ones only)."""
    repos = [home]
    warnings: list[str] = []
    listed = [
        (record.id, place.name, Path(place.primary))
        for record in readable_records(home)
        if record.repo == "home"
        for place in repo_places(home.primary, None, record)[1:]
        if place.primary is not None
    ]
    verdicts = contain_all([path for _, _, path in listed], home)
    for (topic_id, name, _path), verdict in zip(listed, verdicts, strict=True):
        if verdict.repo is not None:
            repos.append(verdict.repo)
        elif verdict.reason != ErrorCode.DUPLICATE:  # another topic's record names the same repo
            warnings.append(f"{topic_id}: {name} not checked: {verdict.detail}")
    return repos, warnings


def scan_repos(
    home: Repo, repos: list[Repo], *, here: Path, with_locks: bool = True
) -> list[Problem]:
    """Every problem in ``repos``; ``here``: where doctor runs (a moved checkout may be it)."""
    problems: list[Problem] = []
    for repo in repos:
        entries = repo.git.worktree_list()
        problems += registration_problems(repo, entries, here)
        problems += unlocked_problems(repo, entries)
        problems += unfinished_restore_problems(repo)
        problems += half_made_add_problems(repo)
        problems += unknown_dir_problems(repo, entries)
        problems += orphan_branch_problems(repo, entries)
        problems += record_problems(repo, entries)
        problems += stale_lock_problems(repo) if with_locks else []
        problems += holder_problems(repo)
        problems += stale_pin_problems(repo)
        problems += unpinned_borrow_problems(repo)
    problems += worktrees_section_problems(home)
    return problems
