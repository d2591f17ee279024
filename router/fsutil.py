"""Files on disk, asked without git: what a directory holds.

Only the standard library: the sweep, the run's artifacts and the snapshots
all list a directory's files the same way.
"""

from __future__ import annotations

import os
from pathlib import Path


def files_under(path: Path, *, raise_unreadable: bool = False) -> tuple[str, ...]:
    """Every non-directory entry below ``path`` (relative, sorted); links are not followed.

    A folder that cannot be read may hold anything, so it never reads as empty:
    it is listed as an entry of its own (``<folder>/ (unreadable: <why>)``), which
    keeps whatever asks "is anything here?" from deleting it on a guess; with
    ``raise_unreadable`` the OSError is raised instead, for a caller that must
    say the folder could not be inspected rather than count it as a file.
    """
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
            if raise_unreadable:
                raise
            found.append(f"{os.path.relpath(current, path)}{UNREADABLE}{exc.strerror})")
    return tuple(sorted(found))


UNREADABLE = "/ (unreadable: "  # an unreadable folder's entry: ``<folder>/ (unreadable: <why>)``


def is_unreadable(entry: str) -> bool:
    """True for the entry :func:`files_under` lists for a folder it could not read."""
    return UNREADABLE in entry and entry.endswith(")")
