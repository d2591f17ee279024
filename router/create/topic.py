"""``new`` and ``worktrees``: a topic's id, its home worktree, and every repo's worktree."""

from __future__ import annotations

import os
from pathlib import Path

from router.create.creation import Job
from router.create.fetch import Fetch
from router.create.pipeline import ensure, ensure_all, rollback
from router.create.report import CreateReport, Status, refused_report
from router.create.setupcmds import SetupOptions, SetupStatus
from router.errors import ErrorCode, Refusal, RouterError
from router.git import Git, GitError, RepoLayout
from router.names import MAX_SUFFIX, Topic, derive_id, parse_id, with_suffix
from router.records import record, replace
from router.topic import journal, state
from router.topic.planpath import PlanDirSymlink, create_plan_dir
from router.topic.runs import MADE_BY_HOST, PLANS_DIR, PlanDir
from router.topic.target import home_repo as home_of
from router.topic.workspace import Repo, default_branch, open_repo


@record
class NewResult:
    """What ``new`` made: the topic, its plan dir and the home repo's report."""

    topic: Topic
    plan_dir: Path
    home: CreateReport

    @property
    def warnings(self) -> list[str]:
        return list(self.home.warnings)

    @property
    def branch(self) -> str:
        """The branch really checked out: a reused worktree keeps its own."""
        return self.home.branch or self.topic.branch

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.topic.id,
            "topic": self.topic.topic,
            "branch": self.branch,
            "plan_dir": str(self.plan_dir),
            "home": {
                "name": self.home.name,
                "repo": str(self.home.path),
                "worktree": str(self.home.worktree) if self.home.worktree else None,
                "status": str(self.home.status),
                "base": self.home.base,
                "on_existing_branch": self.home.on_existing_branch,
                "submodules": [m.to_json() for m in self.home.submodules],
                "copied": self.home.copied.to_json() if self.home.copied else None,
                "sparse": list(self.home.sparse) if self.home.sparse is not None else None,
                "setup": self.home.setup.to_json() if self.home.setup else None,
            },
        }


def new_topic(
    cwd: Path,
    description: str,
    *,
    ticket: str | None = None,
    topic_id: str | None = None,
    date: str | None = None,
    wait: float = state.DEFAULT_WAIT,
    isolated: bool = False,
    track: str | None = None,
    sparse: tuple[str, ...] | None = None,
    setup: SetupOptions | None = None,
    fetch: Fetch | None = None,
) -> NewResult:
    """The WORKTREE phase: derive the id, create (or find) the home worktree and plan dir.

    ``isolated`` (the host's own worktrees, :mod:`router.host.worktrees`): a worktree of
    its own or nothing. The checkout the command runs in is never reused, and a
    fallback to the main tree is a refusal (``isolation-failed``) that leaves no plan
    dir and no record behind: the host asked for isolation and cannot fall back itself.
    A topic it makes is marked ``made_by: host`` (DESIGN §8: no /team run until an
    artifact is written); a topic that exists already stays what it is.
    ``sparse``: the directories the home worktree checks out (DESIGN §7).
    ``fetch``: the fetch from origin the command started before this was loaded
    (:func:`router.create.fetch.start_early`); the home repo's creation takes it over.
    """
    made_by = MADE_BY_HOST if isolated else None
    repo = open_repo(cwd)
    if topic_id is not None and not isolated:
        # An id this repo is a secondary of names a topic whose home is elsewhere (its
        # record says where): take its lock there and answer as the home does, never
        # make this repo a second home of it. The host's own worktree stays here.
        repo = home_of(repo, topic_id)
    if fetch is not None and not fetch.of(repo.git):
        fetch.result()  # another repo's: over before the home repo's own fetch starts
        fetch = None
    for _ in range(MAX_SUFFIX):
        topic = _choose_topic(repo, description, ticket=ticket, topic_id=topic_id, date=date)
        with state.held_lock(repo.common_dir, topic.id, wait=wait):
            # The id was chosen before the lock: a concurrent `new` with another
            # description may have taken it meanwhile. Choose again then.
            if topic_id is None and _taken_by_another_run(repo, topic, description):
                continue
            setup = setup or SetupOptions()
            ask = _Ask(description, made_by, wait, isolated, track, sparse, setup, fetch)
            return _new_under_lock(repo, topic, ask)
    raise RouterError(
        ErrorCode.LOCKED, "other runs of `new` keep taking the ids this one chooses; run it again"
    )


@record
class _Ask:
    """What `new` was asked, beyond the topic: carried into the locked part."""

    description: str
    made_by: str | None
    wait: float
    isolated: bool
    track: str | None
    sparse: tuple[str, ...] | None
    setup: SetupOptions
    fetch: Fetch | None  # the home repo's, already started


def _new_under_lock(repo: Repo, topic: Topic, ask: _Ask) -> NewResult:
    """The home worktree and plan dir of ``topic``, its lock held."""
    job = Job(
        "home",
        repo,
        topic,
        is_home=True,
        invoked_in=None if ask.isolated else repo.checkout,
        description=ask.description,
        made_by=ask.made_by,
        wait=ask.wait,
        sparse=ask.sparse,
        setup=ask.setup,
        fetch=ask.fetch,
        remember=lambda record, worktree: record.with_home(
            str(worktree / PLANS_DIR / topic.id),
            [state.RepoEntry("home", str(repo.primary), str(worktree))],
            ask.track,
        ),
    )
    report, checkout = _home_worktree(job)
    if ask.isolated:
        _require_worktree(report, repo.worktree_path(topic.branch))
    plan_dir = _make_plan_dir(checkout, topic.id, report.warnings)
    _remember_home(
        repo,
        topic,
        plan_dir,
        [report],
        description=ask.description,
        made_by=ask.made_by,
        track=ask.track,
    )
    return NewResult(topic, plan_dir, report)


def _home_worktree(job: Job) -> tuple[CreateReport, Path]:
    """The home repo's worktree, and the checkout its plan dir goes in."""
    repo, topic = job.repo, job.topic
    fallen = _fallen_back_plan(repo, topic)
    if fallen is None:
        report = ensure(job)
        return report, report.worktree or repo.primary
    # A rerun after a fallback: the same rule as `worktrees` (the plan dir moves into
    # the new worktree, or everything stays).
    home = _home_job(repo, fallen, topic, job.wait, job.sparse)
    report = (
        ensure(replace(home, setup=job.setup, fetch=job.fetch)) if isinstance(home, Job) else home
    )
    moved, report = _move_plan_dir(repo, fallen, report)
    return report, moved.root


def _require_worktree(report: CreateReport, own: Path) -> None:
    if report.status in {Status.CREATED, Status.EXISTING} and report.worktree == own:
        return
    if report.status is Status.EXISTING:
        # The topic works in a checkout an earlier `new` reused (the user's own
        # linked worktree, on their branch): handing it to the host as its
        # isolated worktree would put the session in the user's work.
        raise RouterError(
            ErrorCode.ISOLATION_FAILED,
            f"the topic works in {report.worktree}, a checkout team-router reused rather than "
            f"made; work there directly, or name another worktree",
        )
    raise RouterError(
        ErrorCode.ISOLATION_FAILED,
        f"no worktree was made in {report.path} ({report.reason}: {report.message}); "
        "fix that, then try again",
    )


def _fallen_back_plan(repo: Repo, topic: Topic) -> PlanDir | None:
    """This topic's plan dir in the main tree, where an earlier `new` that fell back made it."""
    in_main = repo.primary / PLANS_DIR / topic.id
    try:
        record = state.read_record(repo.common_dir, topic.id)
    except state.RecordCorrupt:
        return None
    if record is None or record.plan_dir != str(in_main) or not in_main.is_dir():
        return None
    return PlanDir(topic.id, str(in_main), str(repo.primary))


def _make_plan_dir(checkout: Path, topic_id: str, warnings: tuple[str, ...]) -> Path:
    try:
        return create_plan_dir(checkout, topic_id)
    except PlanDirSymlink as exc:
        exc.details["warnings"] = list(warnings)
        raise
    except OSError as exc:
        raise RouterError(
            ErrorCode.SETUP_FAILED,
            f"cannot create the plan dir {checkout / PLANS_DIR / topic_id} ({exc.strerror}); a "
            "file is probably in the way of docs/plans/: move it, then rerun",
            details={"warnings": list(warnings)},
        ) from None


def _choose_topic(
    repo: Repo, description: str, *, ticket: str | None, topic_id: str | None, date: str | None
) -> Topic:
    # An id parse_id accepts is letters, digits, "-" and "_", starting with a
    # letter or digit: always a branch name git accepts (tests/test_ids.py
    # holds that against `git check-ref-format --branch`), so no git runs here.
    if topic_id is not None:
        if ticket is not None or date is not None:
            raise RouterError(
                ErrorCode.USAGE, "--id is used verbatim: drop --ticket and --date, or drop --id"
            )
        return parse_id(topic_id)
    base = derive_id(description, ticket=ticket, date=date)
    for n in range(1, MAX_SUFFIX + 1):
        topic = parse_id(with_suffix(base, n))
        if not _taken_by_another_run(repo, topic, description):
            return topic
    raise RouterError(
        ErrorCode.PATH_TAKEN,
        f"{base} and its suffixes -2 ... -{MAX_SUFFIX} are all taken; pass --id",
    )


def _taken_by_another_run(repo: Repo, topic: Topic, description: str) -> bool:
    """True when the id's branch, worktree or plan dir belongs to a different ``new``."""
    try:
        record = state.read_record(repo.common_dir, topic.id)
    except state.RecordCorrupt:
        return True  # unreadable: never reuse it blindly (the one caller that must know)
    if record is None:
        occupied = (
            repo.git.branch_exists(topic.branch)
            or os.path.lexists(repo.worktree_path(topic.branch))
            or os.path.lexists(repo.primary / PLANS_DIR / topic.id)
        )
        if not occupied:
            return False
        # A run writes its record before it makes the branch or a path: one that
        # made them while these were looked at has a record now (read outside
        # the topic lock, the id would go to ...-2 for a run of this very `new`).
        try:
            record = state.read_record(repo.common_dir, topic.id)
        except state.RecordCorrupt:
            return True
        if record is None:
            return True
    return record.description != description


def _remember_home(
    repo: Repo,
    topic: Topic,
    plan_dir: Path,
    reports: list[CreateReport],
    *,
    description: str | None = None,
    made_by: str | None = None,
    track: str | None = None,
) -> None:
    """Keep the topic's repo list in the home record (teardown needs it after the plan dir)."""

    entries = [
        state.RepoEntry(r.name, str(r.path), str(r.worktree) if r.worktree else None)
        for r in reports
        if r.status is not Status.REFUSED
    ]

    # The description too, even when the home repo fell back before its own
    # record was written: a rerun of the same `new` must find its id again.
    state.update_record(
        repo.common_dir,
        topic.id,
        lambda record: record.with_home(str(plan_dir), entries, track),
        new=lambda: state.TopicRecord(
            id=topic.id,
            repo="home",
            branch=topic.branch,
            description=description,
            made_by=made_by,
            track=track,
        ),
    )


# -- worktrees ------------------------------------------------------------------


@record
class WorktreesResult:
    """What ``worktrees`` did: every repo's report and whether repos.md was updated."""

    topic: Topic
    plan_dir: Path
    mode: str
    repos: list[CreateReport]
    repos_md_updated: bool
    notes: tuple[str, ...] = ()  # the agent's permission given to (or missing in) other repos

    @property
    def warnings(self) -> list[str]:
        return [w for r in self.repos for w in r.warnings] + list(self.notes)

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.topic.id,
            "mode": self.mode,
            "plan_dir": str(self.plan_dir),
            "repos": [r.to_json() for r in self.repos],
            "repos_md_updated": self.repos_md_updated,
        }


def _plan_dir_gone(topic_id: str) -> str:
    # Why ``worktrees`` refuses rather than make the plan dir again: it reads the
    # topic's repos.md there, and an empty one would answer "single repo" for a
    # topic whose other repos have worktrees.
    return (
        "it holds the topic's repos.md, which says which repos to set up; restore it, or "
        f"`team-router new DESCRIPTION --id {topic_id}` makes it again (empty); then run this again"
    )


def setup_worktrees(
    cwd: Path,
    target: str | None,
    *,
    strict: bool = False,
    wait: float = state.DEFAULT_WAIT,
    setup: SetupOptions | None = None,
) -> WorktreesResult:
    """Create or reuse every repo's worktree for a topic and record them in ``repos.md``.

    ``--strict``: a repo that got no worktree rolls back what this run created;
    a setup line that failed keeps every worktree (each is whole and recorded,
    and the rerun resumes at that line) but the command still exits 1.
    """
    # Imported here: `new` neither reads repos.md nor extends the permission rule, nor
    # resolves a topic it did not make.
    from router.create import permission
    from router.plandir.reposmd import REPOS_MD, read_repos_md
    from router.topic.target import resolve_existing

    home_repo, plan = resolve_existing(cwd, target, needs=_plan_dir_gone)
    topic = parse_id(plan.id)
    with state.held_lock(home_repo.common_dir, topic.id, wait=wait):
        # A run killed between making the worktree and moving the plan dir into
        # it left an empty plan dir there, which discovery may find first: the
        # main tree's, which the record names, is the topic's until it moves.
        fallen = _fallen_back_plan(home_repo, topic)
        if fallen is not None and (
            _empty_dir(plan.path) or _moving(home_repo, topic.id, fallen.path) is not None
        ):
            # (Or a move of it into the worktree was killed after the copy was put in place.)
            plan = fallen
        repos_md = plan.path / REPOS_MD
        parsed = read_repos_md(repos_md) if repos_md.is_file() else None
        jobs, refusals = _secondary_jobs(home_repo, parsed, topic, wait) if parsed else ([], {})
        home_job = _home_job(home_repo, plan, topic, wait, parsed.home.sparse if parsed else None)
        options = setup or SetupOptions()
        jobs = [replace(j, setup=options) for j in jobs]
        # The home repo's step runs alongside the others; its refusal still
        # leaves every repo as it was (ensure_all rolls theirs back).
        if isinstance(home_job, Job):
            home, *ran = ensure_all([replace(home_job, setup=options), *jobs])
        else:
            home, ran = home_job, ensure_all(jobs)
        plan, home = _move_plan_dir(home_repo, plan, home)
        created = dict(zip((j.name for j in jobs), ran, strict=True))
        names = [s.name for s in parsed.secondaries] if parsed else []
        reports = [home] + [refusals.get(n) or created[n] for n in names]
        mode = "multi" if parsed else "single"
        if strict:
            _enforce_strict(WorktreesResult(topic, plan.path, mode, reports, False), jobs)
        updated = _write_back(repos_md, parsed, reports) if parsed else False
        _remember_home(home_repo, topic, plan.path, reports)
    notes = permission.extend_to(home_repo, _reached(reports[1:], jobs))
    result = WorktreesResult(topic, plan.path, mode, reports, updated, tuple(notes))
    if strict:
        _refuse_failed_setup(result)
    return result


def _reached(reports: list[CreateReport], jobs: list[Job]) -> list[tuple[str, Repo]]:
    """The secondary repos a session may now be resumed in: each one not refused.

    Each is the repository its job opened (a report names its primary clone):
    opened once per command, not again here.
    """
    opened = {job.name: job.repo for job in jobs}
    return [(r.name, opened[r.name]) for r in reports if r.status is not Status.REFUSED]


def _empty_dir(path: Path) -> bool:
    try:
        return path.is_dir() and not path.is_symlink() and not any(path.iterdir())
    except OSError:
        return False


def _home_job(
    repo: Repo, plan: PlanDir, topic: Topic, wait: float, sparse: tuple[str, ...] | None = None
) -> Job | CreateReport:
    """The home repo's job, or its report when no job may run.

    The home repo's worktree is the one that holds the plan dir; never a second
    one. A plan dir in the main tree means the home repo fell back at `new`.
    Once the cause is fixed, a rerun creates the worktree and the plan dir moves
    into it — but only when the main tree holds no other work that would be
    stranded there (changes outside the plan dir, commits not on origin): then
    it stays in place and says what to do first.
    """
    holder = _holder(repo, plan)
    if holder.is_linked_worktree:
        return Job("home", repo, topic, is_home=True, invoked_in=holder, wait=wait, sparse=sparse)
    stranded = _work_in_main_tree(repo, plan)
    if stranded:
        why = (
            f"the plan dir lives in the main tree (the home worktree fell back at `new`), which "
            f"also holds {stranded}; a worktree would strand that work there, so home stays in "
            "the main tree (commit or move that work, then run this again for a worktree)"
        )
        return CreateReport(
            "home",
            repo.primary,
            repo.primary,
            None,
            Status.FALLBACK,
            ErrorCode.IN_PLACE,
            why,
            warnings=(f"home: {why}",),
        )
    return Job("home", repo, topic, is_home=True, wait=wait, sparse=sparse)


def _holder(repo: Repo, plan: PlanDir) -> RepoLayout:
    """The checkout that holds the plan dir: the one the command runs in when that is it.

    git finds a directory's checkout by the nearest ``.git`` above it: with none
    between the plan dir and the command's checkout, asking git again answers
    the same, so one process is saved.
    """
    here = repo.checkout
    path = Path(os.path.realpath(plan.path))
    if path.is_dir() and path.is_relative_to(here.toplevel):
        between = [path, *path.parents][: len(path.relative_to(here.toplevel).parts)]
        if not any(os.path.lexists(d / ".git") for d in between):
            return here
    # The nearest .git above is that checkout's top level: read from its files
    # when the layout is the plain one, else git is asked from the plan dir.
    top = next((d for d in [path, *path.parents] if os.path.lexists(d / ".git")), None)
    layout = Git(top).checkout_layout() if top is not None and path.is_dir() else None
    return layout or open_repo(plan.path).checkout


def _work_in_main_tree(repo: Repo, plan: PlanDir) -> str:
    """What in the main tree, besides the untracked plan dir, may be this topic's work ("" if none)."""
    inside = f"{PLANS_DIR}/{plan.id}/"
    status = repo.git.status()
    others = [p for p in status.untracked if not p.startswith(inside)]
    if status.tracked or others:
        shown = ", ".join([*status.tracked, *others][:5])
        return f"uncommitted changes ({shown})"
    if repo.git.rev_parse("HEAD") and _ahead_of_origin(repo):
        return "commits that are not on origin"
    return ""


def _ahead_of_origin(repo: Repo) -> bool:
    found = default_branch(repo.git)
    target = found.best_ref if found is not None else None
    if target is None or repo.git.rev_parse(target) is None:
        return False  # nothing to compare with: no origin, no default branch
    return repo.git.count_commits(f"{target}..HEAD") > 0


def _move_plan_dir(repo: Repo, plan: PlanDir, home: CreateReport) -> tuple[PlanDir, CreateReport]:
    """Move a fallen-back topic's plan dir from the main tree into its home worktree.

    Also when the worktree already existed: a run killed after making it, before
    the move, leaves the move to the rerun. A plan dir there that holds files
    is never written over: both stay, and a warning names them. The worktree
    may be on another filesystem (``.claude/worktrees`` on its own disk): the
    move then copies, verifies, and deletes the original through the removal
    journal, so a run killed in the middle is finished by the rerun.
    """
    old = plan.path
    if home.status not in {Status.CREATED, Status.EXISTING}:
        return plan, home
    if home.worktree is None or home.worktree in old.parents:
        return plan, home
    new = home.worktree / PLANS_DIR / plan.id
    pending = _moving(repo, plan.id, old)
    if pending is None:
        if new.is_dir() and not new.is_symlink() and not any(new.iterdir()):
            new.rmdir()  # the empty one the pipeline's setup made
        if os.path.lexists(new):
            warning = (
                f"home: the plan dir stays in the main tree ({old}): {new} holds files too; "
                f"merge the two by hand into {new}, delete {old}, then run this again"
            )
            return plan, replace(home, warnings=(*home.warnings, warning))
    new.parent.mkdir(parents=True, exist_ok=True)

    def mark(removal: state.Removal | None) -> None:
        if removal is None:
            journal.end_op(repo.common_dir, plan.id, journal.Operation.REMOVE)
        else:
            journal.begin_op(repo.common_dir, plan.id, journal.Operation.REMOVE, removal)

    from router.topic.removal import move_dir  # only a fallen-back plan dir moves

    moved = move_dir(old, new, pending=pending, mark=mark, crash=state.crash_point)
    if not moved.done:
        warning = (
            f"home: the plan dir stays in the main tree ({old}): {moved.warning}; "
            "run this again once that is fixed"
        )
        return plan, replace(home, warnings=(*home.warnings, warning))
    if moved.warning:
        home = replace(home, warnings=(*home.warnings, f"home: {moved.warning}"))
    for parent in (old.parent, old.parent.parent):  # docs/plans, docs: only when now empty
        try:
            parent.rmdir()
        except OSError:
            break
    return plan._replace(dir=str(new), checkout=str(home.worktree)), home


def _moving(repo: Repo, topic_id: str, old: Path) -> state.Removal | None:
    """The removal journal of ``old`` a killed move of the plan dir left (None: no move under way)."""
    record = state.read_record_or_none(repo.common_dir, topic_id)
    moving = journal.find(record, journal.Operation.REMOVE, old)
    return record.removing if moving is not None and record is not None else None


def _secondary_jobs(
    home: Repo, parsed, topic: Topic, wait: float
) -> tuple[list[Job], dict[str, CreateReport]]:
    from router.topic.containment import contain_all  # only `worktrees` has secondaries

    home_spec = parsed.home
    _check_home_path(home, home_spec)
    jobs: list[Job] = []
    refusals: dict[str, CreateReport] = {}
    verdicts = contain_all([spec.path for spec in parsed.secondaries], home)
    for spec, verdict in zip(parsed.secondaries, verdicts, strict=True):
        if verdict.repo is None:
            refusals[spec.name] = refused_report(
                spec.name, spec.path, verdict.reason, verdict.detail
            )
            continue
        # The listed checkout is where the command meets that repo: a linked
        # worktree there is reused in place, or refused on the default branch (§7).
        repo = verdict.repo
        jobs.append(
            Job(
                spec.name,
                repo,
                topic,
                invoked_in=repo.checkout,
                wait=wait,
                home=home.primary,
                sparse=spec.sparse,
            )
        )
    return jobs, refusals


def _check_home_path(home: Repo, spec) -> None:
    real = Path(os.path.realpath(spec.path))
    if real == home.primary:
        return
    try:
        same = spec.path.exists() and open_repo(spec.path).common_dir == home.common_dir
    except Refusal:
        same = False
    if not same:
        raise RouterError(
            ErrorCode.REPOS_MD,
            f"repos.md line {spec.path_line}: home path {spec.path} is not this repo ({home.primary}); "
            "fix the **path:** of the home repo",
        )


def _enforce_strict(result: WorktreesResult, jobs: list[Job]) -> None:
    failed = [r for r in result.repos if r.status in {Status.FALLBACK, Status.REFUSED}]
    if not failed:
        return
    by_name = {j.name: j for j in jobs}
    kept = []
    for report in result.repos:
        if report.status is Status.CREATED and report.name in by_name:
            try:
                rollback(report, by_name[report.name])
            except (GitError, OSError) as exc:
                # One repo that cannot be rolled back must not keep the others' worktrees.
                kept.append(f"{report.name}: {report.worktree} was kept ({exc})")
    names = "; ".join(f"{r.name} ({r.reason}: {r.message})" for r in failed)
    rolled = (
        "every worktree this run created was rolled back"
        if not kept
        else "the other worktrees this run created were rolled back, but " + "; ".join(kept)
    )
    # The report shows each repo as this run found it (a rolled-back one as created).
    raise RouterError(
        ErrorCode.STRICT_FAILED,
        f"--strict: {names} got no worktree; {rolled}",
        details={**result.to_json(), "warnings": result.warnings},
    )


def _refuse_failed_setup(result: WorktreesResult) -> None:
    """``--strict``: a setup line that failed is a refusal, once everything is recorded.

    Nothing is rolled back: each worktree is whole and verified, the failed
    line may need what the lines before it built (slow to build again), and
    the rerun runs only the failed line and those after it.
    """
    failed = [r for r in result.repos if r.setup and r.setup.status is SetupStatus.FAILED]
    if not failed:
        return
    names = "; ".join(
        f"{r.name} ({r.setup.label} at `{r.setup.line}`, log {r.setup.log})"  # type: ignore[union-attr]
        for r in failed
    )
    raise RouterError(
        ErrorCode.STRICT_FAILED,
        f"--strict: a .worktreesetup line failed in {names}; every worktree is kept. Fix the "
        "line on the default branch (or what it needs), then run `team-router worktrees` "
        "again: it runs the failed line and the ones after it",
        details={**result.to_json(), "warnings": result.warnings},
    )


def _write_back(path: Path, parsed, reports: list[CreateReport]) -> bool:
    from router.plandir.reposmd import WorktreeLine, with_worktrees_section

    lines = [
        WorktreeLine(r.name, str(r.worktree))
        for r in reports
        if r.status is not Status.REFUSED and r.worktree is not None
    ]
    text = with_worktrees_section(parsed, lines)
    if text == parsed.text:
        return False
    state.write_atomic(path, text)
    return True
