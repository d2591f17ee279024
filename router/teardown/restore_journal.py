"""A restore killed half-way: the marks it writes before it acts, and how a rerun
finishes or undoes what it left.

The restore's intent is written in the repo's state before its checkout and
moved into the worktree's git dir right after; the worktree's note stays until
the restore is recorded. Where they live, their writes and the one reader of
both (doctor's and the rerun's) are :mod:`router.topic.journal`'s.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from router import git as g
from router.create import ouradd, sparse
from router.create.ouradd import OurAdd
from router.errors import ErrorCode, RouterError
from router.git import Git, GitError
from router.reasons import Reason, Why
from router.teardown.factwords import first_few
from router.teardown.snapshot import MAX_RESTORED, Snapshot, read_snapshot
from router.teardown.wording import in_words
from router.topic import journal, worktreelock
from router.topic.journal import Operation, read_note
from router.topic.workspace import Repo


def mark_restoring(repo: Repo, path: Path, branch: str, snap: Snapshot, *, created: bool) -> None:
    """Note that the restore of ``branch``'s ``snap`` is under way at ``path``."""
    note = {"of": branch, "snapshot": snap.commit, "branch_created": created}
    journal.begin_restore(repo.common_dir, path, note, checked_out=True)


def _adopt(repo: Repo, entry: g.WorktreeEntry, branch: str, snap: Snapshot) -> bool | None:
    """The worktree a restore of ``snap`` checked out and was killed before noting: its
    ``branch_created``, once the note is written in its git dir; None when it is not one.

    Only a checkout still clean at the snapshot's commit, on the branch the
    intent named: laying the snapshot over it loses nothing.
    """
    intent = read_note(journal.note_file(repo.common_dir, entry.path, checked_out=False))
    if intent is None or intent.get("snapshot") != snap.commit or intent.get("of") != branch:
        return None
    if intent.get("branch") != entry.branch or entry.head != snap.parent:
        return None
    if Git(entry.path).status().dirty:
        return None
    created = intent.get("branch_created") is True
    mark_restoring(repo, entry.path, branch, snap, created=created)
    return created


def half_made_adds(
    repo: Repo, of: str | None = None, snap: Snapshot | None = None
) -> list[tuple[OurAdd, Path]]:
    """The registrations a restore's killed ``git worktree add`` left (of ``of``'s restore
    only, if given), as the journal reads them (:data:`journal.Operation.RESTORE_ADD`),
    each with its registration. ``snap``: the snapshot being restored (read if not given).

    git registers the worktree (locked at once with our reason: ``--lock
    --reason``), writes its ``.git`` file and a placeholder HEAD (the null id),
    points HEAD at the branch, then checks the files out and writes the index.
    Killed before that, the registration has no index, and until HEAD is set
    git cannot read it at all: ``git rev-list --all`` fails in the whole repo.
    """
    found = []
    for half in journal.restores_pending(repo.common_dir):
        if half.operation is not Operation.RESTORE_ADD or of not in {None, half.branch}:
            continue
        path, target = Path(str(half.path)), str(half.step)
        note = read_note(journal.note_file(repo.common_dir, path, checked_out=False)) or {}
        admin = Path(str(g.registration_of(str(repo.common_dir), str(path))))
        topic = worktreelock.reason_topic(g.registration_file(admin, "locked")) or ""
        at = snap if snap is not None else read_snapshot(repo.git, half.branch)
        cut = note.get("branch_created") is True and at is not None
        cut_at = at.parent if cut and at.commit == note.get("snapshot") else None  # type: ignore[union-attr]
        tip = repo.git.rev_parse(f"refs/heads/{target}")
        add = OurAdd(repo, path, topic, target, None, tip, half, cut_at)
        found.append((add, admin))
    return found


def undo_half_made_add(add: OurAdd, admin: Path) -> str:
    """Remove what a restore's killed add made, so that restore makes the worktree again; what
    was done. Only under the one rule of :mod:`router.create.ouradd`: anything but git's own
    ``.git`` file in the directory is kept, and refused (``half-made-worktree``); git's HEAD
    is set first, so the repository is readable again whatever the user does next."""
    problem = ouradd.torn_problem(add, admin)
    if problem is not None:
        ouradd.mend_head(add, admin)
        of = add.restore.branch if add.restore else add.branch
        kept = Why(Reason.HALF_MADE_RESTORE, path=str(add.path), branch=of, inner=(problem,))
        raise RouterError(ErrorCode.HALF_MADE_WORKTREE, in_words(kept))
    cut = ouradd.undo_torn(add, admin)
    return (
        f"removed the half-made worktree a killed restore's `git worktree add` left at {add.path}"
        + (f" and the branch {add.branch} it cut" if cut else "")
    )


def drop_restoring(repo: Repo, path: Path) -> None:
    journal.end_restore(repo.common_dir, path, checked_out=True)


def unfinished_restore(repo: Repo, branch: str, snap: Snapshot) -> tuple[str, Path, bool] | None:
    """(branch, path, whether restore cut the branch) of a restore of ``snap`` a kill interrupted."""
    names = restored_names(branch)
    for entry in repo.git.worktree_list()[1:]:
        if entry.branch is None or not names.fullmatch(entry.branch) or entry.prunable:
            continue
        if os.path.realpath(entry.path) != os.path.realpath(repo.worktree_path(entry.branch)):
            continue
        note = read_note(journal.note_file(repo.common_dir, entry.path, checked_out=True))
        if note is not None and note.get("snapshot") == snap.commit:
            return entry.branch, entry.path, note.get("branch_created") is True
        created = _adopt(repo, entry, branch, snap) if note is None else None
        if created is not None:
            return entry.branch, entry.path, created
    return None


def check_resumable(repo: Repo, path: Path, snap: Snapshot) -> None:
    """Refuse to finish an interrupted restore in a worktree someone has worked in since.

    Finishing lays the snapshot's files over again and stages its index: that
    is safe only while every file is either still as the snapshot's commit has
    it or already as the snapshot has it, and the index is one of those two.
    """
    wt = Git(path)
    why = ""
    if wt.head() != snap.parent:
        why = "commits were made there since"
    elif g.index_tree(wt) not in {
        repo.git.tree_of(snap.parent),
        repo.git.tree_of(snap.index or snap.parent),
    }:
        why = "its index was changed since"
    else:
        edited = _edited_since(repo, wt, path, snap)
        if edited:
            why = f"files were edited since ({first_few(edited)})"
    if why:
        marker = journal.note_file(repo.common_dir, path, checked_out=True)
        index = f"; `git -C {path} read-tree {snap.index}^{{tree}}` stages" if snap.index else ""
        raise RouterError(
            ErrorCode.RESTORE_REFUSED,  # the repo's reason; the command's code too (README table)
            f"a restore of {snap.ref} into {path} was interrupted and {why}; nothing was "
            f"changed. Finish it by hand (`git -C {path} restore --source={snap.commit} "
            f"--worktree -- <paths>` brings back the snapshot's version of those paths{index} "
            f"what was staged), then delete {marker}; or delete {marker} and run restore again "
            "for a fresh copy on another branch",
        )


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


def restored_names(branch: str) -> re.Pattern[str]:
    """The names a restore of ``branch`` checks out: itself, or ``-restored[-N]`` when taken."""
    return re.compile(re.escape(branch) + r"(-restored(-[0-9]+)?)?")


def check_out_restored(
    repo: Repo, branch: str, snap: Snapshot, topic: str, cone: tuple[str, ...] | None = None
) -> tuple[str, Path, bool]:
    """A worktree at the snapshot's commit: (its branch, its path, whether restore cut the branch).

    The snapshot's own branch is checked out only while it still is at the
    snapshot's commit once checked out: moved meanwhile, it holds other work,
    which the snapshot's files laid over it would read as undone. That fresh
    checkout goes again (git refuses to remove one with changes) and a
    ``-restored`` name is cut at the snapshot's commit instead. The worktree is
    locked for ``topic`` as every worktree team-router makes (DESIGN §10). A
    snapshot of a sparse worktree names its ``cone``: the worktree is made
    sparse again with it, as ``new`` made it.
    """
    reason = worktreelock.reason_for(topic)
    for _ in range(2):
        target, base = _free_branch(repo, branch, snap)
        path = repo.worktree_path(target)
        if os.path.lexists(path):
            raise RouterError(
                ErrorCode.PATH_TAKEN, f"{path} already exists; move it away and run restore again"
            )
        intent: dict[str, object] = {"of": branch, "snapshot": snap.commit, "branch": target}
        intent |= {"path": os.path.realpath(path), "branch_created": base is not None}
        journal.begin_restore(repo.common_dir, path, intent, checked_out=False)
        try:
            repo.git.worktree_add(
                path, target, base=base, lock_reason=reason, checkout=cone is None
            )
        except GitError:
            journal.end_restore(
                repo.common_dir, path, checked_out=False
            )  # git made no worktree there (it undoes a failed add)
            raise
        if cone:
            # Killed or failed before it is done, the add is half-made (no index):
            # the rerun removes it and makes it again (half_made_adds).
            sparse.check_out(Git(path), cone, workers=0)
        if base is not None or Git(path).head() == snap.parent:
            return target, path, base is not None
        repo.git.worktree_unlock(path)  # our own lock, on the checkout made a moment ago
        repo.git.worktree_remove(path, force=False)
        journal.end_restore(repo.common_dir, path, checked_out=False)
    raise RouterError(
        ErrorCode.PATH_TAKEN, f"{branch} moved twice while restore checked it out; run it again"
    )


def branches_in_use(entries: list[g.WorktreeEntry]) -> set[str | None]:
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
    if tip == snap.parent and branch not in branches_in_use(repo.git.worktree_list()):
        return branch, None
    for n in range(1, MAX_RESTORED + 1):
        candidate = f"{branch}-restored" if n == 1 else f"{branch}-restored-{n}"
        if not repo.git.branch_exists(candidate) and not os.path.lexists(
            repo.worktree_path(candidate)
        ):
            return candidate, snap.parent
    raise RouterError(ErrorCode.PATH_TAKEN, f"{branch}-restored ... -{MAX_RESTORED} are all taken")
