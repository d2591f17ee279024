"""Which submodule git dirs borrow objects, and whether their HEAD or branches moved, from files.

Private to :mod:`router.git`, beside :mod:`router.git.files`: what
:mod:`router.git.submodules` asks before it starts any git, so the commands a
pipeline runs at every step (and the session-start hook) learn from files alone
that nothing moved since the borrowed objects were last pinned.
"""

from __future__ import annotations

import os
import time

from router.git.files import SETTLED_NS, read_line, worktree_admin_dirs

# The file in a borrowing submodule git dir that records which HEAD and branches its pins
# keep (:func:`router.git.submodules.keep_borrowed`): the state :func:`tips_state` read.
KEPT_STAMP = "team-router-kept"
# Beside it, the state at which git could not walk the borrower's history (an object lost, or
# never there): tried again only once that state moves, as a kept one is.
UNKEPT_STAMP = "team-router-unkept"


def borrowers(admin: str) -> list[tuple[str, str]]:
    """``(git dir, source git dir)`` of every submodule git dir under the worktree registration
    ``admin`` (nested ones too) that borrows objects, and of the git dir it borrows from.

    Read from each one's ``objects/info/alternates``, which names the ``objects``
    directory of the git dir it borrows from.
    """
    found = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(admin, "modules")):
        if "HEAD" not in filenames or "objects" not in dirnames:
            dirnames.sort()
            continue
        dirnames[:] = ["modules"] if "modules" in dirnames else []  # only its own nest deeper
        try:
            with open(os.path.join(dirpath, "objects", "info", "alternates"), "rb") as f:
                lines = f.read().decode("utf-8", "surrogateescape").splitlines()
        except OSError:
            continue  # borrows nothing (a git dir made by hand)
        for line in lines:
            if os.path.isabs(line) and os.path.basename(line) == "objects":
                found.append((dirpath, os.path.dirname(line)))
    return found


def tips_state(git_dir: str, source: str) -> str:
    """Where the repository ``git_dir``'s HEAD and local branches are, as its files say.

    ``HEAD``, each loose ref under ``refs/heads`` (path and content), and the
    identity of ``packed-refs`` and of a reftable's ``tables.list``: git
    replaces a file it updates by renaming a new one over it, so any move of
    HEAD or of a branch changes this text (a move elsewhere may too: harmless).
    And that of ``source``'s ``FETCH_HEAD`` (the git dir it borrows from): once
    that has fetched a commit of the repository's own (pushed from it), the
    repository's next repack (``-l``, as ``git gc`` runs it) leaves its copy
    out, and the source alone keeps it; so a fetch there is a move too.
    """
    parts = [f"HEAD {read_line(os.path.join(git_dir, 'HEAD'))}"]
    heads = os.path.join(git_dir, "refs", "heads")
    for dirpath, dirnames, filenames in os.walk(heads):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            parts.append(f"{os.path.relpath(path, git_dir)} {read_line(path)}")
    files = {
        "packed-refs": os.path.join(git_dir, "packed-refs"),
        "reftable": os.path.join(git_dir, "reftable", "tables.list"),
        "source FETCH_HEAD": os.path.join(source, "FETCH_HEAD"),
    }
    written_before = time.time_ns() - SETTLED_NS
    for name, path in files.items():
        try:
            st = os.stat(path)
        except OSError:
            continue
        parts.append(
            f"{name} {st.st_ino} {st.st_mtime_ns} {st.st_size}{_content_if_fresh(path, st, written_before)}"
        )
    return "\n".join(parts) + "\n"


def _content_if_fresh(path: str, st: os.stat_result, written_before: int) -> str:
    """`` <digest of the content>`` of a file written moments ago, else "".

    A file rewritten in the tick of the file system's clock it was written in keeps
    its mtime, often its size (a branch moved), and its inode too when the
    rewrite takes the number its previous copy freed: only its content tells.
    """
    if max(st.st_mtime_ns, st.st_ctime_ns) < written_before:
        return ""
    import hashlib  # here: the session-start hook's path reads no content when nothing is fresh

    try:
        with open(path, "rb") as fh:
            return " " + hashlib.sha1(fh.read(), usedforsecurity=False).hexdigest()
    except OSError:
        return " unread"


def moved_borrowers(common: str) -> list[tuple[str, str, str]]:
    """``(admin dir, git dir, source git dir)`` of the borrowing submodule git dirs of every
    worktree of the repository whose common dir is ``common`` whose HEAD or branches moved
    since their pins were last made to keep them, or git last failed to walk them (their
    :data:`KEPT_STAMP` and :data:`UNKEPT_STAMP` are not :func:`tips_state`). Files only: a
    worktree without submodules costs one ``stat``."""
    moved = []
    for admin in worktree_admin_dirs(common):
        if not os.path.isdir(os.path.join(admin, "modules")):
            continue
        for git_dir, source in borrowers(admin):
            state = tips_state(git_dir, source)
            if _stamped(git_dir, KEPT_STAMP) != state and _stamped(git_dir, UNKEPT_STAMP) != state:
                moved.append((admin, git_dir, source))
    return moved


def _stamped(git_dir: str, name: str) -> str:
    """The state the stamp ``name`` in ``git_dir`` records; "" when none."""
    try:
        with open(os.path.join(git_dir, name), encoding="utf-8", errors="surrogateescape") as fh:
            return fh.read()
    except OSError:
        return ""
