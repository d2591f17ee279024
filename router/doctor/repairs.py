"""What doctor's repairs do: each makes a :data:`Fix` that acts, or refuses with :class:`NotSafe`.

Each repair checks again, right before acting, what made it safe when the
scan judged it: the state may have moved between the two.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from router import git as g
from router.doctor.findings import Fix, NotSafe
from router.git import GitError, WorktreeEntry, unique_commits
from router.plandir.artifacts import HOME
from router.reasons import Reason, Why
from router.topic import holders, state, worktreelock
from router.topic.runs import MADE_BY_HOST, remake_command
from router.topic.workspace import Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.create import ouradd


def lock_worktree(repo: Repo, entry: WorktreeEntry, topic: str) -> Fix:
    def fix() -> str:
        worktreelock.lock(repo.git, entry, topic)
        return f"locked (git worktree lock --reason '{worktreelock.reason_for(topic)}')"

    return fix


def unregister(repo: Repo, entry: WorktreeEntry) -> Fix:
    path = entry.path

    def fix() -> str:
        if os.path.lexists(path):
            raise NotSafe(f"{path} exists again; left as it is")
        # Our own lock comes off right before; one explicit path and no --force,
        # so git still refuses for a lock someone else put on it since.
        lifted = worktreelock.lift(repo.git, entry)
        try:
            repo.git.worktree_remove(path, force=False)
        except GitError:
            if lifted:
                worktreelock.put_back(repo.git, entry)
            raise
        return "unregistered (git worktree remove of this one path)"

    return fix


def remove_empty_dir(path: Path) -> Fix:
    def fix() -> str:
        try:
            # rmdir, never rmtree: it fails if anything appeared in the meantime.
            path.rmdir()
        except OSError as exc:
            raise NotSafe(f"not removed: {exc.strerror}") from None
        return "removed the empty directory"

    return fix


def orphan_branch_kept(
    repo: Repo, branch: str, tip: str, record: state.TopicRecord | None = None
) -> str:
    """Why ``--repair`` keeps the orphan ``branch`` at ``tip`` ("" : nothing keeps it);
    ``record``: its topic's, for the advice (a live run's worktree is made again).

    Asked by the scan, so that ``doctor`` says it before any ``--repair`` (and does
    not offer one that would keep it), and again by the repair, right before it acts.
    """
    unique = unique_commits(repo.git, tip, except_branch=branch)
    if not unique:
        return ""
    kept = f"kept: {unique} commit(s) exist on no other branch, tag or remote"
    if record is not None and resumable(record):
        return f"{kept}; {_remake(record)}, or `team-router teardown {branch}` ends the run"
    return f"{kept}; run `team-router teardown {branch}` or push it"


def resumable(record: state.TopicRecord) -> bool:
    """A home record of a /team run not torn down: ``new --id`` makes its worktree again on its
    branch (as ``phase``, ``next``, ``status`` and the recovery hook say)."""
    return record.repo == HOME and not record.torn_down and record.made_by != MADE_BY_HOST


def _remake(record: state.TopicRecord) -> str:
    command = remake_command(record.id, record.description)
    return f"`{command}` makes its worktree again on it, commits included"


def delete_orphan_branch(repo: Repo, branch: str) -> Fix:
    def fix() -> str:
        if any(e.branch == branch for e in repo.git.worktree_list()):
            raise NotSafe("a worktree has it checked out again; kept")
        tip = repo.git.rev_parse(f"refs/heads/{branch}")
        if tip is None:
            return "already gone"
        kept = orphan_branch_kept(repo, branch, tip)
        if kept:
            raise NotSafe(kept)
        common = str(repo.common_dir)
        busy = g.busy_with_branch(common, branch)
        if busy is not None:
            raise NotSafe(f"a rebase or bisect under way in {busy} works on it; kept")
        checked_out = g.checked_out_branches(common)
        if checked_out is None:
            # Unsure who has it: `git branch -D` decides, refusing a checked-out branch.
            repo.git.branch_delete(branch)
            return f"deleted (its tip {tip[:12]} is on another ref)"
        if branch in checked_out:
            raise NotSafe("a worktree has it checked out again; kept")
        # Deleted only while it is still at the judged tip (git checks and
        # deletes in one step): a commit made on it meanwhile keeps it.
        if not repo.git.branch_delete_at(branch, tip):
            raise NotSafe("it moved while doctor judged it; kept: run doctor --repair again")
        left = repo.git.drop_branch_config(branch)
        if left:
            from router.teardown.wording import in_words

            kept = in_words(Why(Reason.CONFIG_KEPT, branch=branch, text=left))
            return f"deleted (its tip {tip[:12]} is on another ref); {kept}"
        return f"deleted (its tip {tip[:12]} is on another ref)"

    return fix


def record_kept(repo: Repo, record: state.TopicRecord, *, scanning: bool = False) -> str:
    """Why ``--repair`` keeps the record of a topic whose worktree is gone ("": nothing does).

    Only a record that describes nothing any more goes: while its branch or
    another repo's worktree survives, teardown still needs it. Asked by the scan
    and again by the repair, as :func:`orphan_branch_kept` is; ``scanning``: a branch
    that an earlier repair of the same run deletes (an orphan with nothing of its
    own) does not keep the record.
    """
    if repo.git.branch_exists(record.branch) and (not scanning or _branch_stays(repo, record)):
        kept = f"kept: branch {record.branch} still exists"
        if resumable(record):
            return f"{kept}; {_remake(record)}, or `team-router teardown {record.id}` ends the run"
        return f"{kept}; run `team-router teardown {record.id}`"
    snapshot = _snapshot_of(repo, record.branch)
    if snapshot is not None:
        # A teardown stopped after its snapshot: the record is what names
        # the topic's other repos for `restore`, and the rerun marks it done.
        return (
            f"kept: {snapshot} holds a snapshot of its work; run `team-router teardown "
            f"{record.id}` to finish the teardown, or `team-router restore {record.id}`"
        )
    if any(r.worktree and os.path.lexists(r.worktree) for r in record.repos if r.name != "home"):
        return (
            "kept: other repos of the topic still have worktrees; run "
            f"`team-router teardown {record.id}`"
        )
    return ""


def _branch_stays(repo: Repo, record: state.TopicRecord) -> bool:
    """The topic's branch outlives ``--repair``: not this tool's to delete, or it holds
    commits found nowhere else."""
    if not record.branch_created:
        return True
    tip = repo.git.rev_parse(f"refs/heads/{record.branch}")
    return tip is not None and bool(orphan_branch_kept(repo, record.branch, tip))


def drop_record(repo: Repo, record: state.TopicRecord) -> Fix:
    def fix() -> str:
        if os.path.lexists(record.worktree or ""):
            raise NotSafe("its worktree is back; kept")
        kept = record_kept(repo, record)
        if kept:
            raise NotSafe(kept)
        state.delete_record(repo.common_dir, record.id)
        return "deleted the record (no worktree and no branch left)"

    return fix


def _snapshot_of(repo: Repo, branch: str) -> str | None:
    """The snapshot ref of ``branch`` when it exists (None: no snapshot)."""
    from router.teardown.snapshot import snapshot_ref

    ref = snapshot_ref(branch)
    return ref if repo.git.rev_parse(ref) is not None else None


def drop_lock_owner(owner: state.LockOwner) -> Fix:
    def fix() -> str:
        # Called while doctor holds this very lock, so no live process owns it.
        with contextlib.suppress(FileNotFoundError):
            owner.path.unlink()
        return "dropped the owner file (the lock itself is free)"

    return fix


def drop_stale_holder(path: Path) -> Fix:
    def fix() -> str:
        holders.drop(path)
        return "dropped the stale holder"

    return fix


def undo_our_add(repo: Repo, admin: Path, path: Path, topic: str, of: str | None) -> Fix:
    """Remove what a killed ``git worktree add`` of ours left (a restore's of ``of``'s
    snapshot, else a creation's of ``topic``), under the one "ours" rule
    (:func:`router.create.ouradd.torn_problem`), asked again right before."""

    def fix() -> str:
        from router.create import ouradd

        add = _our_add_now(repo, admin, path, topic, of)
        if add is None:
            raise NotSafe("git's registration is no longer half-made; left as it is")
        problem = ouradd.torn_problem(add, admin)
        if problem is not None:
            if add.restore is not None:
                ouradd.mend_head(add, admin)  # git can read the repository again
            from router.teardown.wording import in_words

            raise NotSafe(
                f"{in_words(problem)}; kept: copy out anything you need from {path}, then run "
                f"`rm -rf {path} {admin}`"
            )
        cut = ouradd.undo_torn(add, admin)
        dropped = f" and the branch {add.branch} it cut" if cut else ""
        return f"removed the half-made worktree and its registration{dropped}"

    return fix


def _our_add_now(
    repo: Repo, admin: Path, path: Path, topic: str, of: str | None
) -> ouradd.OurAdd | None:
    """The half-made add at ``admin`` as the journal shows it now (None: no longer half-made)."""
    from router.create import ouradd

    if of is not None:
        from router.teardown.restore_journal import half_made_adds

        same = os.path.realpath(admin)
        adds = half_made_adds(repo, of=of)
        return next((add for add, at in adds if os.path.realpath(at) == same), None)
    if not g.placeholder_head(admin):
        return None
    record = state.read_record_or_none(repo.common_dir, topic)
    record = None if record is None or record.torn_down else record
    branch = record.branch if record is not None else topic
    tip = repo.git.rev_parse(f"refs/heads/{branch}")
    return ouradd.OurAdd(repo, path, topic, branch, record, tip)
