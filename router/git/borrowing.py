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
# never there): tried again only once that state moves, as a kept one is. Its last line is
# what git said then (after :data:`_SAID`), so the commands that warn name it again.
UNKEPT_STAMP = "team-router-unkept"
_SAID = "# git: "  # no line of a state starts so: each starts with what it names


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
    written_before = time.time_ns() - SETTLED_NS
    for name, path in _stamped_files(git_dir, source).items():
        try:
            st = os.stat(path)
        except OSError:
            continue
        parts.append(
            f"{name} {st.st_ino} {st.st_mtime_ns} {st.st_size}{_content_if_fresh(path, st, written_before)}"
        )
    return "\n".join(parts) + "\n"


def _stamped_files(git_dir: str, source: str) -> dict[str, str]:
    """The files :func:`tips_state` names by their identity, by the name it gives each."""
    return {
        "packed-refs": os.path.join(git_dir, "packed-refs"),
        "reftable": os.path.join(git_dir, "reftable", "tables.list"),
        "source FETCH_HEAD": os.path.join(source, "FETCH_HEAD"),
    }


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


def borrowers_to_keep(common: str) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    """The borrowing submodule git dirs of every worktree of the repository whose common dir
    is ``common``: ``(admin dir, git dir, source git dir)`` of those whose HEAD or branches
    moved since their pins were last made to keep them, or git last failed to walk them
    (neither :data:`KEPT_STAMP` nor :data:`UNKEPT_STAMP` is :func:`tips_state`); and
    ``(git dir, what git said)`` of those git could not walk at the state they are still
    at (their :data:`UNKEPT_STAMP` is it). Files only: a worktree without submodules costs
    one ``stat``."""
    moved, unwalked = [], []
    for admin in worktree_admin_dirs(common):
        if not os.path.isdir(os.path.join(admin, "modules")):
            continue
        for git_dir, source in borrowers(admin):
            state = tips_state(git_dir, source)
            if _still(git_dir, source, KEPT_STAMP, state):
                continue
            # One without git's words was stamped by an earlier version at any failure, a
            # moment's too (a git killed by a signal): walked again, and stamped anew.
            said = (
                _still(git_dir, source, UNKEPT_STAMP, state) and _stamped(git_dir, UNKEPT_STAMP)[1]
            )
            if said:
                unwalked.append((git_dir, said))
            else:
                moved.append((admin, git_dir, source))
    return moved, unwalked


def unwalked_warning(git_dir: str, said: str) -> str:
    """The warning for the borrower ``git_dir`` whose history git could not walk (``said``:
    git's complaint): the same words at the failure and at each later command that warns."""
    return f"{git_dir}: its branches stand on objects no pin keeps ({said}); `team-router doctor` says more"


def _still(git_dir: str, source: str, name: str, state: str) -> bool:
    """Whether the stamp ``name`` in ``git_dir`` records ``state``.

    A stamp made while a file was fresh names it by its content too (see
    :func:`_content_if_fresh`); read once the file settled, the state names it by its
    identity alone. The same identity holding the same content is the same state:
    the stamp is then written again as it reads now, so the next look is one compare.
    """
    stamp, said = _stamped(git_dir, name)
    if stamp == state:
        return True
    kept, now = stamp.splitlines(), state.splitlines()
    if not stamp or len(kept) != len(now):
        return False
    files = _stamped_files(git_dir, source)
    for was, line in zip(kept, now, strict=True):
        if was == line:
            continue
        named = next((n for n in files if line.startswith(f"{n} ")), None)
        if named is None or not was.startswith(f"{line} "):
            return False
        try:
            st = os.stat(files[named])
        except OSError:
            return False
        if was[len(line) :] != _content_if_fresh(files[named], st, written_before=-1):
            return False
    # Unwritten, the next look compares the content again. (No contextlib: it stays off
    # the session-start hook's path.)
    try:  # noqa: SIM105
        write_stamp(git_dir, state, name, said)
    except OSError:
        pass
    return True


def write_stamp(
    git_dir: str | os.PathLike[str], state: str, name: str = KEPT_STAMP, said: str = ""
) -> None:
    """Record in ``git_dir`` the :func:`tips_state` its pins keep (``name``: or the one git
    could not walk, and ``said``, what git said then), replacing the stamp whole."""
    stamp = os.path.join(git_dir, name)
    scratch = stamp + ".new"
    note = "" if not said else f"{_SAID}{' '.join(said.splitlines())}\n"
    with open(scratch, "w", encoding="utf-8", errors="surrogateescape") as fh:
        fh.write(state + note)
    os.replace(scratch, stamp)


def _stamped(git_dir: str, name: str) -> tuple[str, str]:
    """The state the stamp ``name`` in ``git_dir`` records ("" when none), and what git said."""
    try:
        with open(os.path.join(git_dir, name), encoding="utf-8", errors="surrogateescape") as fh:
            text = fh.read()
    except OSError:
        return "", ""
    # The state ends in a newline: a note after it starts a line.
    state, note, said = text.rpartition(f"\n{_SAID}")
    return (f"{state}\n", said.rstrip("\n")) if note else (text, "")
