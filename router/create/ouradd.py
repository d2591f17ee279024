"""Whether what a killed ``git worktree add`` left at a topic's path is ours to undo.

One rule, asked by the creation pipeline's rerun and by ``doctor --repair``
alike: the topic's record shows this tool's creation still under way (and its
branch never moved since it was cut), git's registration carries our lock
reason (or git's own "initializing", or none left) and names our path, and the
directory holds nothing but git's own checkout of the branch, which no process
has open. Anything else is someone's work, kept and named.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from router import git as g
from router.topic import journal, state, worktreelock
from router.topic.workspace import Repo


@dataclass(frozen=True, slots=True)
class OurAdd:
    """A worktree this tool's ``git worktree add`` of topic ``topic_id`` was making at ``path``."""

    repo: Repo
    path: Path
    topic_id: str
    branch: str
    record: state.TopicRecord | None  # the topic's record in ``repo`` (None: none, or torn down)
    tip: str | None  # the branch's tip now (None: no such branch)


def not_ours(add: OurAdd) -> str | None:
    """Why the record does not prove this tool's unfinished creation made it, or None."""
    record = add.record
    if (
        record is None
        or record.branch != add.branch
        or not journal.find(record, journal.Operation.CREATE)
    ):
        return "this topic's record does not show a creation by team-router still under way"
    if record.branch_created and record.base_commit and add.tip not in {None, record.base_commit}:
        return f"branch {add.branch!r} has commits since it was created"
    return None


def not_ours_torn(add: OurAdd, admin: Path) -> str | None:
    """Why a torn registration is not proven to be this run's creation, or None."""
    # git writes our lock reason where it would write "initializing" (--lock --reason);
    # a kill part-way through git's own clean-up may have taken the file.
    adding = {"", g.ADD_IN_PROGRESS, worktreelock.reason_for(add.topic_id)}
    if g.registration_file(admin, "locked") not in adding:
        return "it is locked, not by team-router"
    named = g.registration_file(admin, "gitdir")
    if named and os.path.realpath(named) != os.path.realpath(add.path / ".git"):
        return f"git's registration names another worktree ({named})"
    return not_ours(add)


def torn_problem(add: OurAdd, admin: Path) -> str | None:
    """Why the torn registration ``admin`` and what is at the path are not ours to remove, or None."""
    problem = not_ours_torn(add, admin)
    if problem is None and os.path.lexists(add.path):
        problem = (
            "it is reached through a symlink"
            if symlink_in(add.path, add.repo.primary)
            else work_in_half_made(add) or in_use(add)
        )
    return problem


def undo_torn(add: OurAdd, admin: Path) -> bool:
    """Remove the checkout, then the torn registration, then a branch the add cut that never
    moved; True when that branch went. Only after :func:`torn_problem` found nothing."""
    import shutil  # lazy, like every undo's: a run that creates pays ~3 ms for it

    # The checkout first: killed in between, the registration left is found
    # again by its name, and nothing at our path points at a removed one.
    if os.path.lexists(add.path):
        shutil.rmtree(add.path)
    shutil.rmtree(admin)
    record = add.record
    if record is not None and record.branch_created and add.tip == record.base_commit:
        # Cut by the killed run and never moved: made again at a fresh base.
        add.repo.git.branch_delete(add.branch)
        return True
    return False


def registration(add: OurAdd) -> Path:
    """The worktree's admin dir in the common git dir, as its ``.git`` file names it."""
    pointer = g.gitdir_pointer(add.path)
    if pointer:
        return Path(os.path.realpath(pointer))
    return add.repo.common_dir / "worktrees" / add.path.name


def in_use(add: OurAdd) -> str | None:
    """Why a process may still be making the half-made worktree (a git the kill missed), or None.

    A kill of team-router alone leaves its `git worktree add` running: its
    checkout holds the registration's index.lock open and writes files
    under our path. Where no process list can be read, a lock file left
    in the registration is taken to be in use.
    """
    admin = registration(add)
    locks = [lock for lock in g.left_locks(add.repo.common_dir) if lock.parent == admin]
    # lazy: only a half-made worktree needs a process list
    from router.processes import processes_using

    users = processes_using(
        [os.path.realpath(add.path), *(os.path.realpath(lock) for lock in locks)]
    )
    if users:
        pids = sorted({pid for found in users.values() for pid in found})
        return f"process(es) {', '.join(map(str, pids))} still use it"
    if users is None and locks:
        return f"git's lock file {locks[0]} is in it and no process list shows it is stale"
    return None


def work_in_half_made(add: OurAdd) -> str | None:
    """Which files in it are not git's own checkout of the tip (anything else is work)."""
    git, path, tip = add.repo.git, add.path, add.tip
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
    if not odd:
        return None
    shown = ", ".join(sorted(odd)[:5]) + (", ..." if len(odd) > 5 else "")
    return f"it holds files that are not its branch's ({shown})"


def symlink_in(path: Path, root: Path) -> bool:
    """True when any component of ``path`` below ``root`` is a symlink."""
    current = path
    while current != root and current != current.parent:
        if current.is_symlink():
            return True
        current = current.parent
    return False
