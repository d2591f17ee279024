"""Snapshots to hidden refs before a forced removal, and ``restore`` (DESIGN §9).

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

import contextlib
import dataclasses
import json
import os
import re
import tempfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from router import git as g
from router.errors import ErrorCode, Refusal, RouterError
from router.fsutil import files_under
from router.git import Git, GitError
from router.ioerror import describe_io
from router.teardown.nested import Departed
from router.topic import state, worktreelock
from router.topic.runs import PLANS_DIR, plan_dir_link
from router.topic.workspace import Repo

# Where a forced removal keeps what it snapshotted: team-router's own refs, which
# no branch listing shows and every gc keeps.
SNAPSHOT_PREFIX = "refs/team-router/snapshots/"
MAX_RESTORED = 100
NAMED_SUBMODULES = 5  # submodules named in a restore note
NAMED_PATHS = 5  # edited paths named when an interrupted restore cannot be finished
# A line of the snapshot's message per repository the snapshot left out.
DEPARTED_KEY = "Nested-Repository: "


def snapshot_ref(branch: str) -> str:
    return f"{SNAPSHOT_PREFIX}{branch}"


@dataclass(frozen=True, slots=True)
class Snapshot:
    ref: str
    commit: str
    parent: str
    index: str | None = None  # the commit whose tree is the index, when it was kept
    replaced: str | None = None  # the snapshot this one was written over (its third parent)


class SnapshotFailed(Refusal):
    """The snapshot could not be written: the worktree must stay.

    A git lock file in the way (a killed ``update-ref`` leaves one on the
    snapshot ref) is ``git-locked``, as everywhere: the message names the
    lock and the one safe fix.
    """

    def __init__(self, message: str, *, locked: bool = False) -> None:
        super().__init__(ErrorCode.GIT_LOCKED if locked else ErrorCode.SNAPSHOT_FAILED, message)


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
        with tempfile.TemporaryDirectory(prefix="team-router-snap-") as tmp:
            tree = g.snapshot_tree(wt, Path(tmp) / "index", exclude=exclude, ignored=forced)
        what = f"snapshot of worktree {worktree}" + "".join(
            f"\n{DEPARTED_KEY}{json.dumps([d.rel, d.url, d.head, d.bare])}" for d in departed
        )
        return _write_snapshot(repo.git, tree, head, branch, what, index=staged)
    except GitError as exc:
        raise SnapshotFailed(
            f"snapshot of {worktree} failed: {exc.first_line}", locked=exc.lock_file is not None
        ) from None
    except OSError as exc:
        raise SnapshotFailed(f"snapshot of {worktree} failed: {describe_io(exc)}") from None


def snapshot_branch(repo: Repo, branch: str, tip: str) -> Snapshot:
    """Keep a branch's commits reachable when its branch goes and no worktree holds it."""
    tree = repo.git.tree_of(tip)
    if tree is None:
        raise SnapshotFailed(f"cannot read the tree of {branch} ({tip[:12]})")
    try:
        return _write_snapshot(repo.git, tree, tip, branch, f"snapshot of branch {branch}")
    except GitError as exc:
        raise SnapshotFailed(
            f"snapshot of {branch} failed: {exc.first_line}", locked=exc.lock_file is not None
        ) from None


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
            raise SnapshotFailed(
                f"snapshot of {worktree} failed: its index has unmerged paths (a merge, "
                "rebase or cherry-pick is in progress there); finish or abort it, then run "
                "teardown again"
            ) from None
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
    return Snapshot(ref, commit, parent, index, old)


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
    replaced = parents[2] if len(parents) > 2 else None
    return Snapshot(ref, commit, parents[0], index, replaced)


def covers(git: Git, snapshot: Snapshot | None, tip: str | None) -> bool:
    """True when the snapshot keeps ``tip`` (and so every commit below it) reachable."""
    if snapshot is None or tip is None:
        return False
    return tip == snapshot.parent or git.is_ancestor(tip, snapshot.commit)


# -- a plan dir in place (the run fell back to the primary clone) --------------

PLAN_DIR_PREFIX = "refs/team-router/plan-dirs/"


def plan_dir_ref(topic_id: str) -> str:
    return f"{PLAN_DIR_PREFIX}{topic_id}"


@dataclass(frozen=True, slots=True)
class PlanDirSnapshot:
    """A commit holding only ``docs/plans/<id>/``, as the primary clone had it."""

    ref: str
    commit: str


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
    """
    rel = f"{PLANS_DIR}/{topic_id}"
    ref = plan_dir_ref(topic_id)
    where = (checkout or repo.primary) / rel
    try:
        with tempfile.TemporaryDirectory(prefix="team-router-snap-") as tmp:
            tree = g.directory_tree(repo.git, rel, Path(tmp) / "index", work_tree=checkout)
        old = repo.git.rev_parse(ref)
        what = f"team-router snapshot of plan dir {where}"
        commit = g.commit_tree(repo.git, tree, [old] if old else [], what)
        g.update_ref(repo.git, ref, commit, old=old, message=what)
    except GitError as exc:
        raise SnapshotFailed(
            f"snapshot of {where} failed: {exc.first_line}",
            locked=exc.lock_file is not None,
        ) from None
    except OSError as exc:
        raise SnapshotFailed(f"snapshot of {where} failed: {exc}") from None
    return PlanDirSnapshot(ref, commit)


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

    def change(r: state.TopicRecord) -> state.TopicRecord:
        return dataclasses.replace(r, teardown=None)

    state.update_record(
        repo.common_dir,
        topic_id,
        change,
        new=lambda: state.TopicRecord(id=topic_id, repo="home", branch=topic_id),
        replace_corrupt=True,
    )


# -- restore --------------------------------------------------------------------


class RestoreStatus(StrEnum):
    RESTORED = "restored"
    EXISTING = "existing"  # this snapshot was restored before and its worktree is there
    SKIPPED = "skipped"  # no snapshot for this repo
    REFUSED = "refused"
    INTERRUPTED = "interrupted"  # a signal stopped the command before or during this repo


@dataclass(frozen=True, slots=True)
class RestoredRepo:
    name: str
    status: RestoreStatus
    detail: str
    snapshot: str | None = None
    branch: str | None = None
    worktree: Path | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "status": str(self.status),
            "detail": self.detail,
            "snapshot": self.snapshot,
            "branch": self.branch,
            "worktree": str(self.worktree) if self.worktree else None,
        }


def restore_repo(name: str, repo: Repo, topic_id: str | None, branch: str) -> RestoredRepo:
    """Recreate one repo's worktree from its snapshot; idempotent for the same snapshot.

    ``topic_id`` None: a branch that is no topic (one ``pr-cleanup --abandon``
    deleted, a stacked one included): no record is read or written.
    """
    snap = read_snapshot(repo.git, branch)
    record = _read_record(repo, topic_id) if topic_id is not None else None
    if snap is None:
        # An earlier restore that found the branch name taken moved the topic to
        # ``<branch>-restored``: its snapshot is under the old name, and it is here.
        there = _restored_on(record, branch)
        if there is not None:
            return _existing(name, there, _restored_field(record, "snapshot"), branch)
        return RestoredRepo(name, RestoreStatus.SKIPPED, f"no snapshot at {snapshot_ref(branch)}")
    again = _already_restored(record, snap)
    if again is not None:
        _drop_restoring(repo, again)  # a run killed after its record, before this
        return _existing(name, again, snap.commit, _restored_field(record, "branch"))
    undone = ""
    try:
        for half in half_made_adds(repo, of=branch):
            undone += f"; {undo_half_made_add(repo, half, snap)} (made again)"
        unfinished = _unfinished_restore(repo, branch, snap)
        if unfinished is not None:
            target, path, created = unfinished
            _check_resumable(repo, path, snap)
        else:
            # No record says so (a branch that is no topic has none): git's own state
            # tells whether an earlier run already brought this snapshot back. A
            # topic's record does (above): its branch made again from a main that
            # holds the snapshot's commit is a new run, never a restore of it.
            earlier = _earlier_restore(name, repo, snap, branch) if topic_id is None else None
            if earlier is not None:
                return earlier
            target, path, created = _check_out(repo, branch, snap, topic_id or branch)
            _mark_restoring(repo, path, branch, snap, created=created)
        _lay_over(Git(path), snap)
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
    _drop_restoring(repo, path)
    note = "" if target == branch else f" ({branch} is taken)"
    staged = ", what was staged is staged again" if snap.index is not None else ""
    subs = _submodule_note(repo, snap) if (path / ".gitmodules").exists() else ""
    return RestoredRepo(
        name,
        RestoreStatus.RESTORED,
        f"worktree {path} on {target}{note}; uncommitted edits and untracked files are back "
        f"as working-tree changes{staged}{includes}; {snap.ref} is kept{subs}"
        f"{_departed_note(repo, snap)}{undone}",
        snap.commit,
        target,
        path,
    )


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
    return list(copied.paths), f"; .worktreeinclude files from {repo.primary}: {copied.line()}"


def _lay_over(wt: Git, snap: Snapshot) -> None:
    """The snapshot's files as working-tree changes, then its index; both steps may run twice."""
    g.restore_worktree_files(wt, snap.commit)
    if snap.index is not None:
        g.read_index(wt, snap.index)


# -- a restore killed half-way ---------------------------------------------------------

# Written into the restored worktree's git dir before its files are laid over,
# dropped once the restore is recorded. A rerun after a kill in between finds
# it and finishes that restore: without it, a worktree whose files are back but
# whose index is not looks like a finished restore (or, to a topic's rerun, like
# someone else's checkout of the branch). `git worktree remove` deletes it with
# the git dir.
RESTORING_FILE = "team-router-restoring"


def _restoring_file(repo: Repo, path: Path) -> Path:
    """Where the restore-under-way note of the worktree at ``path`` lives (its git dir)."""
    admin = g.registration_of(str(repo.common_dir), str(path))
    return Path(admin if admin is not None else g.absolute_git_dir(Git(path))) / RESTORING_FILE


def _mark_restoring(repo: Repo, path: Path, branch: str, snap: Snapshot, *, created: bool) -> None:
    """Note that the restore of ``branch``'s ``snap`` is under way at ``path``."""
    note = json.dumps({"of": branch, "snapshot": snap.commit, "branch_created": created})
    state.write_atomic(_restoring_file(repo, path), note + "\n")
    _drop_intent(repo, path)


# Before the checkout there is no worktree git dir to hold the note: the restore's
# intent is written in the repo's own state first (one file per worktree path),
# and moved into the worktree's git dir right after the checkout. A kill in
# between leaves a clean checkout of the snapshot's commit that only the intent
# names as this restore's own; without it the rerun would take that checkout
# for someone else's and restore into a second worktree on ``<branch>-restored``.
INTENTS_DIR = "restoring"


def _intent_file(repo: Repo, path: Path) -> Path:
    import hashlib

    key = hashlib.sha256(os.fsencode(os.path.realpath(path))).hexdigest()[:16]
    return state.state_root(repo.common_dir) / INTENTS_DIR / f"{key}.json"


def _note_intent(
    repo: Repo, path: Path, target: str, branch: str, snap: Snapshot, *, created: bool
) -> None:
    """Say, before ``git worktree add``, which restore the worktree at ``path`` is for."""
    note = {
        "of": branch,
        "snapshot": snap.commit,
        "branch": target,
        "path": os.path.realpath(path),
        "branch_created": created,
    }
    state.write_atomic(_intent_file(repo, path), json.dumps(note) + "\n")


def _drop_intent(repo: Repo, path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        _intent_file(repo, path).unlink()


def _adopt(repo: Repo, entry: g.WorktreeEntry, branch: str, snap: Snapshot) -> bool | None:
    """The worktree a restore of ``snap`` checked out and was killed before noting: its
    ``branch_created``, once the note is written in its git dir; None when it is not one.

    Only a checkout still clean at the snapshot's commit, on the branch the
    intent named: laying the snapshot over it loses nothing.
    """
    intent = _read_note(_intent_file(repo, entry.path))
    if intent is None or intent.get("snapshot") != snap.commit or intent.get("of") != branch:
        return None
    if intent.get("branch") != entry.branch or entry.head != snap.parent:
        return None
    if Git(entry.path).status().dirty:
        return None
    created = intent.get("branch_created") is True
    _mark_restoring(repo, entry.path, branch, snap, created=created)
    return created


# -- an add killed before its checkout ------------------------------------------------


@dataclass(frozen=True, slots=True)
class HalfMadeAdd:
    """A restore's ``git worktree add`` killed before it checked anything out.

    git registers the worktree (locked at once with our reason: ``--lock
    --reason``), writes its ``.git`` file and a placeholder HEAD (the null id),
    points HEAD at the branch, then checks the files out and writes the index.
    Killed before that, the registration has no index, and until HEAD is set
    git cannot read it at all: ``git rev-list --all`` fails in the whole repo,
    and every reachability check with it. The restore's intent, written before
    the add, is what says the registration is ours.
    """

    path: Path  # the worktree's path
    admin: Path  # its registration
    of: str  # the branch whose snapshot was being restored
    branch: str  # the branch the add was checking out
    snapshot: str
    branch_created: bool  # the add was cutting ``branch`` (-b)
    intent: Path

    def left(self) -> list[str]:
        """What the directory holds besides git's own ``.git`` file (sorted names)."""
        try:
            names = sorted(os.listdir(self.path))
        except FileNotFoundError:
            return []
        dotgit = self.path / ".git"
        if ".git" in names and dotgit.is_file() and not dotgit.is_symlink():
            names.remove(".git")
        return names


def half_made_adds(repo: Repo, of: str | None = None) -> list[HalfMadeAdd]:
    """The registrations a restore's killed ``git worktree add`` left (of ``of``'s restore only, if given).

    Ours only: a restore's intent names the path, git's registration of it is
    locked with team-router's reason, and git never finished it: the
    registration is torn (:func:`router.git.files.torn_registration`: its HEAD
    is git's placeholder, say) or it has no index.
    """
    folder = state.state_root(repo.common_dir) / INTENTS_DIR
    try:
        files = sorted(folder.glob("*.json"))
    except OSError:
        return []
    found = []
    for file in files:
        note = _read_note(file)
        fields = [note.get(k) for k in ("path", "of", "branch", "snapshot")] if note else []
        if len(fields) != 4 or not all(isinstance(f, str) and f for f in fields):
            continue
        path, branch_of, target, snapshot = (str(f) for f in fields)
        if of is not None and branch_of != of:
            continue
        admin = g.registration_of(str(repo.common_dir), path)
        if admin is None or not worktreelock.own_reason(g.registration_file(admin, "locked")):
            continue
        # Torn (a file git needs is missing, or HEAD is its placeholder) or never checked out.
        unfinished = bool(g.torn_registration(admin)) or not os.path.exists(
            os.path.join(admin, "index")
        )
        if unfinished and not os.path.exists(os.path.join(admin, RESTORING_FILE)):
            created = note.get("branch_created") is True  # type: ignore[union-attr]
            found.append(
                HalfMadeAdd(Path(path), Path(admin), branch_of, target, snapshot, created, file)
            )
    return found


def undo_half_made_add(repo: Repo, half: HalfMadeAdd, snap: Snapshot | None) -> str:
    """Remove what the killed add made, so that restore makes the worktree again; what was done.

    Only git's own ``.git`` file is in the directory (nothing was checked out):
    it goes with the directory, then a branch the add cut that never moved
    (``snap``: the snapshot being restored, whose commit it was cut at), then
    the registration, then the intent, in that order so that a kill part-way
    leaves what the next run finds again. Anything else in the directory is
    kept, and refused (``half-made-worktree``): git's HEAD is set first, so the
    repository is readable again whatever the user does next.
    """
    left = half.left()
    if left:
        if g.placeholder_head(str(half.admin)):
            # What git was about to write itself; only a name, so nothing moves.
            state.write_atomic(half.admin / "HEAD", f"ref: refs/heads/{half.branch}\n", mode=0o644)
        shown = ", ".join(left[:NAMED_PATHS]) + (", ..." if len(left) > NAMED_PATHS else "")
        raise RouterError(
            ErrorCode.HALF_MADE_WORKTREE,
            f"{half.path} is a worktree a killed restore's `git worktree add` left before it "
            f"checked anything out, and it holds {shown}, which git did not put there; kept. "
            f"Move them out of {half.path}, then run `team-router restore {half.of}` again",
        )
    with contextlib.suppress(FileNotFoundError):
        (half.path / ".git").unlink()
    with contextlib.suppress(FileNotFoundError):
        half.path.rmdir()
    undone = (
        f"removed the half-made worktree a killed restore's `git worktree add` left at {half.path}"
    )
    undone += _drop_cut_branch(repo, half, snap)
    import shutil  # lazy: only a half-made registration needs it

    shutil.rmtree(half.admin, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        half.intent.unlink()
    return undone


def _drop_cut_branch(repo: Repo, half: HalfMadeAdd, snap: Snapshot | None) -> str:
    """Delete the branch the killed add cut, while it never moved; what was done ("": nothing)."""
    if not half.branch_created or snap is None or snap.commit != half.snapshot:
        return ""
    tip = repo.git.rev_parse(f"refs/heads/{half.branch}")
    # At the snapshot's commit, which the snapshot keeps: made again by the rerun.
    if tip != snap.parent or not repo.git.branch_delete_at(half.branch, tip):
        return ""
    return f" and the branch {half.branch} it cut{repo.git.drop_branch_config(half.branch)}"


def _restoring_note(repo: Repo, path: Path) -> dict[str, object] | None:
    return _read_note(_restoring_file(repo, path))


def _read_note(file: Path) -> dict[str, object] | None:
    try:
        note = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return note if isinstance(note, dict) else None


def restores_under_way(repo: Repo) -> list[tuple[Path, str]]:
    """(worktree, branch restored) of each restore a kill interrupted, from the notes left."""
    found = []
    for admin, dotgit in g.registrations(str(repo.common_dir)):
        note = _read_note(Path(admin) / RESTORING_FILE)
        of = note.get("of") if note is not None else None
        if isinstance(of, str) and dotgit:
            found.append((Path(os.path.dirname(dotgit)), of))
    return found


def _drop_restoring(repo: Repo, path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        _restoring_file(repo, path).unlink()


def _unfinished_restore(repo: Repo, branch: str, snap: Snapshot) -> tuple[str, Path, bool] | None:
    """(branch, path, whether restore cut the branch) of a restore of ``snap`` a kill interrupted."""
    names = _restored_names(branch)
    for entry in repo.git.worktree_list()[1:]:
        if entry.branch is None or not names.fullmatch(entry.branch) or entry.prunable:
            continue
        if os.path.realpath(entry.path) != os.path.realpath(repo.worktree_path(entry.branch)):
            continue
        note = _restoring_note(repo, entry.path)
        if note is not None and note.get("snapshot") == snap.commit:
            return entry.branch, entry.path, note.get("branch_created") is True
        created = _adopt(repo, entry, branch, snap) if note is None else None
        if created is not None:
            return entry.branch, entry.path, created
    return None


def _check_resumable(repo: Repo, path: Path, snap: Snapshot) -> None:
    """Refuse to finish an interrupted restore in a worktree someone has worked in since.

    Finishing lays the snapshot's files over again and stages its index: that
    is safe only while every file is either still as the snapshot's commit has
    it or already as the snapshot has it, and the index is one of those two.
    """
    wt = Git(path)
    why = ""
    if wt.head() != snap.parent:
        why = "commits were made there since"
    elif g.index_tree(wt) not in {repo.git.tree_of(snap.parent), _staged_tree(repo, snap)}:
        why = "its index was changed since"
    else:
        edited = _edited_since(repo, wt, path, snap)
        if edited:
            shown = ", ".join(edited[:NAMED_PATHS]) + (", ..." if len(edited) > NAMED_PATHS else "")
            why = f"files were edited since ({shown})"
    if why:
        marker = _restoring_file(repo, path)
        index = f"; `git -C {path} read-tree {snap.index}^{{tree}}` stages" if snap.index else ""
        raise RouterError(
            ErrorCode.RESTORE_REFUSED,  # the repo's reason; the command's code too (README table)
            f"a restore of {snap.ref} into {path} was interrupted and {why}; nothing was "
            f"changed. Finish it by hand (`git -C {path} restore --source={snap.commit} "
            f"--worktree -- <paths>` brings back the snapshot's version of those paths{index} "
            f"what was staged), then delete {marker}; or delete {marker} and run restore again "
            "for a fresh copy on another branch",
        )


def _staged_tree(repo: Repo, snap: Snapshot) -> str | None:
    return repo.git.tree_of(snap.index if snap.index is not None else snap.parent)


def _edited_since(repo: Repo, wt: Git, path: Path, snap: Snapshot) -> list[str]:
    """Paths whose file is neither the snapshot commit's version nor the snapshot's own,
    nor one the interrupted restore was still writing (:func:`_written_part_way`)."""
    # Ignored files the snapshot holds were laid over too: `add --all` alone skips them.
    laid = g.changed_paths(repo.git, snap.parent, snap.commit)
    forced = tuple(sorted(p for p in laid if os.path.isfile(path / p)))
    with tempfile.TemporaryDirectory(prefix="team-router-restore-") as tmp:
        files = g.snapshot_tree(wt, Path(tmp) / "index", ignored=forced)
    neither = g.changed_paths(repo.git, snap.commit, files) & g.changed_paths(
        repo.git, snap.parent, files
    )
    # A file neither has (new since) is one laying over never touches.
    new = g.changed_paths(repo.git, snap.commit, files, only="A") & g.changed_paths(
        repo.git, snap.parent, files, only="A"
    )
    return sorted(_not_written_part_way(repo, path, snap, sorted(neither - new)))


def _not_written_part_way(repo: Repo, path: Path, snap: Snapshot, rels: list[str]) -> set[str]:
    """Those of ``rels`` that no restore left so: each holds something of its own.

    git writes each file front to back, and a full disk (or a kill) stops it
    part-way: the file is then missing or holds the start of the version git
    was writing (the snapshot's, or its commit's at the checkout). Every byte
    of such a file is in that blob, so laying the snapshot over it loses
    nothing. Decided by content alone, never by when the file was written.
    """
    if not rels:
        return set()
    blobs = [g.tree_blobs(repo.git, rev, rels) for rev in (snap.commit, snap.parent)]
    own = set()
    for rel in rels:
        file = path / rel
        if not os.path.lexists(file):
            own.add(rel)
        elif not file.is_symlink() and file.is_file():
            versions = [found[rel] for found in blobs if rel in found]
            if any(g.is_cut_short(repo.git, file, blob) for blob in versions):
                own.add(rel)
    return set(rels) - own


def _submodule_note(repo: Repo, snap: Snapshot) -> str:
    """How to bring the submodules back: teardown removed them only with their commits on their remotes.

    A submodule checked out at another commit than the one staged is named
    with that commit: ``submodule update`` alone would check out the staged one.
    """
    note = "; its submodules are not initialised: run `git submodule update --init` there"
    try:
        moved = g.moved_gitlinks(repo.git, snap.index or snap.parent, snap.commit)
    except GitError:
        return note
    for sub, commit in sorted(moved.items())[:NAMED_SUBMODULES]:
        note += f", then `git -C {sub} checkout {commit[:12]}` (where it was)"
    return note


def _restored_names(branch: str) -> re.Pattern[str]:
    """The names a restore of ``branch`` checks out: itself, or ``-restored[-N]`` when taken."""
    return re.compile(re.escape(branch) + r"(-restored(-[0-9]+)?)?")


def _earlier_restore(name: str, repo: Repo, snap: Snapshot, branch: str) -> RestoredRepo | None:
    """The worktree an earlier restore of ``snap`` left, when git shows one; else None.

    A worktree on ``branch`` (or a ``-restored`` name), at the path a restore
    gives it, whose HEAD is the snapshot's commit or contains it is that
    restore, whatever was committed since. ``branch`` holding the commit with
    more on top and checked out nowhere was restored and worked on: laying the
    snapshot's files over the newer commits would undo them, so nothing is
    done and the way back is named.
    """
    names = _restored_names(branch)
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
    if branch in _branches_in_use(listed):
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


def _check_out(repo: Repo, branch: str, snap: Snapshot, topic: str) -> tuple[str, Path, bool]:
    """A worktree at the snapshot's commit: (its branch, its path, whether restore cut the branch).

    The snapshot's own branch is checked out only while it still is at the
    snapshot's commit once checked out: moved meanwhile, it holds other work,
    which the snapshot's files laid over it would read as undone. That fresh
    checkout goes again (git refuses to remove one with changes) and a
    ``-restored`` name is cut at the snapshot's commit instead. The worktree is
    locked for ``topic`` as every worktree team-router makes (DESIGN §10).
    """
    reason = worktreelock.reason_for(topic)
    for _ in range(2):
        target, base = _free_branch(repo, branch, snap)
        path = repo.worktree_path(target)
        if os.path.lexists(path):
            raise RouterError(
                ErrorCode.PATH_TAKEN, f"{path} already exists; move it away and run restore again"
            )
        _note_intent(repo, path, target, branch, snap, created=base is not None)
        try:
            repo.git.worktree_add(path, target, base=base, lock_reason=reason)
        except GitError:
            _drop_intent(repo, path)  # git made no worktree there (it undoes a failed add)
            raise
        if base is not None or Git(path).head() == snap.parent:
            return target, path, base is not None
        repo.git.worktree_unlock(path)  # our own lock, on the checkout made a moment ago
        repo.git.worktree_remove(path, force=False)
        _drop_intent(repo, path)
    raise RouterError(
        ErrorCode.PATH_TAKEN, f"{branch} moved twice while restore checked it out; run it again"
    )


def _branches_in_use(entries: list[g.WorktreeEntry]) -> set[str | None]:
    """The branches checked out in a worktree whose directory is there (git refuses them)."""
    return {e.branch for e in entries if not e.prunable}


def _free_branch(repo: Repo, branch: str, snap: Snapshot) -> tuple[str, str | None]:
    """The branch to check out and the base to cut it from (None: check the existing one out).

    ``branch`` at the snapshot's commit, checked out nowhere, is the snapshot's
    own branch: it is checked out again. Holding anything else, or checked out
    somewhere (the user's own checkout of it, one a killed restore left clean),
    it is another piece of work and the restore takes a ``-restored`` name,
    never moving it.
    """
    tip = repo.git.rev_parse(f"refs/heads/{branch}")
    if tip is None:
        return branch, snap.parent
    if tip == snap.parent and branch not in _branches_in_use(repo.git.worktree_list()):
        return branch, None
    for n in range(1, MAX_RESTORED + 1):
        candidate = f"{branch}-restored" if n == 1 else f"{branch}-restored-{n}"
        if not repo.git.branch_exists(candidate) and not os.path.lexists(
            repo.worktree_path(candidate)
        ):
            return candidate, snap.parent
    raise RouterError(ErrorCode.PATH_TAKEN, f"{branch}-restored ... -{MAX_RESTORED} are all taken")


def _read_record(repo: Repo, topic_id: str) -> state.TopicRecord | None:
    return state.read_record_or_none(repo.common_dir, topic_id)


def _restored_field(record: state.TopicRecord | None, key: str) -> str | None:
    restored = record.restored if record else None
    return getattr(restored, key) if restored else None


def _existing(name: str, where: Path, snapshot: str | None, branch: str | None) -> RestoredRepo:
    """An earlier restore's worktree, still there: this run changes nothing."""
    return RestoredRepo(
        name, RestoreStatus.EXISTING, f"already restored to {where}", snapshot, branch, where
    )


def _restored_on(record: state.TopicRecord | None, branch: str) -> Path | None:
    """The worktree a restore made on ``branch``, while it is still there."""
    if _restored_field(record, "branch") != branch:
        return None
    where = _restored_field(record, "worktree")
    return Path(where) if where and (Path(where) / ".git").exists() else None


def _already_restored(record: state.TopicRecord | None, snap: Snapshot) -> Path | None:
    if _restored_field(record, "snapshot") != snap.commit:
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
        # The restored worktree is a new run: an earlier teardown's steps describe another.
        # restore cut the branch it checked out (a free name): teardown may delete it.
        # One it found at the snapshot's commit and checked out keeps what the record said.
        return dataclasses.replace(
            r,
            worktree=str(path),
            branch=target,
            branch_created=created or r.branch_created,
            teardown=None,
            restored=restored,
            # Teardown names these copies when it deletes them, as for a new worktree's.
            included=tuple(sorted(set(r.included) | set(copied))),
        )

    state.update_record(
        repo.common_dir,
        topic_id,
        change,
        new=lambda: record or state.TopicRecord(id=topic_id, repo=name, branch=branch),
        replace_corrupt=True,  # as before: a corrupt record is set aside, never lost
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
