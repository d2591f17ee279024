"""Files on disk, asked without git: what a directory holds.

Only the standard library: the sweep, the run's artifacts and the snapshots
all list a directory's files the same way.
"""

from __future__ import annotations

import os
from pathlib import Path


def files_under(path: Path) -> tuple[str, ...]:
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
