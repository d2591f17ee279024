"""``restore``: a topic's snapshots checked out again, each in its own worktree."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from router import interrupt
from router.errors import BadInput, ErrorCode, ExitCode, RouterError, error_json
from router.names import ID_RE, Branch, branch_for
from router.teardown.snapshot import (
    RestoredRepo,
    RestoreStatus,
    plan_dir_ref,
    read_snapshot,
    restore_plan_dir,
    restore_repo,
)
from router.topic import state
from router.topic.scope import RepoTarget, TopicScope, resolve_topic
from router.topic.target import home_repo
from router.topic.workspace import open_repo


@dataclass(frozen=True, slots=True)
class RestoreResult:
    id: str
    repos: tuple[RestoredRepo, ...]
    warnings: list[str] = field(default_factory=list)
    stopped_by: int = 0  # the signal that stopped the command (router.interrupt), if one did

    @property
    def interrupted(self) -> bool:
        return any(r.status is RestoreStatus.INTERRUPTED for r in self.repos)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return ExitCode.for_signal(self.stopped_by or interrupt.SIGINT)
        refused = any(r.status is RestoreStatus.REFUSED for r in self.repos)
        return ExitCode.REFUSED if refused else ExitCode.OK

    @property
    def error(self) -> dict[str, str] | None:
        """What made ``ok`` false: a signal, or the repos whose restore was refused (§13)."""
        if self.interrupted:
            stopped = next(r for r in self.repos if r.status is RestoreStatus.INTERRUPTED)
            done = [r.name for r in self.repos if r.status is RestoreStatus.RESTORED]
            after = f"after restoring {', '.join(done)}" if done else "before any repo was restored"
            return interrupt.interrupted_error(
                self.stopped_by, f"stopped at {stopped.name}, {after}"
            )
        bad = [r for r in self.repos if r.status is RestoreStatus.REFUSED]
        if not bad:
            return None
        return error_json(
            ErrorCode.RESTORE_REFUSED, "; ".join(f"{r.name}: {r.detail}" for r in bad)
        )

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "repos": [r.to_json() for r in self.repos]}


def restore_topic(
    cwd: Path, target: str, *, repo: str | None = None, wait: float = state.DEFAULT_WAIT
) -> RestoreResult:
    """Recreate each repo's worktree (or one, with ``repo``) from its snapshot ref."""
    if not ID_RE.fullmatch(Path(target).name):
        branch_restore = _restore_branch(cwd, target, wait=wait)
        if branch_restore is not None:
            return branch_restore
    try:
        scope = resolve_topic(cwd, target)
    except BadInput as exc:
        if exc.code != ErrorCode.NO_PLAN_DIR:
            raise
        # Not the topic's home (a secondary repo, or a home whose record is
        # gone): the snapshot this repo holds is enough to restore it here.
        scope = _snapshot_scope(cwd, target, exc)
    chosen = scope.only(repo)
    with state.held_lock(scope.home.common_dir, scope.id, wait=wait):
        results = tuple(_restore_target(t, scope.id) for t in chosen)
    if any(r.status is RestoreStatus.INTERRUPTED for r in results):
        return RestoreResult(scope.id, results, list(scope.warnings), interrupt.received())
    if all(r.status is RestoreStatus.SKIPPED for r in results):
        raise RouterError(
            ErrorCode.NO_SNAPSHOT,
            f"no snapshot to restore for {scope.id}: "
            + "; ".join(f"{r.name}: {r.detail}" for r in results),
            details={"id": scope.id, "repos": [r.to_json() for r in results]},
        )
    return RestoreResult(scope.id, results, list(scope.warnings))


def _restore_branch(cwd: Path, branch: str, *, wait: float) -> RestoreResult | None:
    """A branch that is no topic, whose snapshot the repo at ``cwd`` holds (``pr-cleanup --abandon``)."""
    from router.names import branch_problem
    from router.topic.branches import topic_lock

    if branch_problem(branch) is not None:
        return None
    here = open_repo(cwd)
    if read_snapshot(here.git, branch) is None:
        return None
    # The branch may be a topic's (one `new` reused): then its topic's lock, at its home,
    # and its record is read and written as `restore <id>` does, so that status,
    # phase and teardown find the restored worktree.
    lock = topic_lock(here, Branch(branch))
    record = state.read_record_or_none(here.common_dir, lock.topic_id) if lock.topic_id else None
    name = record.repo if record is not None else here.primary.name
    with state.held_lock(lock.home.common_dir, lock.name, wait=wait):
        result = _restore_unless_stopped(
            name, lambda: restore_repo(name, here, lock.topic_id if record else None, branch)
        )
    return RestoreResult(branch, (result,), stopped_by=interrupt.received())


def _restore_target(target: RepoTarget, topic_id: str) -> RestoredRepo:
    repo = target.repo
    if repo is None:
        return RestoredRepo(
            target.name, RestoreStatus.SKIPPED, f"repo not usable: {target.problem}"
        )
    restored = _restore_unless_stopped(
        target.name, lambda: restore_repo(target.name, repo, topic_id, target.branch)
    )
    if not target.is_home or restored.status is RestoreStatus.INTERRUPTED:
        return restored
    # A run that fell back to the primary clone kept its plan dir there: its snapshot
    # has a ref of its own (teardown --force wrote it), and it goes back in place.
    in_place = restore_plan_dir(target.name, repo, topic_id)
    return restored if in_place is None else _with_plan_dir(restored, in_place)


def _with_plan_dir(worktree: RestoredRepo, plan_dir: RestoredRepo) -> RestoredRepo:
    """One repo's answer for its worktree's snapshot and its in-place plan dir's."""
    if worktree.status is RestoreStatus.SKIPPED:
        return plan_dir
    order = (RestoreStatus.REFUSED, RestoreStatus.RESTORED, RestoreStatus.EXISTING)
    status = next(s for s in order if s in {worktree.status, plan_dir.status})
    return dataclasses.replace(
        worktree, status=status, detail=f"{worktree.detail}; {plan_dir.detail}"
    )


def _restore_unless_stopped(name: str, restore: Callable[[], RestoredRepo]) -> RestoredRepo:
    """One repo's restore, unless a signal stopped the command first or on the way.

    A restore stopped part-way is left as a kill leaves it: its note in the
    worktree's git dir tells the rerun to finish it.
    """
    return interrupt.unless_stopped(
        restore, lambda why, _started: RestoredRepo(name, RestoreStatus.INTERRUPTED, why)
    )


def _snapshot_scope(cwd: Path, target: str, original: BadInput) -> TopicScope:
    """The repo at ``cwd`` alone, when it holds a snapshot of the topic's branch, or of the
    run's plan dir (a sweep's under --force: the run's record may be long gone)."""
    topic_id = Path(target).name
    if not ID_RE.fullmatch(topic_id):
        raise original
    here = open_repo(cwd)
    try:
        record = state.read_record(here.common_dir, topic_id)
    except state.RecordCorrupt:
        record = None
    branch = record.branch if record is not None else branch_for(topic_id)
    plan_dir = here.git.rev_parse(plan_dir_ref(topic_id)) is not None
    if read_snapshot(here.git, branch) is None and not plan_dir:
        raise original
    name = record.repo if record is not None else here.primary.name
    # A plan dir's snapshot goes back into this repo's primary clone, as the home's does.
    only = RepoTarget(name, here.primary, branch, None, here, record, is_home=plan_dir)
    # Only this repo is restored, but the topic's lock is at its home wherever
    # that is (this repo's record names it): every other command takes it there.
    home = home_repo(here, topic_id)
    return TopicScope(topic_id, branch, home, None, None, (only,), ())
