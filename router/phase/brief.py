"""What a brief shows beyond the plan dir's files: the repos with their checkouts and default
branches, the issue a request names, the PRs and their open review threads, the PR body's
parts, and where ``next --until`` stops.

Everything here is read so that no helper has to guess it: a default branch, an issue's
text, a reviewer's comment. Prose read from GitHub goes into the brief quoted, as data for
the model; it never reaches a command.
"""

from __future__ import annotations

import os
import re
from collections import namedtuple
from datetime import date
from pathlib import Path

from router import git as g
from router import github
from router.errors import ErrorCode, RouterError
from router.phase.infer import (
    PHASES,
    PR,
    QUESTION,
    ROUND_CAP,
    SHIPPED,
    STRUCTURE,
    WORKTREE,
    PhaseReport,
    RepoRefs,
    TopicRepo,
    assess,
    expected_artifacts,
    missing_worktrees,
    repo_missing_notes,
    ticket_of,
    topic_repos,
)
from router.plandir import artifacts as a
from router.topic.runs import Records

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.topic.runs import PlanDir
    from router.topic.workspace import Repo


class NextReport(
    namedtuple(
        "NextReport",
        "id plan_dir resume warnings brief expects request issue threads",
        defaults=(None, None),
    )
):
    """What ``team-router next`` prints: the phase plus its brief and expected artifacts.

    ``request`` is the user's request as ``new`` kept it, at QUESTION only (else None): the
    questioner is the one helper that reads it, so later phases do not carry it around. At
    WORKTREE too (a home worktree removed by hand): making it again is ``new`` with that request,
    and a resumed session has no other copy (``doctor --repair`` then drops the record, unless
    the branch keeps commits of its own).
    ``issue``: at QUESTION, the issue the request names as gh read it (or why it could not);
    ``threads``: at SHIPPED, each recorded PR's unresolved review threads.
    """

    __slots__ = ()

    def to_json(self) -> dict[str, object]:
        return {
            **PhaseReport(self.id, self.plan_dir, self.resume, self.warnings).to_json(),
            "brief": self.brief,
            "expects": [str(p) for p in self.expects],
            "request": self.request,
            "issue": _issue_json(self.issue),
            "threads": None if self.threads is None else [_threads_json(t) for t in self.threads],
        }


def _issue_json(read: object) -> dict[str, object] | None:
    if read is None:
        return None
    issue = read.issue  # type: ignore[attr-defined]
    return {
        "ref": read.ref,  # type: ignore[attr-defined]
        "read": issue.to_json() if issue is not None else None,
        "reason": read.reason,  # type: ignore[attr-defined]
    }


def _threads_json(found: object) -> dict[str, object]:
    threads = found.threads  # type: ignore[attr-defined]
    return {
        "repo": found.repo,  # type: ignore[attr-defined]
        "url": found.url,  # type: ignore[attr-defined]
        "threads": None if threads is None else [t.to_json() for t in threads],
        "reason": found.reason,  # type: ignore[attr-defined]
    }


def next_report(cwd: Path, target: str | None, *, until: str | None = None) -> NextReport:
    """``team-router next [TARGET] [--until PHASE]``: the phase to run, what it must produce,
    and where; or, past ``until``, the step ``until`` (stop and tell the user)."""
    from router.plandir.templates import render
    from router.topic.target import resolve

    stop_after = until_phase(until)
    repo, plan, _entries, missing = resolve(cwd, target)
    repo_warnings: list[str] = []
    repos = topic_repos(repo, plan, repo_warnings)
    records = Records(repo.common_dir)
    resume, inv, warnings = assess(repo, plan, repos, records=records)
    # The brief names every repo of repos.md, worktree or not (research reads them all).
    shown = brief_repos(topic_repos(repo, plan, [], listed=True))
    warnings += repo_warnings + repo_missing_notes(repo, plan, missing)
    primaries = [os.path.join(r.path, ".git") for r in repos[1:] if r.path and r.worktree]
    warnings += g.keep_borrowed_objects([str(repo.common_dir), *primaries])
    if stops_at(resume.resume_at, stop_after) and not resume.halted:
        resume = resume._replace(step="until")
        text = render("briefs/until.md.j2", id=plan.id, until=stop_after, resume=resume)
        return NextReport(plan.id, plan.path, resume, warnings, text, [], None)
    kept_track, asked = _kept_in_record(repo, plan)
    track = inv.track or kept_track
    expects = expected_artifacts(resume, inv, plan, track=track)
    at = resume.resume_at
    request = asked if at in (WORKTREE, QUESTION) else None
    issue = request_issue(request, repo.primary) if at == QUESTION else None
    prs, threads, unrecorded = _shipped(at, repo, plan, repos, shown)
    brief = render(
        f"briefs/{at.lower()}.md.j2",
        id=plan.id,
        topic=a.topic_of(plan.id) or plan.id,
        date=date.today().isoformat(),
        plan_dir=str(plan.path),
        step=resume.step,
        halted=resume.halted,
        cap=ROUND_CAP,
        files={name: inv.path(name) for name in (*a.PHASE_FILES, a.TEMP_PATHS)},
        inv=inv,
        design_round=a.next_round(inv.design_reviews),
        review_round=a.next_round(inv.reviews),
        tests_round=a.next_round(inv.tests),
        verify_round=a.next_round(inv.verifications),
        repos=shown,
        branch=shown[0].branch,
        prs=prs,
        threads=threads,
        unrecorded=unrecorded,
        issue=issue,
        track=track,
        footer=closing_footer(asked, shown[0]) if at == PR else None,
        summary=design_summary(str(plan.path)) if at == PR else None,
        missing=missing_worktrees(plan, warnings) if at == STRUCTURE else [],
        expects=[str(p) for p in expects],
        request=request,
        listed=plan.listed,
        ticket=ticket_of(plan.id),
        tearing=resume.step == "teardown" and records.tearing(plan.id),
    )
    return NextReport(plan.id, plan.path, resume, warnings, brief, expects, request, issue, threads)


def _shipped(
    at: str, repo: Repo, plan: PlanDir, repos: list[TopicRepo], shown: list[BriefRepo]
) -> tuple[list[dict[str, str]], list[PrThreads] | None, list[str]]:
    """The PRs ``pr.md`` records, at SHIPPED their open review threads, and the repos with
    commits and no PR recorded."""
    prs = shipped_prs(str(plan.path), shown) if at in (PR, SHIPPED) else []
    threads = open_threads(prs, repo.primary) if at == SHIPPED and prs else None
    unrecorded = without_pr(prs, repos) if at == SHIPPED and prs else []
    return prs, threads, unrecorded


def _kept_in_record(repo: Repo, plan: PlanDir) -> tuple[str | None, str | None]:
    """The track ``new --fix`` kept in the topic's record (before task.md carries it) and the
    request ``new`` was given; None for each when there is no record, or it is unreadable
    (a corrupt record is already named by topic_repos' warning: not a second time)."""
    from router.topic import state

    record = state.read_record_or_none(repo.common_dir, plan.id)
    return (record.track, record.description) if record is not None else (None, None)


BriefRepo = namedtuple("BriefRepo", "name path worktree branch checkout base slug")
BriefRepo.__doc__ = """A repo as a brief shows it: the checkout its work happens in (its worktree,
else its own clone), ``base``, the ref its topic commits are counted from
(``origin/<default>``, or the local default branch), and ``slug``, its GitHub
``OWNER/NAME`` (None when origin is not on GitHub)."""


def brief_repos(repos: list[TopicRepo]) -> list[BriefRepo]:
    """The topic's repos with the checkout to work in and the default branch to diff against."""
    refs = RepoRefs()
    shown = []
    for r in repos:
        checkout = r.worktree if r.worktree and os.path.isdir(r.worktree) else r.path
        shown.append(BriefRepo(*r, checkout or "<not found>", _base_of(r, refs), _slug_of(r)))
    return shown


def _base_of(topic_repo: TopicRepo, refs: RepoRefs) -> str:
    from router.git import GitError

    if not (topic_repo.path and os.path.isdir(topic_repo.path)):
        return "<its default branch>"
    try:
        default, _tips = refs.of(topic_repo.path)
    except GitError:
        default = None
    if default is None:
        return "<its default branch: team-router cannot tell it>"
    return default.best_ref.removeprefix("refs/remotes/").removeprefix("refs/heads/")


def _slug_of(topic_repo: TopicRepo) -> str | None:
    from router.git import Git, GitError

    if not (topic_repo.path and os.path.isdir(topic_repo.path)):
        return None
    try:
        slug = github.parse_remote_url(Git(Path(topic_repo.path)).remote_url("origin"))
    except GitError:
        return None
    return slug.arg if slug else None


# -- the request ---------------------------------------------------------------------------

IssueRead = namedtuple("IssueRead", "ref issue reason")
IssueRead.__doc__ = """What the request names (an issue URL, or a ticket key alone), the issue
gh read (``issue``: github.Issue or None) and, when it could not be read, why."""

_REQUEST_URL_RE = re.compile(r"^<?(https?://\S+?)>?(?:[\s:,;]|$)")
_KEY_ONLY_RE = re.compile(r"^[\[(]?([A-Z][A-Z0-9_]*-[0-9]+)[\])]?[\s:,;]*$")


def request_issue(request: str | None, cwd: Path) -> IssueRead | None:
    """The issue a request starts with, read through gh; None when the request names none.

    An issue URL gh can read gives its title and body. A URL it cannot read (no gh, not
    logged in, another tracker), or a ticket key with nothing else to go on, gives the
    reason, and the brief asks the user once instead of guessing.
    """
    text = (request or "").strip()
    url = _REQUEST_URL_RE.match(text)
    if url:
        return _read_issue(url.group(1), cwd)
    key = _KEY_ONLY_RE.match(text)
    if key:
        return IssueRead(key.group(1), None, "a ticket key alone, and gh reads GitHub issues only")
    return None


def _read_issue(url: str, cwd: Path) -> IssueRead:
    parsed = github.parse_issue_url(url)
    if parsed is None:
        return IssueRead(url, None, "not a GitHub issue URL gh can read")
    hub = github.connect_slug(parsed.slug, cwd=cwd)
    if isinstance(hub, github.Unavailable):
        return IssueRead(url, None, str(hub))
    try:
        return IssueRead(url, hub.issue(parsed.number), None)
    except github.GhFailed as exc:
        return IssueRead(url, None, str(exc))


def closing_footer(request: str | None, home: BriefRepo) -> str | None:
    """``Closes #N`` (``Closes OWNER/NAME#N`` from another repo) for the issue the request
    starts with; None when it names no GitHub issue. Only the home repo's PR carries it."""
    url = _REQUEST_URL_RE.match((request or "").strip())
    parsed = github.parse_issue_url(url.group(1)) if url else None
    if parsed is None:
        return None
    same = home.slug is not None and home.slug.lower() == parsed.slug.arg.lower()
    return f"Closes #{parsed.number}" if same else f"Closes {parsed.slug.arg}#{parsed.number}"


# -- the PRs ---------------------------------------------------------------------------------

PrThreads = namedtuple("PrThreads", "repo url threads reason")
PrThreads.__doc__ = """One recorded PR and its unresolved review threads (``threads``: None when
gh could not be asked, and ``reason`` says why)."""


def shipped_prs(plan_dir: str, repos: list[BriefRepo]) -> list[dict[str, str]]:
    """Every PR ``pr.md`` records, with the primary clone of its repo (where pr-cleanup runs)."""
    where = {r.name: r.path for r in repos}
    return [
        {"repo": pr.repo, "url": pr.url, "primary": where.get(pr.repo) or "<that repo>"}
        for pr in a.recorded_prs(os.path.join(plan_dir, a.PR))
    ]


def without_pr(prs: list[dict[str, str]], repos: list[TopicRepo]) -> list[str]:
    """Repos with commits on the topic's branch that no recorded PR covers."""
    from router.phase.infer import commits_ahead

    recorded = {pr["repo"] for pr in prs}
    return [r.name for r in repos if r.name not in recorded and (commits_ahead(r) or 0) > 0]


def open_threads(prs: list[dict[str, str]], cwd: Path) -> list[PrThreads]:
    """Each recorded PR's unresolved review threads, asked of gh once per PR (no polling)."""
    found = []
    for pr in prs:
        parsed = github.parse_pr_url(pr["url"])
        if parsed is None:
            found.append(PrThreads(pr["repo"], pr["url"], None, "not a GitHub PR URL"))
            continue
        hub = github.connect_slug(parsed.slug, cwd=cwd)
        if isinstance(hub, github.Unavailable):
            found.append(PrThreads(pr["repo"], pr["url"], None, str(hub)))
            continue
        try:
            threads = tuple(hub.review_threads(parsed.number))
        except github.GhFailed as exc:
            found.append(PrThreads(pr["repo"], pr["url"], None, str(exc)))
            continue
        found.append(PrThreads(pr["repo"], pr["url"], threads, None))
    return found


def design_summary(plan_dir: str) -> str | None:
    """The ``## Summary`` section of ``design.md`` (the PR body's what and why), or None."""
    try:
        text = Path(plan_dir, a.DESIGN).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    match = re.search(r"^#{2,3} Summary[ \t]*\n(.*?)(?=^#{1,3} |\Z)", text, re.M | re.S)
    summary = match.group(1).strip() if match else ""
    return summary or None


# -- --until -----------------------------------------------------------------------------------

UNTIL_CHOICES = tuple(p for p in PHASES if p != WORKTREE)


def until_phase(value: str | None) -> str | None:
    """The phase ``next --until`` names, upper-cased; bad input when it is none of them."""
    if value is None:
        return None
    phase = value.strip().upper()
    if phase not in UNTIL_CHOICES:
        choices = ", ".join(p.lower() for p in UNTIL_CHOICES)
        raise RouterError(
            ErrorCode.INVALID_VALUE, f"--until {value!r} is not a phase; use one of {choices}"
        )
    return phase


def stops_at(resume_at: str, until: str | None) -> bool:
    """The run is past ``until`` (its gate passed): ``next --until`` stops here."""
    if until is None:
        return False
    order = [*PHASES, SHIPPED]
    return order.index(resume_at) > order.index(until)
