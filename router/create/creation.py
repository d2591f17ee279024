"""One repo's creation: the job, its fetch, the record it keeps, and undoing what it made.

The pipeline's stages (:mod:`router.create.pipeline`, :mod:`router.create.halfmade`,
:mod:`router.create.finish`) share the :class:`Creation` state defined here.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from router.create.fetch import Fetch
from router.create.report import Created, CreateReport, Status
from router.create.setupcmds import SetupOptions
from router.errors import ErrorCode, RouterError, io_error
from router.git import GitError, RepoLayout
from router.names import Sha, Topic
from router.records import field, record, replace
from router.topic import journal, state
from router.topic.workspace import Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from router.create.submodules import SubmoduleOutcome

REPO_LOCK = "_repo"  # per-repo critical sections; ids cannot start with "_"
ORIGIN_HEAD = "refs/remotes/origin/HEAD"
# The submodules stage's name in the record's steps and for the crash seam (its work is in
# router.create.submodules, loaded only for a checkout that declares submodules).
SUBMODULES_STEP = "submodules"


@record
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
    # The fetch from origin, when ensure_all started (or deferred) it ahead of the job's
    # turn, or `new` started it before its pipeline loaded (router.create.fetch).
    fetch: Fetch | None = field(default=None, compare=False, repr=False)
    setup: SetupOptions = field(default_factory=SetupOptions)  # --no-setup, --line-timeout
    # What the command keeps in the home record besides the creation's own fields (its plan
    # dir, its repos), given the worktree at the topic's path: written in the same write as
    # the creation's last step, so the command's own update after it has nothing to write
    # (one record write, and its fsync, fewer).
    remember: Callable[[state.TopicRecord, Path], state.TopicRecord] | None = field(
        default=None, compare=False, repr=False
    )


class Failed(Exception):
    """A step failed after something may have been created: roll back, then fall back."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def forget_creation(repo: Repo, topic_id: str) -> None:
    """After a rollback the repo's record names no worktree and no creation under way."""
    record = state.read_record_or_none(repo.common_dir, topic_id)  # corrupt: doctor reports it
    if record is None:
        return
    gone = not repo.git.branch_exists(record.branch)  # then its creation describes nothing
    journal.end_create(repo.common_dir, topic_id, branch_gone=gone)


def undo_created(
    repo: Repo, path: Path, branch: str, created: Created, *, base: str | None
) -> None:
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


def failure(job: Job, exc: GitError | OSError) -> RouterError:
    """A git or filesystem failure as a refusal: its code and a message naming the fix."""
    if isinstance(exc, GitError):
        return RouterError(exc.code, f"{job.name}: {exc.said}")
    return io_error(exc, where=job.name)


class Creation:
    """The state one repo's creation works on, and the record it keeps of its steps."""

    prefetch: Fetch  # the fetch from origin, set when the pipeline starts to run

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

    def _look_up(self) -> None:
        """HEAD, the topic's branch and origin/HEAD: one git process, once the fetch is done.

        Read after the fetch because the fetch moves origin/HEAD's branch; the
        local checks it used to overlap with cost less than the processes saved.
        The topic lock keeps the branch as read here until ``add`` (the one step
        in between that deletes it, ``_undo_half_made``, updates this too).
        """
        if self.prefetch.started:
            self.prefetch.result()
        refs = ("HEAD", self._branch_ref, ORIGIN_HEAD, self._origin_branch_ref)
        self.commits = self.git.commits(refs)

    @property
    def _branch_ref(self) -> str:
        return f"refs/heads/{self.branch}"

    @property
    def _origin_branch_ref(self) -> str:
        return f"refs/remotes/origin/{self.branch}"

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

    def _save(
        self,
        then: Callable[[state.TopicRecord], state.TopicRecord] | None = None,
        /,
        *,
        steps: tuple[str, ...],
        **fields: object,
    ) -> None:
        """Write ``fields`` and ``steps`` done onto the record, then ``then``'s change of it."""
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
        record = replace(record, **fields)  # type: ignore[arg-type]
        if then is not None:
            record = then(record)
        # This run's view of the record replaces the file: a corrupt one is set
        # aside (never lost), as _load_record warned.
        claimed = self.path if "claim" in steps else None
        self.record = journal.write_steps(
            self.repo.common_dir, self.job.topic.id, record, steps, claimed=claimed
        )

    def _forget_claim(self) -> None:
        """After a rollback the record must not describe a creation still under way.

        The claim is recorded before the mkdir (for crash resumes); a run that
        fell back finished, so ``doctor`` must not ask for a rerun, and a branch
        the rollback deleted is no longer one this tool created.
        """
        record = self.record
        if record is None or not journal.find(record, journal.Operation.CREATE):
            return
        with contextlib.suppress(OSError):  # a record we cannot write must not cost the fallback
            forget_creation(self.repo, self.job.topic.id)
        self.record = None

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

    def _recorded_cone(self) -> tuple[str, ...] | None:
        return self.record.sparse if self.record is not None else None
