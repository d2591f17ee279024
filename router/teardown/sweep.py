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

import os
from collections.abc import Callable, Iterable
from enum import StrEnum
from pathlib import Path

from router.errors import ErrorCode, ExitCode, error_json
from router.fsutil import (
    MOUNT_POINT,
    UNREADABLE,
    OpenTree,
    Tree,
    files_under,
    is_mounted_on,
    is_unreadable,
    open_tree,
    remove_listed,
    tree_under,
)
from router.git import Git, WorktreeEntry
from router.ioerror import describe_io
from router.reasons import Reason, Why
from router.records import field, record, replace
from router.teardown.snapshot import snapshot_plan_dir
from router.teardown.steps import Step, StepResult, done_with, failed, refused, skipped
from router.teardown.sweep_aside import aside_name, rename_noreplace, take_back_aside
from router.teardown.unshipped import residue_why
from router.teardown.wording import in_words
from router.topic import journal, state
from router.topic.workspace import WORKTREES_DIR, Repo

TYPE_CHECKING = False  # importing typing costs ~4 ms
if TYPE_CHECKING:
    from router.teardown.unshipped import RunArtifacts

# Relative folders whose contents are regenerable; each entry is a tuple of
# path components a file must lie strictly below.
RESIDUE_FOLDERS: tuple[tuple[str, ...], ...] = (("tmp",), (".omc",), ("docs", "plans"))
_RESIDUE_PREFIXES = tuple("/".join(f) + "/" for f in RESIDUE_FOLDERS)
# Residue directories removed at once. On a 2-core ext4 ``discard`` mount, 1,000
# leftovers: 16 took ~15% less time than 8, 4 nearly twice as long, for the same CPU.
REMOVING = 16
# Directories judged before the creation records are read again and their residue is
# given to the removals: the first removals start early, and the records are read ten
# times for 1,000 leftovers.
JUDGED_AT_ONCE = 100


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
    held_aside = take_back_aside(base, rename=not dry_run)
    subdirs = [d for d in _subdirs(base) if d not in held_aside]
    if not subdirs and not held_aside:
        return SweepResult(root)
    if entries is None:
        entries = (git or Git(root)).worktree_list() if subdirs else []
    live = {os.path.realpath(e.path) for e in entries} | {os.path.realpath(p) for p in leaving}
    kept: list[Kept] = [Kept(path, SweepVerdict.CLAIMED) for path in held_aside]
    judging = _Judging(
        base, live, runs, kept, lambda: common_dir or (git or Git(root)).common_dir()
    )
    if dry_run:
        residue = judging.residue(subdirs, lambda _: None)
        outcomes: list[Removed] = [_would_remove(p, runs) for p in residue]
    else:
        residue, outcomes = _remove_all(judging, subdirs, runs)
    kept.sort(key=lambda k: k.path)
    return _sweep_result(root, residue, outcomes, kept, judging.n_live, dry_run=dry_run)


def _remove_all(
    judging: _Judging, subdirs: list[Path], runs: Runs
) -> tuple[list[Path], list[Removed]]:
    """The residue among ``subdirs``, each removed as soon as it is cleared, and the outcomes.

    :data:`REMOVING` directories are removed at once: each waits on the disk far more
    than on the CPU (on a ``discard`` mount each freed block waits for its discard),
    and the judging of the next ones goes on meanwhile: the judging is Python, the
    removals mostly waits in the kernel, so they overlap rather than queue. (Handing
    Python's lock over more often than every 5 ms, for the removals' sake, measured
    no faster and cost more CPU.)
    """
    from router.parallel import fed

    with fed(lambda p: remove_residue(p, runs), limit=REMOVING) as removing:
        residue = judging.residue(subdirs, removing.put)
    return residue, removing.results


class _Judging:
    """The verdicts on a worktrees folder's directories, a chunk at a time.

    Each chunk is judged, then the creation records are read and each residue's
    ``.git`` looked at once more (:func:`_not_being_created`), before its residue is
    cleared: for every directory in that order, as when all were judged first.
    """

    __slots__ = ("_common_dir", "_kept", "_live", "_mounted", "_real", "_runs", "n_live")

    def __init__(
        self,
        base: Path,
        live: set[str],
        runs: Runs,
        kept: list[Kept],
        common_dir: Callable[[], Path],
    ) -> None:
        from router.mounts import mount_points_under

        # One realpath for the folder, not one per entry: an entry that is not a
        # symlink resolves to the folder's realpath plus its own name.
        self._real = os.path.realpath(base)
        self._mounted = mount_points_under(self._real)  # the table read once, not per directory
        self._live, self._runs, self._kept = live, runs, kept
        self._common_dir: Callable[[], Path] | Path = common_dir  # asked once, when needed
        self.n_live = 0  # live worktrees left alone

    def residue(self, subdirs: list[Path], clear: Callable[[Path], None]) -> list[Path]:
        """The residue among ``subdirs``, each given to ``clear`` once cleared; the rest
        joins ``kept``."""
        residue: list[Path] = []
        for at in range(0, len(subdirs), JUDGED_AT_ONCE):
            found = self._judge(subdirs[at : at + JUDGED_AT_ONCE])
            if found:
                if not isinstance(self._common_dir, Path):
                    self._common_dir = self._common_dir()
                found = _not_being_created(found, self._common_dir, self._kept)
            for path in found:
                clear(path)
            residue.extend(found)
        return residue

    def _judge(self, subdirs: list[Path]) -> list[Path]:
        """The residue among ``subdirs``, judged by what each holds; the rest joins ``kept``."""
        residue: list[Path] = []
        runs, kept, mounted = self._runs, self._kept, self._mounted
        for path in subdirs:
            real = os.path.join(self._real, path.name)
            judged = classify(path, self._live, real=real, runs=runs)
            if judged.reason is SweepVerdict.LIVE:
                self.n_live += 1
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
        return residue


def _mounted_in(real: str, mounted: list[str]) -> tuple[str, ...]:
    """``<folder>/ (a filesystem is mounted here)`` for each mount point at or below ``real``:
    what is mounted lives elsewhere too, so the leftover is never residue (the removal would
    stop at it anyway)."""
    return tuple(
        f"{os.path.relpath(point, real) if point != real else '.'}{MOUNT_POINT}"
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


def _verdict_on(path: Path, runs: Runs, tree: Tree | None = None) -> Kept:
    """A checkout, other files, a run's artifacts, residue; ``tree``: what ``path`` holds,
    listed already (as the removal lists it, each file stamped)."""
    if os.path.islink(path):  # swapped for a link since it was first judged: never followed
        return Kept(path, SweepVerdict.SYMLINK)
    if tree is None:
        tree = tree_under(path)
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
    anything (a clone, work), and deleting it would fail part-way anyway. Nor for a
    folder another filesystem is mounted on: what it holds lives elsewhere too.
    """
    # A listed path has no empty component: below ``tmp/`` is what starts with it.
    return rel.startswith(_RESIDUE_PREFIXES) and not is_unreadable(rel) and not is_mounted_on(rel)


def _subdirs(base: Path) -> list[Path]:
    try:
        with os.scandir(base) as it:
            names = [e.name for e in it if e.is_dir(follow_symlinks=True)]
    except OSError:
        return []
    return [base / name for name in sorted(names)]  # the order of the paths: one folder's


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
    aside = path.with_name(aside_name(path.name))
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Why(Reason.OS_ERROR, text=str(exc.strerror), path=str(exc.filename))
    state.crash_point("sweep-aside")
    with open_tree(aside) as listed:  # the folders listed stay open, to delete through
        return _remove_judged(path, aside, runs, listed)


def _remove_judged(path: Path, aside: Path, runs: Runs, listed: OpenTree) -> Removed:
    """:func:`remove_residue` once ``path`` is moved ``aside`` and listed again (``listed``)."""
    judged = _verdict_on(aside, runs, listed.tree)  # the rule classify applied, once more
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
            held=listed.held,
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
