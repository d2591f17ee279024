"""Snapshots to hidden refs before a forced removal (DESIGN §9), read back by ``restore``.

A snapshot is one commit on ``refs/team-router/snapshots/<branch>``: its
first parent is the worktree's HEAD (so commits that exist nowhere else stay
reachable) and its tree is the worktree's files, untracked included, ignored
excluded. As in ``git stash``, its second parent is a commit of the index
(parent HEAD), so partially staged content survives too. ``restore`` checks
the first parent out again, lays the snapshot's files over it as uncommitted
edits and puts the index back, so the user finds the work as it was. A
snapshot without a second parent (a branch's, or one written before the
index was kept) restores with nothing staged.

The ref only ever moves to a commit that holds what it named before: a new
snapshot written over one already there takes the old one as its third
parent (a branch's then gets an index parent that stages nothing, so the
second parent stays the index), and ``update-ref`` moves the ref only while
it still is where it was read. A snapshot ref that cannot be read stops the
step; it is never taken for "no snapshot yet".
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from router import git as g
from router.create import sparse
from router.errors import ErrorCode, Refusal
from router.git import Git, GitError
from router.ioerror import describe_io
from router.reasons import Reason, Why
from router.records import record
from router.teardown.nested import Departed
from router.topic.runs import PLANS_DIR
from router.topic.workspace import Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    import tempfile


def _scratch() -> tempfile.TemporaryDirectory[str]:
    """A temporary directory for a snapshot's index, removed after.

    tempfile is imported here, not with the module: it brings random along
    (~10 ms), and every teardown imports this module, while only one that
    writes a snapshot needs it.
    """
    import tempfile

    return tempfile.TemporaryDirectory(prefix="team-router-snap-")


# Where a forced removal keeps what it snapshotted: team-router's own refs, which
# no branch listing shows and every gc keeps.
SNAPSHOT_PREFIX = "refs/team-router/snapshots/"
MAX_RESTORED = 100
# A line of the snapshot's message per repository the snapshot left out.
DEPARTED_KEY = "Nested-Repository: "


def snapshot_ref(branch: str) -> str:
    return f"{SNAPSHOT_PREFIX}{branch}"


@record
class Snapshot:
    ref: str
    commit: str
    parent: str
    index: str | None = None  # the commit whose tree is the index, when it was kept


class SnapshotFailed(Refusal):
    """The snapshot could not be written: the worktree must stay.

    A git lock file in the way (a killed ``update-ref`` leaves one on the
    snapshot ref) is ``git-locked``, as everywhere: the message names the
    lock and the one safe fix.
    """

    def __init__(self, why: Why, *, locked: bool = False) -> None:
        from router.teardown.wording import in_words

        super().__init__(
            ErrorCode.GIT_LOCKED if locked else ErrorCode.SNAPSHOT_FAILED, in_words(why)
        )
        self.why = why  # what a step's reason holds as its part


def _not_written(exc: GitError | OSError, *, path: object = "", branch: str = "") -> SnapshotFailed:
    """The snapshot of ``path`` (or ``branch``) could not be written: git's first line, or
    the system's error."""
    if isinstance(exc, GitError):
        why = Why(Reason.SNAPSHOT_NOT_WRITTEN, path=str(path), branch=branch, text=exc.first_line)
        return SnapshotFailed(why, locked=exc.lock_file is not None)
    return SnapshotFailed(Why(Reason.SNAPSHOT_NOT_WRITTEN, path=str(path), text=describe_io(exc)))


def snapshot_worktree(
    repo: Repo,
    worktree: Path,
    branch: str,
    *,
    exclude: tuple[str, ...] = (),
    ignored: tuple[str, ...] = (),
    departed: tuple[Departed, ...] = (),
) -> Snapshot:
    """Write the worktree's HEAD, its index and every non-ignored file to the branch's snapshot ref.

    ``exclude``: directories (relative) left out of the files' tree; ``ignored``:
    ignored files (relative) put in all the same; ``departed``: the
    repositories left out, named in the message so ``restore`` can say where
    to get them back.
    """
    wt = Git(worktree)
    try:
        head = wt.head_commit()
        staged = _index_commit(repo.git, wt, head, worktree)
        forced = (*ignored, *_staged_new(wt, worktree, exclude))
        with _scratch() as tmp:
            tree = g.snapshot_tree(wt, Path(tmp) / "index", exclude=exclude, ignored=forced)
        what = f"snapshot of worktree {worktree}" + "".join(
            f"\n{DEPARTED_KEY}{json.dumps([d.rel, d.url, d.head, d.bare])}" for d in departed
        )
        what += sparse.cone_line(wt)  # restore makes the worktree sparse again
        return _write_snapshot(repo.git, tree, head, branch, what, index=staged)
    except (GitError, OSError) as exc:
        raise _not_written(exc, path=worktree) from None


def snapshot_branch(repo: Repo, branch: str, tip: str) -> Snapshot:
    """Keep a branch's commits reachable when its branch goes and no worktree holds it."""
    tree = repo.git.tree_of(tip)
    if tree is None:
        raise SnapshotFailed(Why(Reason.TREE_UNREADABLE, branch=branch, commit=tip))
    try:
        return _write_snapshot(repo.git, tree, tip, branch, f"snapshot of branch {branch}")
    except GitError as exc:
        raise _not_written(exc, branch=branch) from None


def _staged_new(wt: Git, worktree: Path, exclude: tuple[str, ...]) -> tuple[str, ...]:
    """Files staged as new that are on disk: ``add --all`` skips one that is ignored (``add -f``).

    The throw-away index starts from HEAD, which lacks them, so without this the
    snapshot would keep only the staged version and lose the file's later edits.
    """
    return tuple(
        p
        for p in wt.added_in_index()
        if os.path.isfile(worktree / p)
        and not any(p == d or p.startswith(f"{d}/") for d in exclude)
    )


def _index_commit(git: Git, wt: Git, head: str, worktree: Path) -> str:
    """A commit (parent HEAD) of what is staged, like the index commit of ``git stash``."""
    try:
        tree = g.index_tree(wt)
    except GitError as exc:
        if "unmerged" in exc.stderr:
            raise SnapshotFailed(Why(Reason.UNMERGED_INDEX, path=str(worktree))) from None
        raise
    return g.commit_tree(git, tree, [head], f"team-router index of worktree {worktree}")


def _write_snapshot(
    git: Git, tree: str, parent: str, branch: str, what: str, *, index: str | None = None
) -> Snapshot:
    """The snapshot commit, and the ref moved to it; one already there goes inside it.

    The ref is read here, as it is now (a failed read raises): whatever it
    names becomes the new commit's third parent, and ``update-ref`` checks
    that it still names that, so no snapshot is ever replaced by one that
    lacks it, whichever run wrote it.
    """
    ref = snapshot_ref(branch)
    old = git.rev_parse(ref)
    title = what.splitlines()[0]
    if old is not None and index is None:
        # restore reads the second parent as the index: a branch's stages nothing.
        index = g.commit_tree(git, tree, [parent], f"team-router index of {title}")
    parents = [parent, *filter(None, (index, old))]
    commit = g.commit_tree(git, tree, parents, f"team-router {what}")
    g.update_ref(git, ref, commit, old=old, message=f"team-router {title}")
    return Snapshot(ref, commit, parent, index)


def read_snapshot(git: Git, branch: str) -> Snapshot | None:
    """The branch's snapshot, None when there is none; raises GitError when it cannot be read.

    A failed read is never "no snapshot": a step that took it so would write a
    new snapshot over the one it could not see.
    """
    ref = snapshot_ref(branch)
    commit = git.rev_parse(ref)
    if commit is None:
        return None
    parents = g.commit_parents(git, commit)
    if not parents:
        return None  # not a snapshot's shape (made by hand): _commit keeps it all the same
    index = parents[1] if len(parents) > 1 else None
    return Snapshot(ref, commit, parents[0], index)


def covers(git: Git, snapshot: Snapshot | None, tip: str | None) -> bool:
    """True when the snapshot keeps ``tip`` (and so every commit below it) reachable."""
    if snapshot is None or tip is None:
        return False
    return tip == snapshot.parent or git.is_ancestor(tip, snapshot.commit)


# -- a plan dir in place (the run fell back to the primary clone) --------------

PLAN_DIR_PREFIX = "refs/team-router/plan-dirs/"


def plan_dir_ref(topic_id: str) -> str:
    return f"{PLAN_DIR_PREFIX}{topic_id}"


@record
class PlanDirSnapshot:
    """A commit holding only ``docs/plans/<id>/``, as the primary clone had it."""

    ref: str
    commit: str
    files: tuple[str, ...] = ()  # every file it holds, relative to the plan dir, sorted


def snapshot_plan_dir(
    repo: Repo, topic_id: str, *, checkout: Path | None = None
) -> PlanDirSnapshot:
    """Write the primary clone's plan dir to ``refs/team-router/plan-dirs/<id>``.

    A run that fell back to the primary clone has no worktree whose snapshot
    could carry its plan dir: it gets a ref of its own, where ``restore`` finds
    it. The commit holds the plan dir alone (the primary's files are the
    user's, and stay); one written before becomes its parent, and the ref
    only moves while it is where it was read, so nothing it held is dropped.
    ``checkout``: the directory holding the plan dir instead of the primary
    clone (one git no longer knows, that the sweep deletes): ``restore`` puts
    it back in the primary clone all the same.

    The new tree is the plan dir's files laid over the snapshot already there
    (a file on disk wins; one the snapshot alone holds stays): ``restore``
    brings back the tip, and a removal killed part way after a snapshot
    leaves only some files, whose snapshot alone would hide the rest in the
    ref's history. So every file any snapshot of the run held comes back,
    the newest content of each, one deleted on purpose since included.
    """
    rel = f"{PLANS_DIR}/{topic_id}"
    ref = plan_dir_ref(topic_id)
    where = (checkout or repo.primary) / rel
    try:
        old = repo.git.rev_parse(ref)
        with _scratch() as tmp:
            index = Path(tmp) / "index"
            tree = g.directory_tree(repo.git, rel, index, work_tree=checkout, over=old)
        what = f"team-router snapshot of plan dir {where}"
        commit = g.commit_tree(repo.git, tree, [old] if old else [], what)
        g.update_ref(repo.git, ref, commit, old=old, message=what)
        # Laid over the one before, it may hold files no longer on disk: the words name all.
        files = g.files_below(repo.git, tree, rel)
    except GitError as exc:
        raise _not_written(exc, path=where) from None
    except OSError as exc:  # the error as Python words it, as this snapshot always said it
        raise SnapshotFailed(
            Why(Reason.SNAPSHOT_NOT_WRITTEN, path=str(where), text=str(exc))
        ) from None
    return PlanDirSnapshot(ref, commit, files)
