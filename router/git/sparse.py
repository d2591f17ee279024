"""Sparse checkouts: a worktree that holds only some directories of its commit (cone mode).

git marks every file outside the cone *skip-worktree* in the worktree's index and
writes none of them; ``git status`` counts them as present. Whatever reads a
sparse worktree through an index of its own (a snapshot's private index) must
say the same, or the files never written read as deleted.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from router.git.run import Runner

# git's own word in `ls-files -t` for an entry the checkout does not hold.
_SKIPPED = "S "


def set_sparse_cone(worktree: Runner, dirs: Sequence[str]) -> None:
    """``git sparse-checkout set --cone``: from now on only ``dirs`` (and the top level's files).

    The directories go on stdin, one a line: no name is ever read as an option.
    """
    worktree.run(
        "sparse-checkout", "set", "--cone", "--stdin", input="".join(f"{d}\n" for d in dirs)
    )


def check_out_sparse(worktree: Runner, *, workers: int) -> None:
    """Write the files of HEAD that the cone holds into a worktree added with ``--no-checkout``.

    Only into a directory that holds nothing but ``.git``: with no index yet,
    git writes over any file it finds at a path of the commit.
    """
    worktree.run("checkout", "--quiet", config=[f"checkout.workers={workers}"])


def sparse_cone(worktree: Runner) -> tuple[str, ...] | None:
    """The directories a cone-mode sparse worktree holds; None when it holds the whole tree.

    A sparse checkout in non-cone mode (patterns, not directories) is None too:
    its files are still never read as deleted (:func:`unmaterialised`), but no
    cone can be set again from it.
    """
    mode = worktree.run(
        "config", "--bool", "--get-regexp", r"^core\.sparsecheckout(cone)?$", check=False
    )
    settings = dict(line.split(" ", 1) for line in mode.stdout.splitlines() if " " in line)
    if settings.get("core.sparsecheckout") != "true":
        return None
    if settings.get("core.sparsecheckoutcone", "true") != "true":
        return None
    listed = worktree.run("sparse-checkout", "list", check=False)
    if not listed.ok:
        return None
    return tuple(line for line in listed.stdout.splitlines() if line)


def unmaterialised(worktree: Runner, top: Path) -> list[str]:
    """The index's skip-worktree entries that are not on disk: files the checkout never wrote.

    A file outside the cone that is on disk all the same (the user made it) is
    work like any other and is not in the list.
    """
    out = worktree.run("ls-files", "-z", "-t").stdout
    return [
        entry[len(_SKIPPED) :]
        for entry in out.split("\0")
        if entry.startswith(_SKIPPED) and not os.path.lexists(top / entry[len(_SKIPPED) :])
    ]


def mark_unmaterialised(worktree: Runner, paths: Sequence[str], index_file: Path | None) -> None:
    """Mark ``paths`` skip-worktree in ``index_file`` (the worktree's own index when None).

    ``add --all`` then leaves them as the index has them, never "deleted".
    """
    if not paths:
        return
    env = {"GIT_INDEX_FILE": str(index_file)} if index_file is not None else None
    worktree.run(
        "update-index", "--skip-worktree", "-z", "--stdin", input="\0".join(paths) + "\0", env=env
    )


def missing_dirs(git: Runner, commit: str, dirs: Sequence[str]) -> list[str]:
    """The ``dirs`` that are not directories in ``commit`` (a cone of them would hold nothing)."""
    out = git.run("ls-tree", "-d", "-z", "--name-only", commit, "--", *dirs).stdout
    found = set(out.split("\0"))
    return [d for d in dirs if d not in found]


def indexed_paths(worktree: Runner) -> set[str]:
    """Every path the worktree's index holds."""
    return {p for p in worktree.run("ls-files", "-z").stdout.split("\0") if p}
