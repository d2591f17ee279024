"""``.worktreeinclude``: copy gitignored files a fresh worktree needs (``.env``, ``node_modules/``).

Which files: those matching a pattern that git ignores. How: copy-on-write
where the filesystem can (:mod:`router.filecopy`), never by hard link.
"""

from __future__ import annotations

import time
from pathlib import Path

from router.git import Git
from router.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from pathspec import GitIgnoreSpec

INCLUDE_FILE = ".worktreeinclude"
CRASH_MID_COPY = "copy-rest"  # the crash seam's step: after some files, before the others


@record
class Copied:
    """One repo's ``.worktreeinclude`` copy, as the create report shows it."""

    # Every copy in the worktree, made now or kept from an earlier run: a folder copied whole
    # is one entry (``node_modules/``), so the record stays small whatever the folder holds.
    paths: tuple[str, ...]
    files: int  # copied now (symlinks included)
    bytes: int
    kept: int  # already there from an earlier copy (a rerun after a kill)
    method: str | None  # reflink, copy_file_range or bytes; None when no data was copied
    seconds: float
    unreadable: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "files": self.files,
            "bytes": self.bytes,
            "kept": self.kept,
            "method": self.method,
            "seconds": round(self.seconds, 3),
        }

    def line(self) -> str:
        """``copied 20000 files (195.3 MiB) by reflink in 0.84 s`` (and what was kept)."""
        way = f" by {self.method}" if self.method else ""
        files = f"{self.files} file{'' if self.files == 1 else 's'}"
        text = f"copied {files} ({self.bytes / 1048576:.1f} MiB){way} in {self.seconds:.2f} s"
        if self.kept:
            text += f", {self.kept} kept from an earlier copy"
        return text

    def warning(self) -> str | None:
        if not self.unreadable:
            return None
        shown = ", ".join(self.unreadable[:3]) + (", ..." if len(self.unreadable) > 3 else "")
        return (
            f".worktreeinclude: {len(self.unreadable)} file(s) could not be read and were not "
            f"copied: {shown}; make them readable, then run this again"
        )


def copy_included(primary: Path, dest: Path, *, label: str = "") -> Copied | None:
    """Copy the included files into ``dest`` (never over a file there); None without the file."""
    start = time.perf_counter()
    spec = _include_spec(primary)
    if spec is None:
        return None
    rels, folders = _matching(primary, spec)
    from router import filecopy  # lazy: only a repo with a .worktreeinclude copies anything

    done = filecopy.copy_tree(str(primary), str(dest), rels, progress=_progress(label, len(rels)))
    return Copied(
        paths=_compact(done.placed, folders),
        files=done.files,
        bytes=done.bytes,
        kept=done.kept,
        method=done.method,
        seconds=time.perf_counter() - start,
        unreadable=done.unreadable,
    )


def _include_spec(primary: Path) -> GitIgnoreSpec | None:
    try:
        patterns = (primary / INCLUDE_FILE).read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
        return None
    import pathspec  # lazy: only repos that declare a .worktreeinclude pay for it

    return pathspec.GitIgnoreSpec.from_lines(patterns)


def _matching(primary: Path, spec: GitIgnoreSpec) -> tuple[list[str], list[str]]:
    """Files of the primary clone that match ``.worktreeinclude`` *and* that git ignores,
    and the folders among them taken whole."""
    from router.filecopy import walk_files

    # Only ignored files are candidates: a tracked file is already in the
    # checkout, and an untracked-but-not-ignored one is the user's work in progress.
    # Every file in a folder git calls ignored is ignored: the folder is walked
    # once, and taken whole when the folder itself matches (no "!" pattern can
    # take a file back out of it then).
    whole = not any(p.include is False for p in spec.patterns)
    found: set[str] = set()
    folders = []
    for entry in Git(primary).ignored_untracked():
        if not entry.endswith("/"):
            if spec.match_file(entry):
                found.add(entry)
        elif whole and spec.match_file(entry):
            folders.append(entry)
            found.update(walk_files(str(primary), entry))
        else:
            found.update(p for p in walk_files(str(primary), entry) if spec.match_file(p))
    return sorted(found), folders


def _compact(placed: tuple[str, ...], folders: list[str]) -> tuple[str, ...]:
    """``placed`` with the files of a folder taken whole named by the folder alone."""
    held = {f for f in folders if any(p.startswith(f) for p in placed)}
    alone = [p for p in placed if not any(p.startswith(f) for f in held)]
    return tuple(sorted([*held, *alone]))


def _progress(label: str, total: int) -> Callable[[int, int], None]:
    from router.progress import Ticker
    from router.topic import state

    ticker = Ticker(f"{label + ': ' if label else ''}copying .worktreeinclude files", total)

    def tick(done: int, size: int) -> None:
        if 0 < done < total and done * 2 >= total:
            state.crash_point(CRASH_MID_COPY)
        ticker.tick(done, size)

    return tick
