"""The residue sweep (DESIGN §9 step 7): leftovers under ``<root>/.claude/worktrees/``.

A process still anchored to a removed worktree's path (an editor's language
server, a hook writing per-session state) can ``mkdir -p`` it back seconds or
hours after the removal. Such a directory is deleted only when it is pure
regenerable residue: no ``.git`` entry, and every file in it under ``tmp/``,
``.omc/`` or ``docs/plans/``. Everything else is kept and reported with the
files it holds; a directory ``git worktree list`` knows is never touched.

This keeps what the shell loop of seed 002 keeps, with three deliberate
differences, all on the careful side: a symlink, a fifo or any other
non-directory entry counts as a file (the loop's ``find -type f`` overlooks
them); an entry that is itself a symlink is kept, not unlinked; and
dot-named directories are examined too (the loop's ``*`` glob skips them).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from router.git import Git, WorktreeEntry
from router.workspace import WORKTREES_DIR

REMOVE_THREADS = 4
# Relative folders whose contents are regenerable; each entry is a tuple of
# path components a file must lie strictly below.
RESIDUE_FOLDERS: tuple[tuple[str, ...], ...] = (("tmp",), (".omc",), ("docs", "plans"))


class Verdict(StrEnum):
    RESIDUE = "residue"  # may be deleted
    LIVE = "live"  # git worktree list knows it
    CHECKOUT = "checkout"  # holds a .git entry
    UNEXPECTED = "unexpected-files"  # holds files outside the residue folders
    SYMLINK = "symlink"  # the entry itself is a link


@dataclass(frozen=True, slots=True)
class Kept:
    path: Path
    reason: Verdict
    files: tuple[str, ...] = ()  # relative to ``path``

    def to_json(self) -> dict[str, object]:
        return {"path": str(self.path), "reason": str(self.reason), "files": list(self.files)}


@dataclass(frozen=True, slots=True)
class SweepResult:
    root: Path
    swept: tuple[Path, ...] = ()
    kept: tuple[Kept, ...] = ()
    live: int = 0  # live worktrees left alone
    failed: tuple[tuple[Path, str], ...] = ()  # residue that could not be deleted
    warnings: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    @property
    def no_residue(self) -> bool:
        return not (self.swept or self.kept or self.failed)

    def to_json(self) -> dict[str, object]:
        return {
            "root": str(self.root),
            "swept": [str(p) for p in self.swept],
            "kept": [k.to_json() for k in self.kept],
            "failed": [{"path": str(p), "error": e} for p, e in self.failed],
            "live": self.live,
        }


def sweep_repo(cwd: Path, *, dry_run: bool = False) -> SweepResult:
    """Sweep the repo whose checkout holds ``cwd`` (its primary root's worktrees folder)."""
    from router.workspace import open_repo

    repo = open_repo(cwd)
    return sweep(repo.primary, None, git=repo.git, dry_run=dry_run)


def sweep(
    root: Path,
    entries: Iterable[WorktreeEntry] | None,
    *,
    git: Git | None = None,
    dry_run: bool = False,
) -> SweepResult:
    """Delete residue under ``root/.claude/worktrees``; keep and name everything else.

    ``entries`` is git's worktree list; when None it is asked for only if
    there is a directory to judge (an empty folder needs no git at all).
    """
    base = root / WORKTREES_DIR
    subdirs = _subdirs(base)
    if not subdirs:
        return SweepResult(root)
    if entries is None:
        entries = (git or Git(root)).worktree_list()
    live = {os.path.realpath(e.path) for e in entries}
    residue: list[Path] = []
    kept: list[Kept] = []
    n_live = 0
    # One realpath for the folder, not one per entry: an entry that is not a
    # symlink resolves to the folder's realpath plus its own name.
    base_real = os.path.realpath(base)
    for path in subdirs:
        verdict, files = classify(path, live, real=os.path.join(base_real, path.name))
        if verdict is Verdict.LIVE:
            n_live += 1
        elif verdict is Verdict.RESIDUE:
            residue.append(path)
        else:
            kept.append(Kept(path, verdict, files))
    errors = [None] * len(residue) if dry_run else _remove_all(residue)
    swept = tuple(p for p, e in zip(residue, errors, strict=True) if e is None)
    failed = tuple((p, e) for p, e in zip(residue, errors, strict=True) if e is not None)
    return SweepResult(root, swept, tuple(kept), n_live, failed)


def _remove_all(paths: list[Path]) -> list[str | None]:
    """Remove directories in parallel: deleting is bound by the disk's latency, not the CPU
    (on a filesystem mounted with ``discard`` each rmdir waits for the device)."""
    if len(paths) < 4:
        return [_remove(p) for p in paths]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=REMOVE_THREADS) as pool:
        return list(pool.map(_remove, paths))


def classify(path: Path, live: set[str], *, real: str | None = None) -> tuple[Verdict, tuple[str, ...]]:
    """What the sweep would do with ``path``, and the files that make it keep it.

    ``real`` is the path's realpath when the caller already knows it.
    """
    if path.is_symlink():
        return Verdict.SYMLINK, ()
    if (real or os.path.realpath(path)) in live:
        return Verdict.LIVE, ()
    files = _files_under(path)
    if os.path.lexists(path / ".git"):
        return Verdict.CHECKOUT, files
    unexpected = tuple(f for f in files if not is_residue_file(f))
    if unexpected:
        return Verdict.UNEXPECTED, unexpected
    return Verdict.RESIDUE, ()


def is_residue_file(rel: str) -> bool:
    """True when the relative path lies strictly below one of the residue folders."""
    parts = tuple(rel.split("/"))
    return any(len(parts) > len(f) and parts[: len(f)] == f for f in RESIDUE_FOLDERS)


def live_paths(git: Git) -> set[str]:
    return {os.path.realpath(e.path) for e in git.worktree_list()}


def _subdirs(base: Path) -> list[Path]:
    try:
        with os.scandir(base) as it:
            found = [Path(e.path) for e in it if e.is_dir(follow_symlinks=True)]
    except OSError:
        return []
    return sorted(found)


def _files_under(path: Path) -> tuple[str, ...]:
    """Every non-directory entry below ``path`` (relative, sorted); links are not followed."""
    found: list[str] = []
    stack = [path]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
                    else:
                        found.append(os.path.relpath(entry.path, path))
        except OSError as exc:
            # An unreadable folder may hold anything: report it as a file so the
            # directory is kept rather than deleted on a guess.
            found.append(f"{os.path.relpath(current, path)}/ (unreadable: {exc.strerror})")
    return tuple(sorted(found))


def _remove(path: Path) -> str | None:
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{exc.strerror}: {exc.filename}"
    return None
