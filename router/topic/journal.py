"""The one journal of resumable operations: what was left half-done, and the rerun's rule.

Every operation that a kill may stop half-way writes its intent before it acts
and clears it after. The topic record holds the marks (creation's steps, the
setup stage, teardown's steps, the pick, the removal), each written here
(:func:`write_steps`/:func:`end_create`, :func:`teardown_done`, :func:`begin_op`/:func:`end_op`,
:func:`new_run`) and nowhere else (the record's writer refuses any other); a restore's note is a
file in the restored worktree's git dir (so that `git worktree remove` by any
tool deletes it with the worktree), written in the repo's state as an intent
until the checkout has made that git dir. :func:`pending` and
:func:`restores_pending` are the one reader of both; :data:`RULES` says, once
per operation, whether its rerun finishes what was begun or undoes it.
"""

from __future__ import annotations

import contextlib
import json
import os
from enum import StrEnum
from pathlib import Path

from router import git as g
from router.records import record, replace
from router.topic.holders import STATE_DIR
from router.topic.record import Picking, Removal, TeardownMark, TopicRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any


class Operation(StrEnum):
    """Every operation a rerun resumes: a new one takes its rule in :data:`RULES`."""

    CREATE = "create"  # new / worktrees: claimed, not yet recorded done
    SETUP = "setup"  # .worktreesetup lines left to run (pending, or one failed)
    TEARDOWN = "teardown"  # teardown / pr-cleanup (and the host's removal): steps left
    INTEGRATE = "integrate"  # a cherry-pick of ours onto the default branch
    REMOVE = "remove"  # a removal of ours: a worktree, or a plan dir being moved
    RESTORE = "restore"  # a snapshot laid over a worktree, its index not yet staged
    RESTORE_ADD = "restore-add"  # a restore's `git worktree add` killed before its checkout


class Rerun(StrEnum):
    FINISH = "finish"  # the rerun carries on from what was done
    UNDO = "undo"  # the rerun takes back what was half-done, then starts that part again


RULES: dict[Operation, Rerun] = {
    # The next step after the last one recorded (a half-made add is made again).
    Operation.CREATE: Rerun.FINISH,
    # The lines that never succeeded run; one that succeeded never runs twice.
    Operation.SETUP: Rerun.FINISH,
    # The steps not done yet run; the done ones are skipped.
    Operation.TEARDOWN: Rerun.FINISH,
    # A half-applied pick is aborted (only what the pick brought goes), then judged again.
    Operation.INTEGRATE: Rerun.UNDO,
    # What is left goes while it is exactly a file the journal judged safe to delete.
    Operation.REMOVE: Rerun.FINISH,
    # The snapshot is laid over again and its index staged, unless work was done since.
    Operation.RESTORE: Rerun.FINISH,
    # The registration the add left (only git's .git file in it) goes; restore adds again.
    Operation.RESTORE_ADD: Rerun.UNDO,
}


@record
class Pending:
    """One operation left half-done, and what it names."""

    operation: Operation
    repo: str  # the repo's name in the topic ("" for a restore: it is the repo's own)
    branch: str
    path: str | None = None  # the worktree (or directory) it acts on
    step: str | None = None  # the last step it recorded done (or its stage)

    @property
    def rule(self) -> Rerun:
        return RULES[self.operation]


# -- the record's marks --------------------------------------------------------------


def pending(record: TopicRecord | None) -> tuple[Pending, ...]:
    """What ``record`` says was left half-done, in :class:`Operation` order."""
    if record is None:
        return ()
    r, mark = record, record.teardown
    where: dict[Operation, tuple[str | None, str | None] | None] = {
        Operation.CREATE: (r.worktree, r.steps[-1]) if r.creating else None,
        Operation.SETUP: (r.worktree, r.setup_state) if r.setup_state in _SETUP_LEFT else None,
        Operation.TEARDOWN: (r.worktree, (mark.done or (None,))[-1])
        if mark is not None and not mark.complete
        else None,
        Operation.INTEGRATE: (None, None) if r.integrating is not None else None,
        Operation.REMOVE: (r.removing.path, None) if r.removing is not None else None,
    }
    return tuple(Pending(op, r.repo, r.branch, *at) for op, at in where.items() if at)


_SETUP_LEFT = {"pending", "failed"}  # the setup stages with lines left to run


def find(
    record: TopicRecord | None, operation: Operation, path: str | os.PathLike[str] | None = None
) -> Pending | None:
    """The ``operation`` the record left half-done (at ``path`` only, when given)."""
    for found in pending(record):
        if found.operation is operation and (
            path is None
            or (found.path is not None and os.path.realpath(found.path) == os.path.realpath(path))
        ):
            return found
    return None


# The record field that holds the mark of each operation :func:`begin_op` writes.
# (TEARDOWN's mark grows step by step through :func:`teardown_done`; :func:`end_op` drops it.)
_MARKS = {
    Operation.INTEGRATE: "integrating",
    Operation.REMOVE: "removing",
    Operation.TEARDOWN: "teardown",
}


def write_steps(
    common_dir: Path,
    topic_id: str,
    record: TopicRecord,
    steps: Iterable[str] = (),
    *,
    claimed: str | os.PathLike[str] | None = None,
) -> TopicRecord:
    """Write creation's ``steps`` done and setup's stage (:data:`Operation.CREATE`,
    :data:`Operation.SETUP`) onto ``record``, the creating run's view of the record, which
    replaces the file (a corrupt one set aside, never lost); the record as written.

    ``claimed``: the worktree path the run has just claimed. A removal of that path a kill
    interrupted is dropped: the worktree made there now is another one, whose files are
    work again, never the remains of that removal.
    """
    if claimed is not None and find(record, Operation.REMOVE, claimed):
        record = replace(record, removing=None)
    for step in steps:
        record = record.with_step(step)
    written = record
    _write_record(common_dir, topic_id, lambda _: written, lambda: written, replace_corrupt=True)
    return written


def end_create(common_dir: Path, topic_id: str, *, branch_gone: bool) -> None:
    """Undo :data:`Operation.CREATE`'s mark after a rollback: the record names no worktree and
    no creation under way. ``branch_gone``: the rollback took the branch too, so the
    creation describes nothing: a record that held nothing else goes."""

    def change(r: TopicRecord) -> TopicRecord | None:
        if not branch_gone:
            return replace(r, worktree=None, base_commit=None, steps=("inspect",))
        if r.plan_dir is None and not r.repos and not r.temp_paths:
            return None  # only this creation's: nothing of it is left
        # The home record of a topic that exists already, its plan dir in the
        # main tree (a fallback): its request, plan dir, repos and temp paths still
        # matter; a rerun of the same `new` finds its id by the request, not a `-2`.
        return replace(r, worktree=None, base_commit=None, branch_created=False, steps=())

    _write_record(common_dir, topic_id, change, None)


def as_new_run(record: TopicRecord) -> TopicRecord:
    """``record`` once its topic has a worktree again (made or restored): a new run, which an
    earlier teardown's steps (:data:`Operation.TEARDOWN`'s mark) no longer describe."""
    return replace(record, teardown=None)


def new_run(
    common_dir: Path,
    topic_id: str,
    change: Callable[[TopicRecord], TopicRecord],
    *,
    new: Callable[[], TopicRecord],
) -> None:
    """Write ``change`` (the fields that bring the run back: a restore's) and, in the same
    write, drop an earlier teardown's mark (:func:`as_new_run`). ``new``: the record made
    where there is none; a corrupt one is set aside (never lost)."""
    _write_record(common_dir, topic_id, lambda r: as_new_run(change(r)), new, replace_corrupt=True)


def teardown_done(
    common_dir: Path,
    topic_id: str,
    done: Iterable[str],
    order: Sequence[str],
    *,
    complete: bool | None = None,
    left: Iterable[str] = (),
    made: tuple[str, str] | None = None,
    **also: object,
) -> None:
    """Add ``done`` to :data:`Operation.TEARDOWN`'s steps (in ``order``), ``left`` those left to
    the user, with the fields ``also`` in the same write. ``complete``: whether nothing is
    left (None: as the mark said). ``made``: as :func:`begin_op`'s."""

    def change(record: TopicRecord) -> TopicRecord:
        mark = record.teardown or TeardownMark()
        whole = mark.complete if complete is None else complete
        mark = mark.with_done(done, order, complete=whole, left=left)
        return replace(record, teardown=mark, **also)  # type: ignore[arg-type]

    _write_record(common_dir, topic_id, change, _made(topic_id, made))


def begin_teardown(common_dir: Path, topic_id: str, **also: object) -> None:
    """Before a teardown's (pr-cleanup's) first step, the fields ``also`` that say it is under
    way (pr-cleanup's mode); its mark is written as its steps finish (:func:`teardown_done`)."""
    _write_record(common_dir, topic_id, lambda r: replace(r, **also), None)  # type: ignore[arg-type]


def begin_op(
    common_dir: Path,
    topic_id: str,
    operation: Operation,
    mark: Picking | Removal,
    *,
    made: tuple[str, str] | None = None,
    **also: object,
) -> None:
    """Write ``operation``'s intent in the topic's record before it acts, with the fields
    ``also`` in the same write. ``made``: (repo name, branch) of a record made if there is
    none. A corrupt record is reported elsewhere and never overwritten."""
    _write_mark(common_dir, topic_id, {**also, _MARKS[operation]: mark}, made)


def end_op(common_dir: Path, topic_id: str, operation: Operation) -> None:
    """Clear ``operation``'s mark once it is done (or undone): nothing is left half-way."""
    _write_mark(common_dir, topic_id, {_MARKS[operation]: None}, None)


def _write_mark(common_dir: Path, topic_id: str, change: Any, made: tuple[str, str] | None) -> None:
    _write_record(common_dir, topic_id, lambda r: replace(r, **change), _made(topic_id, made))


def _made(topic_id: str, made: tuple[str, str] | None) -> Callable[[], TopicRecord] | None:
    """The record made where there is none: of repo ``made[0]``, branch ``made[1]``."""
    if made is None:
        return None
    return lambda: TopicRecord(id=topic_id, repo=made[0], branch=made[1])


def _write_record(
    common_dir: Path,
    topic_id: str,
    change: Callable[[TopicRecord], TopicRecord | None],
    new: Callable[[], TopicRecord] | None,
    *,
    replace_corrupt: bool = False,
) -> None:
    """The one write of every mark: the record's, under its lock. A corrupt record is reported
    elsewhere and never overwritten (unless ``replace_corrupt``: set aside, never lost)."""
    from router.topic.state import update_record

    update_record(
        common_dir, topic_id, change, new=new, replace_corrupt=replace_corrupt, journal=True
    )


# -- a restore's note, in the worktree's git dir ---------------------------------------

# Written into the restored worktree's git dir before its files are laid over,
# dropped once the restore is recorded: without it, a worktree whose files are
# back but whose index is not looks like a finished restore (or, to a topic's
# rerun, like someone else's checkout of the branch). In the git dir, not the
# record: `git worktree remove`, by any tool, deletes it with the worktree.
RESTORING_FILE = "team-router-restoring"
# Before the checkout there is no worktree git dir to hold the note: the intent is
# written in the repo's state first (one file per worktree path), moved into the
# worktree's git dir right after the checkout.
INTENTS_DIR = "restoring"


def note_file(common_dir: Path, path: Path, *, checked_out: bool) -> Path:
    """Where the restore under way at ``path`` is noted: the worktree's git dir once
    ``checked_out``, else the intent's file in the repo's state (keyed by the path)."""
    if checked_out:
        admin = g.registration_of(str(common_dir), str(path))
        return (
            Path(admin if admin is not None else g.absolute_git_dir(g.Git(path))) / RESTORING_FILE
        )
    import hashlib

    key = hashlib.sha256(os.fsencode(os.path.realpath(path))).hexdigest()[:16]
    return Path(common_dir) / STATE_DIR / INTENTS_DIR / f"{key}.json"


def begin_restore(
    common_dir: Path, path: Path, note: dict[str, object], *, checked_out: bool
) -> None:
    """Note the restore under way at ``path`` before it acts: its intent before the
    checkout, then (``checked_out``) the note in the worktree's git dir, and the intent goes."""
    from router.topic.state import write_atomic

    write_atomic(note_file(common_dir, path, checked_out=checked_out), json.dumps(note) + "\n")
    if checked_out:
        end_restore(common_dir, path, checked_out=False)


def end_restore(common_dir: Path, path: Path, *, checked_out: bool) -> None:
    """Drop the note (``checked_out``) or the intent of the restore at ``path``."""
    with contextlib.suppress(FileNotFoundError):
        note_file(common_dir, path, checked_out=checked_out).unlink()


def read_note(file: Path) -> dict[str, object] | None:
    """A restore's note or intent as written; None for anything else."""
    try:
        note = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return note if isinstance(note, dict) else None


def restores_pending(common_dir: Path) -> tuple[Pending, ...]:
    """The restores a kill left half-done in this repo, named by the branch restored:
    each worktree whose git dir holds the note (finished by the rerun), then each
    registration a killed ``git worktree add`` left unfinished (undone by it)."""
    found = []
    for admin, dotgit in g.registrations(str(common_dir)):
        note = read_note(Path(admin) / RESTORING_FILE)
        of = note.get("of") if note is not None else None
        if isinstance(of, str) and dotgit:
            found.append(Pending(Operation.RESTORE, "", of, os.path.dirname(dotgit)))
    return (*found, *_restore_adds(common_dir))


def _restore_adds(common_dir: Path) -> list[Pending]:
    """A restore's ``git worktree add`` killed before its checkout; ``step``: the branch added.

    Ours only: the intent names the path, git's registration of it is locked
    with team-router's reason, and git never finished it: torn (its HEAD is
    git's placeholder, say) or with no index, and no note written yet.
    """
    from router.topic import worktreelock

    try:
        files = sorted((Path(common_dir) / STATE_DIR / INTENTS_DIR).glob("*.json"))
    except OSError:
        return []
    found = []
    for file in files:
        note = read_note(file)
        fields = [note.get(k) for k in ("path", "of", "branch", "snapshot")] if note else []
        if len(fields) != 4 or not all(isinstance(f, str) and f for f in fields):
            continue
        path, of, target = (str(f) for f in fields[:3])
        admin = g.registration_of(str(common_dir), path)
        if admin is None or not worktreelock.own_reason(g.registration_file(admin, "locked")):
            continue
        unfinished = bool(g.torn_registration(admin)) or not os.path.exists(
            os.path.join(admin, "index")
        )
        if unfinished and not os.path.exists(os.path.join(admin, RESTORING_FILE)):
            found.append(Pending(Operation.RESTORE_ADD, "", of, path, target))
    return found
