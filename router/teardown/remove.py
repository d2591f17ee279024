"""Step 2, remove: the worktree goes, and a removal a killed run left is finished.

The removal is marked in the topic's record before git deletes anything and
unmarked once it is recorded, so a rerun knows a half-removed worktree for its own.
"""

from __future__ import annotations

import os
from pathlib import Path

from router import git as g
from router.errors import ErrorCode
from router.git import Git, GitError, StatusReport, WorktreeEntry
from router.reasons import Reason, Why
from router.records import record
from router.teardown.blockers import (
    foreign_worktree,
    hidden_work,
    nested_blocker,
    unmounted_blocker,
    with_hidden,
    worktree_blocker,
)
from router.teardown.nested import (
    NestedRepo,
    departed,
    outer_clones,
    survey_nested,
    survey_registration,
    survey_remains,
)
from router.teardown.primary import is_primary_clone
from router.teardown.record import TopicRef
from router.teardown.snapshot import Snapshot, SnapshotFailed, snapshot_worktree
from router.teardown.steps import (
    Outcome,
    Step,
    StepResult,
    done,
    done_with,
    failed,
    git_failed,
    noting,
    refused,
    skipped,
)
from router.teardown.unshipped import (
    RunArtifacts,
    artifact_files,
    run_artifacts,
    unshipped,
    unshipped_why,
)
from router.topic import state, worktreelock
from router.topic.journal import Operation, begin_op, end_op, find
from router.topic.removal import (
    SHOWN_BLOCKED,
    Blocked,
    began,
    checkout_journal,
    delete_judged,
    journal,
    unjudged,
    with_content,
)
from router.topic.workspace import Repo, find_worktree


def remove_worktree(
    repo: Repo,
    path: Path | None,
    branch: str,
    *,
    force: bool,
    entries: list[WorktreeEntry] | None = None,
    topic: TopicRef | None = None,
    proven_clean: bool = False,
    again: str = "teardown",
) -> tuple[StepResult, Snapshot | None]:
    """Remove a linked worktree; dirty or locked refuses unless ``force``, which snapshots first.

    A repository inside it (a submodule, a nested clone) holding work refuses
    whatever ``force`` says: the snapshot cannot keep it. Without ``force``
    git's own check is the guard: ``git worktree remove`` refuses a worktree
    with changed or untracked files, and only then is the status read, to
    name them. Before git deletes anything, the removal journal (with
    ``topic``, in the record) names every file there: a rerun after a kill,
    or after a file git could not delete, finishes the removal from it
    instead of reading its deletions as work. ``proven_clean``: this
    command's plan read the worktree's status and found it clean; git's own
    check covers the moments since. ``again``: the command a message says to
    run again. The artifacts of a run that has not shipped (the topic's plan
    dir, which git ignores) refuse unless ``force``, which snapshots them.
    """
    entries = entries if entries is not None else repo.git.worktree_list()
    found = _removal_target(repo, path, branch, entries, topic, again)
    if isinstance(found, StepResult):
        return found, None
    if force:
        return _remove_forced(found)
    return _remove_unforced(found, proven_clean=proven_clean), None


@record
class _Removal:
    """A registered worktree of ours that the remove step is to take, and what is inside it."""

    repo: Repo
    path: Path
    branch: str
    entry: WorktreeEntry
    topic: TopicRef | None
    again: str
    exists: bool  # the directory is there (not deleted by hand)
    nested: tuple[NestedRepo, ...]
    gone: tuple[Why, ...]  # what the removal takes with it, noted after the reason
    files: tuple[str, ...]  # every file the walk for ``nested`` passed (not directories)

    @property
    def topic_id(self) -> str | None:
        return self.topic.id if self.topic is not None else None


def _removal_target(
    repo: Repo,
    path: Path | None,
    branch: str,
    entries: list[WorktreeEntry],
    topic: TopicRef | None,
    again: str,
) -> _Removal | StepResult:
    """The worktree to remove, or the step's outcome when there is none to (or it must stay)."""
    name = Step.REMOVE
    if path is None:
        return skipped(name, Why(Reason.NO_WORKTREE_RECORDED))
    if is_primary_clone(repo, path, entries):
        return skipped(name, Why(Reason.PRIMARY_CLONE, path=str(path)))
    entry = find_worktree(entries, path)
    started = removal_started(repo, topic, path) if topic is not None else None
    if topic is not None and started is not None:
        registered = entry is not None
        return finish_removal(
            repo, path, started, topic, branch, registered=registered, again=again
        )
    if entry is None:
        there = os.path.lexists(path)
        return skipped(name, Why(Reason.NOT_REGISTERED, path=str(path), flag=there))
    other = foreign_worktree(repo, path, branch, entry)
    if other is not None:
        return skipped(name, other)
    exists = os.path.isdir(path)
    unmounted = None if exists else unmounted_blocker(repo, path, again=again)
    if unmounted is not None:
        return unmounted
    # A directory deleted by hand leaves its submodules' git dirs in the registration.
    files: list[str] = []
    nested = survey_nested(path, files) if exists else survey_registration(repo.common_dir, path)
    blocker = nested_blocker(path, nested, again=again)
    if blocker is not None:
        return blocker
    gone = gone_with(nested)
    return _Removal(repo, path, branch, entry, topic, again, exists, nested, gone, tuple(files))


def _remove_unforced(w: _Removal, *, proven_clean: bool) -> StepResult:
    """Without ``--force``: a lock, changes or an unshipped run refuse; git's own check guards."""
    blocker = _unforced_blocker(w, proven_clean=proven_clean)
    if blocker is not None:
        return blocker
    repo, path, entry = w.repo, w.path, w.entry
    removal = _mark_removal(repo, w.topic, path, w.branch, _checkout_journal(w))
    lifted = False
    try:
        # Our own lock comes off right before git removes the worktree: git's own
        # check still guards it. The journal is written first, so a kill in between
        # leaves a removal the rerun finishes, never an unlocked worktree of ours
        # taken for someone else's. A registration whose directory is gone holds
        # nothing: --force drops it, locked or not.
        lifted = w.exists and worktreelock.lift(repo.git, entry)
        repo.git.worktree_remove(path, force=not w.exists)
    except GitError as exc:
        return _unforced_removal_failed(w, exc, removal, lifted=lifted)
    _unmark_removal(repo, w.topic)
    return done(Step.REMOVE, Why(Reason.REMOVED, path=str(path)).noting(*w.gone))


def _checkout_journal(w: _Removal) -> state.Removal | None:
    """The journal of a removal git's own check guards: the index names the tracked files.

    Only for a worktree with no repository inside (their files are not in
    this index) and an index read here; None: every file is journaled. git's
    check runs after this, before it deletes anything: what the index
    tracked is clean then, or nothing is deleted.
    """
    if not w.exists or w.nested:
        return None
    try:
        index = g.checkout_index(str(Git(w.path).git_dir()))
    except GitError:
        return None
    return checkout_journal(w.path, w.files, index) if index is not None else None


def _unforced_blocker(w: _Removal, *, proven_clean: bool) -> StepResult | None:
    """What keeps the worktree when removal is not forced: another's lock, changes, a run's
    artifacts not shipped; None when git may try."""
    path, entry = w.path, w.entry
    if worktreelock.locked_by_other(entry):
        return worktree_blocker(path, entry, StatusReport())
    if w.exists:
        # git's own check below does not see what our info/exclude line hides.
        status = with_hidden(
            Git(path).status() if w.topic is not None and not proven_clean else StatusReport(),
            hidden_work(path, w.topic_id),
        )
        if status.dirty:
            return worktree_blocker(path, entry, status)
    run = unshipped([run_artifacts(path, w.topic_id)]) if w.exists and w.topic_id else []
    if run:
        # The plan refused these already; this covers artifacts written since.
        why = unshipped_why(w.topic_id, run, command=w.again)  # type: ignore[arg-type]
        return refused(Step.REMOVE, ErrorCode.UNSHIPPED_RUN, why)
    return None


def _unforced_removal_failed(
    w: _Removal, exc: GitError, removal: state.Removal, *, lifted: bool
) -> StepResult:
    """git did not remove the worktree: a kill, submodules git wants --force for, a half-way
    removal to finish, or a refusal; our lock is put back when the worktree stays."""
    repo, path, entry, topic = w.repo, w.path, w.entry, w.topic
    if exc.returncode < 0:
        return removal_interrupted(path, exc, w.again)
    if w.exists and g.SUBMODULES_REFUSAL in exc.stderr:
        result = _remove_with_submodules(w, removal)
        if lifted and result.outcome is not Outcome.DONE:
            result = _locked_again(result, repo, entry, topic)
        return result
    if _began(repo, path, removal):
        return _finish_after(w, removal, exc)
    _unmark_removal(repo, topic)
    blocker = worktree_blocker(path, entry, Git(path).status()) if w.exists else None
    result = blocker or git_failed(Step.REMOVE, f"git worktree remove {path}", exc)
    return _locked_again(result, repo, entry, topic) if lifted else result


def _remove_forced(w: _Removal) -> tuple[StepResult, Snapshot | None]:
    """``--force``: what the worktree holds goes into a snapshot ref first, then git removes it."""
    repo, path = w.repo, w.path
    # Judged before the status the snapshot is made from, and journaled only once
    # the snapshot holds it: a file written in between is in neither the journal
    # nor (perhaps) the snapshot, so a rerun after a kill keeps it.
    judged = journal(path) if w.exists else state.Removal(str(path))
    kept = _snapshot_before_removal(w)
    if isinstance(kept, StepResult):
        return kept, None
    snap, unshipped_here = kept
    removal = _mark_removal(repo, w.topic, path, w.branch, judged)
    try:
        repo.git.worktree_remove(path, force=True)
    except GitError as exc:
        stopped = _git_stopped(w, removal, exc)
        return stopped or git_failed(Step.REMOVE, f"git worktree remove {path}", exc), snap
    _unmark_removal(repo, w.topic)
    removed = Why(Reason.REMOVED, path=str(path))
    if snap:
        held = artifact_files(unshipped_here) if unshipped_here else ()
        removed = Why(Reason.REMOVED, path=str(path), ref=snap.ref, commit=snap.commit, items=held)
    return done_with(Step.REMOVE, removed.noting(*w.gone), snap.ref if snap else ""), snap


def _snapshot_before_removal(
    w: _Removal,
) -> tuple[Snapshot | None, list[RunArtifacts]] | StepResult:
    """The snapshot of what the worktree holds (None when it holds nothing), with the
    unshipped run's artifacts it includes; the refusal when it cannot be written."""
    repo, path = w.repo, w.path
    hidden = hidden_work(path, w.topic_id) if w.exists else ()
    status = with_hidden(Git(path).status(), hidden) if w.exists else StatusReport()
    # The topic's plan dir goes into every snapshot (it is the run's record, and
    # git ignores it); the artifacts of a run that has not shipped are work themselves.
    own = run_artifacts(path, w.topic_id) if w.exists and w.topic_id else None
    unshipped_here = unshipped([own])
    if not (w.exists and (unshipped_here or _holds_work(repo, path, w.branch, status))):
        return None, unshipped_here
    try:
        outer = outer_clones(w.nested)
        snap = snapshot_worktree(
            repo,
            path,
            w.branch,
            exclude=outer,
            ignored=(*hidden, *(own.in_checkout if own else ())),
            departed=departed(path, w.nested, outer),
        )
    except SnapshotFailed as exc:
        return refused(Step.REMOVE, exc.code, Why(Reason.SNAPSHOT_FAILED, parts=(exc.why,)))
    return snap, unshipped_here


def _locked_again(
    result: StepResult, repo: Repo, entry: WorktreeEntry, topic: TopicRef | None
) -> StepResult:
    """The removal did not happen: the worktree stays, and so does our lock on it.

    Not while its journal stays: that removal is the rerun's to finish.
    """
    if not os.path.isdir(entry.path):
        return result
    if topic is not None and removal_started(repo, topic, entry.path) is not None:
        return result
    lost = worktreelock.put_back(repo.git, entry)
    if not lost:
        return result
    why = Why(Reason.LOCK_LOST, path=str(entry.path), text=lost, other=entry.lock_reason or "")
    return noting(result, why)


def _remove_with_submodules(w: _Removal, removal: state.Removal) -> StepResult:
    """git removes a worktree holding submodules only with --force: our checks stand in for its own.

    Its own check is the status read here (submodules included), and every
    repository inside was just found to hold nothing that exists only there.
    """
    repo, path = w.repo, w.path
    blocker = worktree_blocker(path, w.entry, Git(path).status())
    if blocker is not None:
        _unmark_removal(repo, w.topic)
        return blocker
    try:
        repo.git.worktree_remove(path, force=True, keep_locked=True)
    except GitError as exc:
        command = f"git worktree remove --force {path}"
        failure = Why(Reason.GIT_FAILED, command=command, text=exc.first_line)
        return _git_stopped(w, removal, exc) or failed(Step.REMOVE, failure)
    _unmark_removal(repo, w.topic)
    return done(Step.REMOVE, Why(Reason.REMOVED, path=str(path)).noting(*w.gone))


def _git_stopped(w: _Removal, removal: state.Removal, exc: GitError) -> StepResult | None:
    """git's removal failed after the journal was written: killed (the rerun finishes it), or
    stopped after it began deleting (finished now); None: it deleted nothing (journal dropped)."""
    if exc.returncode < 0:
        return removal_interrupted(w.path, exc, w.again)
    if _began(w.repo, w.path, removal):
        return _finish_after(w, removal, exc)
    _unmark_removal(w.repo, w.topic)
    return None


def gone_with(nested: tuple[NestedRepo, ...]) -> tuple[Why, ...]:
    """The note naming the repositories inside that go with the worktree, if any."""
    if not nested:
        return ()
    inside = tuple(Why(Reason.NESTED_REPO, kind=str(n.kind), path=n.rel) for n in nested)
    return (Why(Reason.NESTED, parts=inside),)


def removal_interrupted(path: Path, exc: GitError, again: str = "teardown") -> StepResult:
    # git was killed mid-removal (Ctrl-C reaches it too): the journal stays, so the
    # rerun finishes the half-deleted worktree instead of reading it as work.
    why = Why(Reason.INTERRUPTED, path=str(path), text=exc.first_line, again=again)
    return failed(Step.REMOVE, why)


def _mark_removal(
    repo: Repo,
    topic: TopicRef | None,
    path: Path,
    branch: str,
    judged: state.Removal | None = None,
) -> state.Removal:
    """Journal every file of ``path`` before git deletes any (in the record, with ``topic``).

    Only ever called once the worktree is proven clean or snapshotted: what
    the journal names (``judged``: walked before that proof) is known to be
    safe to delete, and anything not in it is someone's work. Without a topic (no record) the journal lives only in
    this process: enough to finish a removal git stopped half-way now.
    """
    removal = judged if judged is not None else journal(path)
    if topic is not None:
        begin_op(
            repo.common_dir, topic.id, Operation.REMOVE, removal, made=(topic.repo_name, branch)
        )
    return removal


def _unmark_removal(repo: Repo, topic: TopicRef | None) -> None:
    if topic is not None:
        end_op(repo.common_dir, topic.id, Operation.REMOVE)


def interrupted_removal(repo: Repo, topic: TopicRef | None, worktree: Path | None) -> bool:
    """A removal of ``worktree`` of ours that a kill interrupted: its deletions are nobody's
    work (the remove step finishes it). Registered or not: git drops the registration even
    when it stops half-way. The one check teardown's and pr-cleanup's facts ask."""
    return bool(worktree and topic and removal_started(repo, topic, worktree) is not None)


def removal_started(repo: Repo, topic: TopicRef, path: Path) -> state.Removal | None:
    """The journal of a removal of ``path`` this tool began and did not finish (a kill, a blocked file)."""
    record = state.read_record_or_none(repo.common_dir, topic.id)
    return record.removing if record and find(record, Operation.REMOVE, path) else None


def _began(repo: Repo, path: Path, removal: state.Removal) -> bool:
    """git failed after it began deleting: its registration is gone, or a file it judged is."""
    if find_worktree(repo.git.worktree_list(), path) is None:
        return True
    return began(path, removal)


def _finish_after(w: _Removal, removal: state.Removal, exc: GitError) -> StepResult:
    """git stopped half-way (it drops the registration even when files are left): finish now.

    Deleting the rest ourselves names the file that stops it, which git's own
    message does not (it names the worktree).
    """
    repo, path = w.repo, w.path
    registered = find_worktree(repo.git.worktree_list(), path) is not None
    result = finish_removal(
        repo, path, removal, w.topic, w.branch, registered=registered, again=w.again, first=True
    )
    if result.outcome is Outcome.DONE:
        return done(Step.REMOVE, Why(Reason.REMOVAL_STOPPED, path=str(path), text=exc.first_line))
    return result


def finish_removal(
    repo: Repo,
    path: Path,
    removal: state.Removal,
    topic: TopicRef | None,
    branch: str,
    *,
    registered: bool,
    again: str = "teardown",
    first: bool = False,
) -> StepResult:
    """Finish a removal that stopped half-way: what is left was judged safe before it began.

    Its deletions are the removal's own, never work to commit. A file left
    there goes only while it is exactly one the journal names; anything
    written, moved in or edited since keeps the remains, named. A file that
    cannot be deleted is named with its cause; the journal stays (with the
    content of what is left) so the rerun finishes once the cause is gone.
    ``first``: the removal stopped in this very run (no "interrupted" to tell).
    """
    name = Step.REMOVE
    blocker = finish_blocker(repo, path, removal, again=again)
    if blocker is not None:
        return blocker
    kept, blocked = delete_judged(path, removal) if os.path.lexists(path) else ([], [])
    if kept or blocked:
        if topic is not None:
            judged = with_content(path, removal)
            begin_op(
                repo.common_dir, topic.id, Operation.REMOVE, judged, made=(topic.repo_name, branch)
            )
        detail = Why(
            Reason.HALF_REMOVED,
            path=str(path),
            items=tuple(map(str, kept)),
            count=len(blocked),
            parts=tuple(map(_not_deleted_part, blocked[:SHOWN_BLOCKED])),
            again=again,
            flag=first,
        )
        if blocked:
            return failed(name, detail, ErrorCode.REMOVAL_BLOCKED)
        return refused(name, ErrorCode.REMOVAL_INTERRUPTED, detail)
    if registered:
        # The directory is gone now, and git drops the registration of a missing one.
        repo.git.worktree_remove(path, force=True)
    _unmark_removal(repo, topic)
    return done(name, Why(Reason.FINISHED, path=str(path)))


def _not_deleted_part(b: Blocked) -> Why:
    return Why(Reason.NOT_DELETED, path=b.path, text=b.error, kind=b.kind, other=b.at)


def finish_blocker(
    repo: Repo, path: Path, removal: state.Removal, *, again: str = "teardown"
) -> StepResult | None:
    """Why a removal that stopped half-way cannot be finished now (None: it can).

    A file written there since is not what the removal judged; a repository
    inside holding work would go with the rest.
    """
    newer = unjudged(path, removal) if os.path.isdir(path) else []
    if newer:
        why = Why(Reason.WRITTEN_SINCE, path=str(path), items=tuple(map(str, newer)), again=again)
        return refused(Step.REMOVE, ErrorCode.REMOVAL_INTERRUPTED, why)
    # The journal was made before the removal began: a submodule used since keeps
    # its new commits in the registration's modules/, which no file there shows.
    return nested_blocker(path, survey_remains(repo.common_dir, path), again=again)


def included_copies(record: state.TopicRecord | None, worktree: Path | None) -> tuple[str, ...]:
    """The files a ``.worktreeinclude`` copy placed in ``worktree`` (per its record) that are still there."""
    if worktree is None or record is None:
        return ()
    return tuple(p for p in record.included if os.path.lexists(worktree / p))


def copies_note(primary: Path, worktree: Path, included: tuple[str, ...]) -> Why | None:
    """The ``.worktreeinclude`` copies a removal deletes (git ignores them), and the edited ones."""
    if not included:
        return None
    edited = tuple(p for p in included if _differs(primary / p, worktree / p))
    return Why(Reason.COPIES, items=included, others=edited)


def _differs(original: Path, copy: Path) -> bool:
    """The copy was edited (or the original changed) since it was copied.

    A copy keeps its original's size and modification time, so those alone
    answer for a folder (``node_modules/``: no file of it is read) and for a
    large file; a small file whose time differs is compared byte for byte.
    """
    try:
        if str(copy).endswith("/") or copy.is_dir():
            return _tree_stats(original) != _tree_stats(copy)
        ours, theirs = copy.stat(), original.stat()
        if ours.st_size != theirs.st_size:
            return True
        if ours.st_mtime_ns == theirs.st_mtime_ns:
            return False
        return ours.st_size > _COMPARED_BYTES or original.read_bytes() != copy.read_bytes()
    except OSError:
        return True


_COMPARED_BYTES = 1 << 20  # a file this small whose time differs is compared byte for byte


def _tree_stats(root: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file below ``root``, by relative path (links not followed)."""
    stats = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            info = os.lstat(path)
            stats[os.path.relpath(path, root)] = (info.st_size, info.st_mtime_ns)
    return stats


def _holds_work(repo: Repo, path: Path, branch: str, status: StatusReport) -> bool:
    """Anything a forced removal would lose: edits, untracked files, commits on no other ref."""
    if status.dirty:
        return True
    head = Git(path).head()
    if head is None:
        return False
    return g.unique_commits(repo.git, head, except_branch=branch) > 0
