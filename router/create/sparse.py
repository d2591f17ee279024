"""The ``sparse`` stage of creation (DESIGN §7): a worktree that checks out some directories only.

``repos.md``'s ``sparse: <dir>[, <dir>...]`` (any repo) or ``new --sparse <dir>``
(the home repo) names them. The worktree is added with ``--no-checkout``, its
cone set (``git sparse-checkout set --cone``), then checked out: only those
trees, and the files at the top level, are written. The cone is kept in the
topic record, and a snapshot names it, so ``restore`` makes the worktree
sparse again with the same cone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from router import git as g
from router.errors import ErrorCode, RouterError
from router.git import Git
from router.names import BadSparseDir, sparse_dirs


def check_at(git: Git, commit: str, dirs: Sequence[str], name: str) -> None:
    """Refuse (exit 2) when a directory of the cone is not a directory of ``commit``.

    A cone naming a directory the base does not have would check out only the
    top level's files: most likely a typo, never what was asked for.
    """
    missing = g.missing_dirs(git, commit, dirs)
    if missing:
        shown = ", ".join(missing)
        raise RouterError(
            ErrorCode.INVALID_VALUE,
            f"{name}: sparse names {shown}, which the base ({commit[:12]}) has no directory "
            f"of; fix the name (the directories at the top are listed by "
            f"`git ls-tree -d --name-only {commit[:12]}`), or drop it from sparse",
        )


def check_out(worktree: Git, dirs: Sequence[str], *, workers: int) -> None:
    """Set the cone in a worktree added with ``--no-checkout``, then write its files."""
    g.set_sparse_cone(worktree, dirs)
    g.check_out_sparse(worktree, workers=workers)


def kept_warning(
    name: str, worktree: Path, asked: Sequence[str], have: Sequence[str] | None
) -> str | None:
    """The warning for a cone asked of a worktree that exists already (None: it has that one).

    A cone is set when the worktree is made; changing an existing one is the
    user's call (narrowing it deletes files from the checkout), so it is named,
    never done.
    """
    if have is not None and list(have) == list(asked):
        return None
    held = f"sparse with {', '.join(have)}" if have else "the whole tree"
    return (
        f"{name}: sparse {', '.join(asked)} was asked, but its worktree {worktree} exists "
        f"already and holds {held}; a cone is set when the worktree is made. To change it, "
        f"run `git -C {worktree} sparse-checkout set --cone {' '.join(asked)}`"
    )


# The line of a snapshot's message naming the cone of the worktree it was taken of.
CONE_KEY = "Sparse-Cone: "


def cone_line(worktree: Git) -> str:
    """The snapshot message's line naming ``worktree``'s cone ("" for a whole checkout)."""
    cone = g.sparse_cone(worktree)
    return f"\n{CONE_KEY}{json.dumps(list(cone))}" if cone else ""


def cone_in(message: str) -> tuple[str, ...] | None:
    """The cone a snapshot's message names (None: the worktree held the whole tree).

    A line that is not a list of directory names is not trusted: the whole tree.
    """
    for line in message.splitlines():
        if not line.startswith(CONE_KEY):
            continue
        try:
            dirs = json.loads(line.removeprefix(CONE_KEY))
        except ValueError:
            return None
        if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
            return None
        try:
            return sparse_dirs(dirs) or None
        except BadSparseDir:
            return None
    return None
