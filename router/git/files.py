"""git's administrative files, read without running git (see gitrepository-layout(5)).

Private to :mod:`router.git`: callers ask the package for a fact and the
package decides whether to read it here or ask git. Starting a git process
costs 2-5 ms and importing the modules that run git ~45 ms, so a few facts
are read from the files git keeps: where a checkout's git dir
is, which branch each checkout has, whether a repository's config moves its
work tree, what a branch or ``HEAD`` points at, which worktrees git lists.
Only the plain layout is trusted (a ``.git`` directory in the primary clone,
``gitdir:`` files in linked worktrees, ``commondir``, ``worktrees/<n>/gitdir``,
loose ``HEAD`` files, loose refs and a small ``packed-refs``); anything else
is :class:`Unsure` or ``None``, and git is asked instead.

Only the standard library is imported: the session-start hook reads these.
"""

from __future__ import annotations

import os
import re
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

# A reftable repository keeps this placeholder in HEAD: the real one is in the table.
_REFTABLE_HEAD = "ref: refs/heads/.invalid"


# How long a file's stamps may still repeat: longer than the coarsest tick of a file
# system a repository lives on (1 s: ext3, ext4 with small inodes, some network file
# systems; a few ms for the others). A file changed since may change again keeping every
# stamp, so what was read from it is not remembered by its stamps (router.plandir's
# answers, the borrowed submodules' kept state).
SETTLED_NS = 2_000_000_000


class Unsure(Exception):
    """The on-disk layout is not the plain one this reader trusts: ask git instead (``kind``:
    why not, a router.git.unread.UnreadLayout, for its config or refs, of common dir ``path``)."""

    def __init__(self, said: str = "", *, kind: str = "", path: str = "") -> None:
        from router.git.unread import layout_words  # only when raised: the hook reads this module

        self.kind, self.path = kind, path
        super().__init__(layout_words(kind, path) if kind else said)


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


def declares_submodules(top: Path) -> bool:
    """Whether the checkout at ``top`` has a ``.gitmodules`` file: without one it has no
    submodule git can initialise (the common case, answered by one stat).

    True when it cannot be told (a directory it cannot read): the submodules' own
    reading then says why.
    """
    try:
        return stat.S_ISREG(os.stat(top / ".gitmodules").st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        return True


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
# ``ignorecase`` set to anything but false: git then orders paths without case.
# Patterns only the refs and worktree-list readers use stay strings, compiled
# (and cached by ``re``) on first use: the session-start hook imports this module.
_IGNORECASE = r"(?m)^\s*ignorecase\s*+(?:$|=\s*+(?!(?:false|no|off|0)\s*$))"


def refuse_unusual_config(common: str) -> str:
    """The repository's config, lowercased; :class:`Unsure` when it may move its work tree."""
    text = _config_text(common)
    # core.worktree moves the primary's work tree; worktreeConfig lets each worktree
    # set it; an included file may set either; a bare repo has no primary work tree
    # at all; a reftable repository keeps no branch in its HEAD files.
    if _MOVES_THE_TREE.search(text) or _BARE.search(text):
        raise Unsure(f"{common}/config sets the work tree or ref layout")
    return text


def _config_text(common: str) -> str:
    """The repository's config file, lowercased; :class:`Unsure` when it cannot be read."""
    try:
        with open(os.path.join(common, "config"), encoding="utf-8", errors="replace") as fh:
            return fh.read().lower()
    except OSError:
        raise Unsure(kind="config-unreadable", path=common) from None


def gitdir_pointer(top: str | os.PathLike[str]) -> str:
    """What the ``.git`` file at ``top`` points at, as written; "" when it is no ``gitdir:`` file."""
    return read_line(os.path.join(top, ".git")).removeprefix("gitdir: ")


def checkout_branch(top: str | os.PathLike[str]) -> str | None:
    """The branch the checkout whose top level is ``top`` has, as its ``HEAD`` file names it.

    None when detached, unreadable, or ``top`` is no checkout (no git is asked).
    """
    git_dir = _named_git_dir(os.fspath(top))
    return head_branch(os.path.join(git_dir, "HEAD")) if git_dir is not None else None


def registration_file(admin: str | os.PathLike[str], name: str) -> str:
    """The first line of a worktree registration's file ``name`` (``gitdir``, ``locked``,
    ``commondir``, ``HEAD``); "" when it is missing or unreadable."""
    return read_line(os.path.join(admin, name))


def registrations(common: str) -> list[tuple[str, str]]:
    """Each linked worktree git knows: its admin dir, and the ``.git`` its ``gitdir`` names
    ("" when that file is missing or empty)."""
    return [(admin, registration_file(admin, "gitdir")) for admin in worktree_admin_dirs(common)]


def plain_checkouts(cwd: str) -> tuple[str, str, str, list[tuple[str, str | None]]] | None:
    """The repository around ``cwd`` from its files: (checkout top level, primary clone,
    common dir, [(linked worktree, its branch)]); None when there is none.

    Only the standard layout is read (a ``.git`` directory in the primary clone,
    ``gitdir:`` files in worktrees, ``commondir``, ``worktrees/<n>/gitdir``);
    anything else raises :class:`Unsure`.
    """
    found = find_git_dir(os.path.realpath(cwd))
    if found is None:
        return None
    top, git_dir = found
    common = common_dir(git_dir)
    primary = os.path.dirname(common)
    if (
        os.path.basename(common) != ".git"
        or os.path.realpath(os.path.join(primary, ".git")) != common
    ):
        raise Unsure(f"{common} is not the .git directory of a primary clone")
    refuse_unusual_config(common)
    linked = []
    for admin, gitfile in registrations(common):
        if gitfile:
            root = os.path.realpath(os.path.dirname(os.path.normpath(os.path.join(admin, gitfile))))
            linked.append((root, head_branch(os.path.join(admin, "HEAD"))))
    return top, primary, common, linked


def worktree_admin_dirs(common: str) -> list[str]:
    """``<common>/worktrees/<name>``: one per linked worktree git knows."""
    base = os.path.join(common, "worktrees")
    try:
        return [os.path.join(base, n) for n in sorted(os.listdir(base))]
    except OSError:
        return []


def registration_of(common: str, worktree: str) -> str | None:
    """The admin dir (``<common>/worktrees/<name>``) whose ``gitdir`` names ``worktree``'s ``.git``.

    Found by its ``gitdir`` file, not by name: git suffixes the name when
    another worktree took it. Works when the checkout itself is gone.
    """
    dotgit = os.path.join(os.path.realpath(worktree), ".git")
    plain = os.path.join(os.path.abspath(worktree), ".git")
    for admin in worktree_admin_dirs(common):
        named = read_line(os.path.join(admin, "gitdir"))
        if named and (named == plain or os.path.realpath(named) == dotgit):
            return admin
    return None


def index_device(index: str) -> int | None:
    """The device number git's index recorded for its first file: where the checkout's files were.

    git stores each checked-out file's ``stat`` data in the index (32 bits of
    ``st_dev`` among them), so the index still says which disk a checkout was
    on when that disk is gone. None: no index, no file in it, or no device
    recorded (a sparse index's directory entry has none).
    """
    try:
        with open(index, "rb") as fh:
            head = fh.read(32)
    except OSError:
        return None
    if len(head) < 32 or head[:4] != b"DIRC" or int.from_bytes(head[8:12], "big") == 0:
        return None
    # Each entry starts with ctime and mtime (8 bytes each), then dev and ino.
    device = int.from_bytes(head[28:32], "big")
    return device or None


def head_branch(head_file: str) -> str | None:
    """The branch a ``HEAD`` file names; None when detached or unreadable."""
    head = read_line(head_file)
    if head.startswith("ref: refs/heads/") and head != _REFTABLE_HEAD:
        return head[len("ref: refs/heads/") :]
    return None


# A rebase or bisect detaches HEAD while it works on a branch: git still
# counts that branch as checked out there (``git branch -D`` refuses it).
_BUSY_WITH_A_BRANCH = ("rebase-merge", "rebase-apply", "BISECT_START")


def busy_with_branch(common: str, branch: str) -> str | None:
    """The checkout (its top level) whose rebase or bisect under way works on ``branch``, if any.

    git lists such a worktree as detached, yet ``git branch -D`` refuses the
    branch and the checkout holds the half-done work.
    """
    for git_dir in [common, *worktree_admin_dirs(common)]:
        names = [
            read_line(os.path.join(git_dir, "rebase-merge", "head-name")),
            read_line(os.path.join(git_dir, "rebase-apply", "head-name")),
            "refs/heads/" + read_line(os.path.join(git_dir, "BISECT_START")),
        ]
        if f"refs/heads/{branch}" in names:
            if git_dir == common:
                return os.path.dirname(common.rstrip("/"))
            return os.path.dirname(read_line(os.path.join(git_dir, "gitdir")))
    return None


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
    # Both are real paths already: ``.git`` (no symlink) in the real ``top``, or one that
    # _named_git_dir and common_dir resolved. (A realpath is an lstat per component.)
    return top, git_dir, common


# -- the repository's formats -----------------------------------------------------

_HEX = frozenset("0123456789abcdef")
# The hex digits of an object id in each object format git knows (extensions.objectFormat).
_ID_WIDTHS = {"sha1": 40, "sha256": 64}
# An object id in any of those formats: for ids kept apart from their repository
# (a record's, an answer from GitHub), where the repository's own width is not at hand.
ANY_OBJECT_ID = "|".join(f"[0-9a-f]{{{width}}}" for width in sorted(_ID_WIDTHS.values()))
_REF_STORAGES = ("files", "reftable")
# A section header, and what may follow it on its line (a key, a value).
_SECTION = r"\s*\[\s*([^\]\s\"]*)\s*(?:\"[^\"]*\"\s*)?\](.*)"
# ``key = value`` or a bare ``key``: the value without quotes or a trailing comment.
_KEY_VALUE = r"\s*([a-z][a-z0-9-]*)\s*(?:=\s*\"?([^\"#;]*?)\"?)?\s*(?:[#;].*)?"


class RepoFormat:
    """How a repository names its objects and stores its refs, as its config declares.

    ``id_width`` is the number of hex digits in an object id (40 for SHA-1, 64
    for SHA-256); every id this module reads is checked against it, so one
    repository's format decides what an id looks like everywhere. ``reftable``
    says the refs and reflogs live in a reftable (``extensions.refStorage``),
    where there are no ref or reflog files: this module then has no answer,
    and git is asked.
    """

    __slots__ = ("id_width", "reftable")

    def __init__(self, id_width: int, reftable: bool) -> None:
        self.id_width = id_width
        self.reftable = reftable

    @property
    def null_id(self) -> str:
        """The id git writes for "no commit" (an unborn branch, a reflog's first entry)."""
        return "0" * self.id_width

    def is_id(self, text: str) -> bool:
        return len(text) == self.id_width and _HEX.issuperset(text)


def repo_format(common: str) -> RepoFormat:
    """The object and ref formats of the repository whose common git dir is ``common``.

    From ``extensions.objectFormat`` and ``extensions.refStorage`` in its
    config (SHA-1 and files when unset, as git reads it). :class:`Unsure` when
    the config cannot be read, or names a format or sets a key here in a way
    this reader does not know: git then answers.
    """
    found = {"objectformat": "sha1", "refstorage": "files"}
    section = ""
    for line in _config_text(common).splitlines():
        header = re.fullmatch(_SECTION, line)
        if header is not None:
            section, line = header[1], header[2]
        if section != "extensions" or not line.strip() or line.lstrip()[0] in "#;":
            continue
        entry = re.fullmatch(_KEY_VALUE, line)
        if entry is None:
            raise Unsure(kind="extensions-line", path=common)
        if entry[1] in found:
            found[entry[1]] = (entry[2] or "").strip()
    width = _ID_WIDTHS.get(found["objectformat"])
    if width is None or found["refstorage"] not in _REF_STORAGES:
        raise Unsure(kind="unknown-format", path=common)
    reftable = found["refstorage"] == "reftable"
    if not reftable and os.path.lexists(os.path.join(common, "reftable")):
        raise Unsure(kind="unnamed-reftable", path=common)
    return RepoFormat(width, reftable)


# -- refs ------------------------------------------------------------------------

# git follows at most this many symbolic refs (SYMREF_MAXDEPTH).
_SYMREF_DEPTH = 5
# A larger packed-refs is git's to search: it maps the file and bisects it,
# where this reader would scan every line.
_PACKED_REFS_MAX = 256 * 1024
# What git's check_refname_format refuses in a ref name (a control character or
# space, ~^:?*[ or a backslash, "..", "@{", an empty component, one starting with "." or
# ending in ".lock", a trailing "." or "/").
_NOT_A_REF_NAME = r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|/\.|\.lock(?:/|$)|[./]$"


def readable_ref(ref: str) -> bool:
    """Whether :func:`read_ref` reads ``ref`` (else it is git's to resolve)."""
    if ref == "HEAD":
        return True
    return ref.startswith(("refs/heads/", "refs/remotes/")) and not re.search(_NOT_A_REF_NAME, ref)


def read_ref(common: str, git_dir: str, ref: str) -> tuple[str | None, str]:
    """``ref``'s commit and the ref it ends at through symbolic refs, as git's files backend reads them.

    ``HEAD`` is the checkout's (in ``git_dir``); branches and remote-tracking
    refs are shared (in ``common``): a loose file, else a ``packed-refs`` line.
    The commit is None when the ref it ends at does not exist (an unborn
    branch). git writes only commits to branches and ``HEAD``, and fetches
    only branches into remote-tracking refs, so the id is the commit
    ``<ref>^{commit}`` names (whether the object is there is not checked).

    Raises :class:`Unsure` for anything git might read another way: a
    reftable, another kind of ref, a symlink, content that is not an object id
    of the repository's format or a ``ref:`` line, a chain deeper than git
    follows, a ``packed-refs`` too large to scan.
    """
    return _read_ref(common, git_dir, ref, files_format(common))


def read_refs(common: str, git_dir: str, refs: list[str]) -> dict[str, str | None]:
    """:func:`read_ref`'s commit for each of ``refs`` (the repository's format read once)."""
    fmt = files_format(common)
    return {ref: _read_ref(common, git_dir, ref, fmt)[0] for ref in refs}


def branches_present(common: str, names: Iterable[str]) -> set[str]:
    """Which of the branches ``names`` exist, as :func:`read_refs` reads them (Unsure: ask git)."""
    refs = {f"refs/heads/{name}": name for name in names}
    if not all(readable_ref(ref) for ref in refs):
        raise Unsure("a name git might read another way")
    return {refs[ref] for ref, tip in read_refs(common, common, list(refs)).items() if tip}


def files_format(common: str) -> RepoFormat:
    """:func:`repo_format`, Unsure for a reftable: its refs are in no file, and
    finding no file would say nothing."""
    fmt = repo_format(common)
    if fmt.reftable:
        raise Unsure(kind="reftable", path=common)
    return fmt


def _read_ref(common: str, git_dir: str, ref: str, fmt: RepoFormat) -> tuple[str | None, str]:
    packed: dict[str, str] | None = None
    for _ in range(_SYMREF_DEPTH + 1):
        if not readable_ref(ref):
            raise Unsure(f"{ref} is not a branch, a remote-tracking ref or HEAD")
        loose = _loose_ref(os.path.join(git_dir if ref == "HEAD" else common, ref), fmt)
        if loose is None:
            if ref == "HEAD":
                raise Unsure(f"{git_dir} has no HEAD file")
            packed = _packed_refs(common, fmt) if packed is None else packed
            return _no_null(packed.get(ref)), ref
        if not loose.startswith("ref:"):
            return _no_null(loose), ref
        ref = loose[len("ref:") :].strip()
    raise Unsure(f"{ref}: more symbolic refs in a row than git follows")


def refs_under(
    common: str, prefixes: tuple[str, ...], most: int | None = None
) -> dict[str, tuple[str, str]]:
    """``git for-each-ref`` of branches and remote-tracking refs under ``prefixes``:
    each ref's commit and, for a symbolic ref, the ref it names ("" for a plain ref);
    :class:`Unsure` when there are more than ``most`` (one git process lists many sooner).

    Loose refs (walked) shadow ``packed-refs`` lines, as in git's files
    backend. :class:`Unsure` for anything git might list another way: a name
    git would not read as a ref (a lock file another git is writing), a
    symlink, a symbolic ref that names no commit, what :func:`read_ref` is
    unsure of.
    """
    fmt = files_format(common)
    if not all(p.endswith("/") and readable_ref(p + "x") for p in prefixes):
        raise Unsure(f"{prefixes} are not branch or remote-tracking folders")
    names = {n for n in _packed_refs(common, fmt) if n.startswith(prefixes)}
    for prefix in prefixes:
        names.update(_loose_names(common, prefix))
    if most is not None and len(names) > most:
        raise Unsure("more refs than are read here")
    found = {}
    for name in sorted(names, key=os.fsencode):
        loose = _loose_ref(os.path.join(common, name), fmt)
        target = loose[len("ref:") :].strip() if loose and loose.startswith("ref:") else ""
        oid, _ = _read_ref(common, common, name, fmt)
        if oid is None:
            raise Unsure(f"{name} names no commit: git lists it its own way")
        found[name] = (oid, target)
    return found


def _loose_names(common: str, prefix: str) -> list[str]:
    names = []
    for folder, dirs, files in os.walk(os.path.join(common, prefix.rstrip("/"))):
        for entry in dirs + files:
            if os.path.islink(os.path.join(folder, entry)):
                raise Unsure(f"{folder}/{entry} is a symlink")
        rel = os.path.relpath(folder, common).replace(os.sep, "/")
        for file in files:
            name = f"{rel}/{file}"
            if not readable_ref(name):
                raise Unsure(f"{name} is not a ref name git reads")
            names.append(name)
    return names


def _no_null(oid: str | None) -> str | None:
    # The null id names no commit (git writes it while it sets HEAD up): git's
    # ``<ref>^{commit}`` finds none, and lists an unborn branch's HEAD so.
    return None if oid is None or is_null_id(oid) else oid


def _loose_ref(path: str, fmt: RepoFormat) -> str | None:
    """A loose ref's content: a commit id or a ``ref:`` line; None when there is no such file."""
    try:
        if os.path.islink(path):
            raise Unsure(f"{path} is a symlink")
        with open(path, "rb") as fh:
            raw = fh.read(4096)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None  # git looks in packed-refs then
    except OSError:
        raise Unsure(f"{path} cannot be read") from None
    text = raw.decode("utf-8", "surrogateescape").rstrip()
    if text.startswith("ref:") or fmt.is_id(text):
        return text
    raise Unsure(f"{path} holds neither a commit id nor a ref: line")


def _packed_refs(common: str, fmt: RepoFormat) -> dict[str, str]:
    """``packed-refs`` as ``ref -> commit``; empty when there is no such file."""
    path = os.path.join(common, "packed-refs")
    try:
        with open(path, "rb") as fh:
            raw = fh.read(_PACKED_REFS_MAX + 1)
    except FileNotFoundError:
        return {}
    except OSError:
        raise Unsure(f"{path} cannot be read") from None
    if len(raw) > _PACKED_REFS_MAX:
        raise Unsure(f"{path} is large")
    refs: dict[str, str] = {}
    lines = raw.decode("utf-8", "surrogateescape").split("\n")
    if lines.pop() != "":
        raise Unsure(f"{path} ends in the middle of a line")
    for n, line in enumerate(lines):
        if (n == 0 and line.startswith("# pack-refs with:")) or (
            line.startswith("^") and fmt.is_id(line[1:])
        ):
            continue  # the header; a peeled tag
        oid, _, name = line.partition(" ")
        if not fmt.is_id(oid) or not name:
            raise Unsure(f"{path} has a line git would not read")
        refs[name] = oid
    return refs


# -- the null id, and registrations git cannot read --------------------------------


def is_null_id(oid: str) -> bool:
    """Whether ``oid`` is git's null id ("no commit"), in any object format."""
    return not oid.strip("0")


def placeholder_head(admin: str | os.PathLike[str]) -> bool:
    """The registration's HEAD is the null id ``git worktree add`` writes before it sets HEAD.

    git points it at the branch (or commit) right after; an add killed in
    between leaves it, and git cannot read it: every walk of all refs
    (``git rev-list --all``) fails in the repository ("bad object
    worktrees/<id>/HEAD") until the registration is mended or gone.
    """
    line = read_line(os.path.join(admin, "HEAD"))
    return bool(line) and is_null_id(line)


# torn_registration's answer when every file is there, but HEAD is git's placeholder.
TORN_PLACEHOLDER = "placeholder"


def torn_registration(admin: str | os.PathLike[str]) -> str:
    """What keeps git from using the worktree registration ``admin`` ("" when nothing): the
    name of its file that is missing or empty, or :data:`TORN_PLACEHOLDER`.

    git needs its ``gitdir``, ``commondir`` and ``HEAD`` to see a linked
    worktree at all. A ``git worktree add`` killed while writing them, or
    killed while removing its half-made worktree on a signal (git deletes the
    registration's files one by one, in directory order, and a SIGKILL can
    stop it after any of them), leaves one missing or empty, or HEAD as its
    placeholder: ``git worktree list`` then leaves the worktree out (or fails),
    while the checkout's ``.git`` still points here.
    """
    for name in ("gitdir", "commondir", "HEAD"):
        if not read_line(os.path.join(admin, name)):
            return name
    if placeholder_head(admin):
        return TORN_PLACEHOLDER
    return ""


# -- the worktree list -------------------------------------------------------------

# One worktree as ``git worktree list --porcelain`` shows it: its path, HEAD
# (None on an unborn branch), branch (None when detached), lock reason
# (None when not locked; "" for a lock without one) and whether it is prunable.
Listed = tuple[str, str | None, str | None, str | None, bool]


def listed_worktrees(common: str) -> list[Listed]:
    """What ``git worktree list`` lists for the repository whose common git dir is ``common``.

    The primary clone first, then each linked worktree in the order git shows
    them (by path). Raises :class:`Unsure` unless the layout is the plain one
    and every registration reads as git would read it; ``common`` must be a
    real path, as :func:`plain_layout` gives it.
    """
    if os.path.basename(common) != ".git":
        raise Unsure(f"{common} is not a primary clone's .git")
    if re.search(_IGNORECASE, refuse_unusual_config(common)):
        raise Unsure(f"{common}/config sets core.ignorecase: git orders the list its own way")
    fmt = files_format(common)
    primary = _listed(fmt, common, common, os.path.dirname(common))
    linked = []
    for admin in worktree_admin_dirs(common):
        dotgit = _registered_dotgit(admin, common)
        if dotgit is not None:
            linked.append(_listed(fmt, common, admin, dotgit.removesuffix("/.git"), dotgit))
    linked.sort(key=lambda entry: os.fsencode(entry[0]))
    return [primary, *linked]


def _registered_dotgit(admin: str, common: str) -> str | None:
    """The worktree's ``.git`` that ``admin/gitdir`` names; None when git skips the entry."""
    if os.path.islink(admin) or not os.path.isdir(admin):
        raise Unsure(f"{admin} is not a directory")
    try:
        with open(os.path.join(admin, "gitdir"), "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return None
    except OSError:
        raise Unsure(f"{admin}/gitdir cannot be read") from None
    text = raw.decode("utf-8", "surrogateescape")
    path = text[:-1] if text.endswith("\n") else text
    # git trims trailing whitespace here and only newlines when it judges the
    # entry prunable: a path those two readings differ on is git's to list.
    if not path or path != path.rstrip() or "\n" in path or not os.path.isabs(path):
        raise Unsure(f"{admin}/gitdir is not one absolute path")
    # Without its commondir git cannot read the worktree's refs and stops.
    pointer = read_line(os.path.join(admin, "commondir"))
    if not pointer or os.path.realpath(os.path.join(admin, pointer)) != common:
        raise Unsure(f"{admin}/commondir does not name {common}")
    return path


def _listed(
    fmt: RepoFormat, common: str, git_dir: str, path: str, dotgit: str | None = None
) -> Listed:
    """One entry: ``dotgit`` is the ``.git`` a linked worktree's ``gitdir`` names (None: the primary)."""
    commit, ref = _read_ref(common, git_dir, "HEAD", fmt)
    if ref != "HEAD" and (not ref.startswith("refs/heads/") or f"ref: {ref}" == _REFTABLE_HEAD):
        raise Unsure(f"{git_dir}/HEAD names {ref}, not a branch")
    branch = ref.removeprefix("refs/heads/") if ref != "HEAD" else None
    reason = _lock_reason(git_dir) if dotgit is not None else None
    # git's "prunable": a registration, not locked, whose checkout is gone.
    prunable = dotgit is not None and reason is None and not os.path.exists(dotgit)
    return path, commit, branch, reason, prunable


def _lock_reason(admin: str) -> str | None:
    try:
        with open(os.path.join(admin, "locked"), "rb") as fh:
            return fh.read().decode("utf-8", "surrogateescape").strip()
    except FileNotFoundError:
        return None
    except OSError:
        raise Unsure(f"{admin}/locked cannot be read") from None
