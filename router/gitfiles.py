"""git's administrative files, read without running git (see gitrepository-layout(5)).

Starting a git process costs 2-5 ms and importing :mod:`router.git` ~45 ms,
so a few facts are read from the files git keeps: where a checkout's git dir
is, which branch each checkout has, whether a repository's config moves its
work tree. Only the plain layout is trusted (a ``.git`` directory in the
primary clone, ``gitdir:`` files in linked worktrees, ``commondir``,
``worktrees/<n>/gitdir``, loose ``HEAD`` files); anything else is
:class:`Unsure` or ``None``, and the caller asks git instead.

Only the standard library is imported: the session-start hook reads these.
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

# A reftable repository keeps this placeholder in HEAD: the real one is in the table.
_REFTABLE_HEAD = "ref: refs/heads/.invalid"


class Unsure(Exception):
    """The on-disk layout is not the plain one this reader trusts: ask git instead."""


def read_line(path: str) -> str:
    """The first line of ``path`` without its newline; "" when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            return fh.readline().strip()
    except OSError:
        return ""


def find_git_dir(start: str) -> tuple[str, str] | None:
    """The checkout root at or above ``start`` and its git dir; None when there is none."""
    here = start
    while True:
        dotgit = os.path.join(here, ".git")
        if os.path.isdir(dotgit):
            if os.path.isfile(os.path.join(dotgit, "HEAD")):
                return here, os.path.realpath(dotgit)
        elif os.path.isfile(dotgit):
            line = read_line(dotgit)
            if not line.startswith("gitdir: "):
                raise Unsure(f"{dotgit} is not a gitdir file")
            return here, os.path.realpath(os.path.join(here, line[len("gitdir: ") :]))
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def checkout_git_dir(path: Path) -> Path | None:
    """The git dir of the checkout whose top level is ``path``, as its ``.git`` names it.

    None when ``.git`` is neither a directory nor a ``gitdir:`` file.
    """
    from pathlib import Path

    found = _named_git_dir(str(path))
    return Path(found) if found is not None else None


def _named_git_dir(top: str) -> str | None:
    """``top/.git`` when it is a directory, else the one its ``gitdir:`` line names (real path)."""
    dotgit = os.path.join(top, ".git")
    if os.path.isdir(dotgit) and not os.path.islink(dotgit):
        return dotgit
    line = read_line(dotgit) if os.path.isfile(dotgit) else ""
    if not line.startswith("gitdir: "):
        return None
    return os.path.realpath(os.path.join(top, line[len("gitdir: ") :]))


def common_dir(git_dir: str) -> str:
    """The common git dir a (linked worktree's) git dir shares; itself for a primary's."""
    pointer = read_line(os.path.join(git_dir, "commondir"))
    return os.path.realpath(os.path.join(git_dir, pointer)) if pointer else git_dir


# A key or section that may move the work tree or the refs (matched as keys:
# a remote URL or a branch name may hold the same words).
_MOVES_THE_TREE = re.compile(
    r"^\s*(?:\[\s*include|(?:worktree|worktreeconfig|refstorage)\s*+(?:=|$))", re.MULTILINE
)
# ``bare`` set to anything but false (``bare``, ``bare = true``, ``bare=1`` ...).
_BARE = re.compile(r"^\s*bare\s*+(?:$|=\s*+(?!(?:false|no|off|0)\s*$))", re.MULTILINE)


def refuse_unusual_config(common: str) -> None:
    """Raise :class:`Unsure` when the repository's config may move its work tree."""
    try:
        with open(os.path.join(common, "config"), encoding="utf-8", errors="replace") as fh:
            text = fh.read().lower()
    except OSError:
        raise Unsure(f"{common}/config cannot be read") from None
    # core.worktree moves the primary's work tree; worktreeConfig lets each
    # worktree set it; an included file may set either; a bare repo has no
    # primary work tree at all; a reftable repository keeps no branch in its
    # HEAD files.
    if _MOVES_THE_TREE.search(text) or _BARE.search(text):
        raise Unsure(f"{common}/config sets the work tree or ref layout")


def worktree_admin_dirs(common: str) -> list[str]:
    """``<common>/worktrees/<name>``: one per linked worktree git knows."""
    base = os.path.join(common, "worktrees")
    try:
        return [os.path.join(base, n) for n in sorted(os.listdir(base))]
    except OSError:
        return []


def head_branch(head_file: str) -> str | None:
    """The branch a ``HEAD`` file names; None when detached or unreadable."""
    head = read_line(head_file)
    if head.startswith("ref: refs/heads/") and head != _REFTABLE_HEAD:
        return head[len("ref: refs/heads/") :]
    return None


# A rebase or bisect detaches HEAD while it works on a branch: git still
# counts that branch as checked out there (``git branch -D`` refuses it).
_BUSY_WITH_A_BRANCH = ("rebase-merge", "rebase-apply", "BISECT_START")


def checked_out_branches(common: str) -> set[str] | None:
    """Every branch some checkout of the repository has (its primary's and each worktree's).

    None when unsure (an unusual layout, a HEAD that cannot be read, a
    rebase or bisect under way): the caller then lets git decide, as
    ``git branch -D`` does by refusing.
    """
    try:
        refuse_unusual_config(common)
    except Unsure:
        return None
    branches: set[str] = set()
    for git_dir in [common, *worktree_admin_dirs(common)]:
        head = os.path.join(git_dir, "HEAD")
        text = read_line(head)
        if not text or os.path.islink(head) or text == _REFTABLE_HEAD:
            return None
        if any(os.path.lexists(os.path.join(git_dir, n)) for n in _BUSY_WITH_A_BRANCH):
            return None
        branch = head_branch(head)
        if branch is not None:
            branches.add(branch)
    return branches


def plain_layout(path: str) -> tuple[str, str, str] | None:
    """(top level, git dir, common dir) of the checkout whose top level is ``path``, from its files.

    None unless the layout is the plain one: a ``.git`` directory (or a
    ``gitdir:`` file) right at ``path``, a git dir holding ``HEAD``, and a
    config that does not move the work tree. The caller then asks git.
    """
    top = os.path.realpath(path)
    git_dir = _named_git_dir(top)
    if git_dir is None or not os.path.isfile(os.path.join(git_dir, "HEAD")):
        return None
    common = common_dir(git_dir)
    if not all(os.path.isdir(os.path.join(common, d)) for d in ("objects", "refs")):
        return None
    try:
        refuse_unusual_config(common)
    except Unsure:
        return None
    return top, os.path.realpath(git_dir), os.path.realpath(common)
