"""The residue sweep (DESIGN §9 step 7): leftovers under ``<root>/.claude/worktrees/``.

A process still anchored to a removed worktree's path (an editor's language
server, a hook writing per-session state) can ``mkdir -p`` it back seconds or
hours after the removal. Such a directory is deleted only when it is pure
regenerable residue: no ``.git`` entry, and every file in it under ``tmp/``,
``.omc/`` or ``docs/plans/``. Everything else is kept and reported with the
files it holds; a directory ``git worktree list`` knows is never touched.

A ``docs/plans/<id>/`` in such a directory is a run's plan dir (a worktree
half removed, or written into by the pipeline after, or during, its removal):
until that run has shipped (its ``pr.md``), its artifacts are work, as
everywhere (:mod:`router.teardown.unshipped`). The directory is kept
(``unshipped-run``, refused, naming the files), or under ``--force`` its
artifacts go into the run's plan-dir snapshot ref first (``restore`` brings
them back); never deleted on the residue rule alone.

An empty directory is also what a concurrent ``new`` or ``worktrees`` has just
claimed with ``mkdir`` and not yet handed to ``git worktree add``. The claim
is recorded before the ``mkdir`` and the record is finished only after the
add, so a directory whose record in the repo's common dir says "claimed, not
finished" is kept (``claimed``). The records are read after the directories
were judged, and each candidate's ``.git`` is looked at once more after that:
a creation that finished in between has its ``.git`` by then.

This keeps what the shell loop of seed 002 keeps, with six deliberate
differences, all on the careful side: a symlink, a fifo or any other
non-directory entry counts as a file (the loop's ``find -type f`` overlooks
them); an entry that is itself a symlink is kept, not unlinked; dot-named
directories are examined too (the loop's ``*`` glob skips them); and a
claimed directory (above) is kept; and a ``.git`` entry at any depth (a
clone someone made under ``tmp/``), or a bare repository's ``HEAD`` and
objects, keeps the directory as a checkout, as one at its top does; and an
unshipped run's plan dir (above) keeps it.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path

from router.errors import ErrorCode, ExitCode, error_json
from router.fsutil import UNREADABLE, Tree, files_under, is_unreadable, remove_listed, tree_under
from router.git import Git, WorktreeEntry
from router.ioerror import describe_io
from router.reasons import Reason, Why
from router.records import field, record, replace
from router.teardown.snapshot import snapshot_plan_dir
from router.teardown.steps import Step, StepResult, done_with, failed, refused, skipped
from router.teardown.unshipped import residue_why
from router.teardown.wording import in_words
from router.topic import journal, state
from router.topic.workspace import WORKTREES_DIR, Repo

TYPE_CHECKING = False  # importing typing costs ~4 ms
if TYPE_CHECKING:
    from router.teardown.unshipped import RunArtifacts
    from router.topic.holders import Holder

# Relative folders whose contents are regenerable; each entry is a tuple of
# path components a file must lie strictly below.
RESIDUE_FOLDERS: tuple[tuple[str, ...], ...] = (("tmp",), (".omc",), ("docs", "plans"))
_RESIDUE_PREFIXES = tuple("/".join(f) + "/" for f in RESIDUE_FOLDERS)
# Residue directories removed at once. On a 2-core ext4 ``discard`` mount, 1,000
# leftovers: 16 took ~15% less time than 8, 4 nearly twice as long, for the same CPU.
REMOVING = 16


class SweepVerdict(StrEnum):
    RESIDUE = "residue"  # may be deleted
    LIVE = "live"  # git worktree list knows it
    CHECKOUT = "checkout"  # holds a .git entry
    UNEXPECTED = "unexpected-files"  # holds files outside the residue folders
    SYMLINK = "symlink"  # the entry itself is a link
    CLAIMED = "claimed"  # a creation under way claimed it (its record says so)
    UNSHIPPED = "unshipped-run"  # residue but for a run's artifacts, and the run has not shipped


@record
class Runs:
    """What the sweep knows of the runs whose plan dirs residue may hold (DESIGN §3.2, §9)."""

    primary: Path | None = None  # a pr.md in the primary clone's plan dir shows the run shipped
    shipped: frozenset[str] = frozenset()  # ids the caller saw shipped before their worktree went
    force: bool = False  # snapshot an unshipped run's artifacts, then sweep them with the residue
    repo: Repo | None = None  # the primary clone's repository, which keeps those snapshots

    def at_stake(self, path: Path, files: tuple[str, ...]) -> list[RunArtifacts]:
        """The plan dirs in ``path`` holding artifacts of a run that has not shipped."""
        from router.teardown.unshipped import at_stake_in

        return at_stake_in(path, files, self.primary, self.shipped)


@record
class Kept:
    path: Path
    reason: SweepVerdict
    files: tuple[str, ...] = ()  # relative to ``path``
    runs: tuple[RunArtifacts, ...] = ()  # UNSHIPPED: the plan dirs that keep it
    # What the verdict was made on: removing residue deletes exactly this, nothing added since.
    tree: Tree | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, object]:
        return {"path": str(self.path), "reason": str(self.reason), "files": list(self.files)}


@record
class Snapshotted:
    """Residue swept once the artifacts of a run in it were written to a snapshot ref."""

    path: Path
    notes: tuple[Why, ...]  # per run: its artifacts and the ref that holds them (or would)
    refs: tuple[str, ...] = ()  # the plan-dir snapshot refs written (none in a dry run)

    def to_json(self) -> dict[str, object]:
        return {"path": str(self.path), "notes": [in_words(n) for n in self.notes]}


@record
class SweepResult:
    root: Path
    swept: tuple[Path, ...] = ()
    kept: tuple[Kept, ...] = ()
    live: int = 0  # live worktrees left alone
    failed: tuple[tuple[Path, Why], ...] = ()  # residue that could not be deleted, and why
    dry_run: bool = False  # ``swept`` then lists what would be swept
    warnings: list[str] = field(default_factory=list)
    snapshotted: tuple[Snapshotted, ...] = ()  # among ``swept``: the runs' artifacts kept in refs

    @property
    def unshipped(self) -> list[RunArtifacts]:
        """The plan dirs of runs that have not shipped that keep residue."""
        return [a for k in self.kept if k.reason is SweepVerdict.UNSHIPPED for a in k.runs]

    @property
    def exit_code(self) -> int:
        return ExitCode.REFUSED if self.failed or self.unshipped else ExitCode.OK

    @property
    def error(self) -> dict[str, str] | None:
        """What made ``ok`` false: residue that could not be removed, or a run's artifacts (§13)."""
        if self.failed:
            paths = "; ".join(f"{p}: {in_words(e)}" for p, e in self.failed)
            return error_json(ErrorCode.SWEEP_FAILED, f"could not remove residue: {paths}")
        if self.unshipped:
            return error_json(
                ErrorCode.UNSHIPPED_RUN, in_words(residue_why(self.unshipped, command="sweep"))
            )
        return None

    @property
    def no_residue(self) -> bool:
        return not (self.swept or self.kept or self.failed)

    def to_json(self) -> dict[str, object]:
        return {
            "root": str(self.root),
            "swept": [str(p) for p in self.swept],
            "kept": [k.to_json() for k in self.kept],
            "failed": [{"path": str(p), "error": in_words(e)} for p, e in self.failed],
            "live": self.live,
            "dry_run": self.dry_run,
            "snapshotted": [s.to_json() for s in self.snapshotted],
        }


def sweep_repo(cwd: Path, *, dry_run: bool = False, force: bool = False) -> SweepResult:
    """Sweep the repo whose checkout holds ``cwd`` (its primary root's worktrees folder).

    ``force``: the artifacts of a run that has not shipped go into a snapshot
    ref, then are swept with the residue (without it they keep the directory).
    """
    from router.topic.workspace import open_repo

    repo = open_repo(cwd)
    return sweep(
        repo.primary,
        None,
        git=repo.git,
        common_dir=repo.common_dir,
        dry_run=dry_run,
        runs=Runs(repo.primary, force=force, repo=repo),
    )


def sweep(
    root: Path,
    entries: Iterable[WorktreeEntry] | None,
    *,
    git: Git | None = None,
    common_dir: Path | None = None,
    dry_run: bool = False,
    leaving: Iterable[Path] = (),
    runs: Runs | None = None,
) -> SweepResult:
    """Delete residue under ``root/.claude/worktrees``; keep and name everything else.

    ``entries`` is git's worktree list; when None it is asked for only if
    there is a directory to judge (an empty folder needs no git at all).
    ``common_dir`` (where the creation records are) is asked of git when
    None and there is residue. ``leaving``: worktrees an earlier step of a
    dry run would remove (a removal a kill interrupted is finished there, not
    swept): not the sweep's to judge, as a live one is not. ``runs``: what
    decides whether a run's artifacts in residue may go (default: the ones
    of a run whose pr.md is found, in it or in ``root``'s plan dir).
    """
    runs = runs or Runs(root)
    base = root / WORKTREES_DIR
    if os.path.lexists(base) and os.path.realpath(base) != os.path.join(
        os.path.realpath(root), WORKTREES_DIR
    ):
        # A symlinked .claude/ or worktrees/ points somewhere else on the machine
        # (creation refuses one too): nothing behind it is ours to judge or delete.
        return SweepResult(root, kept=(Kept(base, SweepVerdict.SYMLINK),))
    held_aside = _take_back_aside(base, rename=not dry_run)
    subdirs = [d for d in _subdirs(base) if d not in held_aside]
    if not subdirs and not held_aside:
        return SweepResult(root)
    if entries is None:
        entries = (git or Git(root)).worktree_list() if subdirs else []
    live = {os.path.realpath(e.path) for e in entries} | {os.path.realpath(p) for p in leaving}
    kept: list[Kept] = [Kept(path, SweepVerdict.CLAIMED) for path in held_aside]
    residue, n_live = _judge_all(base, subdirs, live, runs, kept)
    if residue:
        residue = _not_being_created(residue, common_dir or (git or Git(root)).common_dir(), kept)
    outcomes: list[Removed] = (
        [_would_remove(p, runs) for p in residue] if dry_run else _remove_all(residue, runs)
    )
    return _sweep_result(root, residue, outcomes, kept, n_live, dry_run=dry_run)


def _remove_all(paths: list[Path], runs: Runs) -> list[Removed]:
    """Remove directories :data:`REMOVING` at once: each waits on the disk far more than
    on the CPU (on a ``discard`` mount each freed block waits for its discard).

    Every directory is judged before the first removal starts: judging beside the
    removals would hold Python's lock between their disk waits and slow them more
    than it saves on a machine with few cores.
    """
    from router.parallel import parallel_map

    return parallel_map(lambda p: remove_residue(p, runs), paths, limit=REMOVING)


def _judge_all(
    base: Path, subdirs: list[Path], live: set[str], runs: Runs, kept: list[Kept]
) -> tuple[list[Path], int]:
    """The residue among ``subdirs`` and how many are live worktrees; the rest joins ``kept``."""
    residue: list[Path] = []
    n_live = 0
    # One realpath for the folder, not one per entry: an entry that is not a
    # symlink resolves to the folder's realpath plus its own name.
    from router.mounts import mount_points_under

    base_real = os.path.realpath(base)
    mounted = mount_points_under(base_real)  # the table read once, not per directory
    for path in subdirs:
        real = os.path.join(base_real, path.name)
        judged = classify(path, live, real=real, runs=runs)
        if judged.reason is SweepVerdict.LIVE:
            n_live += 1
        elif judged.reason is SweepVerdict.RESIDUE or (
            judged.reason is SweepVerdict.UNSHIPPED and runs.force
        ):
            inside = _mounted_in(real, mounted)
            if inside:
                kept.append(Kept(path, SweepVerdict.UNEXPECTED, inside))
            else:
                residue.append(path)
        else:
            kept.append(judged)
    return residue, n_live


MOUNTED = "/ (a filesystem is mounted here)"  # a mount point's entry among a leftover's files


def _mounted_in(real: str, mounted: list[str]) -> tuple[str, ...]:
    """``<folder>/ (a filesystem is mounted here)`` for each mount point at or below ``real``:
    what is mounted lives elsewhere too, so the leftover is never residue (the removal would
    stop at it anyway)."""
    return tuple(
        f"{os.path.relpath(point, real) if point != real else '.'}{MOUNTED}"
        for point in mounted
        if point == real or point.startswith(real + "/")
    )


def _sweep_result(
    root: Path,
    residue: list[Path],
    outcomes: list[Removed],
    kept: list[Kept],
    n_live: int,
    *,
    dry_run: bool,
) -> SweepResult:
    """The sweep's result from each residue's removal (or, dry run, what it would be)."""
    pairs = list(zip(residue, outcomes, strict=True))
    swept = tuple(p for p, e in pairs if e is None or isinstance(e, Snapshotted))
    failed = tuple((p, e) for p, e in pairs if isinstance(e, Why))
    snapshotted = tuple(e for e in outcomes if isinstance(e, Snapshotted))
    late = [e for e in outcomes if isinstance(e, Kept)]
    if late:
        kept = sorted([*kept, *late], key=lambda k: k.path)
    result = SweepResult(root, swept, tuple(kept), n_live, failed, dry_run, snapshotted=snapshotted)
    result.warnings.extend(_unreadable_warnings(kept))
    return result


def _unreadable_warnings(kept: list[Kept]) -> list[str]:
    """Each leftover kept for a folder that could not be read, named: what it holds is unknown."""
    return [
        f"{k.path}: kept: {', '.join(folders)} could not be read, so what it holds is not known "
        "and it is never swept; make it readable, then sweep again"
        for k in kept
        if (folders := [_unreadable_words(f) for f in k.files if is_unreadable(f)])
    ]


def _unreadable_words(entry: str) -> str:
    """``tmp/x/ (Permission denied)`` for files_under's ``tmp/x/ (unreadable: Permission denied)``."""
    folder, _, why = entry.partition(UNREADABLE)
    return f"{folder}/ ({why}"


def _would_remove(path: Path, runs: Runs) -> Snapshotted | None:
    """A dry run's answer for residue: what its removal would snapshot first, if anything."""
    at_stake = runs.at_stake(path, files_under(path)) if runs.force else []
    if not at_stake:
        return None
    from router.teardown.snapshot import plan_dir_ref

    notes = tuple(
        Why(Reason.ARTIFACTS_KEPT, items=a.files, ref=plan_dir_ref(a.plan_dir.name), planned=True)
        for a in at_stake
    )
    return Snapshotted(path, notes)


def _not_being_created(residue: list[Path], common_dir: Path, kept: list[Kept]) -> list[Path]:
    """The residue no creation under way has claimed; the rest goes to ``kept``.

    Runs after the directories were judged, in this order (records, then
    ``.git``), so that a creation racing the sweep is seen at one stage or the
    other: its record is "claimed" from before its ``mkdir`` until after its
    ``git worktree add`` wrote ``.git``.
    """
    claimed = claimed_names(common_dir)
    free = []
    for path in residue:
        if path.name in claimed:
            kept.append(Kept(path, SweepVerdict.CLAIMED))
        elif os.path.lexists(path / ".git"):
            kept.append(Kept(path, SweepVerdict.CHECKOUT, files_under(path)))
        else:
            free.append(path)
    kept.sort(key=lambda k: k.path)
    return free


def claimed_names(common_dir: Path) -> set[str]:
    """Worktree folder names that a creation has claimed and not finished, per the repo's records.

    Also every topic whose lock another live process holds in this repo: a
    creation holds it from before its claim until after its record, and a
    topic id created again keeps the finished steps of its earlier record.
    """
    names = {
        owner.name
        for owner in state.lock_owners(common_dir)
        if owner.pid != os.getpid() and not owner.stale
    }
    for topic_id in state.list_records(common_dir):
        record = state.read_record_or_none(common_dir, topic_id)  # corrupt: doctor reports it
        if record is not None and journal.find(record, journal.Operation.CREATE):
            names.add(record.branch)
    return names


# What removing one residue directory came to: removed (None), removed after a
# snapshot, kept (judged again), or the error that stopped it.
Removed = Snapshotted | Kept | Why | None  # a Why: why it could not be removed


def classify(path: Path, live: set[str], *, real: str | None = None, runs: Runs) -> Kept:
    """What the sweep would do with ``path`` (``reason``), and the files that make it keep it.

    ``real`` is the path's realpath when the caller already knows it.
    """
    if path.is_symlink():
        return Kept(path, SweepVerdict.SYMLINK)
    if (real or os.path.realpath(path)) in live:
        return Kept(path, SweepVerdict.LIVE)
    return _verdict_on(path, runs)


def _verdict_on(path: Path, runs: Runs, *, stamped: bool = False) -> Kept:
    """A checkout, other files, a run's artifacts, residue (``stamped``: each file's stamp)."""
    if os.path.islink(path):  # swapped for a link since it was first judged: never followed
        return Kept(path, SweepVerdict.SYMLINK)
    tree = tree_under(path, stamped=stamped)
    files = tree.files
    if (
        any(_in_repository(f) for f in files)
        or any(_in_repository(f) for f in tree.folders)  # an empty .git folder too
        or _holds_bare_repository(files)
    ):
        return Kept(path, SweepVerdict.CHECKOUT, files)
    unexpected = tuple(f for f in files if not is_residue_file(f))
    if unexpected:
        return Kept(path, SweepVerdict.UNEXPECTED, unexpected)
    at_stake = runs.at_stake(path, files)
    if at_stake:
        named = tuple(f for a in at_stake for f in a.in_checkout)
        return Kept(path, SweepVerdict.UNSHIPPED, named, tuple(at_stake), tree=tree)
    return Kept(path, SweepVerdict.RESIDUE, tree=tree)


def _in_repository(rel: str) -> bool:
    """True for a ``.git`` entry at any depth: a clone made under ``tmp/`` holds commits of its own."""
    return ".git" in rel.split("/")


def _holds_bare_repository(files: tuple[str, ...]) -> bool:
    """True when a directory among ``files`` has a ``HEAD`` and objects: a bare repository.

    It has no ``.git`` entry, yet its commits (``git clone --bare`` under
    ``tmp/``) exist nowhere else; one with no object has none to lose.
    """
    heads = [f.removesuffix("HEAD") for f in files if f == "HEAD" or f.endswith("/HEAD")]
    return any(f.startswith(f"{d}objects/") for d in heads for f in files)


def is_residue_file(rel: str) -> bool:
    """True when the relative path lies strictly below one of the residue folders.

    Never for a folder that could not be read, wherever it lies: it may hold
    anything (a clone, work), and deleting it would fail part-way anyway.
    """
    # A listed path has no empty component: below ``tmp/`` is what starts with it.
    return rel.startswith(_RESIDUE_PREFIXES) and not is_unreadable(rel)


def _subdirs(base: Path) -> list[Path]:
    try:
        with os.scandir(base) as it:
            found = [Path(e.path) for e in it if e.is_dir(follow_symlinks=True)]
    except OSError:
        return []
    return sorted(found)


SWEEPING = ".team-router-sweeping-"  # a residue directory moved aside to be judged again
_NAME_MAX = 255  # bytes in a file name (Linux's NAME_MAX)
_DIGEST = 16  # hex digits of the whole name's digest that end an aside name cut short


def _aside_name(name: str) -> str:
    """``.team-router-sweeping-<pid>@<start time>-<name>``: the sweep that moved it, exactly.

    The pid alone named a process long after the sweep was killed and its pid
    reused, and the directory stayed "claimed" for good. With the process's
    start time (where /proc gives none: the pid alone, the older form) a
    reused pid is told from the sweep, as holders are (DESIGN §10).
    """
    # A name is at most 255 bytes, not characters: cut where the bytes run out (a
    # character cut in two reads back as the same bytes, the filesystem's way), and end in
    # a digest of the whole name: two leftovers alike up to the cut get two aside names.
    whole = os.fsencode(f"{SWEEPING}{_sweeper(os.getpid())}-{name}")
    if len(whole) <= _NAME_MAX:
        return os.fsdecode(whole)
    import hashlib

    digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:_DIGEST]
    return os.fsdecode(whole[: _NAME_MAX - _DIGEST - 1] + f"~{digest}".encode())


@functools.cache
def _sweeper(pid: int) -> str:
    """``<pid>@<start time>`` (or the pid alone) of this process: read once, not per directory."""
    from router.processes import process_start_time

    start = process_start_time(pid)
    return f"{pid}@{start}" if start else str(pid)


def _aside_owner(name: str) -> tuple[Holder, str] | None:
    """The sweep that moved ``name`` aside (as a holder) and the directory's own name.

    Both forms are read: ``<pid>@<start>-<name>`` and the older ``<pid>-<name>``
    (no start time: whether the pid lives is all it says). None: not an aside name.
    """
    from router.topic.holders import Holder

    owner, _, original = name[len(SWEEPING) :].partition("-")
    pid, at, start = owner.partition("@")
    if not pid.isdigit() or not original or (at and not start.isdigit()):
        return None
    return Holder(int(pid), start or None), original


def _take_back_aside(base: Path, *, rename: bool) -> list[Path]:
    """Give a directory a killed sweep left moved aside its name back; the ones a live sweep holds.

    A sweep killed between moving a directory aside and deleting it (or
    moving it back) leaves it as ``.team-router-sweeping-<pid>-<name>``: work
    a writer added meanwhile would be kept and listed under a name nobody
    looks for. So the directory gets its own name back when that name is
    free (and was not cut short), and is judged as what it was. One whose
    sweep is still running is that sweep's: returned, to be kept untouched.
    A dry run (``rename`` false) changes no name.
    """
    from router.topic.holders import is_live

    try:
        names = [n for n in os.listdir(base) if n.startswith(SWEEPING)]
    except OSError:
        return []
    held = []
    for name in names:
        found = _aside_owner(name)
        if found is None:
            continue  # not a name remove_residue makes: judged as any other directory
        sweeper, original = found
        if sweeper.pid != os.getpid() and is_live(sweeper):
            held.append(base / name)
        elif rename and len(os.fsencode(name)) < _NAME_MAX:  # else its own name was cut
            with contextlib.suppress(OSError):  # left under its aside name, judged there
                rename_noreplace(base / name, base / original)
    return held


def rename_noreplace(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst``, or raise ``FileExistsError`` when ``dst`` exists.

    ``os.rename`` silently replaces an empty directory: a creation that made
    its empty claim at ``dst`` an instant before would then find our directory
    there, its ``git worktree add`` would fail, and its rollback would delete
    what it took for its own claim. ``renameat2(RENAME_NOREPLACE)`` makes the
    check and the rename one step; where the kernel or filesystem lacks it,
    the check comes just before the rename.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is not None:
        at_fdcwd, noreplace = -100, 1
        if renameat2(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), noreplace) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL):
            raise OSError(err, os.strerror(err), str(src), None, str(dst))
    if os.path.lexists(dst):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(dst))
    os.rename(src, dst)


def remove_residue(path: Path, runs: Runs) -> Removed:
    """Move ``path`` aside, judge it again, then delete it: None, the error, or why it was kept.

    A writer may have added work since the directory was judged. Once it is
    moved aside, a writer going by the path makes a new directory (the next
    sweep judges that one), and what the moved one holds is judged again:
    anything but residue is moved back and kept. An unshipped run's artifacts
    in it go (``runs.force``) only once a snapshot ref holds them, as judged
    here: nothing written before the move can be missing from it. Then what
    was judged, and only that, is deleted (:func:`remove_listed`): a file
    written in or rewritten after the second look stays; the removal fails on it.
    """
    aside = path.with_name(_aside_name(path.name))
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Why(Reason.OS_ERROR, text=str(exc.strerror), path=str(exc.filename))
    state.crash_point("sweep-aside")
    judged = _verdict_on(aside, runs, stamped=True)  # once more, stamped before any snapshot
    snapped: Snapshotted | None = None
    if judged.reason is SweepVerdict.UNSHIPPED and runs.force:
        written = _snapshot_runs(path, judged.runs, runs)
        if isinstance(written, Why):
            return _put_back(aside, path) or Why(Reason.NOT_SNAPSHOTTED, parts=(written,))
        snapped = written
    elif judged.reason is not SweepVerdict.RESIDUE:
        return _put_back(aside, path) or replace(
            judged, path=path, runs=_renamed(judged.runs, aside, path)
        )
    try:
        remove_listed(
            aside,
            _deletion_order(judged.tree),
            judged.tree.folders if judged.tree else (),
            each=lambda: state.crash_point("sweep-delete"),
            stamps=judged.tree.stamps if judged.tree else None,
        )
    except OSError as exc:
        if not isinstance(exc, FileNotFoundError):  # gone already: nothing left to remove
            return Why(Reason.OS_ERROR, text=str(exc.strerror), path=str(exc.filename))
    return snapped


def _deletion_order(tree: Tree | None) -> list[str]:
    """The files judged, each plan dir's ``pr.md`` last: a sweep killed part way leaves
    a run's remaining artifacts still marked shipped, and the next sweep finishes."""
    from router.plandir.artifacts import PR

    return sorted(tree.files if tree else (), key=lambda f: f.endswith(f"/{PR}"))


def _put_back(aside: Path, path: Path) -> Why | None:
    """Give a directory moved aside its name back; why not when it cannot have it."""
    try:
        rename_noreplace(aside, path)
    except OSError as exc:
        return Why(Reason.NOT_PUT_BACK, path=str(aside), text=str(exc.strerror))
    return None


def _snapshot_runs(path: Path, found: tuple[RunArtifacts, ...], runs: Runs) -> Snapshotted | Why:
    """Each run's artifacts (in the directory moved aside from ``path``) in its plan-dir
    snapshot ref, in the primary clone's repository; else why one could not be written."""
    from router.errors import ToolFailed
    from router.teardown.snapshot import SnapshotFailed

    if runs.repo is None:
        return Why(Reason.NO_PRIMARY_CLONE)
    notes = []
    refs = []
    for run in found:
        try:
            snap = snapshot_plan_dir(runs.repo, run.plan_dir.name, checkout=run.checkout)
        except SnapshotFailed as exc:
            return exc.why
        except ToolFailed as exc:
            return Why(Reason.PLAN_DIR_NOT_SNAPSHOTTED, path=str(run.plan_dir), text=exc.first_line)
        except OSError as exc:
            failure = describe_io(exc)
            return Why(Reason.PLAN_DIR_NOT_SNAPSHOTTED, path=str(run.plan_dir), text=failure)
        notes.append(Why(Reason.ARTIFACTS_KEPT, items=snap.files, ref=snap.ref, commit=snap.commit))
        refs.append(snap.ref)
    return Snapshotted(path, tuple(notes), tuple(refs))


def _renamed(runs: tuple[RunArtifacts, ...], aside: Path, path: Path) -> tuple[RunArtifacts, ...]:
    """The runs judged in the directory moved aside, named where it is back."""
    return tuple(
        replace(a, checkout=path, plan_dir=path / a.plan_dir.relative_to(aside)) for a in runs
    )


def sweep_step(
    repo: Repo,
    *,
    dry_run: bool = False,
    leaving: tuple[Path, ...] = (),
    runs: Runs | None = None,
) -> tuple[StepResult, SweepResult]:
    """The sweep, or (``dry_run``) what it would sweep and keep, judged by the same rule.

    ``leaving``: the worktree a dry run's remove step would take first.
    ``runs``: what lets a run's artifacts in residue go (see :class:`Runs`);
    residue an unshipped run's artifacts keep refuses the step
    (``unshipped-run``), the rest of the sweep done all the same.
    """
    result = sweep(
        repo.primary,
        None,
        git=repo.git,
        common_dir=repo.common_dir,
        dry_run=dry_run,
        leaving=leaving,
        runs=runs or Runs(repo.primary),
    )
    where = repo.primary / WORKTREES_DIR
    if result.failed:
        stuck = tuple(str(p) for p, _ in result.failed)
        return failed(Step.SWEEP, Why(Reason.RESIDUE_STUCK, items=stuck)), result
    if result.no_residue:
        return skipped(Step.SWEEP, Why(Reason.NO_RESIDUE, path=str(where))), result
    notes = tuple(note for s in result.snapshotted for note in s.notes)
    went = Reason.SWEPT if result.swept or notes else Reason.RESIDUE_KEPT
    swept = Why(went, items=tuple(str(p) for p in result.swept), parts=notes, planned=dry_run)
    swept = replace(swept, others=tuple(str(k.path) for k in result.kept))
    if result.unshipped:
        why = residue_why(result.unshipped, command="teardown")
        if swept.items or swept.parts or swept.others:
            why = why.noting(swept)
        return refused(Step.SWEEP, ErrorCode.UNSHIPPED_RUN, why), result
    refs = (r for s in result.snapshotted for r in s.refs)
    return done_with(Step.SWEEP, swept, *refs), result
