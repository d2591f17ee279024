"""Whether what a killed ``git worktree add`` of ours left is ours to undo, and undoing it.

One owner for every half-made add this tool makes, asked by creation's rerun,
restore's rerun and ``doctor --repair`` alike. The journal is the proof that
the add is ours: the topic's record shows this tool's creation still under way
(its branch never moved since it was cut), or a restore's intent names the path
and git's registration carries our lock and no restore note (journal's
:data:`~router.topic.journal.Operation.RESTORE_ADD`). Then git's registration
carries our lock reason (or git's own "initializing", or none left) and names
our path, the path is reached through no symlink, the directory holds nothing
but git's own files (its ``.git`` file, and for a creation its checkout of the
branch), and no process has it open. Anything else is someone's work, kept and named.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from router import git as g
from router.records import record
from router.topic import journal, state, worktreelock
from router.topic.workspace import Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.reasons import Why


@record
class OurAdd:
    """A worktree this tool's ``git worktree add`` of topic ``topic_id`` was making at ``path``."""

    repo: Repo
    path: Path
    topic_id: str
    branch: str
    record: state.TopicRecord | None  # the topic's record in ``repo`` (None: none, or torn down)
    tip: str | None  # the branch's tip now (None: no such branch)
    # A restore's add: the journal's mark (its intent), and the commit it cut the
    # branch at (None: it checked an existing branch out, or the snapshot is gone).
    restore: journal.Pending | None = None
    restore_cut_at: str | None = None

    @property
    def cut_at(self) -> str | None:
        """The commit the add cut ``branch`` at (None: it did not cut it)."""
        if self.restore is not None:
            return self.restore_cut_at
        record = self.record
        return record.base_commit if record is not None and record.branch_created else None

    @property
    def checked_out(self) -> str | None:
        """The commit whose files git may have written there (None: nothing: a restore's add
        is killed before its checkout, or it would have written its note)."""
        return None if self.restore is not None else self.tip


def not_ours(add: OurAdd) -> Why | None:
    """Why the journal does not prove this tool's unfinished add made it, or None."""
    from router.reasons import Reason, Why  # loaded only where a half-made add is judged

    if add.restore is not None:
        return None  # the journal read the restore's intent, our lock and no note
    record = add.record
    if (
        record is None
        or record.branch != add.branch
        or not journal.find(record, journal.Operation.CREATE)
    ):
        return Why(Reason.NOT_CREATING)
    if record.branch_created and record.base_commit and add.tip not in {None, record.base_commit}:
        return Why(Reason.BRANCH_MOVED, branch=add.branch)
    return None


def torn_problem(add: OurAdd, admin: Path) -> Why | None:
    """Why the half-made registration ``admin`` and what is at the path are not ours to
    remove, or None: the one decision every undo of a half-made add asks first."""
    from router.reasons import Reason, Why  # loaded only where a half-made add is judged

    # git writes our lock reason where it would write "initializing" (--lock --reason);
    # a kill part-way through git's own clean-up may have taken the file.
    adding = {"", g.ADD_IN_PROGRESS, worktreelock.reason_for(add.topic_id)}
    if g.registration_file(admin, "locked") not in adding:
        return Why(Reason.LOCKED_ELSEWHERE)
    named = g.registration_file(admin, "gitdir")
    if named and os.path.realpath(named) != os.path.realpath(add.path / ".git"):
        return Why(Reason.OTHER_GITDIR, path=named)
    return not_ours(add) or (kept_by(add) if os.path.lexists(add.path) else None)


def kept_by(add: OurAdd) -> Why | None:
    """What keeps the path from being undone (a symlink on the way to it, files that are
    not git's, a process using it), or None."""
    from router.reasons import Reason, Why  # loaded only where a half-made add is judged

    if symlink_in(add.path, add.repo.primary):
        return Why(Reason.THROUGH_SYMLINK)
    return work_in_half_made(add) or in_use(add)


def undo_torn(add: OurAdd, admin: Path) -> bool:
    """Remove the checkout, then a branch the add cut that never moved, then the registration
    (then a restore's intent); True when that branch went. Only after :func:`torn_problem`
    found nothing.

    In that order so that a kill part-way leaves what the next run finds again:
    the registration (and the journal's mark) stay until the rest is gone.
    """
    import shutil  # lazy, like every undo's: a run that creates pays ~3 ms for it

    if add.checked_out is None and os.path.lexists(add.path):
        # Only git's .git file was there: rmdir refuses whatever appeared since the check.
        with contextlib.suppress(FileNotFoundError):
            (add.path / ".git").unlink()
        add.path.rmdir()
    elif os.path.lexists(add.path):
        shutil.rmtree(add.path)
    cut_at = add.cut_at
    # Cut by the killed run and never moved: made again at a fresh base.
    cut = bool(cut_at) and add.tip == cut_at and add.repo.git.branch_delete_at(add.branch, cut_at)  # type: ignore[arg-type]
    if cut:
        add.repo.git.drop_branch_config(add.branch)
    shutil.rmtree(admin, ignore_errors=True)
    if add.restore is not None:
        journal.end_restore(add.repo.common_dir, add.path, checked_out=False)
    return cut


def mend_head(add: OurAdd, admin: Path) -> None:
    """Point git's placeholder HEAD of a kept half-made add at its branch, as git was about
    to: only a name, so nothing moves, and git can read the repository again."""
    if g.placeholder_head(str(admin)):
        state.write_atomic(admin / "HEAD", f"ref: refs/heads/{add.branch}\n", mode=0o644)


def registration(add: OurAdd) -> Path:
    """The worktree's admin dir in the common git dir, as its ``.git`` file names it."""
    pointer = g.gitdir_pointer(add.path)
    if pointer:
        return Path(os.path.realpath(pointer))
    return add.repo.common_dir / "worktrees" / add.path.name


def in_use(add: OurAdd) -> Why | None:
    """Why a process may still be making the half-made worktree (a git the kill missed), or None.

    A kill of team-router alone leaves its `git worktree add` running: its
    checkout holds the registration's index.lock open and writes files
    under our path. Where no process list can be read, a lock file left
    in the registration is taken to be in use.
    """
    from router.reasons import Reason, Why  # loaded only where a half-made add is judged

    admin = registration(add)
    locks = [lock for lock in g.left_locks(add.repo.common_dir) if lock.parent == admin]
    # lazy: only a half-made worktree needs a process list
    from router.processes import processes_using

    users = processes_using(
        [os.path.realpath(add.path), *(os.path.realpath(lock) for lock in locks)]
    )
    if users:
        pids = sorted({pid for found in users.values() for pid in found})
        return Why(Reason.ADD_RUNNING, items=tuple(map(str, pids)))
    if users is None and locks:
        return Why(Reason.LOCK_LEFT, path=str(locks[0]))
    return None


def work_in_half_made(add: OurAdd) -> Why | None:
    """Which files in it are not git's own checkout of the tip (anything else is work)."""
    from router.reasons import Reason, Why  # loaded only where a half-made add is judged

    git, path, tip = add.repo.git, add.path, add.checked_out
    expected = g.tree_files(git, tip) if tip else {}
    odd: list[str] = []
    checked: list[str] = []
    for dirpath, dirnames, filenames in os.walk(path):
        here = Path(dirpath)
        for name in list(dirnames):
            if (here / name).is_symlink() or (here == path and name == ".git"):
                odd.append((here / name).relative_to(path).as_posix())
                dirnames.remove(name)
        for name in filenames:
            full = here / name
            rel = full.relative_to(path).as_posix()
            if rel == ".git" and full.is_file() and not full.is_symlink():
                continue  # git's pointer to its admin dir
            if full.is_symlink() or not full.is_file() or rel not in expected:
                odd.append(rel)
            else:
                checked.append(rel)
    blobs = g.file_blobs(git, [path / rel for rel in checked])
    odd += [
        rel
        for rel, blob in zip(checked, blobs, strict=True)
        if blob != expected[rel] and not g.is_cut_short(git, path / rel, expected[rel])
    ]
    return Why(Reason.NOT_ITS_FILES, items=tuple(sorted(odd))) if odd else None


def symlink_in(path: Path, root: Path) -> bool:
    """True when any component of ``path`` below ``root`` is a symlink."""
    current = path
    while current != root and current != current.parent:
        if current.is_symlink():
            return True
        current = current.parent
    return False
