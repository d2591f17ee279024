"""``restore`` (DESIGN §9): a topic's snapshots checked out again, each in its own worktree.

The snapshot's first parent is checked out on its branch, its files laid over
as uncommitted edits and its index put back (:mod:`router.teardown.snapshot`
says what a snapshot holds); a plan dir's snapshot goes back into the primary
clone. A restore a kill stopped is finished by the next one
(:mod:`router.teardown.restore_journal`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path

from router import git as g
from router import interrupt
from router.create import sparse
from router.create.creation import SUBMODULES_STEP
from router.create.submodules import (
    SubmoduleOutcome,
    SubmoduleStatus,
    check_out_submodules,
    warnings_for,
)
from router.errors import BadInput, ErrorCode, ExitCode, Refusal, RouterError, error_json
from router.fsutil import files_under
from router.git import Git, GitError
from router.names import ID_RE, Branch, branch_for
from router.reasons import Reason, Why
from router.records import field, record, replace
from router.teardown.restore_journal import (
    branches_in_use,
    check_out_restored,
    check_resumable,
    drop_restoring,
    half_made_adds,
    mark_restoring,
    restored_names,
    undo_half_made_add,
    unfinished_restore,
)
from router.teardown.snapshot import (
    DEPARTED_KEY,
    Snapshot,
    plan_dir_ref,
    read_snapshot,
    snapshot_ref,
)
from router.teardown.wording import in_words
from router.topic import journal, state
from router.topic.runs import PLANS_DIR, plan_dir_link
from router.topic.scope import RepoTarget, TopicScope, resolve_topic
from router.topic.target import home_repo
from router.topic.workspace import Repo, open_repo


@record
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
    warnings = [*scope.warnings, *(w for r in results for w in r.warnings)]
    if any(r.status is RestoreStatus.INTERRUPTED for r in results):
        return RestoreResult(scope.id, results, warnings, interrupt.received())
    if all(r.status is RestoreStatus.SKIPPED for r in results):
        raise RouterError(
            ErrorCode.NO_SNAPSHOT,
            f"no snapshot to restore for {scope.id}: "
            + "; ".join(f"{r.name}: {r.detail}" for r in results),
            details={"id": scope.id, "repos": [r.to_json() for r in results]},
        )
    return RestoreResult(scope.id, results, warnings)


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
    return RestoreResult(branch, (result,), list(result.warnings), interrupt.received())


def _restore_target(target: RepoTarget, topic_id: str) -> RestoredRepo:
    repo = target.repo
    if repo is None:
        unusable = target.unusable or Why(Reason.REPO_UNUSABLE)
        return RestoredRepo(target.name, RestoreStatus.SKIPPED, in_words(unusable))
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
    return replace(worktree, status=status, detail=f"{worktree.detail}; {plan_dir.detail}")


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
    return TopicScope(topic_id, branch, home, None, (only,), ())


def restore_plan_dir(name: str, repo: Repo, topic_id: str) -> RestoredRepo | None:
    """Put the plan dir of a run in place back into the primary clone; None: no snapshot of it.

    Never over anything: a plan dir there already is either the snapshot's
    (``existing``) or other work (refused, named).
    """
    ref = plan_dir_ref(topic_id)
    commit = repo.git.rev_parse(ref)
    if commit is None:
        return None
    path = repo.primary / PLANS_DIR / topic_id
    link = plan_dir_link(str(repo.primary), topic_id)
    if link is not None:
        why = f"{link} is a symlink: nothing is written through it; replace it with a directory"
        return RestoredRepo(name, RestoreStatus.REFUSED, f"restore-refused: {why}", commit)
    try:
        with tempfile.TemporaryDirectory(prefix="team-router-restore-") as tmp:
            index = Path(tmp) / "index"
            if os.path.isdir(path) and files_under(path):
                if g.directory_tree(repo.git, path.relative_to(repo.primary).as_posix(), index) == (
                    repo.git.tree_of(commit)
                ):
                    return RestoredRepo(
                        name, RestoreStatus.EXISTING, f"plan dir {path} is already back", commit
                    )
                return RestoredRepo(
                    name,
                    RestoreStatus.REFUSED,
                    f"restore-refused: {path} holds other files than {ref} ({commit[:12]}); "
                    "nothing was changed: move it aside, then run restore again",
                    commit,
                )
            g.write_tree_files(repo.git, f"{commit}^{{tree}}", index)
    except (GitError, OSError) as exc:
        what = exc.first_line if isinstance(exc, GitError) else str(exc)
        return RestoredRepo(name, RestoreStatus.REFUSED, f"restore failed: {what}", commit)
    _record_plan_dir_restore(repo, topic_id)
    return RestoredRepo(
        name,
        RestoreStatus.RESTORED,
        f"plan dir {path} is back in place, as the run left it; {ref} is kept",
        commit,
    )


def _record_plan_dir_restore(repo: Repo, topic_id: str) -> None:
    """The run is back: an earlier teardown's steps describe another (as ``restore`` of a worktree)."""
    journal.new_run(
        repo.common_dir,
        topic_id,
        lambda r: r,
        new=lambda: state.TopicRecord(id=topic_id, repo="home", branch=topic_id),
    )


class RestoreStatus(StrEnum):
    RESTORED = "restored"
    EXISTING = "existing"  # this snapshot was restored before and its worktree is there
    SKIPPED = "skipped"  # no snapshot for this repo
    REFUSED = "refused"
    INTERRUPTED = "interrupted"  # a signal stopped the command before or during this repo


@record
class RestoredRepo:
    name: str
    status: RestoreStatus
    detail: str
    snapshot: str | None = None
    branch: str | None = None
    worktree: Path | None = None
    submodules: tuple[SubmoduleOutcome, ...] = ()  # what this restore did for each submodule
    warnings: tuple[str, ...] = ()  # one per submodule that could not be checked out

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "status": str(self.status),
            "detail": self.detail,
            "snapshot": self.snapshot,
            "branch": self.branch,
            "worktree": str(self.worktree) if self.worktree else None,
            "submodules": [s.to_json() for s in self.submodules],
        }


def restore_repo(name: str, repo: Repo, topic_id: str | None, branch: str) -> RestoredRepo:
    """Recreate one repo's worktree from its snapshot; idempotent for the same snapshot.

    ``topic_id`` None: a branch that is no topic (one ``pr-cleanup --abandon``
    deleted, a stacked one included): no record is read or written.
    """
    snap = read_snapshot(repo.git, branch)
    record = state.read_record_or_none(repo.common_dir, topic_id) if topic_id is not None else None
    if snap is None:
        # An earlier restore that found the branch name taken moved the topic to
        # ``<branch>-restored``: its snapshot is under the old name, and it is here.
        there = _restored_at(record, "branch", branch)
        if there is not None:
            return _existing(name, there, _restored_field(record, "snapshot"), branch)
        return RestoredRepo(name, RestoreStatus.SKIPPED, f"no snapshot at {snapshot_ref(branch)}")
    again = _restored_at(record, "snapshot", snap.commit)
    if again is not None:
        drop_restoring(repo, again)  # a run killed after its record, before this
        return _existing(name, again, snap.commit, _restored_field(record, "branch"))
    undone = ""
    try:
        cone = sparse.cone_in(g.commit_message(repo.git, snap.commit))
        for add, admin in half_made_adds(repo, of=branch, snap=snap):
            undone += f"; {undo_half_made_add(add, admin)} (made again)"
        place = _restore_place(name, repo, topic_id, branch, snap, cone)
        if isinstance(place, RestoredRepo):
            return place
        target, path, created = place
        _lay_over(Git(path), snap, cone)
        submodules = _check_out_submodules(repo, path, snap)
        copied, includes = _copy_includes(repo, path)
    except GitError as exc:
        return RestoredRepo(
            name, RestoreStatus.REFUSED, f"restore failed: {exc.first_line}", snap.commit
        )
    except Refusal as exc:
        return RestoredRepo(name, RestoreStatus.REFUSED, f"{exc.code}: {exc.message}", snap.commit)
    if topic_id is not None:
        _record_restore(
            repo, record, topic_id, name, branch, target, path, snap, created=created, copied=copied
        )
    drop_restoring(repo, path)
    note = "" if target == branch else f" ({branch} is taken)"
    staged = ", what was staged is staged again" if snap.index is not None else ""
    return RestoredRepo(
        name,
        RestoreStatus.RESTORED,
        f"worktree {path} on {target}{note}; uncommitted edits and untracked files are back "
        f"as working-tree changes{staged}{includes}; {snap.ref} is kept"
        f"{_departed_note(repo, snap)}{undone}",
        snap.commit,
        target,
        path,
        submodules,
        tuple(warnings_for(name, path, submodules)),
    )


def _restore_place(
    name: str,
    repo: Repo,
    topic_id: str | None,
    branch: str,
    snap: Snapshot,
    cone: tuple[str, ...] | None,
) -> tuple[str, Path, bool] | RestoredRepo:
    """Where the snapshot goes back (branch, worktree, whether this restore made it), checked
    out (sparse with ``cone``) and marked; an unfinished restore's own place; or an earlier
    restore's result."""
    unfinished = unfinished_restore(repo, branch, snap)
    if unfinished is not None:
        check_resumable(repo, unfinished[1], snap)
        return unfinished
    # No record says so (a branch that is no topic has none): git's own state
    # tells whether an earlier run already brought this snapshot back. A
    # topic's record does (above): its branch made again from a main that
    # holds the snapshot's commit is a new run, never a restore of it.
    earlier = _earlier_restore(name, repo, snap, branch) if topic_id is None else None
    if earlier is not None:
        return earlier
    target, path, created = check_out_restored(repo, branch, snap, topic_id or branch, cone)
    mark_restoring(repo, path, branch, snap, created=created)
    return target, path, created


def _copy_includes(repo: Repo, path: Path) -> tuple[list[str], str]:
    """Copy the ``.worktreeinclude`` files (``.env`` and kin) again from the primary clone:
    (what was copied, the note the report adds).

    git ignores them, so no snapshot holds them: ``restore`` makes the worktree
    as ``new`` made it. A file already there (one the snapshot brought back,
    one a killed restore copied) is never overwritten. A copy that fails is
    named, and the restored work stays.
    """
    from router.create.include import copy_included

    try:
        copied = copy_included(repo.primary, path)
    except OSError as exc:
        where = exc.filename or repo.primary
        return [], f"; the .worktreeinclude files were not copied again ({exc.strerror}: {where})"
    if copied is None or not copied.paths:
        return [], ""
    # The files by name (how long the copy took belongs to new's report, not to a restore's).
    names = ", ".join(copied.paths)
    return list(copied.paths), f"; copied again from {repo.primary}: {names}"


def _lay_over(wt: Git, snap: Snapshot, cone: tuple[str, ...] | None) -> None:
    """The snapshot's files as working-tree changes, then its index; both steps may run twice.

    In a sparse worktree (``cone``) too: ``git restore`` writes the snapshot's
    changes outside the cone, and its files never written stay unwritten.
    """
    g.restore_worktree_files(wt, snap.commit)
    if snap.index is not None:
        g.read_index(wt, snap.index, sparse=bool(cone))


def _check_out_submodules(repo: Repo, path: Path, snap: Snapshot) -> tuple[SubmoduleOutcome, ...]:
    """The submodules checked out as ``new`` checks them out, from the primary's objects,
    each at the commit the snapshot's files record (where it was, staged or not).

    Run while the restore's note is in the worktree's git dir: a kill here is
    finished by the rerun, which lays the files over again and resumes the
    stage. A submodule that cannot be checked out is a warning, never a lost
    restore: its commit is in the snapshot's tree, and the fix is named.
    """
    state.crash_point(SUBMODULES_STEP)
    if not (path / ".gitmodules").is_file():
        return ()  # the common case: no git process
    try:
        # The snapshot's tree holds each submodule's HEAD; its index, what was staged.
        at = g.moved_gitlinks(repo.git, snap.index or snap.parent, snap.commit)
    except GitError as exc:
        why = f"cannot read the snapshot's submodule commits: {exc.first_line}"
        return (SubmoduleOutcome(".gitmodules", "", "", SubmoduleStatus.FAILED, why),)
    return check_out_submodules(repo.primary, repo.common_dir, path, at=at)


def _earlier_restore(name: str, repo: Repo, snap: Snapshot, branch: str) -> RestoredRepo | None:
    """The worktree an earlier restore of ``snap`` left, when git shows one; else None.

    A worktree on ``branch`` (or a ``-restored`` name), at the path a restore
    gives it, whose HEAD is the snapshot's commit or contains it is that
    restore, whatever was committed since. ``branch`` holding the commit with
    more on top and checked out nowhere was restored and worked on: laying the
    snapshot's files over the newer commits would undo them, so nothing is
    done and the way back is named.
    """
    names = restored_names(branch)
    listed = sorted(repo.git.worktree_list(), key=lambda e: e.branch != branch)
    for entry in listed:
        if entry.branch is None or entry.head is None or not names.fullmatch(entry.branch):
            continue
        if entry.prunable or not (entry.path / ".git").exists():
            continue  # a registration whose directory is gone holds no restored work
        if not _restore_made(repo, entry, snap):
            continue
        if entry.head == snap.parent or repo.git.is_ancestor(snap.parent, entry.head):
            return _existing(name, entry.path, snap.commit, entry.branch)
    tip = repo.git.rev_parse(f"refs/heads/{branch}")
    if tip is None or tip == snap.parent or not repo.git.is_ancestor(snap.parent, tip):
        return None
    if branch in branches_in_use(listed):
        return None  # the user's own checkout of it: the edits go on a -restored name
    return RestoredRepo(
        name,
        RestoreStatus.EXISTING,
        f"{branch} already holds the snapshot's commit {snap.parent[:12]} and commits made "
        f"since, and no worktree has it checked out: `git worktree add "
        f"{repo.worktree_path(branch)} {branch}` checks it out; {snap.ref} is kept",
        snap.commit,
        branch,
    )


def _restore_made(repo: Repo, entry: g.WorktreeEntry, snap: Snapshot) -> bool:
    """Whether ``entry`` may be a restore's worktree: one ``git`` shows holding the snapshot's work.

    A restore checks its branch out at ``worktree_path(branch)``: the branch
    checked out anywhere else (the primary, the user's own checkout) is the
    user's, with none of the snapshot's edits. At our path, a clean checkout
    of the snapshot's commit while the snapshot holds changes is one a
    restore killed before it laid the files over left: answering "already
    restored" there would hide the edits.
    """
    if os.path.realpath(entry.path) != os.path.realpath(repo.worktree_path(entry.branch or "")):
        return False
    if entry.head != snap.parent or not _holds_changes(repo.git, snap):
        return True
    return Git(entry.path).status().dirty


def _holds_changes(git: Git, snap: Snapshot) -> bool:
    """The snapshot's files or its index differ from its commit: a restore lays something over."""
    parent = git.tree_of(snap.parent)
    files = git.tree_of(snap.commit)
    staged = git.tree_of(snap.index) if snap.index is not None else parent
    return files != parent or staged != parent


def _restored_field(record: state.TopicRecord | None, key: str) -> str | None:
    restored = record.restored if record else None
    return getattr(restored, key) if restored else None


def _existing(name: str, where: Path, snapshot: str | None, branch: str | None) -> RestoredRepo:
    """An earlier restore's worktree, still there: this run changes nothing."""
    return RestoredRepo(
        name, RestoreStatus.EXISTING, f"already restored to {where}", snapshot, branch, where
    )


def _restored_at(record: state.TopicRecord | None, key: str, value: str) -> Path | None:
    """The worktree a restore recorded with ``key`` at ``value`` (its branch, its snapshot),
    while it is still there."""
    if _restored_field(record, key) != value:
        return None
    where = _restored_field(record, "worktree")
    return Path(where) if where and (Path(where) / ".git").exists() else None


def _record_restore(
    repo: Repo,
    record: state.TopicRecord | None,
    topic_id: str,
    name: str,
    branch: str,
    target: str,
    path: Path,
    snap: Snapshot,
    *,
    created: bool,
    copied: list[str],
) -> None:
    restored = state.Restored(snap.commit, target, str(path))

    def change(r: state.TopicRecord) -> state.TopicRecord:
        # restore cut the branch it checked out (a free name): teardown may delete it.
        # One it found at the snapshot's commit and checked out keeps what the record said.
        return replace(
            r,
            worktree=str(path),
            branch=target,
            branch_created=created or r.branch_created,
            restored=restored,
            # Teardown names these copies when it deletes them, as for a new worktree's.
            included=tuple(sorted(set(r.included) | set(copied))),
        )

    # The restored worktree is a new run: the journal drops an earlier teardown's steps,
    # in the same write (a corrupt record is set aside, never lost).
    journal.new_run(
        repo.common_dir,
        topic_id,
        change,
        new=lambda: record or state.TopicRecord(id=topic_id, repo=name, branch=branch),
    )


def _departed_note(repo: Repo, snap: Snapshot) -> str:
    """How to bring back the repositories that went with the worktree (their commits were on their remotes)."""
    try:
        message = g.commit_message(repo.git, snap.commit)
    except GitError:
        return ""
    steps = []
    for line in message.splitlines():
        if not line.startswith(DEPARTED_KEY):
            continue
        try:
            rel, url, head, bare = json.loads(line.removeprefix(DEPARTED_KEY))
        except (ValueError, TypeError):
            continue
        at = f" at {head[:12]}" if head else ""
        if not url:
            steps.append(f"{rel} (it had no origin){at}")
            continue
        clone = "git clone --bare" if bare else "git clone"
        checkout = f" && git -C {rel} checkout {head[:12]}" if head and not bare else ""
        steps.append(f"`{clone} {url} {rel}{checkout}`")
    if not steps:
        return ""
    return (
        "; the repositories inside went with the worktree (their commits were on their "
        f"remotes): {', '.join(steps)}"
    )
