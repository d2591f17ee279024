"""The phase table and phase inference: where an interrupted run resumes (DESIGN §8).

Pure over an :class:`~router.plandir.artifacts.Inventory` and two lazy signals (commits
on the topic branch, repos still without a worktree), so the recovery hook can
ask for ``resume_at`` alone without paying for git or ``repos.md`` parsing
where the answer does not depend on them.
"""

from __future__ import annotations

import os
from collections import namedtuple

from router.plandir import artifacts as a

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from pathlib import Path

    from router.plandir.remembered import Remembered
    from router.plandir.reposmd import ReposFile, WorktreeLine
    from router.topic.runs import PlanDir, Records
    from router.topic.workspace import DefaultBranch, Repo

WORKTREE, QUESTION, RESEARCH, DESIGN = "WORKTREE", "QUESTION", "RESEARCH", "DESIGN"
STRUCTURE, PLAN, IMPLEMENT, PR = "STRUCTURE", "PLAN", "IMPLEMENT", "PR"
SHIPPED = "SHIPPED"
PHASES = (WORKTREE, QUESTION, RESEARCH, DESIGN, STRUCTURE, PLAN, IMPLEMENT, PR)
ROUND_CAP = 5  # review rounds before a loop halts for a person to decide
PASSING_DESIGN = ("APPROVE", "COMMENT")
PASSING_REVIEW = ("PASS",)
PASSING_TESTS = ("RED",)  # the new tests fail by assertion: the implementation has a target

Resume = namedtuple("Resume", "resume_at step halted completed")
Resume.__doc__ = (
    """Where to resume: phase (or SHIPPED), step (str | None), halted, completed phases."""
)


def infer(
    inv: a.Inventory,
    *,
    has_commits: Callable[[], bool],
    missing_worktrees: Callable[[], Sequence[str]],
    worktree_exists: bool = False,
    tearing: bool = False,
    with_step: bool = True,
) -> Resume:
    """The first phase whose evidence is missing; the table of DESIGN §8, first match wins.

    ``tearing``: the topic's record says a teardown or pr-cleanup of it is under way
    (:meth:`~router.topic.runs.Records.tearing`). The run shipped, whatever files its
    steps took with them: it resumes where that command finishes, at SHIPPED.
    ``with_step=False`` answers ``resume_at``/``halted`` only and never calls a
    signal the answer does not need (``completed`` is then empty).
    """
    commits = _once(has_commits)
    at: str
    step: str | None
    if tearing:
        at, step, halted = SHIPPED, "teardown", False
    else:
        at, step, halted = _first_match(inv, commits, missing_worktrees, worktree_exists, with_step)
    done = _completed(inv, commits, worktree_exists) if with_step else ()
    return Resume(at, step, halted, done)


def _first_match(
    inv: a.Inventory,
    commits: Callable[[], bool],
    missing: Callable[[], Sequence[str]],
    worktree_exists: bool,
    with_step: bool,
) -> tuple[str, str | None, bool]:
    reviews = implement_reviews(inv)
    review = a.latest(reviews)
    if inv.has(a.PR):
        return SHIPPED, "teardown", False
    if a.passes(reviews, PASSING_REVIEW) and commits():
        return PR, None, False
    if review is not None and review.verdict == "FAIL" and review.n >= ROUND_CAP:
        return IMPLEMENT, None, True
    if inv.has(a.PLAN):
        return _implement_step(inv, commits, with_step)
    if inv.track == a.FIX_TRACK and inv.has(a.TASK):
        return PLAN, None, False  # the fix track: no research, design or structure
    if inv.has(a.STRUCTURE):
        return PLAN, None, False
    if inv.has(a.DESIGN):
        return _design_loop(inv, missing, with_step)
    if inv.has(a.RESEARCH):
        return DESIGN, "draft", False
    if inv.has(a.TASK, a.QUESTIONS):
        return RESEARCH, None, False
    if inv.exists or worktree_exists:
        return QUESTION, None, False
    return WORKTREE, None, False


def _implement_step(
    inv: a.Inventory, commits: Callable[[], bool], with_step: bool
) -> tuple[str, str | None, bool]:
    """plan.md exists: the test-first gate's record, not any commit, moves ``tests`` on.

    An implementer's commit made before the gate was recorded does not skip it: the
    tests are proven to fail by assertion first (``record tests RED``), then the
    slices land. A review round of committed work (a run from before the gate) goes
    on reviewing.
    """
    red = a.passes(inv.tests, PASSING_TESTS)
    gate = a.latest(inv.tests)
    halted = not red and gate is not None and gate.verdict == "BROKEN" and gate.n >= ROUND_CAP
    if not with_step:
        return IMPLEMENT, None, halted and not inv.reviews
    if inv.reviews and (red or commits()):
        return IMPLEMENT, "review", False
    if red:
        return IMPLEMENT, "slices", False
    if halted:
        return IMPLEMENT, None, True
    return IMPLEMENT, "tests", False


def implement_reviews(inv: a.Inventory) -> tuple[a.Verdict, ...]:
    """The review rounds that count: none without ``plan.md``.

    A review judges the work against the plan; a PASS with no plan (written by
    hand: ``record review`` refuses it, ``no-plan``) would skip DESIGN,
    STRUCTURE and PLAN straight to PR. :func:`assess` warns about it.
    """
    return inv.reviews if inv.has(a.PLAN) else ()


def _design_loop(
    inv: a.Inventory, missing: Callable[[], Sequence[str]], with_step: bool
) -> tuple[str, str | None, bool]:
    """design.md exists: the latest verdict decides between structure, redraft and review."""
    latest = inv.latest_design_review
    if latest is None:
        return DESIGN, "review", False
    if design_passed(inv):
        return STRUCTURE, "worktrees" if with_step and missing() else None, False
    if latest.verdict in PASSING_DESIGN:
        # The newest round is unreadable or split, or the draft was rewritten after
        # it passed: no older verdict stands for the draft as it is, so judge it again.
        return DESIGN, "review", False
    if latest.n >= ROUND_CAP:
        return DESIGN, None, True
    return DESIGN, "redraft" if redraft_pending(inv) is not None else "review", False


def design_passed(inv: a.Inventory) -> bool:
    """The newest design review round passed, and it judged the draft design.md is now.

    Round n judges a draft that answers the rounds before it (revision < n); a
    draft with ``revision`` >= n was rewritten after the verdict, which therefore
    does not stand for it: that draft goes to review (round n + 1).
    """
    newest = a.newest_round(inv.design_reviews)
    return a.passes(newest, PASSING_DESIGN) and (inv.design_revision or 0) < newest[0].n


def redraft_pending(inv: a.Inventory) -> a.Verdict | None:
    """The REQUEST CHANGES round design.md has not answered yet (None: no redraft is owed).

    ``revision`` counts the review rounds a draft answers: a draft that has not
    yet answered round n (revision < n) must be redrafted before review n + 1.
    At the cap the loop is halted instead, and the person's decision is recorded.
    """
    latest = inv.latest_design_review
    if latest is None or latest.verdict != "REQUEST CHANGES" or latest.n >= ROUND_CAP:
        return None
    return latest if (inv.design_revision or 0) < latest.n else None


def _completed(
    inv: a.Inventory, commits: Callable[[], bool], worktree_exists: bool
) -> tuple[str, ...]:
    evidence = {
        WORKTREE: inv.exists or worktree_exists,
        QUESTION: inv.has(a.TASK) and (inv.has(a.QUESTIONS) or inv.track == a.FIX_TRACK),
        RESEARCH: inv.has(a.RESEARCH),
        DESIGN: inv.has(a.DESIGN) and design_passed(inv),
        STRUCTURE: inv.has(a.STRUCTURE),
        PLAN: inv.has(a.PLAN),
        IMPLEMENT: a.passes(implement_reviews(inv), PASSING_REVIEW) and commits(),
        PR: inv.has(a.PR),
    }
    return tuple(p for p in PHASES if evidence[p])


def _once(signal: Callable[[], bool]) -> Callable[[], bool]:
    """Ask a signal (git, possibly in several repos) at most once per inference."""
    memo: list[bool] = []

    def ask() -> bool:
        if not memo:
            memo.append(bool(signal()))
        return memo[0]

    return ask


# -- the git-backed signals and the command cores (imports are lazy: see above) --------

TopicRepo = namedtuple("TopicRepo", "name path worktree branch")
TopicRepo.__doc__ = """One repo of a topic: name, primary root (str | None when unknown),
the checkout that carries the topic's work (str | None), and its branch."""


def topic_repos(
    repo: Repo,
    plan: PlanDir,
    warnings: list[str],
    *,
    listed: bool = False,
    records: Records | None = None,
) -> list[TopicRepo]:
    """Home, then every repo the home record or the ``## Worktrees`` section of repos.md names
    (:func:`router.topic.model.repo_places` decides, for every command alike).

    ``listed``: also the repos ``repos.md`` lists that have no worktree yet (a repos.md
    written at QUESTION), read in their own clone until their worktree is made.
    ``records``: the home's records as the command read them already (each read once).
    """
    from router.topic import state
    from router.topic.model import repo_places

    # plan.checkout is a realpath already (discovery resolves every root once).
    home_worktree = plan.checkout if plan.checkout != str(repo.primary) else None
    if records is not None:
        record = state.record_in(records, plan.id, warnings)
    else:
        record = state.read_record_or_none(repo.common_dir, plan.id, warnings)
    text = _read_text(os.path.join(plan.dir, a.REPOS))
    lines: tuple[WorktreeLine, ...] = ()
    secondaries: tuple[tuple[str, str], ...] = ()
    if text:
        # Only a multi-repo topic pays for the repos.md reader (~10 ms to import).
        from router.plandir.reposmd import worktree_lines

        lines = tuple(worktree_lines(text))
        parsed = _parsed_repos_md(plan.path / a.REPOS, warnings) if listed else None
        if parsed is not None:
            secondaries = tuple((s.name, str(s.path)) for s in parsed.secondaries)
    places = repo_places(repo.primary, home_worktree, record, secondaries, lines)
    # The home's branch is the one its record names (a reused checkout keeps its own).
    home_branch = (record.branch if record is not None else None) or plan.id
    return [
        TopicRepo(p.name, p.primary, p.worktree, home_branch if p.is_home else plan.id)
        for p in places
    ]


def _parsed_repos_md(path: Path, warnings: list[str]) -> ReposFile | None:
    """``repos.md`` as read; None when it does not parse (``warnings`` says why)."""
    from router.errors import RouterError
    from router.plandir.reposmd import read_repos_md

    try:
        return read_repos_md(path)
    except RouterError as exc:
        warnings.append(f"{path}: {exc.message}")
        return None


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None


def location(topic_repo: TopicRepo, refs: RepoRefs | None = None) -> tuple[str | None, str]:
    """Where to ask git about a repo's topic work, and which revision: its worktree's HEAD,
    or the topic branch in the repo when the worktree is gone. ``refs``: the command's
    refs, which look at each directory once (500 topics share one primary clone)."""
    isdir = refs.isdir if refs is not None else os.path.isdir
    if topic_repo.worktree and isdir(topic_repo.worktree):
        return topic_repo.worktree, "HEAD"
    if topic_repo.path and isdir(topic_repo.path):
        return topic_repo.path, f"refs/heads/{topic_repo.branch}"
    return None, ""


class RepoRefs:
    """Each repo's branch tips and default branch, read once per command (one for-each-ref).

    ``status`` asks for every topic of a repo: without this it started about
    3.5 git processes per topic, worktree or not (1,752 for 500 topics).
    Refs are shared by every worktree of a repo, so a repo is keyed by its
    primary clone.
    """

    def __init__(self) -> None:
        self._known: dict[str, tuple[DefaultBranch | None, dict[str, str]]] = {}
        self._ahead: dict[tuple[str, str], int | None] = {}
        self._dirs: dict[str, bool] = {}

    def isdir(self, path: str) -> bool:
        """``os.path.isdir(path)``, looked at once per command."""
        found = self._dirs.get(path)
        if found is None:
            found = self._dirs[path] = os.path.isdir(path)
        return found

    def of(self, primary: str) -> tuple[DefaultBranch | None, dict[str, str]]:
        """(default branch, ref -> commit) of the repo whose primary clone is ``primary``."""
        if primary in self._known:
            return self._known[primary]
        from pathlib import Path

        from router.git import Git
        from router.topic.workspace import default_branch

        key = os.path.realpath(primary)
        if key not in self._known:
            git = Git(Path(key))
            tips = git.ref_tips("refs/remotes/origin/", "refs/heads/")
            default = default_branch(git, {name: t.symref for name, t in tips.items()})
            self._known[key] = (default, {name: t.commit for name, t in tips.items()})
        self._known[primary] = self._known[key]
        return self._known[key]

    def ahead(self, where: str, rev: str, count: Callable[[], int | None]) -> int | None:
        """Commits ahead of ``rev`` in ``where``, counted once per command."""
        if (where, rev) not in self._ahead:
            self._ahead[(where, rev)] = count()
        return self._ahead[(where, rev)]


def commits_ahead(
    topic_repo: TopicRepo, refs: RepoRefs | None = None, at: tuple[str | None, str] | None = None
) -> int | None:
    """Commits of the topic's work since its merge-base with the default branch; None: unknown.

    With ``refs`` (the repo's refs read once for the command) a topic without a
    worktree costs no git process unless its branch exists and has moved, and
    no count is asked of git twice. ``at``: its :func:`location`, when the caller has it.
    """
    if refs is None:
        return _commits_ahead(topic_repo, None, at)
    at = at or location(topic_repo, refs)
    return refs.ahead(at[0] or "", at[1], lambda: _commits_ahead(topic_repo, refs, at))


def _commits_ahead(
    topic_repo: TopicRepo, refs: RepoRefs | None, at: tuple[str | None, str] | None = None
) -> int | None:
    where, rev = at or location(topic_repo, refs)
    if where is None:
        return None
    default: DefaultBranch | None = None
    known = refs is not None and bool(topic_repo.path) and refs.isdir(topic_repo.path or "")
    if refs is not None and known:
        from router import git as g

        # Decided from the refs read once for the command: no git handle, no process.
        try:
            default, tips = refs.of(topic_repo.path or "")
        except g.GitError:
            return None
        if default is not None and _at_default_tip(where, rev, default, tips):
            return 0  # no branch, or one still at the default tip: nothing of its own
    return _counted(where, rev, default, known=known)


def _counted(where: str, rev: str, default: DefaultBranch | None, *, known: bool) -> int | None:
    """git's count of ``rev``'s commits beyond the default branch (``known``: ``default`` is
    the repo's, as its refs say; else git is asked which it is)."""
    from pathlib import Path

    from router.git import Git, GitError
    from router.topic.workspace import default_branch

    git = Git(Path(where))
    try:
        if not known:
            default = default_branch(git)
        if default is None:
            return None
        try:
            return git.count_commits(f"{default.best_ref}..{rev}")
        except GitError:
            pass  # the range does not resolve: a branch the repo lacks counts none
        if rev != "HEAD" and git.rev_parse(rev) is None:
            return 0  # the branch does not exist in that repo: no commits
        return None
    except GitError:
        return None


def _at_default_tip(where: str, rev: str, default: DefaultBranch, tips: dict[str, str]) -> bool:
    """``rev`` (a branch, or the worktree ``where``'s HEAD) has nothing of its own, as the
    repo's refs read once for the command say: a branch that does not exist, or one still
    at the default branch's tip. A worktree's HEAD is its branch's tip when its HEAD file
    names one (branches are shared by every worktree); detached or unsure, git counts."""
    from router import git as g

    base = tips.get(default.best_ref)
    if rev != "HEAD":
        tip = tips.get(rev)
        return tip is None or tip == base
    branch = g.checkout_branch(where)
    tip = tips.get(f"refs/heads/{branch}") if branch else None
    return tip is not None and tip == base


def any_commits(repos: list[TopicRepo], refs: RepoRefs | None = None) -> bool:
    """The IMPLEMENT signal: >= 1 commit since the merge-base, in any repo of the topic."""
    return any((commits_ahead(r, refs) or 0) > 0 for r in repos)


def missing_worktrees(plan: PlanDir, warnings: list[str]) -> list[str]:
    """Repos that repos.md lists but its ``## Worktrees`` section does not (yet) place."""
    from router.plandir.reposmd import worktree_lines

    path = plan.path / a.REPOS
    parsed = _parsed_repos_md(path, warnings) if path.is_file() else None
    if parsed is None:
        return []
    placed = {ln.name for ln in worktree_lines(parsed) if ln.placed and ln.placed.exists()}
    return [s.name for s in parsed.secondaries if s.name not in placed]


def worktree_exists(primary: str, plan: PlanDir) -> bool:
    """The topic's worktree is there: WORKTREE is done (the recovery hook asks this too)."""
    # plan.checkout is a realpath already (discovery resolves every root once).
    return plan.checkout != primary and os.path.isdir(plan.checkout)


# How phase, next, status and the recovery hook say that a worktree was deleted by hand:
# git still lists it, or (``doctor --repair`` dropped its registration) no longer does.
DIRECTORY_GONE = "git still lists it, but its directory is gone"
NOT_LISTED = "git no longer lists it, and its branch is kept"


def missing_notes(
    records: Records, primary: str, plan: PlanDir, others: Iterable[PlanDir] = ()
) -> list[str]:
    """One line for each run whose worktree was deleted by hand: the topic answered, then
    ``others``, the runs discovery names beside the newest (``Found.missing``).

    Each resumes at WORKTREE. While git still lists the worktree, ``next`` says how to make
    it again (its registration is dropped first); once it no longer does, the one command
    that makes it again is named: ``new`` with the request ``records`` kept.
    """
    from router.topic.discovery import worktree_gone

    # A worktree a teardown under way removed was not deleted by hand: the run resumes at
    # SHIPPED (:func:`infer`), where the rerun of that teardown finishes.
    gone = [plan] if worktree_gone(primary, plan) and not records.tearing(plan.id) else []
    return [_missing_note(records, p) for p in (*gone, *others)]


def repo_missing_notes(repo: Repo, plan: PlanDir, others: Iterable[PlanDir]) -> list[str]:
    """:func:`missing_notes` for a command that opened the home ``repo``."""
    from router.topic.runs import Records

    return missing_notes(Records(repo.common_dir), str(repo.primary), plan, others)


def _missing_note(records: Records, plan: PlanDir) -> str:
    if plan.listed:
        return (
            f"{plan.id} resumes at {WORKTREE}: its worktree {plan.checkout} is missing "
            f"({DIRECTORY_GONE}); `team-router next {plan.id}` says how to make it again on "
            "the same branch, commits included"
        )
    from router.topic.runs import remake_command

    data = records.data(plan.id) or {}
    request = data.get("description")
    command = remake_command(plan.id, request if isinstance(request, str) else None)
    return (
        f"{plan.id} resumes at {WORKTREE}: it has no worktree ({plan.checkout} is gone: "
        f"{NOT_LISTED}); `{command}` makes it again on the same branch, commits included"
    )


def assess(
    repo: Repo,
    plan: PlanDir,
    repos: list[TopicRepo] | None = None,
    refs: RepoRefs | None = None,
    remembered: Remembered | None = None,
    *,
    files: list[os.DirEntry[str]] | None = None,
    signals: list[str] | None = None,
    records: Records | None = None,
) -> tuple[Resume, a.Inventory, list[str]]:
    """Inventory plus inference for one topic; every problem is a warning, never a crash.

    ``repos``: the topic's repos when the caller has them already (computed
    twice, their warnings would be printed twice). ``remembered``: the artifacts'
    frontmatter as read before, for a command that reads every topic's. ``files``:
    the plan dir as listed already (:func:`router.plandir.artifacts.plan_files`).
    ``signals``: each signal beyond the files that the answer asked (git's commits, the
    worktrees' existence) is appended: an answer that asked none follows from the files.
    ``records``: the home's records as the command read them already.
    """
    inv = a.inventory(plan.dir, plan.id, remembered, files)
    warnings = list(inv.warnings)
    if inv.reviews and not implement_reviews(inv):
        warnings.append(
            f"{inv.reviews[-1].path}: a review round with no {a.PLAN} is not counted (there is "
            "no plan to judge the work against); finish the phase `team-router next` names"
        )
    found: list[TopicRepo] = [] if repos is None else list(repos)

    asked = signals if signals is not None else []

    def commits() -> bool:
        asked.append("commits")
        if repos is None and not found:
            found.extend(topic_repos(repo, plan, warnings))
        return any_commits(found, refs)

    def missing() -> list[str]:
        asked.append("worktrees")
        return missing_worktrees(plan, warnings)

    resume = infer(
        inv,
        has_commits=commits,
        missing_worktrees=missing,
        worktree_exists=worktree_exists(str(repo.primary), plan),
        tearing=_records(repo, records).tearing(plan.id),
    )
    return resume, inv, warnings


def _records(repo: Repo, records: Records | None) -> Records:
    from router.topic.runs import Records

    return records if records is not None else Records(repo.common_dir)


class PhaseReport(namedtuple("PhaseReport", "id plan_dir resume warnings")):
    """What ``team-router phase`` prints."""

    __slots__ = ()

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "plan_dir": str(self.plan_dir),
            "resume_at": self.resume.resume_at,
            "step": self.resume.step,
            "halted": self.resume.halted,
            "completed": list(self.resume.completed),
        }


def phase_report(cwd: Path, target: str | None) -> PhaseReport:
    """``team-router phase [TARGET]``: where the topic's run resumes."""
    from router.topic.target import resolve

    repo, plan, _entries, missing = resolve(cwd, target)
    resume, _inv, warnings = assess(repo, plan)
    warnings += repo_missing_notes(repo, plan, missing)
    from router.git.keep import keep_borrowed_objects  # files only, unless one moved

    warnings += keep_borrowed_objects([str(repo.common_dir)])
    return PhaseReport(plan.id, plan.path, resume, warnings)


def ticket_of(topic_id: str) -> str | None:
    """The ticket prefix of a ticket-prefixed id (``ENG-12-x`` -> ``ENG-12``); None for a date."""
    from router.names import DATE_RE, ID_RE

    match = ID_RE.fullmatch(topic_id)
    if match is None or DATE_RE.fullmatch(match["prefix"]):
        return None
    return match["prefix"]


def expected_artifacts(
    resume: Resume, inv: a.Inventory, plan: PlanDir, *, track: str | None = None
) -> list[Path]:
    """The files whose appearance proves the current phase (or step) done."""
    at, step = resume.resume_at, resume.step
    if at == QUESTION and track == a.FIX_TRACK:
        return [plan.path / a.TASK]  # the fix track asks no research questions
    if resume.halted or at == SHIPPED:
        return []
    if at == DESIGN:
        if step == "review":
            return [plan.path / f"design-review-{a.next_round(inv.design_reviews)}.md"]
        return [plan.path / a.DESIGN]
    if at == IMPLEMENT and step == "tests":
        return [plan.path / f"tests-{a.next_round(inv.tests)}.md"]
    if at == IMPLEMENT:
        return [plan.path / f"review-{a.next_round(inv.reviews)}.md"]
    names = {
        WORKTREE: [],
        QUESTION: [a.TASK, a.QUESTIONS],
        RESEARCH: [a.RESEARCH],
        STRUCTURE: [a.STRUCTURE],
        PLAN: [a.PLAN],
        PR: [a.PR],
    }[at]
    return [plan.path / n for n in names] if names else [plan.path]
