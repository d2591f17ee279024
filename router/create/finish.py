"""A worktree's finish: sparse cone kept, submodules, setup copies, the record, setup commands."""

from __future__ import annotations

from pathlib import Path

from router import git as g
from router.create.creation import REPO_LOCK, Creation, undo_created
from router.create.creation import SUBMODULES_STEP as SUBMODULES
from router.create.include import Copied, copy_included
from router.create.report import CreateReport, Status
from router.create.setupcmds import SetupPlan, SetupReport, plan_setup
from router.errors import ErrorCode, RouterError
from router.git import Git, GitError
from router.topic import journal, state
from router.topic.planpath import PlanDirSymlink, create_plan_dir
from router.topic.workspace import ensure_excludes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


class Finish(Creation):
    """The stages after the worktree is verified, up to the record that says it is made."""

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
            # A switched-away worktree (_switched_away) keeps the topic's branch in the record.
            switched = status is Status.EXISTING and worktree == self.path
            cone = ("sparse",) if self._cone_of(worktree, status) else ()  # see _cone_of
            self._save(
                self._remembered(worktree, status),
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
            undo_created(self.repo, self.path, self.branch, self.created, base=self.base)
            self._forget_claim()
            return self._fallback(exc.code, exc.message)
        except (OSError, GitError) as exc:
            if status is not Status.CREATED:
                raise RouterError(
                    ErrorCode.SETUP_FAILED, f"{self.job.name}: setup failed: {exc}"
                ) from None
            undo_created(self.repo, self.path, self.branch, self.created, base=self.base)
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
            base=self._reported_base(worktree, status),
            warnings=tuple(self.warnings),
            created=self.created,
            submodules=self.submodules,
            copied=copied,
            sparse=self._cone_of(worktree, status),
            setup=ran,
            on_existing_branch=self._on_existing_branch(status),
        )

    def _remembered(
        self, worktree: Path, status: Status
    ) -> Callable[[state.TopicRecord], state.TopicRecord] | None:
        """The command's own fields of the record (:attr:`Job.remember`), for the worktree at
        this topic's path only: one reused elsewhere, or none, leaves them to the command."""
        remember = self.job.remember
        if remember is None or status not in {Status.CREATED, Status.EXISTING}:
            return None
        if worktree != self.path:
            return None
        return lambda record: remember(record, worktree)

    def _on_existing_branch(self, status: Status) -> bool:
        """This run made the worktree on a branch that existed already (``new --id`` of a
        run whose worktree is gone): no base was resolved, the branch's commits carry on."""
        return status is Status.CREATED and self.base is None and not self.created.branch

    def _reported_base(self, worktree: Path, status: Status) -> str | None:
        """The commit the report names (:attr:`CreateReport.base`): where the worktree was
        made, never a commit it was not checked out at."""
        if self._on_existing_branch(status):
            return Git(worktree).head()  # the branch's tip, as the worktree has it
        # An existing worktree reports the base its record kept from creation.
        return self.base or (self.record.base_commit if self.record else None)

    def _note_cone_kept(self, worktree: Path, status: Status) -> None:
        """A cone asked of a worktree made before is not applied to it: say so, with the way."""
        if status is not Status.CREATED and self.job.sparse is not None:
            from router.create import sparse  # only where a cone was asked for

            have = self._cone_of(worktree, status)
            warning = sparse.kept_warning(self.job.name, worktree, self.job.sparse, have)
            if warning:
                self.warnings.append(warning)

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
        if status is Status.REUSED or record is None:
            return
        if not journal.find(record, journal.Operation.CREATE):
            return
        if SUBMODULES in record.steps:
            return
        state.crash_point(SUBMODULES)
        if not g.declares_submodules(worktree):
            return  # none: the stage's module is not even loaded
        from router.create.submodules import check_out_submodules, warnings_for

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
