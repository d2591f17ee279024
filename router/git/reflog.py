"""Reflogs: their entries, read from their files (the files backend) or through git (a
reftable keeps none), and what a worktree's ``HEAD`` reflog alone keeps."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from router.git import files as gitfiles
from router.git.run import GitError, Runner
from router.names import Sha
from router.records import record

# One reflog entry as git writes it: (old id, new id, message). The null id
# (all zeros: see :func:`router.git.files.is_null_id`) stands for "no commit" on either side.
Entry = tuple[str, str, str]


def reflog_commits(entries: list[Entry]) -> list[str]:
    """Every commit the reflog ``entries`` name (both sides of each entry), oldest first.

    git's gc keeps both sides of every entry, so both count.
    """
    return [c for old, new, _ in entries for c in (old, new) if not gitfiles.is_null_id(c)]


# What git's checkout and switch write in HEAD's reflog: "... from <where HEAD was> to <where it goes>".
CHECKOUT_MOVED = "checkout: moving from "


def reflog_left_behind(entries: list[Entry]) -> list[str]:
    """The tips a HEAD reflog's ``entries`` show left behind, oldest first: what each
    checkout (``checkout``/``switch``) moved away from, and where HEAD is now.

    Not what an amend, a rebase or a reset replaced: those rewrite or drop work on
    purpose (on a branch, only the branch's reflog would keep it either), and a
    rebase's picks on the way to its result are copies of commits kept elsewhere.
    """
    left = [old for old, _, why in entries if why.startswith(CHECKOUT_MOVED)]
    tips = [*left, *(entries[-1][1:2] if entries else [])]
    return [c for c in tips if not gitfiles.is_null_id(c)]


class OddReflog(gitfiles.Unsure):
    """A reflog file that cannot be read (``unreadable``), or holds a line git would not write."""

    def __init__(self, path: str, *, unreadable: bool) -> None:
        said = "cannot be read" if unreadable else "has a line git would not write"
        super().__init__(f"{path} {said}")
        self.path, self.unreadable = path, unreadable


def reflog_file_entries(path: str, fmt: gitfiles.RepoFormat) -> list[Entry]:
    """Each entry of the reflog file ``path``, oldest first.

    A missing file names nothing; a line git's files backend would not have
    written (an id not of the repository's format ``fmt``) is :class:`gitfiles.Unsure`.
    """
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return []
    except OSError:
        raise OddReflog(path, unreadable=True) from None
    found = []
    for line in raw.decode("utf-8", "surrogateescape").splitlines():
        old, _, rest = line.partition(" ")
        new = rest.partition(" ")[0]
        if not (fmt.is_id(old) and fmt.is_id(new)):
            raise OddReflog(path, unreadable=False)
        found.append((old, new, line.partition("\t")[2]))
    return found


def reflog_files(common: str, *, skip: str) -> list[str]:
    """Every reflog file of the repository but the worktree registration ``skip``'s.

    The shared refs' (``<common>/logs/``) and every checkout's ``HEAD``'s.
    :class:`gitfiles.Unsure` for a reftable repository, which keeps no reflog files:
    finding none there would say nothing.
    """
    gitfiles.files_format(common)
    files = []
    for root, _dirs, names in os.walk(os.path.join(common, "logs")):
        files += [os.path.join(root, n) for n in names]
    for admin in gitfiles.worktree_admin_dirs(common):
        if os.path.realpath(admin) != os.path.realpath(skip):
            files.append(os.path.join(admin, "logs", "HEAD"))
    return sorted(files)


@record
class ReflogOnly:
    """Commits only one worktree registration's ``HEAD`` reflog keeps (deleted with it)."""

    count: int  # every such commit
    tips: list[str]  # the reflog's entries that hold them all, newest first


def head_reflog_only(git: Runner, common: Path, admin: str, *, heads: Sequence[str]) -> ReflogOnly:
    """What the ``HEAD`` reflog of registration ``admin`` alone keeps reachable from the
    tips it shows left behind (:func:`reflog_left_behind`: what a checkout moved
    away from, and HEAD itself; not what an amend, a rebase or a reset replaced).

    Not kept elsewhere means: no ref under refs/, none of ``heads`` (the other
    checkouts' HEADs), no other reflog (a branch's own reflog keeps what an
    amend replaced). ``git`` is anchored at the primary clone. The reflogs are
    read from their files, or through git in a reftable repository, which keeps
    none. Raises :class:`gitfiles.Unsure` when a reflog file cannot be read as
    git wrote it, :class:`DanglingHead` or :class:`GitError` when git cannot
    read them.
    """
    fmt = gitfiles.repo_format(str(common))
    if fmt.reftable:
        mine = reflog_left_behind(_own_head_reflog(git, fmt, admin))
    else:
        log = os.path.join(admin, "logs", "HEAD")
        mine = reflog_left_behind(reflog_file_entries(log, fmt))
    held = [h for h in heads if not gitfiles.is_null_id(h)]
    if set(mine) <= set(held):
        # Nothing left behind but a HEAD some checkout has now (a worktree that
        # never switched away): no other reflog needs reading.
        return ReflogOnly(0, [])
    if fmt.reftable:
        # The primary's HEAD reflog and the shared refs' are rev-list's own to read
        # (--single-worktree --reflog, both sides of every entry); each other
        # worktree's HEAD reflog is walked (what it names less errs towards refusing).
        others = [head_reflog_name(a) for a in gitfiles.worktree_admin_dirs(str(common))]
        logs = list(reflogs(git, fmt, [n for n in others if n != head_reflog_name(admin)]).values())
        read_by_git: tuple[str, ...] = ("--single-worktree", "--reflog")
    else:
        files = reflog_files(str(common), skip=admin)
        logs = [reflog_file_entries(f, fmt) for f in files]
        read_by_git = ()
    kept = [*(c for entries in logs for c in reflog_commits(entries)), *held]
    if not read_by_git and set(mine) <= set(kept):
        # Every tip it left is named elsewhere too (a worktree that only ever
        # worked on its branch: the branch's reflog has each): no rev-list needed.
        return ReflogOnly(0, [])
    # On stdin: a repository's reflogs name thousands of commits. A commit whose
    # object is gone already reaches nothing (--ignore-missing).
    lines = [*mine, *(f"^{c}" for c in kept)]
    walk = ("rev-list", "--ignore-missing", "--stdin", "--not", "--glob=*", *read_by_git, "--")
    out = git.out(*walk, input="\n".join(lines) + "\n")
    unique = set(out.split())
    if not unique:
        return ReflogOnly(0, [])
    entries = list(dict.fromkeys(c for c in reversed(mine) if c in unique))  # newest first
    tips = set(git.out("merge-base", "--independent", *entries).split())
    return ReflogOnly(len(unique), [c for c in entries if c in tips])


class DanglingHead(Exception):
    """A HEAD that names a branch that does not exist: git reads no reflog through it, and
    a reftable repository keeps no file to read that reflog from instead."""

    def __init__(self, ref: str) -> None:
        self.branch = ref.removeprefix("refs/heads/")
        super().__init__(f"its HEAD names {self.branch}, which does not exist")

    @property
    def fix(self) -> str:
        return f"`git branch {self.branch} <commit>` (any commit) lets git read that reflog"


def head_reflog_where(common: Path, admin: str) -> str:
    """Where the HEAD reflog of registration ``admin`` is, for a message: its file, or its
    name in a reftable (which git reads it by)."""
    try:
        reftable = gitfiles.repo_format(str(common)).reftable
    except gitfiles.Unsure:
        reftable = False
    if reftable:
        return f"{head_reflog_name(admin)} in the reftable"
    return os.path.join(admin, "logs", "HEAD")


# The message git writes in a branch's reflog as it creates the branch (`git branch`,
# `checkout -b`, `switch -c`, `worktree add -b`), with the commit it starts at.
BRANCH_CREATED = "branch: Created from "


def branch_created_at(git: Runner, branch: str) -> Sha | None:
    """The commit ``branch`` was created at, as the creation entry of its reflog names it.

    None when its reflog keeps no such entry: an expiry dropped it, or the
    branch was not made by ``git branch`` and its kin (a fetch into it,
    ``update-ref``, ``core.logAllRefUpdates`` off).
    """
    name = f"refs/heads/{branch}"
    walk = _walk_reflogs(git, [name]).get(name, {})
    if not walk:
        return None
    new, why = walk[max(walk)]  # the oldest entry
    return Sha(new) if why.startswith(BRANCH_CREATED) else None


def head_reflog_name(admin: str) -> str:
    """The name git reads the HEAD reflog of worktree registration ``admin`` by, from
    any checkout of the repository (``git reflog show <name>``)."""
    return f"worktrees/{os.path.basename(admin)}/HEAD"


def reflogs(git: Runner, fmt: gitfiles.RepoFormat, names: Sequence[str]) -> dict[str, list[Entry]]:
    """The entries of each reflog ``names`` names, oldest first, as git reads them (one
    process): for a reftable, which keeps no reflog file to read.

    git prints an entry's new id and message, not its old id (``log -g``). The
    old id is taken from the entry before it, or from a checkout's message
    where that names the commit HEAD left (a detached HEAD's, exact where an
    expiry left a gap); the oldest entry's, and that of an entry whose
    neighbour git does not print (a deleted ref, a missing object), is the null
    id. An id left null names less than the reflog keeps: for what *other*
    reflogs keep, that errs towards keeping; :func:`_own_head_reflog` asks for
    the one a removal would lose. A reflog git cannot read through its name (a
    HEAD naming a deleted branch) is not in the answer.
    """
    return {name: _entries(fmt, walk) for name, walk in _walk_reflogs(git, names).items()}


# One reflog as ``log -g`` prints it: entry number (0 the newest) -> (new id, message).
_Walk = dict[int, tuple[str, str]]


def _walk_reflogs(git: Runner, names: Sequence[str]) -> dict[str, _Walk]:
    if not names:
        return {}
    # --ignore-missing: a name git cannot resolve (a HEAD naming a deleted branch: git
    # reads no reflog through it) is left out, not the end of the whole walk.
    walk = ("log", "--walk-reflogs", "--ignore-missing", "--no-show-signature", "--stdin")
    listed = "".join(f"{n}\n" for n in dict.fromkeys(names))
    out = git.run(*walk, "--format=%gD%x00%H%x00%gs", input=listed).stdout
    printed: dict[str, _Walk] = {}
    for line in out.splitlines():
        selector, new, why = line.split("\0", 2)
        name, _, number = selector.rpartition("@{")
        printed.setdefault(name, {})[int(number.removesuffix("}"))] = (new, why)
    return printed


def _entries(fmt: gitfiles.RepoFormat, walk: _Walk) -> list[Entry]:
    entries = []
    for n in sorted(walk, reverse=True):  # oldest first
        new, why = walk[n]
        older = walk.get(n + 1)
        old = _checkout_left(fmt, why) or (older[0] if older else fmt.null_id)
        entries.append((old, new, why))
    return entries


def _checkout_left(fmt: gitfiles.RepoFormat, why: str) -> str | None:
    """The commit a checkout's reflog message names as where HEAD was: a detached HEAD's id."""
    if not why.startswith(CHECKOUT_MOVED):
        return None
    where = why.removeprefix(CHECKOUT_MOVED).partition(" ")[0]
    return where if fmt.is_id(where) else None


def _own_head_reflog(git: Runner, fmt: gitfiles.RepoFormat, admin: str) -> list[Entry]:
    """:func:`reflogs` of the HEAD reflog of registration ``admin``, with the old id of its
    oldest entry asked of git when that entry is a checkout that left a branch: once an
    expiry dropped the entries before it, what it left may be kept by it alone.

    :class:`DanglingHead` when git skipped it because the HEAD names no branch
    there is: an empty answer would say "nothing left behind".
    """
    name = head_reflog_name(admin)
    walk = _walk_reflogs(git, [name]).get(name, {})
    if not walk and git.says_yes("reflog", "exists", name):
        target = git.run("symbolic-ref", "-q", name, check=False).stdout.strip()
        if target.startswith("refs/heads/"):
            raise DanglingHead(target)
        raise GitError(["git", "log", "-g", name], 128, f"git printed no entry of {name}")
    entries = _entries(fmt, walk)
    if not entries or not entries[0][2].startswith(CHECKOUT_MOVED):
        return entries
    if not gitfiles.is_null_id(entries[0][0]):
        return entries  # the message names it
    # <name>@{<n>} one past the oldest entry git printed is that entry's old id (or
    # the new id of one git did not print); git dies "only has <n> entries" when
    # that is the null id: nothing was there before.
    res = git.run("rev-parse", "--verify", f"{name}@{{{max(walk) + 1}}}", check=False)
    if res.ok:
        return [(res.stdout.strip(), *entries[0][1:]), *entries[1:]]
    if "only has" not in res.stderr:
        raise res.as_error()
    return entries
