"""Where am I: a checkout's top level, git dir and common dir, and where a directory lies.

The plain layout (a ``.git`` directory in the primary clone, ``gitdir:``
files in linked worktrees) is read from git's files; anything else is
git's own answer.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path

from router.git import files as gitfiles
from router.git.run import GitError, Runner
from router.names import cast
from router.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.names import Branch


@record
class RepoLayout:
    """Where a checkout's top level, git dir and common git dir are (real paths).

    A record (as every one in router/): ``typing``'s NamedTuple would load typing
    (~13 million instructions) into every command that opens a repository.
    """

    toplevel: Path
    git_dir: Path
    common_dir: Path

    @property
    def is_linked_worktree(self) -> bool:
        return self.git_dir != self.common_dir


class LayoutMethods(Runner):
    """Where the checkout at cwd is: its top level, git dir and common dir.

    Around cwd it is git's own answer; for the checkout whose top level is cwd, its
    files first, and git only when they are not the plain layout.
    """

    __slots__ = ()

    def layout(self) -> RepoLayout:
        """Top level, git dir and common git dir of the checkout at cwd (absolute)."""
        return self._layout(with_head=False)[0]

    def _layout(self, *, with_head: bool) -> tuple[RepoLayout, Branch | None]:
        head_args = ("--symbolic-full-name", "HEAD") if with_head else ()
        where = ("--show-toplevel", "--git-dir", "--git-common-dir", *head_args)
        lines = self.out("rev-parse", "--path-format=absolute", *where).splitlines()
        if len(lines) != (4 if with_head else 3):
            raise GitError(["git", "rev-parse"], 128, "not a work tree")
        top, gdir, common = (Path(os.path.realpath(x)) for x in lines[:3])
        head = lines[3].strip() if with_head else ""
        branch = (
            cast("Branch", head.removeprefix("refs/heads/"))
            if head.startswith("refs/heads/")
            else None
        )
        return RepoLayout(top, gdir, common), branch

    def try_layout(self) -> RepoLayout | None:
        """:meth:`layout`, or None when git finds no work tree at cwd (or cannot run)."""
        try:
            return self.layout()
        except GitError:
            return None

    def checkout_layout(self) -> RepoLayout | None:
        """The layout of the checkout whose top level is cwd; None when cwd is not one.

        Read from the checkout's files when they show the plain layout (one
        process fewer per repo of a topic), else git's own answer.
        """
        plain = self.files_layout()
        if plain is not None:
            return plain
        layout = self.try_layout()
        return (
            layout
            if layout is not None and layout.toplevel == Path(os.path.realpath(self.cwd))
            else None
        )

    def top_checkout_state(self) -> tuple[RepoLayout, Branch | None]:
        """Layout and checked-out branch (None when detached) of the checkout whose top level
        is cwd: from its files when plain, else git's answer in one process.

        Raises GitError when git, asked because the layout is not the plain
        one, finds no checkout there.
        """
        layout = self.files_layout()
        if layout is None:
            return self._layout(with_head=True)
        return layout, cast(
            "Branch | None", gitfiles.head_branch(os.path.join(layout.git_dir, "HEAD"))
        )

    def git_dir(self) -> Path:
        """The git dir of the checkout whose top level is cwd: as its ``.git`` names it, else
        git's own answer (raises GitError when there is no checkout)."""
        return gitfiles.checkout_git_dir(self.cwd) or self.layout().git_dir

    def files_layout(self) -> RepoLayout | None:
        """The layout of the checkout whose top level is cwd, from its files; None unless plain."""
        plain = self._plain_layout()
        return RepoLayout(*(Path(p) for p in plain)) if plain is not None else None

    def index_file(self) -> Path | None:
        """The index file of the checkout at cwd (it may not exist); None when git does not answer.

        A fact of the layout (where the checkout's git files are): asking whether a
        checkout has an index loads nothing of the status concept.

        For a checkout top level in the plain layout, its git dir's ``index``
        (read from its files, as git would); otherwise git is asked.
        """
        plain = self.files_layout()
        if plain is not None:
            return plain.git_dir / "index"
        try:
            out = self.out("rev-parse", "--path-format=absolute", "--git-path", "index")
        except GitError:
            return None
        return Path(out) if out else None

    def _plain_layout(self) -> tuple[str, str, str] | None:
        """:func:`gitfiles.plain_layout` of cwd, when git here would read the files it reads."""
        return None if self.env else gitfiles.plain_layout(str(self.cwd))

    def common_dir(self) -> Path:
        """The common git dir git uses at cwd (a bare repository's, a git dir's too)."""
        return Path(
            os.path.realpath(self.out("rev-parse", "--path-format=absolute", "--git-common-dir"))
        )


def absolute_git_dir(git: LayoutMethods) -> Path:
    """The git dir git uses at cwd (cwd itself when cwd is a git dir)."""
    return Path(os.path.realpath(git.out("rev-parse", "--absolute-git-dir")))


class GitPlace(StrEnum):
    """Where a directory lies, as git itself sees it."""

    OUTSIDE = "outside"
    WORK_TREE = "git-work-tree"
    GIT_DIR = "git-dir"
    UNKNOWN = "git-unknown"  # git found something but would not say (dubious ownership ...)


def git_place(directory: Path) -> GitPlace:
    """Whether ``directory`` lies inside a git work tree or git dir of any repository."""
    # No ceiling and across file systems: a temp dir mounted inside a checkout
    # is still inside it, whatever the caller's environment says about discovery.
    env = {"GIT_CEILING_DIRECTORIES": "", "GIT_DISCOVERY_ACROSS_FILESYSTEM": "1"}
    res = Runner(directory, env).run(
        "rev-parse", "--is-inside-work-tree", "--is-inside-git-dir", check=False
    )
    if not res.ok:
        # Only "not a git repository" means outside: any other failure means git
        # found a repository it would not open, which is no proof of absence.
        return GitPlace.OUTSIDE if "not a git repository" in res.stderr else GitPlace.UNKNOWN
    answers = res.stdout.split()
    if answers == ["true", "false"]:
        return GitPlace.WORK_TREE
    if answers == ["false", "true"]:
        return GitPlace.GIT_DIR
    return GitPlace.UNKNOWN


def repository_below(directory: Path) -> Path | None:
    """The first ``.git`` entry or bare git dir found below ``directory`` (symlinks not followed).

    Raises OSError when a directory cannot be read: what is in it is unknown.
    """
    pending = [directory]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.name == ".git":
                    return Path(entry.path)
                if entry.is_dir(follow_symlinks=False):
                    if _looks_like_git_dir(entry.path):
                        return Path(entry.path)
                    pending.append(Path(entry.path))
    return None


def repository_above(directory: Path) -> Path | None:
    """The nearest ``.git`` entry or git dir at or above ``directory``, without asking git.

    Finds what git itself no longer opens: a worktree whose repository was
    moved (its ``.git`` file points at nothing) or a clone whose ``.git`` lost
    its ``HEAD``. Git answers "not a git repository" there, yet the files are
    someone's work.
    """
    current = os.path.realpath(directory)
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return Path(current, ".git")
        if _looks_like_git_dir(current):
            return Path(current)
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _looks_like_git_dir(path: str) -> bool:
    # git's own test (setup.c is_git_directory): HEAD, objects/ and refs/. A
    # bare repository or a separated git dir has no ".git" entry to find.
    return (
        os.path.isfile(os.path.join(path, "HEAD"))
        and os.path.isdir(os.path.join(path, "objects"))
        and os.path.isdir(os.path.join(path, "refs"))
    )
