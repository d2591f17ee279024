"""The worktree creation pipeline (DESIGN §7): inspect, base, claim, add, sparse, verify, setup, record."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from router import git as g
from router.create import ouradd, sparse
from router.create.include import Copied, copy_included
from router.create.setupcmds import SetupOptions, SetupPlan, SetupReport, plan_setup
from router.create.submodules import SUBMODULES_STEP as SUBMODULES
from router.create.submodules import SubmoduleOutcome, check_out_submodules, warnings_for
from router.errors import ErrorCode, Refusal, RouterError, io_error
from router.git import Git, GitError, RepoLayout, WorktreeEntry
from router.mounts import worktree_unmounted
from router.names import Sha, Topic
from router.parallel import MAX_PARALLEL, parallel_outcomes, raised
from router.progress import Progress
from router.topic import state, worktreelock
from router.topic.planpath import PlanDirSymlink, create_plan_dir
from router.topic.workspace import (
    Repo,
    default_branch,
    ensure_excludes,
    find_worktree,
    worktree_with_branch,
)

REPO_LOCK = "_repo"  # per-repo critical sections; ids cannot start with "_"
_ORIGIN_HEAD = "refs/remotes/origin/HEAD"


class Status(StrEnum):
    CREATED = "created"
    EXISTING = "existing"
    REUSED = "reused"
    FALLBACK = "fallback"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class Created:
    """What this run made, so a rollback removes exactly that and nothing else."""

    directory: bool = False
    registration: bool = False
    branch: bool = False


@dataclass(frozen=True, slots=True)
class CreateReport:
    """One repo's outcome of worktree creation, as ``new`` and ``worktrees`` report it."""

    name: str
    path: Path  # the repo's primary root (or the path repos.md gave, when refused)
    worktree: Path | None
    branch: str | None
    status: Status
    reason: ErrorCode | None = None
    message: str = ""
    base: str | None = None
    warnings: tuple[str, ...] = ()
    created: Created = field(default_factory=Created)
    submodules: tuple[SubmoduleOutcome, ...] = ()  # what this run did for each submodule
    copied: Copied | None = None  # the .worktreeinclude copy; None when the repo has none
    sparse: tuple[str, ...] | None = None  # the cone of a sparse worktree; None: the whole tree
    setup: SetupReport | None = None  # the setup-commands stage (None: no worktree to set up)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "path": str(self.path),
            "worktree": str(self.worktree) if self.worktree else None,
            "branch": self.branch,
            "status": str(self.status),
            "reason": self.reason or None,
            "submodules": [s.to_json() for s in self.submodules],
            "copied": self.copied.to_json() if self.copied else None,
            "sparse": list(self.sparse) if self.sparse is not None else None,
            "setup": self.setup.to_json() if self.setup else None,
        }


@dataclass(frozen=True, slots=True)
class Job:
    """One repo to give a worktree for one topic."""

    name: str
    repo: Repo
    topic: Topic
    is_home: bool = False
    invoked_in: RepoLayout | None = None  # where the command runs (for reuse)
    description: str | None = None
    # Who asked for the topic, kept in a new record: "host" for the host's own worktrees.
    made_by: str | None = None
    wait: float = state.DEFAULT_WAIT
    checkout_workers: int = 0  # git's checkout.workers: 0 = one per core
    # A secondary's home primary clone: its record keeps it, so every command run
    # in this repo (or its worktree) finds the topic's plan dir (DESIGN §8).
    home: Path | None = None
    # The directories a sparse worktree checks out (DESIGN §7 `sparse`); None: the whole tree.
    sparse: tuple[str, ...] | None = None
    # The fetch from origin, when ensure_all started (or deferred) it ahead of the job's turn.
    fetch: _Fetch | None = field(default=None, compare=False, repr=False)
    setup: SetupOptions = field(default_factory=SetupOptions)  # --no-setup, --line-timeout


class _Failed(Exception):
    """A step failed after something may have been created: roll back, then fall back."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# -- public entry points -------------------------------------------------------


def ensure(job: Job) -> CreateReport:
    """Give ``job.repo`` its worktree for the topic; never raises for a creation failure.

    Refusals that make the repo unusable (``no-root-commit``,
    ``default-branch-worktree``) raise for the home repo and are reported as
    ``refused`` for a secondary.
    """
    try:
        return _Pipeline(job).run()
    except Refusal as exc:
        if job.is_home:
            raise
        return _refused(job, exc.code, exc.message)
    except (GitError, OSError) as exc:
        # Whatever the pipeline did not turn into a fallback itself: one repo's
        # failure must never escape as a traceback, nor stop --strict from
        # rolling back the other repos.
        refusal = _failure(job, exc)
        if job.is_home:
            raise refusal from None
        return _refused(job, refusal.code, refusal.message)


def ensure_all(jobs: list[Job]) -> list[CreateReport]:
    """Run several jobs at once (a thread each, up to MAX_PARALLEL); reports in the jobs' order.

    A job that raises (only a home job does: its refusal is the command's)
    lets the others finish, then what they created is rolled back and the
    error raised: the same end state as when the home repo ran, and refused,
    before them.
    """
    progress = Progress(len(jobs), label="worktree")

    def one(job: Job) -> CreateReport:
        report = ensure(job)
        progress.step(job.name, str(report.status))
        return report

    if len(jobs) <= 1:
        return [one(j) for j in jobs]
    # Every job runs at once, checkout and all (up to MAX_PARALLEL). The
    # checkouts keep the cores busy: more of them than cores costs little on
    # an idle machine (and no checkout is left to run alone at the end), and on
    # a busy one their share of the cores grows with their number (7 repos of
    # 2,000 files on two cores beside one busy process: 0.57x the sequential
    # run all at once, 0.73x three at a time). One process each: a checkout
    # worker pool per repo on top only adds processes. The fetches wait on the
    # network, not on a core: they start now, a process each, ahead of their
    # job's checks (beyond MAX_PARALLEL, a job fetches when its turn comes).
    # One whose worktree looks made gets its fetch deferred here, so its turn
    # does not read its files again to decide the same.
    jobs = [
        dataclasses.replace(
            j,
            checkout_workers=1,
            fetch=_Fetch(j.repo.git, start=not _looks_made(j)) if n < MAX_PARALLEL else None,
        )
        for n, j in enumerate(jobs)
    ]
    outcomes = parallel_outcomes(one, jobs)
    failed = next((e for e in map(raised, outcomes) if e is not None), None)
    if failed is None:
        return outcomes  # type: ignore[return-value]
    kept = []
    for outcome, job in zip(outcomes, jobs, strict=True):
        report = outcome if isinstance(outcome, CreateReport) else None
        if report is not None and report.status is Status.CREATED:
            try:
                rollback(report, job)
            except (GitError, OSError) as exc:
                kept.append(f"{report.name}: {report.worktree} was kept ({exc})")
    if kept and isinstance(failed, RouterError):
        failed.details["warnings"] = [*failed.details.get("warnings", []), *kept]
    raise failed


def rollback(report: CreateReport, job: Job) -> None:
    """Undo what the run that produced ``report`` created (for ``--strict``)."""
    if report.worktree is None:
        return
    _undo(job.repo, report.worktree, report.branch or "", report.created, base=report.base)
    _forget_creation(job.repo, job.topic.id)


def _forget_creation(repo: Repo, topic_id: str) -> None:
    """After a rollback the repo's record names no worktree and no creation under way."""
    record = state.read_record_or_none(repo.common_dir, topic_id)  # corrupt: doctor reports it
    if record is None:
        return
    gone = not repo.git.branch_exists(record.branch)  # then its creation describes nothing

    def change(r: state.TopicRecord) -> state.TopicRecord | None:
        if not gone:
            return dataclasses.replace(r, worktree=None, base_commit=None, steps=("inspect",))
        if r.plan_dir is None and not r.repos and not r.temp_paths:
            return None  # only this creation's: nothing of it is left
        # The home record of a topic that exists already, its plan dir in the
        # main tree (a fallback): its request, plan dir, repos and temp paths still
        # matter; a rerun of the same `new` finds its id by the request, not a `-2`.
        return dataclasses.replace(
            r, worktree=None, base_commit=None, branch_created=False, steps=()
        )

    state.update_record(repo.common_dir, topic_id, change)


def refused_report(name: str, path: Path, reason: ErrorCode | None, message: str) -> CreateReport:
    return CreateReport(name, path, None, None, Status.REFUSED, reason, message)


# -- the pipeline --------------------------------------------------------------


class _Pipeline:
    def __init__(self, job: Job) -> None:
        self.job = job
        self.repo = job.repo
        self.git = job.repo.git
        self.branch = job.topic.branch
        self.path = job.repo.worktree_path(self.branch)
        self.warnings: list[str] = []
        self.created = Created()
        self.base: str | None = None
        self.excluded = False  # our info/exclude lines are known to be there
        self.record = self._load_record()
        self.commits: dict[str, Sha | None] = {}  # see _look_up
        # The cone asked for; a rerun after a fallback keeps the one its first run recorded.
        self.cone = job.sparse if job.sparse is not None else self._recorded_cone()
        self.submodules: tuple[SubmoduleOutcome, ...] = ()

    def run(self) -> CreateReport:
        # The fetch (the slowest step but the checkout) runs while the local
        # checks do; it is best-effort and idempotent, so starting it early
        # cannot do harm even when the worktree turns out to exist already.
        # A worktree that looks made already (its checkout on the topic branch)
        # most likely needs no fetch at all: it waits until a creation needs it.
        fetch = self.job.fetch
        self.prefetch = (
            fetch if fetch is not None else _Fetch(self.git, start=not _looks_made(self.job))
        )
        try:
            report = self._run()
        finally:
            if self.prefetch.started:
                self.prefetch.result()
        # Looked for once our own git commands here are done (the fetch too):
        # a lock a killed git left, which this run did not need, still blocks
        # the next git command that does (a commit, teardown's cherry-pick).
        locks = g.left_lock_warnings(self.job.name, self.repo.primary, self.repo.common_dir)
        return dataclasses.replace(report, warnings=(*report.warnings, *locks))

    def _look_up(self) -> None:
        """HEAD, the topic's branch and origin/HEAD: one git process, once the fetch is done.

        Read after the fetch because the fetch moves origin/HEAD's branch; the
        local checks it used to overlap with cost less than the processes saved.
        The topic lock keeps the branch as read here until ``add`` (the one step
        in between that deletes it, ``_undo_half_made``, updates this too).
        """
        if self.prefetch.started:
            self.prefetch.result()
        refs = ("HEAD", self._branch_ref, _ORIGIN_HEAD, self._origin_branch_ref)
        self.commits = self.git.commits(refs)

    @property
    def _branch_ref(self) -> str:
        return f"refs/heads/{self.branch}"

    @property
    def _origin_branch_ref(self) -> str:
        return f"refs/remotes/origin/{self.branch}"

    def _run(self) -> CreateReport:
        state.crash_point("inspect")
        self._look_up()
        reuse = self._inspect()
        if reuse is not None:
            return self._finish(Path(reuse.toplevel), self._reused_branch(reuse), Status.REUSED)
        self._undo_torn_registration()
        entries = self.git.worktree_list()
        self._refuse_half_removed()
        if self._undo_half_made(entries):
            entries = self.git.worktree_list()
        existing = self._existing(entries)
        if existing is not None:
            self._keep_locked(existing)
            return self._finish(self.path, self.branch, Status.EXISTING)
        switched = self._switched_away(entries)
        if switched is not None:
            current = self._checked_out(switched)
            self._keep_locked(find_worktree(entries, switched))
            return self._finish(switched, current, Status.EXISTING)
        recorded = self._recorded_elsewhere(entries)
        if recorded is not None:
            return self._finish(recorded, self.record.branch, Status.EXISTING)  # type: ignore[union-attr]
        try:
            self._create(entries)
        except _Failed as exc:
            self._roll_back()
            return self._fallback(exc.code, exc.message)
        except OSError as exc:
            # A state directory we cannot write, a full disk: the repo is
            # refused (io-error), never used unrecorded; --strict sees it.
            self._roll_back()
            raise _failure(self.job, exc) from None
        except RouterError:
            # A refusal mid-way (the repo lock timed out, a git lock file in
            # the way): leave nothing behind.
            self._roll_back()
            raise
        return self._finish(self.path, self.branch, Status.CREATED)

    def _roll_back(self) -> None:
        _undo(self.repo, self.path, self.branch, self.created, base=self.base)
        self._forget_claim()

    # inspect ------------------------------------------------------------------

    def _inspect(self) -> RepoLayout | None:
        if self.commits["HEAD"] is None:
            raise RouterError(
                ErrorCode.NO_ROOT_COMMIT,
                f"{self.job.name} ({self.repo.primary}) has no commit yet; make a first commit, "
                "then run this again",
            )
        here = self.job.invoked_in
        if here is None or not here.is_linked_worktree or here.common_dir != self.repo.common_dir:
            return None
        # Its HEAD file names the branch (git's own answer only when it does not).
        current = Git(here.toplevel).checked_out_branch(here.git_dir)
        ours = Path(here.toplevel) == Path(os.path.realpath(self.path))
        if ours and current == self.branch:
            return None  # it *is* this topic's worktree, on its branch: reported as existing
        what = self._no_work_on(current)
        if what is not None:
            raise RouterError(
                ErrorCode.DEFAULT_BRANCH_WORKTREE,
                f"this worktree ({here.toplevel}) is on {what}; never implement there: switch it "
                "to a feature branch, or run from the main clone",
            )
        if ours:
            return None  # this topic's worktree on another branch: `_existing` judges it
        return here

    def _keep_locked(self, entry: WorktreeEntry | None) -> None:
        """Our worktree made by an earlier version, unlocked: locked now, as every new one is.

        Other tools' cleanup deletes unlocked worktrees under .claude/worktrees/
        (DESIGN §10); a lock of someone else's is theirs and stays as it is.
        """
        if entry is None or entry.locked:
            return
        try:
            worktreelock.lock(self.git, entry, self.job.topic.id)
        except GitError as exc:
            self.warnings.append(
                f"{self.job.name}: {entry.path} is not locked and could not be locked "
                f"({exc.first_line}); other tools' cleanup may delete an unlocked worktree: "
                f"`git worktree lock --reason '{worktreelock.reason_for(self.job.topic.id)}' "
                f"{entry.path}`"
            )

    def _no_work_on(self, current: str | None) -> str | None:
        """What ``current`` is when no topic's work belongs there (detached, default), else None."""
        if current is None:
            return "a detached HEAD"
        default = default_branch(self.git)
        return f"the default branch {current!r}" if default and current == default.name else None

    def _reused_branch(self, layout: RepoLayout) -> str | None:
        return Git(layout.toplevel).current_branch()

    # claim / existing -----------------------------------------------------------

    def _existing(self, entries: list[WorktreeEntry]) -> WorktreeEntry | None:
        entry = find_worktree(entries, self.path)
        if entry is None or not self.path.exists():
            return None
        return entry if self._valid_existing(entry) else None

    def _valid_existing(self, entry: WorktreeEntry) -> bool:
        return entry.branch == self.branch and self._plain_checkout()

    def _plain_checkout(self) -> bool:
        """Our path is a linked checkout reached through no symlink (``.git`` a file)."""
        return (
            not ouradd.symlink_in(self.path, self.repo.primary) and (self.path / ".git").is_file()
        )

    def _switched_away(self, entries: list[WorktreeEntry]) -> Path | None:
        """This topic's own worktree, switched to another branch since it was made; else None.

        An agent may run ``git switch -c`` in it: it is still the topic's worktree
        (our record names it, git has it at our path) and holds the plan dir, so a
        rerun answers with it, never a fallback and a second, empty plan dir.
        """
        entry = find_worktree(entries, self.path)
        record = self.record
        if entry is None or entry.branch == self.branch or record is None or not record.worktree:
            return None
        if os.path.realpath(record.worktree) != os.path.realpath(self.path):
            return None
        return self.path if self._plain_checkout() else None

    def _checked_out(self, worktree: Path) -> str:
        """The branch a switched-away worktree is on, refusing one where no work belongs.

        The default branch and a detached HEAD are refused as ``_inspect`` refuses
        them for the checkout the command runs in; another branch is reported as
        the branch the work goes on, with a warning naming the way back.
        """
        current = Git(worktree).current_branch()
        what = self._no_work_on(current)
        if current is None or what is not None:
            raise RouterError(
                ErrorCode.DEFAULT_BRANCH_WORKTREE,
                f"{self.job.name}: this topic's worktree {worktree} is on {what}, not on "
                f"{self.branch!r}; finish what runs there (a rebase, a bisect), then run "
                f"`git -C {worktree} switch {self.branch}` and run this again",
            )
        self.warnings.append(
            f"{self.job.name}: this topic's worktree {worktree} is on branch {current!r}, not "
            f"{self.branch!r} (switched since it was made); the work goes on there; "
            f"`git -C {worktree} switch {self.branch}` goes back to the topic's branch"
        )
        return current

    # half-made worktrees (a kill during `git worktree add`) -----------------------

    def _undo_half_made(self, entries: list[WorktreeEntry]) -> bool:
        """Roll back the worktree a killed ``git worktree add`` of ours left half-made.

        git registers the worktree (locked, reason "initializing"), points its
        HEAD at the branch, then checks the files out and unlocks it: killed in
        between, it leaves a checkout with no files or no index, where
        ``git status`` shows every file deleted and a commit would delete them
        all. Reusing that as ``existing`` would hand the agent that checkout.
        Only a creation this tool's record shows still under way, holding no
        file but what git's checkout wrote, is removed (and made again by the
        caller); anything else is refused with the fix. True when rolled back.
        """
        entry = find_worktree(entries, self.path)
        linked = ouradd.symlink_in(self.path, self.repo.primary)
        if entry is None or not self.path.is_dir() or linked:
            return False
        why = self._half_made(entry)
        if why is None:
            return False
        tip = self.commits[self._branch_ref]
        problem = self._not_ours(tip) or self._work_in_half_made(tip)
        if problem is not None:
            raise RouterError(
                ErrorCode.HALF_MADE_WORKTREE,
                f"{self.job.name}: {self.path} is a worktree `git worktree add` left half-made "
                f"({why}) and {problem}; copy out anything you need from it, then run "
                f"`git -C {self.repo.primary} worktree remove --force --force {self.path}` "
                "and run this again",
            )
        busy = self._in_use()
        if busy is not None:
            raise RouterError(
                ErrorCode.HALF_MADE_WORKTREE,
                f"{self.job.name}: {self.path} is a worktree `git worktree add` left half-made "
                f"({why}), and {busy}; wait until no git command runs there, then run this "
                "again (if none does, run "
                f"`git -C {self.repo.primary} worktree remove --force --force {self.path}` first)",
            )
        # Only git's partial checkout is in it: the directory first (git cannot
        # remove a worktree whose .git file it cannot read), then the registration.
        # That takes git's own lock files in the registration with it (the
        # checkout's index.lock, left by the kill). team-router never removes a
        # git lock a user may need, and this is none: it lies inside a
        # registration our record shows we were creating, of a worktree holding
        # nothing but git's checkout, that no process has open (_in_use), and
        # it goes with the whole registration; a lock can only guard that.
        import shutil  # lazy, like every undo's: a run that creates pays ~3 ms for it

        shutil.rmtree(self.path)
        self.git.worktree_remove(self.path, force=True)
        record = self.record
        if record is not None and record.branch_created and tip == record.base_commit:
            # Cut by the killed run and never moved: made again at a fresh base.
            self.git.branch_delete(self.branch)
            self.commits[self._branch_ref] = None
        self.warnings.append(
            f"{self.job.name}: removed the half-made worktree a killed run left at {self.path} "
            f"({why}) and created it again"
        )
        return True

    def _refuse_half_removed(self) -> None:
        """Never hand back a worktree a killed teardown (or pr-cleanup) was removing.

        What git had not deleted yet is still there, and its deletions show as
        changes: an agent would work in it, and a commit would put the
        deletions on the branch. The teardown that marked the removal finishes it.
        """
        mark = self.record.removing if self.record else None
        marked = mark.path if mark is not None else None
        if marked is None or not os.path.lexists(self.path):
            return  # nothing left at the path: the mark goes when the path is claimed again
        if os.path.realpath(marked) != os.path.realpath(self.path):
            return
        topic = self.job.topic.id
        raise RouterError(
            ErrorCode.REMOVAL_INTERRUPTED,
            f"{self.job.name}: {self.path} is a worktree a teardown (or pr-cleanup) of {topic} "
            f"was removing when it was killed; run `team-router teardown {topic}` to finish "
            "the removal, then run this again",
        )

    def _our_add(self, tip: str | None) -> ouradd.OurAdd:
        """This run's creation at our path, as the shared "ours" rule judges it."""
        return ouradd.OurAdd(self.repo, self.path, self.job.topic.id, self.branch, self.record, tip)

    def _in_use(self) -> str | None:
        return ouradd.in_use(self._our_add(None))

    def _registration(self) -> Path:
        return ouradd.registration(self._our_add(None))

    def _undo_torn_registration(self) -> None:
        """Remove our worktree whose git registration a killed ``git worktree add`` left torn.

        git cannot use a registration missing its ``gitdir``, ``commondir`` or
        ``HEAD`` (:func:`router.git.files.torn_registration`): ``git worktree
        list`` leaves it out (or fails, for an empty ``commondir``), so the
        path would look taken and the repo would fall back to its main tree.
        An add killed while writing those files leaves that, and so does one
        whose own clean-up on a signal (it deletes the registration's files one
        by one, then the checkout) was cut short by a SIGKILL: then the
        checkout is whole, and its ``.git`` still points here. Ours, it is
        removed and the caller creates the worktree again: the record shows
        this topic's creation under way, a lock left in it is ours (or git's
        "initializing"), a ``gitdir`` left names our path, and the path holds
        nothing but git's checkout of the branch and our (file-free) plan dir.
        Anything else at our path is refused (``half-made-worktree``) and kept.
        """
        admin = self._registration()
        why = g.torn_registration(admin) if admin.is_dir() else ""
        if not why or admin.parent != self.repo.common_dir / "worktrees":
            return
        add = self._our_add(self.commits[self._branch_ref])
        problem = ouradd.torn_problem(add, admin)
        if problem is not None:
            if not os.path.lexists(self.path):
                return  # nothing at our path: git makes the worktree beside it
            raise RouterError(
                ErrorCode.HALF_MADE_WORKTREE,
                f"{self.job.name}: {self.path} is a worktree whose git registration {admin} a "
                f"killed `git worktree add` left torn ({why}), so git no longer sees it, and "
                f"{problem}; nothing was touched. Copy out anything you need from {self.path}, "
                f"then run `rm -rf {self.path} {admin}` and run this again",
            )
        if ouradd.undo_torn(add, admin):
            self.commits[self._branch_ref] = None
        self.warnings.append(
            f"{self.job.name}: removed the half-made worktree a killed run left at {self.path}, "
            f"whose git registration is torn, unreadable to git ({admin}: {why}), and created it again"
        )

    def _half_made(self, entry: WorktreeEntry) -> str | None:
        """Why git's registration at our path is not a finished checkout, or None."""
        if entry.locked and entry.lock_reason == g.ADD_IN_PROGRESS:
            return f"git left it locked ({g.ADD_IN_PROGRESS})"
        record = self.record
        if (
            worktreelock.own_lock(entry)
            and record
            and record.creating
            and "add" not in record.steps
        ):
            return "the record shows its `git worktree add` never finished"
        if entry.head is None:  # an unborn branch, or a HEAD git has not set up yet
            return "it has no HEAD"
        index = Git(self.path).index_file()
        if index is None:
            return "git does not recognise it as a checkout"
        if not index.exists() and g.tree_files(self.git, entry.head):
            return "its files were never checked out (no index)"
        return None

    def _not_ours(self, tip: str | None) -> str | None:
        return ouradd.not_ours(self._our_add(tip))

    def _work_in_half_made(self, tip: str | None) -> str | None:
        return ouradd.work_in_half_made(self._our_add(tip))

    def _recorded_elsewhere(self, entries: list[WorktreeEntry]) -> Path | None:
        """The checkout an earlier run reused for the topic, while git still has it there.

        Without this, the same ``new`` run again from another directory would
        give the topic a second worktree (and a second plan dir).
        """
        if self.record is None or not self.record.worktree:
            return None
        path = Path(self.record.worktree)
        if os.path.realpath(path) in {str(self.repo.primary), os.path.realpath(self.path)}:
            return None
        entry = find_worktree(entries, path)
        if entry is None or entry.branch is None or entry.branch != self.record.branch:
            return None
        return path if (path / ".git").is_file() else None

    def _create(self, entries: list[WorktreeEntry]) -> None:
        # Before anything appears in the primary clone (a worktree under
        # .claude/worktrees/, or on a fallback the plan dir under docs/plans/):
        # a run killed after `add` must not leave `?? .claude/` there, where it
        # would block every other topic's integrate and pr-cleanup.
        self._exclude()
        holder = worktree_with_branch(entries, self.branch)
        if holder is not None and (unmounted := self._unmounted(holder.path)):
            # Not a fallback: the run's worktree, its work and its plan dir are on that disk.
            raise RouterError(
                ErrorCode.NOT_MOUNTED,
                f"{self.job.name}: branch {self.branch!r} is checked out in {holder.path}; "
                f"{unmounted}",
            )
        if holder is not None:
            # A directory deleted by hand leaves git's registration behind: git still
            # counts the branch as checked out there, and `team-router doctor --repair`
            # is what unregisters it once nothing of it would be lost.
            fix = (
                "its directory is gone, but git still has it registered: `team-router doctor "
                "--repair` unregisters it when nothing would be lost (else it names what to do "
                "first), then run this again"
                if not os.path.lexists(holder.path)
                else "finish or remove that worktree first"
            )
            raise _Failed(
                ErrorCode.BRANCH_CHECKED_OUT,
                f"branch {self.branch!r} is checked out in {holder.path}; {fix}",
            )
        registered = find_worktree(entries, self.path)
        if registered is not None:
            raise _Failed(ErrorCode.PATH_TAKEN, self._taken_message(registered))
        branch_exists = self.commits[self._branch_ref] is not None
        state.crash_point("base")
        self.base = None if branch_exists else self._resolve_base()
        if self.cone:
            at = self.base or self.commits[self._branch_ref]
            sparse.check_at(self.git, at, self.cone, self.job.name)  # type: ignore[arg-type]
        state.crash_point("claim")
        # Recorded before the mkdir: a run killed right after it finds its own
        # empty claim on the rerun instead of a "taken" path (and a new id).
        # The base is recorded too: a rerun after a kill during `add` deletes
        # the branch it cut only while the branch is still at that base.
        based = {"base_commit": self.base} if self.base is not None else {}
        self._save(
            steps=("inspect", "base", "claim"),
            branch_created=not branch_exists,
            sparse=self.cone,
            **based,
        )
        self._claim()
        state.crash_point("add")
        self._add(branch_exists)
        if self.cone:
            self._sparse()
        state.crash_point("verify")
        self._verify()

    def _taken_message(self, entry: WorktreeEntry) -> str:
        unmounted = self._unmounted(entry.path)
        if unmounted:
            return f"{self.path} is registered as a worktree; {unmounted}"
        if not entry.path.exists():
            return (
                f"{self.path} is registered as a worktree but its directory is gone; run "
                "`team-router doctor --repair`"
            )
        return f"{self.path} is already a worktree on {entry.branch or 'a detached HEAD'}"

    def _unmounted(self, path: Path) -> str:
        """The fix for a registered worktree whose disk is not mounted ("" when it is not that)."""
        unmounted = worktree_unmounted(self.repo.common_dir, path)
        if unmounted is None:
            return ""
        return (
            f"its filesystem is not mounted ({unmounted.why}): mount it at {unmounted.point}, "
            "then run this again"
        )

    def _claim(self) -> None:
        # Checked before the mkdir (a symlinked .claude/ must not get a
        # worktrees/ directory made wherever it points) and after it (a race).
        self._refuse_symlinked_parent()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            # A file where .claude/ or .claude/worktrees/ goes: the repo falls
            # back (and a rerun, once it is moved, creates the worktree).
            raise _Failed(
                ErrorCode.PATH_TAKEN,
                f"cannot create {self.path.parent} ({exc.strerror}): a file is in the way; move it",
            ) from None
        self._refuse_symlinked_parent()
        try:
            # git worktree add exits 128 both for a taken path and a bad ref, so
            # a taken path must be detected (atomically) before git runs.
            self.path.mkdir()
        except FileExistsError:
            if not (self._our_empty_claim() or self._our_cut_short_undo()):
                raise _Failed(ErrorCode.PATH_TAKEN, self._blocker_message()) from None
            # The killed run's claim is this run's now: a rollback (which also
            # forgets the claim) must not leave an empty directory that a rerun
            # would refuse as taken.
            self.created = dataclasses.replace(self.created, directory=True)
        except OSError as exc:
            raise _Failed(
                ErrorCode.PATH_TAKEN, f"cannot create {self.path}: {exc.strerror}"
            ) from None
        else:
            self.created = dataclasses.replace(self.created, directory=True)

    def _refuse_symlinked_parent(self) -> None:
        if ouradd.symlink_in(self.path.parent, self.repo.primary):
            raise _Failed(ErrorCode.PATH_TAKEN, f"{self.path.parent} goes through a symlink")

    def _our_empty_claim(self) -> bool:
        """An empty directory our own earlier run claimed and then died on (crash resume)."""
        return (
            self.record is not None
            and "claim" in self.record.steps
            and self.path.is_dir()
            and not self.path.is_symlink()
            and not any(self.path.iterdir())
        )

    def _our_cut_short_undo(self) -> bool:
        """Empty our path of what a killed run's ``git worktree add`` left unregistered; True when done.

        git stopped by a signal undoes its add: the registration first, then the
        files it wrote. Killed in the middle of that (a SIGKILL right after the
        SIGTERM, as a service manager sends them), it leaves part of its checkout
        at our path with no registration naming it. The record is the journal
        that says it is ours: our claim, and no finished add. Only git's own
        files may be there (its checkout of the branch, its ``.git`` file), and
        no process may still use them; anything else keeps the path taken.
        """
        record = self.record
        if record is None or not record.creating or "add" in record.steps:
            return False
        if not self.path.is_dir() or ouradd.symlink_in(self.path, self.repo.primary):
            return False
        if g.registration_of(str(self.repo.common_dir), str(self.path)) is not None:
            return False
        tip = self.commits[self._branch_ref] or record.base_commit
        if tip is None or self._not_ours(tip) is not None:
            return False
        if self._work_in_half_made(tip) is not None or self._in_use() is not None:
            return False
        import shutil  # lazy, like every undo's

        shutil.rmtree(self.path)
        self.path.mkdir()
        self.warnings.append(
            f"{self.job.name}: removed what a killed run's `git worktree add` left at "
            f"{self.path} (git's own files, no registration) and created the worktree again"
        )
        return True

    def _blocker_message(self) -> str:
        kind = (
            "a symlink"
            if self.path.is_symlink()
            else "a file"
            if self.path.is_file()
            else "a directory"
        )
        return (
            f"{self.path} already exists ({kind} that is not this topic's worktree); move it away"
        )

    # base ---------------------------------------------------------------------

    def _resolve_base(self) -> str:
        if not self.prefetch.started:
            # Deferred while the worktree looked made; a creation needs origin as it is now.
            self.prefetch.result()
            self._look_up()
        err = self.prefetch.result()
        has_origin = err is None or self.git.has_remote("origin")
        if err is not None and has_origin:
            self.warnings.append(f"{self.job.name}: fetch from origin failed ({err.first_line})")
        head = self.commits[_ORIGIN_HEAD] if has_origin else None
        if head is not None:
            self._name_origins_branch(head)
            return head
        why = (
            "origin has no HEAD (run `git remote set-head origin --auto`)"
            if has_origin
            else "no origin"
        )
        found = default_branch(self.git)
        local = found.local_ref if found else None
        commit = self.git.rev_parse(local) if local else None
        if commit is None and found is not None:
            commit = self.git.rev_parse(found.best_ref)
        if commit is None:
            raise _Failed(
                ErrorCode.NO_DEFAULT_BRANCH, f"{self.job.name}: {why} and no local default branch"
            )
        self.warnings.append(f"{self.job.name}: {why}; branching from local {found.name}")  # type: ignore[union-attr]
        return commit

    def _name_origins_branch(self, base: str) -> None:
        """Warn when origin has a branch of this name (pushed from elsewhere) the new one is not.

        The local branch is cut from origin/HEAD as always; a push from it would
        be rejected (or, forced, would drop origin's commits), so the way to
        take origin's work is named.
        """
        theirs = self.commits.get(self._origin_branch_ref)
        if theirs is None or theirs == base or self.git.is_ancestor(theirs, base):
            return  # none, or all of it is in origin/HEAD already (merged)
        self.warnings.append(
            f"{self.job.name}: origin already has a branch {self.branch} ({theirs[:12]}), "
            f"and the new one starts from origin/HEAD instead; to continue that work, run "
            f"`git -C {self.path} merge --ff-only origin/{self.branch}` before committing"
        )

    # add / verify ---------------------------------------------------------------

    def _add(self, branch_exists: bool) -> None:
        try:
            with state.held_lock(self.repo.common_dir, REPO_LOCK, wait=self.job.wait):
                self.git.worktree_add(
                    self.path,
                    self.branch,
                    base=None if branch_exists else self.base,
                    workers=self.job.checkout_workers,
                    lock_reason=worktreelock.reason_for(self.job.topic.id),
                    checkout=not self.cone,
                )
        except GitError as exc:
            self._note_partial_add(branch_existed=branch_exists)
            if exc.lock_file is not None:
                # Not a fallback: the cause is a stale lock the user removes in
                # one command, after which a rerun gives the repo its worktree.
                raise RouterError(exc.code, f"{self.job.name}: {exc.first_line}") from None
            raise _Failed(
                ErrorCode.ADD_FAILED, f"git worktree add failed: {exc.first_line}"
            ) from None
        self.created = dataclasses.replace(
            self.created, registration=True, branch=not branch_exists
        )
        # git locks the worktree with our reason from the start (--lock --reason), in
        # place of the "initializing" it would remove when done: only this step in
        # the record says its add finished (_half_made).
        self._save(steps=("add",))

    def _sparse(self) -> None:
        """Set the cone in the worktree ``add`` left unchecked-out, then check it out.

        Killed before this is recorded, the worktree has no index: the rerun
        finds it half-made and makes it again (``_undo_half_made``).
        """
        state.crash_point("sparse")
        try:
            sparse.check_out(Git(self.path), self.cone or (), workers=self.job.checkout_workers)
        except GitError as exc:
            raise _Failed(
                ErrorCode.ADD_FAILED, f"sparse checkout failed: {exc.first_line}"
            ) from None
        self._save(steps=("sparse",))

    def _note_partial_add(self, *, branch_existed: bool) -> None:
        """What a failed ``git worktree add`` still made is this run's to roll back.

        git runs the post-checkout hook after it registered the worktree and
        created the branch, and exits with the hook's status (a hook left by a
        missing git-lfs or husky exits 1): without this the registration and
        the branch outlive the rollback, and a rerun refuses branch-checked-out.
        """
        try:
            registered = find_worktree(self.git.worktree_list(), self.path) is not None
        except GitError:
            registered = True  # unknown: removing a registration that is not there is a no-op
        made_branch = not branch_existed and self.git.branch_exists(self.branch)
        self.created = dataclasses.replace(
            self.created, registration=registered, branch=made_branch
        )

    def _verify(self) -> None:
        try:
            # git's own files, as git itself would read them: the plain layout needs no process.
            layout, branch = Git(self.path).top_checkout_state()
        except GitError as exc:
            raise _Failed(
                ErrorCode.VERIFY_FAILED, f"new worktree does not answer: {exc.first_line}"
            ) from None
        expected = Path(os.path.realpath(self.path))
        if layout.toplevel != expected or layout.common_dir != self.repo.common_dir:
            raise _Failed(
                ErrorCode.VERIFY_FAILED, f"{self.path} is not a worktree of {self.repo.primary}"
            )
        if branch != self.branch:
            raise _Failed(
                ErrorCode.VERIFY_FAILED, f"{self.path} is on {branch!r}, not {self.branch!r}"
            )

    # setup / record ---------------------------------------------------------------

    def _finish(self, worktree: Path, branch: str | None, status: Status) -> CreateReport:
        try:
            self._submodules(worktree, status)
            state.crash_point("setup")
            included, copied = self._setup(worktree)
            setup = plan_setup(
                self.git,
                self.record,
                fresh=status is Status.CREATED,
                options=self.job.setup,
                default_checkout=worktree if self.created.branch and self.base else None,
            )
            state.crash_point("record")
            # A switched-away worktree (_switched_away) keeps the topic's branch in
            # the record: teardown and pr-cleanup judge that branch, not the other.
            switched = status is Status.EXISTING and worktree == self.path
            cone = ("sparse",) if self._cone_of(worktree, status) else ()  # see _cone_of
            self._save(
                steps=("add", *cone, "verify", SUBMODULES, "setup", "record", *setup.steps),
                worktree=str(worktree),
                base_commit=self._base_commit(worktree),
                included=included,
                branch=self.branch if switched else branch or self.branch,
                **setup.fields,
            )
        except PlanDirSymlink as exc:
            if status is not Status.CREATED:
                raise
            # The new worktree is fine but its plan dir cannot be made: the main
            # tree takes the topic (DESIGN §7), where the same check runs again.
            _undo(self.repo, self.path, self.branch, self.created, base=self.base)
            self._forget_claim()
            return self._fallback(exc.code, exc.message)
        except (OSError, GitError) as exc:
            if status is not Status.CREATED:
                raise RouterError(
                    ErrorCode.SETUP_FAILED, f"{self.job.name}: setup failed: {exc}"
                ) from None
            _undo(self.repo, self.path, self.branch, self.created, base=self.base)
            self._forget_claim()
            return self._fallback(ErrorCode.SETUP_FAILED, f"setting up {worktree} failed: {exc}")
        # After the record: the worktree is whole and recorded before any line
        # runs, and no failure of a line can take it back (DESIGN §7).
        ran = self._setup_commands(setup, worktree, branch or self.branch)
        self._note_cone_kept(worktree, status)
        return CreateReport(
            self.job.name,
            self.repo.primary,
            worktree,
            branch,
            status,
            # An existing worktree reports the base its record kept from creation.
            base=self.base or (self.record.base_commit if self.record else None),
            warnings=tuple(self.warnings),
            created=self.created,
            submodules=self.submodules,
            copied=copied,
            sparse=self._cone_of(worktree, status),
            setup=ran,
        )

    def _note_cone_kept(self, worktree: Path, status: Status) -> None:
        """A cone asked of a worktree made before is not applied to it: say so, with the way."""
        if status is not Status.CREATED and self.job.sparse is not None:
            have = self._cone_of(worktree, status)
            warning = sparse.kept_warning(self.job.name, worktree, self.job.sparse, have)
            if warning:
                self.warnings.append(warning)

    def _recorded_cone(self) -> tuple[str, ...] | None:
        return self.record.sparse if self.record is not None else None

    def _cone_of(self, worktree: Path, status: Status) -> tuple[str, ...] | None:
        """The cone the report names: this run's, or the one the record kept from creation.

        With one, the record's steps name ``sparse`` done: a sparse worktree's
        checkout is finished once it has an index (without, it is half-made).
        """
        if status is Status.CREATED:
            return self.cone
        return self._recorded_cone() if worktree == self.path else None

    def _setup_commands(self, plan: SetupPlan, worktree: Path, branch: str) -> SetupReport:
        state.crash_point("setup-commands")
        if plan.report is not None:
            return plan.report  # nothing to run: the running side is not even loaded
        from router.create.setuprun import SetupRun, run_setup

        where = SetupRun(
            self.job.name,
            self.repo.primary,
            self.repo.common_dir,
            worktree,
            branch,
            self.job.topic.id,
            self.job.setup,
        )
        report, warnings = run_setup(
            plan, where, lambda steps, fields: self._save(steps=steps, **fields)
        )
        self.warnings.extend(warnings)
        return report

    def _submodules(self, worktree: Path, status: Status) -> None:
        """The ``submodules`` stage, in a worktree whose creation the record shows under way.

        A finished worktree's submodules are the user's: a rerun never moves them.
        Recorded only when there were any: else a rerun's check costs one stat.
        """
        record = self.record
        if status is Status.REUSED or record is None or not record.creating:
            return
        if SUBMODULES in record.steps:
            return
        state.crash_point(SUBMODULES)
        self.submodules = check_out_submodules(self.repo.primary, self.repo.common_dir, worktree)
        self.warnings.extend(warnings_for(self.job.name, worktree, self.submodules))
        if self.submodules:
            self._save(steps=(SUBMODULES,))

    def _exclude(self) -> None:
        if self.excluded:
            return
        with state.held_lock(self.repo.common_dir, REPO_LOCK, wait=self.job.wait):
            ensure_excludes(self.repo.common_dir)
        self.excluded = True

    def _setup(self, worktree: Path) -> tuple[list[str], Copied | None]:
        self._exclude()  # a reused or existing worktree may predate the lines
        copied = None
        if worktree != self.repo.primary:
            copied = copy_included(self.repo.primary, worktree, label=self.job.name)
        if copied is not None and copied.warning():
            self.warnings.append(f"{self.job.name}: {copied.warning()}")
        if self.job.is_home:
            create_plan_dir(worktree, self.job.topic.id)
        previous = list(self.record.included) if self.record else []
        return sorted(set(previous) | set(copied.paths if copied else ())), copied

    def _base_commit(self, worktree: Path) -> str | None:
        if self.record is not None and self.record.base_commit:
            return self.record.base_commit
        if self.base is not None and worktree == self.path:
            return self.base  # a branch this run cut: its worktree's HEAD is the base
        return Git(worktree).head()

    def _load_record(self) -> state.TopicRecord | None:
        try:
            record = state.read_record(self.repo.common_dir, self.job.topic.id)
        except state.RecordCorrupt as exc:
            self.warnings.append(
                f"{exc.path}: {exc.reason}; not trusted (a new record sets it aside as "
                f"{exc.path.name}{state.CORRUPT_MARK}<n>, never deletes it)"
            )
            return None
        # An id torn down and now created again is a new run: the old record's
        # steps, base and branch ownership describe the worktree that is gone.
        return None if record is not None and record.torn_down else record

    def _save(self, *, steps: tuple[str, ...], **fields: object) -> None:
        record = self.record or state.TopicRecord(
            id=self.job.topic.id,
            repo=self.job.name,
            branch=self.branch,
            description=self.job.description,
            made_by=self.job.made_by,
        )
        if "branch_created" in fields and record.branch_created:
            fields.pop("branch_created")  # a resumed run must not forget it made the branch
        if "included" in fields:
            fields["included"] = tuple(fields["included"])  # type: ignore[arg-type]
        if self.job.home is not None:
            fields["home"] = str(self.job.home)
        record = dataclasses.replace(record, **fields)  # type: ignore[arg-type]
        if (
            "claim" in steps
            and record.removing is not None
            and os.path.realpath(record.removing.path) == os.path.realpath(self.path)
        ):
            # A removal of this path a kill interrupted: the worktree made here now is
            # another one, whose files are work again, never the remains of that removal.
            record = dataclasses.replace(record, removing=None)
        for step in steps:
            record = record.with_step(step)
        # This run's view of the record replaces the file: a corrupt one is set
        # aside (never lost), as _load_record warned.
        state.update_record(
            self.repo.common_dir,
            self.job.topic.id,
            lambda _: record,
            new=lambda: record,
            replace_corrupt=True,
        )
        self.record = record

    def _forget_claim(self) -> None:
        """After a rollback the record must not describe a creation still under way.

        The claim is recorded before the mkdir (for crash resumes); a run that
        fell back finished, so ``doctor`` must not ask for a rerun, and a branch
        the rollback deleted is no longer one this tool created.
        """
        record = self.record
        if record is None or not record.creating:
            return
        with contextlib.suppress(OSError):  # a record we cannot write must not cost the fallback
            _forget_creation(self.repo, self.job.topic.id)
        self.record = None

    # outcomes -------------------------------------------------------------------

    def _fallback(self, code: ErrorCode, message: str) -> CreateReport:
        warning = (
            f"Worktree creation failed in {self.job.name} ({code}: {message}). "
            "Falling back to main tree for that repo."
        )
        return CreateReport(
            self.job.name,
            self.repo.primary,
            self.repo.primary,
            None,
            Status.FALLBACK,
            code,
            message,
            warnings=(*self.warnings, warning),
        )


class _Fetch:
    """A job's fetch from origin: a git process started ahead, or one deferred until asked for.

    ``result()`` waits for it, and is safe to call twice. Deferred, it runs
    when ``result()`` is first asked for, inline.
    """

    def __init__(self, git: Git, *, start: bool = True) -> None:
        self._git = git
        self._running = git.start_fetch("origin") if start else None

    @property
    def started(self) -> bool:
        return self._running is not None

    def result(self) -> GitError | None:
        if self._running is None:
            self._running = self._git.start_fetch("origin")
        return self._running.error()


def _looks_made(job: Job) -> bool:
    """The job's worktree is there on the topic branch, as its files tell (no git, no proof).

    Only decides whether to fetch ahead: the pipeline still checks the
    worktree with git, and fetches first if it turns out to create one.
    """
    path = job.repo.worktree_path(job.topic.branch)
    return g.checkout_branch(path) == job.topic.branch


def _refused(job: Job, code: ErrorCode, message: str) -> CreateReport:
    # The JSON lists only the reason's code: the warning carries what to do about it.
    warning = f"{job.name} got no worktree ({code}): {message}"
    return CreateReport(
        job.name, job.repo.primary, None, None, Status.REFUSED, code, message, warnings=(warning,)
    )


def _failure(job: Job, exc: GitError | OSError) -> RouterError:
    """A git or filesystem failure as a refusal: its code and a message naming the fix."""
    if isinstance(exc, GitError):
        return RouterError(exc.code, f"{job.name}: {exc.first_line}")
    return io_error(exc, where=job.name)


def _undo(repo: Repo, path: Path, branch: str, created: Created, *, base: str | None) -> None:
    """Remove exactly what one run created: registration, directory, an unused new branch."""
    git = repo.git
    if created.registration:
        with contextlib.suppress(GitError):
            git.worktree_remove(path, force=True)
    if created.directory and path.exists() and not path.is_symlink():
        import shutil

        shutil.rmtree(path, ignore_errors=True)
    if created.branch and branch:
        tip = git.rev_parse(f"refs/heads/{branch}")
        # Only a branch with no new commits goes: anything beyond its base is work.
        if tip is not None and (base is None or tip == base):
            with contextlib.suppress(GitError):
                git.branch_delete(branch)
