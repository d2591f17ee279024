"""The worktree creation pipeline (DESIGN §7): inspect, base, claim, add, sparse, verify, setup, record."""

from __future__ import annotations

import os
from pathlib import Path

from router import git as g
from router.create import ouradd
from router.create.creation import (
    ORIGIN_HEAD,
    REPO_LOCK,
    Failed,
    Job,
    failure,
    forget_creation,
    undo_created,
)
from router.create.fetch import Fetch
from router.create.finish import Finish
from router.create.halfmade import HalfMade
from router.create.report import CreateReport, Status
from router.errors import ErrorCode, Refusal, RouterError
from router.git import Git, GitError, RepoLayout, WorktreeEntry
from router.parallel import MAX_PARALLEL, parallel_outcomes, raised
from router.records import replace
from router.topic import state, worktreelock
from router.topic.workspace import default_branch, find_worktree, worktree_with_branch

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
        refusal = failure(job, exc)
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
    from router.progress import Progress  # imported here: `new` runs one job, through ensure()

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
        replace(
            j,
            checkout_workers=1,
            fetch=Fetch(j.repo.git, start=not _looks_made(j)) if n < MAX_PARALLEL else None,
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
    undo_created(job.repo, report.worktree, report.branch or "", report.created, base=report.base)
    forget_creation(job.repo, job.topic.id)


# -- the pipeline --------------------------------------------------------------


class _Pipeline(HalfMade, Finish):
    """One repo's creation: inspect, base, claim, add, sparse, verify (the finish is Finish's)."""

    def run(self) -> CreateReport:
        # The fetch (the slowest step but the checkout) runs while the local
        # checks do; it is best-effort and idempotent, so starting it early
        # cannot do harm even when the worktree turns out to exist already.
        # A worktree that looks made already (its checkout on the topic branch)
        # most likely needs no fetch at all: it waits until a creation needs it.
        fetch = self.job.fetch
        self.prefetch = (
            fetch if fetch is not None else Fetch(self.git, start=not _looks_made(self.job))
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
        return replace(report, warnings=(*report.warnings, *locks))

    def _run(self) -> CreateReport:
        state.crash_point("inspect")
        self._look_up()
        reuse = self._inspect()
        if reuse is not None:
            return self._finish(
                Path(reuse.toplevel), Git(reuse.toplevel).current_branch(), Status.REUSED
            )
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
        except Failed as exc:
            self._roll_back()
            return self._fallback(exc.code, exc.message)
        except OSError as exc:
            # A state directory we cannot write, a full disk: the repo is
            # refused (io-error), never used unrecorded; --strict sees it.
            self._roll_back()
            raise failure(self.job, exc) from None
        except RouterError:
            # A refusal mid-way (the repo lock timed out, a git lock file in
            # the way): leave nothing behind.
            self._roll_back()
            raise
        return self._finish(self.path, self.branch, Status.CREATED)

    def _roll_back(self) -> None:
        undo_created(self.repo, self.path, self.branch, self.created, base=self.base)
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
        _, warning = worktreelock.lock_or_warn(self.git, entry, self.job.topic.id, self.job.name)
        if warning:
            self.warnings.append(warning)

    def _no_work_on(self, current: str | None) -> str | None:
        """What ``current`` is when no topic's work belongs there (detached, default), else None."""
        if current is None:
            return "a detached HEAD"
        default = default_branch(self.git)
        return f"the default branch {current!r}" if default and current == default.name else None

    # claim / existing -----------------------------------------------------------

    def _existing(self, entries: list[WorktreeEntry]) -> WorktreeEntry | None:
        entry = find_worktree(entries, self.path)
        if entry is None or not self.path.exists():
            return None
        return entry if entry.branch == self.branch and self._plain_checkout() else None

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
            raise Failed(
                ErrorCode.BRANCH_CHECKED_OUT,
                f"branch {self.branch!r} is checked out in {holder.path}; {fix}",
            )
        registered = find_worktree(entries, self.path)
        if registered is not None:
            raise Failed(ErrorCode.PATH_TAKEN, self._taken_message(registered))
        branch_exists = self.commits[self._branch_ref] is not None
        state.crash_point("base")
        self.base = None if branch_exists else self._resolve_base()
        if self.cone:
            from router.create import sparse  # only a sparse worktree's creation loads it

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
        from router.mounts import worktree_unmounted  # only for a path already registered

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
            raise Failed(
                ErrorCode.PATH_TAKEN,
                f"cannot create {self.path.parent} ({exc.strerror}): a file is in the way; move it",
            ) from None
        self._refuse_symlinked_parent()
        try:
            # git worktree add exits 128 both for a taken path and a bad ref, so
            # a taken path must be detected (atomically) before git runs.
            self.path.mkdir()
        except FileExistsError:
            if not (self._our_empty_claim() or self._our_cut_shortundo_created()):
                raise Failed(ErrorCode.PATH_TAKEN, self._blocker_message()) from None
            # The killed run's claim is this run's now: a rollback (which also
            # forgets the claim) must not leave an empty directory that a rerun
            # would refuse as taken.
            self.created = replace(self.created, directory=True)
        except OSError as exc:
            raise Failed(
                ErrorCode.PATH_TAKEN, f"cannot create {self.path}: {exc.strerror}"
            ) from None
        else:
            self.created = replace(self.created, directory=True)

    def _refuse_symlinked_parent(self) -> None:
        if ouradd.symlink_in(self.path.parent, self.repo.primary):
            raise Failed(ErrorCode.PATH_TAKEN, f"{self.path.parent} goes through a symlink")

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
        head = self.commits[ORIGIN_HEAD] if has_origin else None
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
            raise Failed(
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
                raise failure(self.job, exc) from None
            raise Failed(
                ErrorCode.ADD_FAILED, f"git worktree add failed: {exc.first_line}"
            ) from None
        self.created = replace(self.created, registration=True, branch=not branch_exists)
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
        from router.create import sparse

        try:
            sparse.check_out(Git(self.path), self.cone or (), workers=self.job.checkout_workers)
        except GitError as exc:
            raise Failed(
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
        self.created = replace(self.created, registration=registered, branch=made_branch)

    def _verify(self) -> None:
        try:
            # git's own files, as git itself would read them: the plain layout needs no process.
            layout, branch = Git(self.path).top_checkout_state()
        except GitError as exc:
            raise Failed(
                ErrorCode.VERIFY_FAILED, f"new worktree does not answer: {exc.first_line}"
            ) from None
        expected = Path(os.path.realpath(self.path))
        if layout.toplevel != expected or layout.common_dir != self.repo.common_dir:
            raise Failed(
                ErrorCode.VERIFY_FAILED, f"{self.path} is not a worktree of {self.repo.primary}"
            )
        if branch != self.branch:
            raise Failed(
                ErrorCode.VERIFY_FAILED, f"{self.path} is on {branch!r}, not {self.branch!r}"
            )

    # setup / record ---------------------------------------------------------------

    # outcomes -------------------------------------------------------------------


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
