"""Repositories inside a worktree — initialised submodules, nested clones — and their work (DESIGN §9).

Removing a worktree deletes every repository inside it: a nested clone's
``.git`` directory, and in a linked worktree a submodule's git dir as well
(git keeps it under ``<common>/worktrees/<name>/modules/``). A snapshot of
the worktree records such a repository only as a gitlink, so its work is
judged on its own: uncommitted changes, untracked files, and commits that no
remote-tracking ref of its own reaches. Any of those makes teardown refuse,
``--force`` or not, naming the repository; one that holds none goes with the
worktree (its commits are on its remote).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from router import git as g
from router.git import Git, GitError, StatusReport


class NestedKind(StrEnum):
    SUBMODULE = "submodule"
    CLONE = "nested repository"


@dataclass(frozen=True, slots=True)
class NestedRepo:
    rel: str  # path relative to the worktree
    kind: NestedKind
    status: StatusReport = field(default_factory=StatusReport)
    unpushed: int = 0  # commits no remote-tracking ref of its own reaches
    problem: str = ""  # why it could not be inspected (then it counts as holding work)

    @property
    def holds_work(self) -> bool:
        return bool(self.problem) or self.status.dirty or self.unpushed > 0


def survey(worktree: Path) -> tuple[NestedRepo, ...]:
    """Every repository below ``worktree`` with what removing it would lose.

    Raises OSError when a directory cannot be read: a repository there could
    not be ruled out.
    """
    found = find_repositories(worktree)
    if not found:
        return ()
    submodules = g.gitlinks(Git(worktree), found)
    return tuple(
        _inspect(worktree, rel, NestedKind.SUBMODULE if rel in submodules else NestedKind.CLONE)
        for rel in found
    )


def find_repositories(worktree: Path) -> list[str]:
    """Directories below ``worktree`` with a ``.git`` entry, relative, outermost first.

    The whole tree is walked, ignored directories included: ``git status``
    shows a nested clone only as ``?? dir/`` and one under an ignored
    directory not at all, yet removing the worktree deletes both.
    """
    found = []

    def fail(exc: OSError) -> None:
        raise exc

    for dirpath, dirnames, filenames in os.walk(worktree, onerror=fail):
        here = Path(dirpath)
        has_git = ".git" in dirnames or ".git" in filenames
        if ".git" in dirnames:
            dirnames.remove(".git")  # a git dir holds objects, not checkouts
        if has_git and here != worktree:
            found.append(here.relative_to(worktree).as_posix())
        dirnames.sort()
    return found


def _inspect(worktree: Path, rel: str, kind: NestedKind) -> NestedRepo:
    path = worktree / rel
    git = Git(path)
    try:
        # A .git git cannot use makes git look further up and answer for the
        # worktree itself: only an answer about this very directory counts.
        if git.toplevel() != Path(os.path.realpath(path)):
            return NestedRepo(rel, kind, problem="git does not recognise it as a repository")
        return NestedRepo(rel, kind, git.status(), g.commits_on_no_remote(git))
    except GitError as exc:
        return NestedRepo(rel, kind, problem=f"git could not inspect it ({exc.first_line})")
