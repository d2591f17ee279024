"""``Git``: git anchored to one directory, with every concept's questions on one handle."""

from __future__ import annotations

from pathlib import Path

from router.git.history import HistoryMethods
from router.git.objects import ObjectMethods
from router.git.refs import RefMethods
from router.git.remote import RemoteMethods
from router.git.status import StatusMethods
from router.git.worktrees import WorktreeMethods


class Git(RefMethods, WorktreeMethods, StatusMethods, HistoryMethods, ObjectMethods, RemoteMethods):
    """git anchored to one directory (``git -C <cwd>``), by concept: where am I (layout),
    refs, worktrees, status, history, objects, remotes and config."""

    __slots__ = ()


def init_repo(path: Path, *, branch: str, bare: bool = False) -> Git:
    """``git init`` a new repository at ``path`` on ``branch``; the Git anchored there."""
    path.mkdir(parents=True, exist_ok=True)
    # -b, not init.defaultBranch: a fresh machine may have no config at all.
    args = ["init", "--quiet", "-b", branch]
    if bare:
        args.append("--bare")
    Git(path).run(*args)
    return Git(path)
