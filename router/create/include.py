"""``.worktreeinclude``: copy gitignored files a fresh worktree needs (``.env`` and kin)."""

from __future__ import annotations

import os
from pathlib import Path

from router.git import Git

INCLUDE_FILE = ".worktreeinclude"


def included_files(primary: Path) -> list[str]:
    """Files of the primary clone that match ``.worktreeinclude`` *and* that git ignores."""
    spec_file = primary / INCLUDE_FILE
    try:
        patterns = spec_file.read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
        return []
    import pathspec  # lazy: only repos that declare a .worktreeinclude pay for it

    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    # Only ignored files are candidates: a tracked file is already in the
    # checkout, and an untracked-but-not-ignored one is the user's work in progress.
    return sorted(p for p in Git(primary).ignored_untracked_files() if spec.match_file(p))


def copy_included(primary: Path, dest: Path) -> list[str]:
    """Copy the included files into ``dest``; returns what was copied (never overwrites)."""
    copied: list[str] = []
    for rel in included_files(primary):
        src = primary / rel
        target = dest / rel
        if os.path.lexists(target) or not os.path.lexists(src):
            continue
        # A tracked symlinked directory in the checkout could point outside it:
        # never create or write anything through one. A tracked file where the
        # primary has a directory wins, as a file at the target itself does.
        if _unwritable_parent(dest, Path(rel).parent):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), target)
        elif src.is_file():
            import shutil  # lazy: only a repo with a .worktreeinclude copies anything

            shutil.copy2(src, target)
        else:
            continue
        copied.append(rel)
    return copied


def _unwritable_parent(root: Path, rel_dir: Path) -> bool:
    """True when some existing component of ``root/rel_dir`` is a symlink or not a directory."""
    current = root
    for part in rel_dir.parts:
        current = current / part
        if current.is_symlink():
            return True
        if not current.exists():
            return False
        if not current.is_dir():
            return True
    return False
