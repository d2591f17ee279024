"""Step 1, integrate: cherry-pick a branch's missing commits onto the default branch
in the primary clone, and resume or undo a pick a killed run left.
"""

from __future__ import annotations

import os
from pathlib import Path

from router import git as g
from router.errors import ErrorCode
from router.git import GitError, StatusReport
from router.reasons import Reason, Why
from router.records import replace
from router.teardown.primary import follow_submodules, primary_busy, primary_state
from router.teardown.record import TopicRef, pending_pick
from router.teardown.steps import Step, StepResult, done, failed, name_some, refused
from router.topic.journal import Operation, begin_op, end_op
from router.topic.state import Picking
from router.topic.workspace import DefaultBranch, Repo


def integrate_commits(
    repo: Repo,
    branch: str,
    default: DefaultBranch,
    missing: tuple[str, ...],
    *,
    topic: TopicRef | None = None,
    committer_known: bool = False,
) -> StepResult:
    """Cherry-pick the branch's ``missing`` commits (as the plan judged them moments ago)
    onto the default branch in the primary clone.

    With ``topic``, the topic's record in this repo marks the pick while it
    runs, so :func:`resume_integration` can undo one a kill interrupted.
    ``committer_known``: ``git var`` named a committer earlier in this command
    (the plan asks once per repo; the pick reports a missing one anyway).
    """
    name, primary = Step.INTEGRATE, str(repo.primary)
    # The one re-check of the primary in the act, right before the pick changes
    # it: the plan read it too, but the user may have edited or switched it since.
    # The same status names HEAD, the commit an abort must come back to.
    now = g.checkout_state(repo.git)
    busy = primary_busy(repo, default, (now.status, now.branch))
    if busy is not None:
        return refused(
            name, ErrorCode.PRIMARY_BUSY, Why(Reason.PRIMARY_BUSY, path=primary, parts=(busy,))
        )
    unknown = None if committer_known else g.committer_unknown(repo.git)
    if unknown is not None:
        return no_identity(repo, unknown)
    pick = _mark_pick(repo, topic, branch, default, missing, now.head)
    # git cherry lists oldest first, the order the commits must be applied in.
    try:
        g.cherry_pick(repo.git, missing)
    except GitError as exc:
        return _pick_stopped(repo, topic, pick, default, exc)
    if topic is not None:
        end_op(repo.common_dir, topic.id, Operation.INTEGRATE)
    picked = Why(Reason.PICKED, count=len(missing), default=default.name, path=primary)
    followed = follow_submodules(repo)
    return done(name, picked.noting(followed) if followed is not None else picked)


def _mark_pick(
    repo: Repo,
    topic: TopicRef | None,
    branch: str,
    default: DefaultBranch,
    missing: tuple[str, ...],
    head: str | None,
) -> Picking:
    """The pick about to start from the primary's HEAD, marked in the topic's record first.

    Marked before the first pick: a kill mid-pick leaves the primary busy, and
    only this mark lets the rerun tell its own half-done pick from the user's.
    """
    head = head or repo.git.head_commit()
    pick = Picking(branch, default.name, head, missing)
    if topic is not None:
        # .teamteardown is read from the default branch as it is before the
        # picks: a rerun after a kill, or `local-state`, must not find the
        # branch's own copy there and run it.
        remote = default.remote_ref
        pin = (repo.git.commits((remote,))[remote] if remote else None) or head
        made = (topic.repo_name, branch)
        begin_op(repo.common_dir, topic.id, Operation.INTEGRATE, pick, made=made, declared_at=pin)
    return pick


def _pick_stopped(
    repo: Repo, topic: TopicRef | None, pick: Picking, default: DefaultBranch, exc: GitError
) -> StepResult:
    """The cherry-pick stopped: undone (the mark then dropped) or, when it cannot be yet,
    left marked for the rerun to undo; the refusal names why."""
    name, onto = Step.INTEGRATE, default.name
    stopped = Why(
        Reason.PICK_INTERRUPTED, default=onto, path=str(repo.primary), text=exc.first_line
    )
    if exc.returncode < 0:
        # git was killed (a terminal's Ctrl-C reaches it too) at a point only the
        # mark describes: it stays, and the rerun undoes the pick with its proofs.
        return failed(name, stopped)
    stopped_at = g.cherry_pick_head(repo.git) or pick.commits[0]
    not_undone = _abort_pick(repo, pick)
    if not_undone is not None:
        # The mark stays: until the pick is undone, only it tells the rerun
        # that the stopped cherry-pick in the primary is ours to undo.
        code = not_undone.code if not_undone.lock_file else exc.code
        why = Why(Reason.PICK_NOT_UNDONE, other=not_undone.first_line)
        why = replace(why, default=onto, path=stopped.path, text=exc.first_line)
        return refused(name, code, why)
    if topic is not None:
        end_op(repo.common_dir, topic.id, Operation.INTEGRATE)
    if g.is_identity_error(exc):
        return no_identity(repo, exc)
    if exc.lock_file is not None:
        return refused(name, exc.code, Why(Reason.PICK_LOCKED, default=onto, text=exc.first_line))
    conflict = Why(Reason.CONFLICT, default=onto, commit=stopped_at, text=exc.first_line)
    return refused(name, ErrorCode.CONFLICT, conflict)


def _abort_pick(repo: Repo, pick: Picking) -> GitError | None:
    """Undo a stopped pick of ours; None once the primary is back at its start with no pick in it.

    Judged by the state git leaves, not by ``--abort``'s exit code: a pick
    that stopped before it began leaves nothing to abort, and one that meets
    a lock file leaves ``sequencer/`` that only a later ``--abort`` can undo.
    """
    error = g.cherry_pick_abort(repo.git)
    if g.operation_in_progress(repo.common_dir) is None and repo.git.head() == pick.tip:
        # The pick began on a clean primary: any change now is what it left
        # (a file written before git stopped, with nothing for --abort to
        # undo). Not undone then: the mark stays, and the rerun sorts those
        # changes out, as after a kill.
        left, _ = primary_state(repo)
        if not left.dirty:
            return None
        if error is not None and error.lock_file is not None:
            return error  # the lock is what to fix first: it names it
        return GitError(
            ["git", "-C", str(repo.primary), "cherry-pick", "--abort"],
            1,
            f"the stopped cherry-pick left changes in {repo.primary} "
            f"({name_some([*left.tracked, *left.untracked])})",
        )
    return error or GitError(
        ["git", "-C", str(repo.primary), "cherry-pick", "--abort"],
        1,
        f"{repo.primary} is not back at {pick.tip[:12]} with no cherry-pick in progress",
    )


def no_identity(repo: Repo, exc: GitError) -> StepResult:
    why = Why(Reason.NO_IDENTITY, path=str(repo.primary), text=exc.first_line)
    return refused(Step.INTEGRATE, ErrorCode.NO_IDENTITY, why)


def resume_integration(repo: Repo, topic: TopicRef) -> StepResult | None:
    """Undo what a killed cherry-pick of ours left in the primary clone; None when there is none.

    Only a state the record's mark proves ours is touched: git's own
    ``cherry-pick --abort`` for a pick it still tracks, and ``reset --hard``
    only when every changed path holds content from the picked commits or
    HEAD (nothing else can be lost). Anything else is left for the busy
    check, which refuses and names the command that clears it.
    """
    pick = pending_pick(repo.common_dir, topic)
    if pick is None:
        return None
    undone = []
    operation = g.operation_in_progress(repo.common_dir)
    if operation is not None:
        if operation != "cherry-pick" or not _our_pick_stopped(repo, pick):
            return None
        ended = _end_stopped_pick(repo, pick)
        if isinstance(ended, StepResult):
            return ended
        undone.append(ended)
    status, current = primary_state(repo)
    if current != pick.target:
        return None
    if status.dirty:
        dropped = _drop_half_applied(repo, pick, status)
        if isinstance(dropped, StepResult):
            return dropped
        undone.append(dropped)
    end_op(repo.common_dir, topic.id, Operation.INTEGRATE)
    whys = tuple(undone)
    return done(Step.INTEGRATE, replace(_of_pick(repo, pick, Reason.PICK_UNDONE), parts=whys))


def _of_pick(repo: Repo, pick: Picking, reason: Reason) -> Why:
    """``reason``, about our killed cherry-pick ``pick`` in the primary clone."""
    return Why(reason, path=str(repo.primary), branch=pick.branch, default=pick.target)


def _end_stopped_pick(repo: Repo, pick: Picking) -> StepResult | Why:
    """End our stopped cherry-pick git still tracks: what was done, or why it stays (the mark too)."""
    running = _pick_still_running(repo)
    if running is not None:
        return running
    locked = _stopped_by_lock(repo, g.cherry_pick_abort(repo.git))
    if locked is not None:
        # Neither --abort nor --quit: the mark stays, and once the lock is
        # gone the rerun's --abort puts the default branch back where it was.
        return _pick_locked(repo, pick, True, locked)
    ended = Why(Reason.PICK_ABORTED)
    if g.operation_in_progress(repo.common_dir) is not None:
        # A kill right after a pick's commit, before git noted it: --abort
        # will not rewind past it ("you seem to have moved HEAD") and keeps
        # CHERRY_PICK_HEAD. The commits it made are our picks: they stay.
        locked = _stopped_by_lock(repo, g.cherry_pick_quit(repo.git))
        if locked is not None:
            # The same kill may leave the lock git deletes CHERRY_PICK_HEAD
            # under: the pick is still ours (the mark stays), the lock is in the way.
            return _pick_locked(repo, pick, False, locked)
        ended = Why(Reason.PICK_QUIT)
    if g.operation_in_progress(repo.common_dir) is not None:
        # Still there, with no lock named: never carried past (a teardown
        # with nothing left to pick would finish and leave it in the
        # primary), nor called someone else's. The mark stays.
        stuck = _of_pick(repo, pick, Reason.PICK_NOT_ENDED)
        return refused(Step.INTEGRATE, ErrorCode.PRIMARY_BUSY, stuck)
    return ended


def _drop_half_applied(repo: Repo, pick: Picking, status: StatusReport) -> StepResult | Why:
    """Reset the changes our killed pick left half-applied (what was dropped), unless a
    change is not from it: then the refusal, and everything stays."""
    foreign, residue = _sort_changes(repo, pick, status)
    if foreign:
        kept = replace(_of_pick(repo, pick, Reason.PICK_FOREIGN), items=tuple(foreign))
        return refused(Step.INTEGRATE, ErrorCode.PRIMARY_BUSY, kept)
    g.reset_hard(repo.git, "HEAD")
    _remove_residue(repo.primary, residue)
    return Why(Reason.CHANGES_DROPPED, items=(*status.tracked, *residue))


def _stopped_by_lock(repo: Repo, error: GitError | None) -> GitError | None:
    """``error`` when git met a lock file ending the pick: it gave up, or went on and left the pick.

    The second is how --abort and --quit take a lock on CHERRY_PICK_HEAD: they
    exit 0 without deleting it, so only the state they leave tells. A lock
    that kept nothing of the pick (say ``ORIG_HEAD.lock``) stops nothing here:
    the run goes on, and its warnings name the lock.
    """
    if error is None or error.lock_file is None:
        return None
    if error.returncode != 0 or g.operation_in_progress(repo.common_dir) is not None:
        return error
    return None


def _pick_locked(repo: Repo, pick: Picking, undoing: bool, error: GitError) -> StepResult:
    """The refusal naming the lock that stopped git undoing (or ending) our killed pick."""
    stuck = _of_pick(repo, pick, Reason.PICK_STUCK)
    return refused(Step.INTEGRATE, error.code, replace(stuck, flag=undoing, text=error.first_line))


def _pick_still_running(repo: Repo) -> StepResult | None:
    """A refusal while a live process holds a lock inside ``sequencer/``: that git is still at work.

    Only this command was killed, not its git: ending the pick now would pull
    the sequence out from under it. A lock no process holds is a killed git's,
    and ``--abort``/``--quit`` remove it with the rest of ``sequencer/``.
    """
    from router.processes import processes_using

    locks = [os.path.realpath(lock) for lock in g.sequencer_locks(repo.common_dir)]
    held = processes_using(locks) if locks else {}
    if held is None and locks:
        held = {lock: [] for lock in locks}  # no /proc: nothing shows the lock is free
    if not held:
        return None
    running = Why(Reason.GIT_RUNNING, path=str(repo.primary), items=tuple(sorted(held)))
    return refused(Step.INTEGRATE, ErrorCode.GIT_LOCKED, running)


def _our_pick_stopped(repo: Repo, pick: Picking) -> bool:
    """The stopped cherry-pick is the one the mark names (its commit, its starting point)."""
    head = g.cherry_pick_head(repo.git)
    start = g.sequencer_start(repo.common_dir)
    if head is None and start is None:
        if g.sequencer_empty(repo.common_dir):
            # Killed removing its sequencer/ as the sequence ended (or before it
            # wrote anything there): --quit ends it, keeping what was picked.
            return True
        # Killed as it began: git made sequencer/ and picked nothing, so HEAD is
        # still where the mark says the pick started.
        return g.sequencer_unstarted(repo.common_dir) and repo.git.head() == pick.tip
    return (head is None or head in pick.commits) and (start is None or start == pick.tip)


def _sort_changes(repo: Repo, pick: Picking, status: StatusReport) -> tuple[list[str], list[str]]:
    """The changed paths that are not the killed pick's own, and the untracked files that are.

    A tracked path is the pick's when its index and file content are exactly
    those of the picked commits or HEAD (a deleted one loses nothing: HEAD
    has it); anything else may be an edit made since, and ``reset --hard``
    would lose it. An untracked file is the pick's when its bytes are the
    blob a picked commit has at that path, or the start of it: git writes a
    new file before it updates the index, so a kill in between (or in the
    middle of the write) leaves it untracked, and every byte of it is in the
    picked commit.
    """
    paths = [*status.tracked, *status.untracked]
    ours: dict[str, set[str]] = {p: set() for p in paths}
    for rev in pick.commits:
        for path, blob in g.tree_blobs(repo.git, rev, paths).items():
            ours[path].add(blob)
    picked = {p: set(blobs) for p, blobs in ours.items()}
    for path, blob in g.tree_blobs(repo.git, "HEAD", list(status.tracked)).items():
        ours[path].add(blob)
    staged = g.index_blobs(repo.git, list(status.tracked))
    on_disk = g.worktree_blobs(repo.git, paths)
    foreign = [
        p
        for p in status.tracked
        if not staged.get(p, set()) <= ours[p] or (p in on_disk and on_disk[p] not in ours[p])
    ]

    def picked_bytes(path: str) -> bool:
        blobs = picked[path]
        return on_disk.get(path, "") in blobs or any(
            g.is_cut_short(repo.git, repo.primary / path, b) for b in blobs
        )

    residue = [p for p in status.untracked if picked[p] and picked_bytes(p)]
    foreign += [p for p in status.untracked if p not in residue]
    return foreign, residue


def _remove_residue(primary: Path, residue: list[str]) -> None:
    """Delete the untracked files a killed pick wrote, and the directories it left empty."""
    for rel in residue:
        path = primary / rel
        path.unlink(missing_ok=True)
        parent = path.parent
        while parent != primary and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
