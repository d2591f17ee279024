"""Submodules of a new worktree, checked out from the primary clone's own submodule objects.

git keeps a linked worktree's submodule git dirs under that worktree's own git
dir (``<common>/worktrees/<wt>/modules/<name>``), so ``git worktree remove``
takes them with the registration. ``git submodule update --init`` would clone
each one again from its URL (``--reference`` still asks the remote for its
refs, so it fails when the remote is unreachable). Here the worktree's
submodule git dir is made by hand instead, borrowing the primary's objects
through ``objects/info/alternates`` (what ``clone --reference`` writes), with
the primary's remotes and remote-tracking refs copied so the submodule looks
exactly like a fresh clone; then it is connected to its checkout and checked
out as ``git submodule update --no-fetch --checkout`` does for a git dir it
finds made (the ``.git`` file and ``core.worktree``, then ``git checkout -q
-f``), one ``git checkout`` per submodule, so several run at once: that
command's shell script and helpers (a dozen processes for three submodules)
checked them out one after the other. Nothing is fetched. The submodules the
primary's copy has initialised in turn (its ``submodule.*`` config) are
initialised in the new git dir too, as a recursive clone's, so that its own
submodules are checked out the same way, level by level.

Borrowing is ``clone --shared``'s risk: the primary's ``git gc`` knows nothing
of the borrower and prunes an object only the borrower reaches (the commit a
branch records, once the primary's copy has no ref reaching it, say after a
force-push upstream and a fetch that pruned). So before a git dir borrows,
the commit it is checked out at is pinned in the primary's git dir of that
submodule by a ref, ``refs/team-router/borrowed/<worktree>/checkout`` (the
worktree's registration name), which every gc keeps with all it reaches.

The borrower is a full repository: its user checks out other commits the
primary has (its remote-tracking refs and tags are copies of the primary's),
branches from them and commits. Those commits are stored in the borrower, but
what they stand on is the primary's. So whatever the borrower's HEAD and local
branches reach that the primary has is pinned too (:func:`keep_borrowed`): for
each tip, the nearest commits of its history the primary has (the tip itself
when the primary has it), ``refs/team-router/borrowed/<worktree>/kept/<commit>``,
and the trees and blobs of the primary's that the borrower's own commits name
from outside that history (a cherry-pick's files), listed in one tree made in
the primary and pinned as ``kept/<tree>``.
Pins are only ever added while the worktree lives (one a commit, so
concurrent runs agree), which also keeps what the borrower's reflog remembers
of them; the commands a pipeline runs anyway add them
(:func:`router.git.borrowing.borrowers_to_keep` tells from files alone which borrowers
moved since), and removing the worktree (:func:`drop_borrow_pins`) drops every
pin under its name.

git's ``extensions.preciousObjects`` would keep everything without pins, but
with it the user's own ``git gc`` prunes nothing and ``git prune`` and ``git
repack -d`` refuse (their repository then only grows), needs ``repositoryformatversion``
1, which tools that read repositories themselves (libgit2, JGit) may refuse,
and must be undone when the last worktree goes: pins are plain refs every
tool understands, and a gc prunes all else as before.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from router.git.borrowing import (
    UNKEPT_STAMP,
    borrowers,
    tips_state,
    unwalked_warning,
    write_stamp,
)
from router.git.files import declares_submodules, read_line
from router.git.run import GitError, Runner
from router.records import record

# A submodule git dir being made: renamed into place only once whole, so a
# kill leaves either nothing at the real name or a whole git dir.
_MAKING = ".team-router-making"
BORROWED_PREFIX = "refs/team-router/borrowed/"
_PIN_LEAF = "checkout"
_KEPT_LEAF = "kept/"
CHECKOUT_TIMEOUT = 600.0  # a local checkout of a big submodule, never a fetch


@record
class Gitlink:
    """A submodule the checkout records: its ``.gitmodules`` name, path and commit."""

    name: str
    path: str
    commit: str


def declared_gitlinks(git: Runner, top: Path) -> list[Gitlink]:
    """The gitlinks in the index of the checkout at ``top`` that ``.gitmodules`` names.

    No ``.gitmodules`` file (the common case): no git process at all. A gitlink
    ``.gitmodules`` does not name cannot be initialised by git and is left out.
    """
    if not declares_submodules(top):
        return []
    declared = _config_matching(git, r"^submodule\..*\.path$", "--file", ".gitmodules")
    names = {value: key.removeprefix("submodule.").removesuffix(".path") for key, value in declared}
    staged = git.run(
        "ls-files", "-z", "--stage", "--", *names, env={"GIT_LITERAL_PATHSPECS": "1"}
    ).stdout
    found = []
    for entry in staged.split("\0"):
        meta, _, path = entry.partition("\t")
        fields = meta.split(" ")
        if fields[0] == "160000" and path in names:
            found.append(Gitlink(names[path], path, fields[1]))
    return found


def initialised_names(git: Runner) -> set[str]:
    """Names of the submodules ``git submodule init`` set up (``submodule.<name>.url`` set).

    The config is the common one, shared by the primary and its worktrees.
    """
    declared = _config_matching(git, r"^submodule\..*\.url$")
    return {key.removeprefix("submodule.").removesuffix(".url") for key, _ in declared}


def _config_matching(git: Runner, pattern: str, *where: str) -> list[tuple[str, str]]:
    """``(key, value)`` of each config entry (of the file ``where`` names) whose key matches
    ``pattern``, in order; none when none is set (git's exit 1)."""
    res = git.run("config", *where, "-z", "--get-regexp", pattern, check=False)
    if res.returncode == 1:
        return []
    if not res.ok:
        raise res.as_error()
    pairs = (entry.partition("\n") for entry in res.stdout.split("\0") if entry)
    return [(key, value) for key, _, value in pairs]


def module_dir(git_dir: Path, name: str) -> Path:
    """Where git keeps the git dir of submodule ``name`` of a checkout whose git dir is ``git_dir``."""
    return git_dir / "modules" / name


def primary_module(common_dir: Path, primary: Path, link: Gitlink) -> Path | None:
    """The primary clone's git dir for ``link``: absorbed under ``modules/``, or a ``.git``
    directory in its checkout (a repository ``submodule add`` adopted); None when it has none."""
    for candidate in (module_dir(common_dir, link.name), primary / link.path / ".git"):
        if (candidate / "objects").is_dir() and (candidate / "HEAD").is_file():
            return candidate
    return None


def making_dir(target: Path) -> Path:
    """The name a submodule git dir is made under before it is whole."""
    return target.with_name(target.name + _MAKING)


def borrow_pin(borrower: str) -> str:
    """The ref that keeps, in a primary's submodule git dir, the commit the worktree registered
    as ``borrower`` (its admin dir's name) was checked out at when made.

    Every pin of a worktree is under :func:`borrow_prefix`.
    """
    return borrow_prefix(borrower) + _PIN_LEAF


def borrow_prefix(borrower: str) -> str:
    """The refs under which a primary's submodule git dir keeps what the worktree registered
    as ``borrower`` borrows from it.

    The name is spelt so any registration name is a valid ref: a byte other than
    a letter, digit, ``-`` or ``_`` is ``%XX`` (so it never holds a ``/``).
    """
    spelt = "".join(
        chr(b) if chr(b).isascii() and (chr(b).isalnum() or chr(b) in "-_") else f"%{b:02X}"
        for b in os.fsencode(borrower)
    )
    return f"{BORROWED_PREFIX}{spelt}/"


def pinned_borrower(ref: str) -> str | None:
    """The registration name :func:`borrow_prefix` spelt into ``ref``, a pin of
    :func:`borrow_pin` or :func:`keep_borrowed`; None for another ref."""
    spelt, _, leaf = ref.removeprefix(BORROWED_PREFIX).partition("/")
    if not ref.startswith(BORROWED_PREFIX) or not (
        leaf == _PIN_LEAF or (leaf.startswith(_KEPT_LEAF) and len(leaf) > len(_KEPT_LEAF))
    ):
        return None
    from urllib.parse import unquote_to_bytes

    return os.fsdecode(unquote_to_bytes(spelt))


def borrow_module(source: Path, target: Path, commit: str, top: Path, *, pin: str) -> None:
    """Make ``target`` a submodule git dir that borrows ``source``'s objects, at ``commit``,
    for the checkout at ``top``; ``pin`` (:func:`borrow_pin`) keeps ``commit`` in ``source``.

    Its object format, remotes and their remote-tracking refs, its tags and the
    submodules it has initialised are ``source``'s, as a (recursive) clone from
    the same remote would have them; ``HEAD`` is
    detached at ``commit``; ``core.worktree`` names ``top``, as git connects a
    submodule it clones. Raises :class:`MissingCommit` when ``source`` lacks it.
    """
    old = Runner(source)
    if not old.ok("cat-file", "-e", f"{commit}^{{commit}}"):
        raise MissingCommit(commit, source)  # before anything is made
    # Pinned before anything borrows it: from here on the primary's gc keeps the
    # commit and all it reaches (the trees and blobs a commit made on it shares).
    old.run("update-ref", "-m", f"team-router: borrowed by {target}", pin, commit)
    try:
        _make_borrower(old, source, target, commit, top)
    except (GitError, OSError):
        # Nothing borrows yet (the git dir is renamed into place last): no pin is left.
        old.run("update-ref", "-d", pin, commit, check=False)
        raise


def _make_borrower(old: Runner, source: Path, target: Path, commit: str, top: Path) -> None:
    """:func:`borrow_module`'s git dir, made beside ``target`` and renamed into place whole."""
    import shutil  # here: `new` without submodules never loads it (~4 ms with bz2 and lzma)

    config = _source_config(old)
    making = making_dir(target)
    scratch = making.with_name(making.name + "-top")
    for leftover in (making, scratch):  # what a killed run left of this step; never a whole one
        if leftover.exists():
            shutil.rmtree(leftover)
    making.parent.mkdir(parents=True, exist_ok=True)
    # Initialised as the git dir of a checkout (core.bare false, reflogs on, as a
    # clone's), whose scratch top level goes at once: git connects the real one.
    fmt = dict(config).get("extensions.objectformat", "sha1")
    made = ("init", "--quiet", f"--object-format={fmt}", f"--separate-git-dir={making}")
    Runner(making.parent).run(*made, "--", str(scratch))
    shutil.rmtree(scratch)
    alternates = making / "objects" / "info" / "alternates"
    alternates.write_text(f"{os.path.realpath(source / 'objects')}\n", encoding="utf-8")
    with open(making / "config", "a", encoding="utf-8", errors="surrogateescape") as added:
        added.write(_worktree_section(top, target) + _config_sections(config))
    _copy_refs(old, Runner(making), commit)
    # Its checkout pin keeps its HEAD (the checkout to come writes the same): the
    # next session start need not run git to find that out.
    write_stamp(making, tips_state(os.fspath(making), os.fspath(source)))
    os.rename(making, target)


class MissingCommit(Exception):
    """The commit a branch records for a submodule is not in the primary's copy of it."""

    def __init__(self, commit: str, source: Path) -> None:
        super().__init__(f"commit {commit[:12]} is not in {source}")
        self.commit = commit
        self.source = source


def _source_config(old: Runner) -> list[tuple[str, str]]:
    """``source``'s object format, remotes and initialised submodules, from its own config
    file, in one process."""
    return _config_matching(
        old, r"^(extensions\.objectformat|remote\..*|submodule\..*)$", "--local"
    )


def _worktree_section(top: Path, target: Path) -> str:
    """``core.worktree``, relative from the git dir to its checkout, as git writes it
    (between the real paths: ``relative_path(real_work_tree, git_dir)``)."""
    real_target = os.path.join(os.path.realpath(target.parent), target.name)
    return f"[core]\n\tworktree = {_quoted(os.path.relpath(os.path.realpath(top), real_target))}\n"


def _config_sections(config: list[tuple[str, str]]) -> str:
    """The remotes and submodules among ``config``, as config text (written at once, not a
    process a value)."""
    sections: dict[str, list[str]] = {}
    for key, value in config:
        section, _, rest = key.partition(".")
        if section not in ("remote", "submodule"):
            continue
        name, _, var = rest.rpartition(".")  # a name may hold dots; a variable never does
        header = f"[{section} {_quoted(name)}]" if name else f"[{section}]"
        sections.setdefault(header, []).append(f"\t{var} = {_quoted(value)}\n")
    return "".join(f"{header}\n{''.join(lines)}" for header, lines in sections.items())


def _quoted(value: str) -> str:
    """``value`` as a double-quoted git config string (any character kept as it was)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\t", "\\t") + '"'


def _copy_refs(old: Runner, new: Runner, commit: str) -> None:
    fields = "--format=%(refname)%00%(objectname)%00%(symref)"
    listed = old.run("for-each-ref", fields, "refs/remotes", "refs/tags").stdout
    updates = [f"update HEAD {commit}"]
    symbolic = []
    for line in listed.splitlines():
        ref, oid, target = line.split("\0")
        if target:
            symbolic.append((ref, target))
        else:
            updates.append(f"create {ref} {oid}")
    new.run("update-ref", "--no-deref", "--stdin", input="\n".join(updates) + "\n")
    for ref, target in symbolic:
        new.run("symbolic-ref", ref, target)


def checkout_borrowed(top: Path, module: Path, commit: str) -> GitError | None:
    """Connect the submodule checkout at ``top`` to its git dir ``module`` and check ``commit``
    out there: None, or git's failure (not raised); OSError when ``top/.git`` cannot be written.

    What ``git submodule update --no-fetch --checkout`` does for a submodule
    whose git dir it finds made: ``top/.git`` names ``module`` (relative, as git
    writes it; ``module``'s ``core.worktree`` names ``top`` since
    :func:`borrow_module`), then a forced checkout of the commit on a detached
    ``HEAD``. Nothing is fetched. Not recursive: the caller goes down a level
    once this one is checked out, from the primary's git dirs of that level. Each submodule is its own repository, so several of these
    run at once.
    """
    gitfile = f"gitdir: {os.path.relpath(os.path.realpath(module), os.path.realpath(top))}\n"
    with open(top / ".git", "w", encoding="utf-8", errors="surrogateescape") as dotgit:
        dotgit.write(gitfile)  # OSError: raised, the disk's refusal
    res = Runner(top).run(
        "checkout", "-q", "-f", "--detach", commit, check=False, timeout=CHECKOUT_TIMEOUT
    )
    return None if res.ok else res.as_error()


def checkout_finished(top: Path, module: Path) -> bool:
    """git connected the submodule checkout at ``top`` to ``module`` and finished checking it out.

    Read from git's files: ``top/.git`` is a ``gitdir:`` file and the git dir's
    index exists (a checkout killed half-way has only ``index.lock``).
    """
    return (
        read_line(os.path.join(top, ".git")).startswith("gitdir: ") and (module / "index").is_file()
    )


def detached_head(module: Path) -> str | None:
    """The commit ``module``'s HEAD is detached at; None when it names a branch or is unreadable."""
    head = read_line(os.path.join(module, "HEAD"))
    return head if len(head) in (40, 64) and not head.startswith("ref:") else None


def forget_unfinished_checkout(top: Path, module: Path) -> None:
    """Undo the start of a checkout of ``module`` into ``top`` that a kill cut short.

    git then takes the submodule for one it has not checked out yet and checks
    it out whole (forced) from ``module``. Only the ``gitdir:`` file git wrote
    and the index lock its killed checkout left go; the caller proved no
    process uses them and that the checkout never finished.
    """
    dotgit = top / ".git"
    if read_line(os.fspath(dotgit)).startswith("gitdir: "):
        dotgit.unlink()
    (module / "index.lock").unlink(missing_ok=True)


@record
class Borrowed:
    """A worktree's submodule git dir that borrows objects, the primary's git dir it borrows
    from, and the pin (:func:`borrow_pin`) that keeps them there."""

    borrower: Path
    source: Path
    pin: str

    @property
    def prefix(self) -> str:
        """Where every pin of its worktree is (:func:`borrow_prefix`)."""
        return self.pin.removesuffix(_PIN_LEAF)


def borrowed_sources(admin: Path) -> list[Borrowed]:
    """Every submodule git dir under the registration ``admin`` (nested ones too) that
    borrows objects: what :func:`drop_borrow_pins` drops the pins of.

    Read from the borrowers' ``objects/info/alternates`` (no git process): each
    names the ``objects`` directory of the git dir it borrows from.
    """
    pin = borrow_pin(admin.name)
    return [Borrowed(Path(b), Path(source), pin) for b, source in borrowers(os.fspath(admin))]


def drop_borrow_pins(borrowed: list[Borrowed]) -> None:
    """Delete every pin of the worktree :func:`borrowed_sources` found (all under its
    :func:`borrow_prefix`), once its borrowers are gone.

    One git cannot delete stays, harmless (it keeps objects a gc could have
    pruned) and findable: ``doctor`` lists a pin whose worktree is gone.
    """
    for b in borrowed:
        listed = Runner(b.source).run(
            "for-each-ref", "--format=delete %(refname) %(objectname)", b.prefix, check=False
        )
        if listed.ok and listed.stdout.strip():
            Runner(b.source).run("update-ref", "--stdin", input=listed.stdout, check=False)


@record
class Unkept:
    """What a borrower stands on in its source that no pin of its worktree keeps.

    ``commits``: for each of its HEAD and local branches, the nearest commits of
    its history the source has. ``trees`` and ``blobs``: what the borrower's own
    commits name from the source's objects outside that history (a cherry-pick
    of a commit only the source has takes its files so).
    """

    commits: tuple[str, ...] = ()
    trees: tuple[str, ...] = ()
    blobs: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.commits or self.trees or self.blobs)


def unkept(b: Borrowed) -> Unkept:
    """What ``b.borrower``'s HEAD and local branches stand on in ``b.source`` that none of its
    worktree's pins there keeps (the borrower's own commits are in its own store).

    Raises GitError when git cannot walk the borrower's history (an object
    already missing: ``git fsck`` in it names it).
    """
    borrower, source = Runner(b.borrower), Runner(b.source)
    negatives = "".join(
        f"^{oid}\n" for oid in sorted(set(borrow_pins(b.source, b.prefix).values()))
    )
    walked = borrower.run("rev-list", "--parents", "HEAD", "--branches", "--stdin", input=negatives)
    parents = {}
    for line in walked.stdout.splitlines():
        oid, *of = line.split()
        parents[oid] = of
    if not parents:
        return Unkept()
    there = {oid for oid, kind in _kinds(source, list(parents)).items() if kind == "commit"}
    # Only the newest the source has along each line of history: a child the source
    # has keeps its parents there.
    covered = {p for oid in there for p in parents[oid]}
    commits = [oid for oid in parents if oid in there and oid not in covered]
    own = [oid for oid in parents if oid not in there]
    if not own:
        return Unkept(tuple(commits))
    # The objects the borrower's own commits name beyond what their parents' trees
    # and the pins hold; those the source has are kept only by what is pinned here.
    listed = borrower.run(
        "rev-list", "--objects", "--no-object-names", "--stdin",
        input="".join(f"{oid}\n" for oid in own) + negatives + "".join(f"^{c}\n" for c in commits),
    ).stdout.split()  # fmt: skip
    kinds = _kinds(source, [oid for oid in listed if oid not in parents])
    trees = tuple(oid for oid, kind in kinds.items() if kind == "tree")
    return Unkept(
        tuple(commits), trees, tuple(oid for oid, kind in kinds.items() if kind == "blob")
    )


def _kinds(source: Runner, oids: list[str]) -> dict[str, str]:
    """``oid -> type`` of those of ``oids`` that ``source`` has (in their order)."""
    if not oids:
        return {}
    out = source.run(
        "cat-file", "--batch-check=%(objectname) %(objecttype)", input="\n".join(oids) + "\n"
    ).stdout
    pairs = (line.partition(" ") for line in out.splitlines())
    return {oid: kind for oid, _, kind in pairs if kind and kind != "missing"}


def keep_borrowed(b: Borrowed) -> Unkept:
    """Pin in ``b.source`` what :func:`unkept` finds, under ``b.prefix`` + ``kept/``: a ref a
    commit, and one tree made in ``b.source`` that lists the trees and blobs found (a
    ref can keep only one object); what was pinned.

    Then the borrower's :data:`~router.git.borrowing.KEPT_STAMP` records the state
    of its HEAD and branches read before the walk, so a move during it is seen
    by the next run. Pins are never moved or deleted while the worktree lives:
    concurrent runs each add their own refs, named by what they keep.
    """
    state = tips_state(os.fspath(b.borrower), os.fspath(b.source))
    found = _walked(b, state)
    pinned = list(found.commits)
    source = Runner(b.source)
    if found.trees or found.blobs:
        entries = [f"040000 tree {oid}\t{oid}\n" for oid in found.trees]
        entries += [f"100644 blob {oid}\t{oid}\n" for oid in found.blobs]
        pinned.append(source.run("mktree", input="".join(entries)).stdout.strip())
    if pinned:
        lines = "".join(f"update {b.prefix}{_KEPT_LEAF}{oid} {oid}\n" for oid in pinned)
        source.run(
            "update-ref", "-m", f"team-router: kept for {b.borrower}", "--stdin", input=lines
        )
    write_stamp(b.borrower, state)
    (b.borrower / UNKEPT_STAMP).unlink(missing_ok=True)
    return found


def _walked(b: Borrowed, state: str) -> Unkept:
    """:func:`unkept` of ``b``, whose HEAD and branches were at ``state``; when git cannot
    walk it at that state, its :data:`~router.git.borrowing.UNKEPT_STAMP` records so (and
    what git said), and the GitError is raised.

    A failure is the state's, and stamped, only when git ended by itself (not killed by
    a signal, not stopped at its timeout) walking the borrower's own history, and the
    same walk, asked once more at once, fails so again: an object lost fails every walk
    alike, while a moment's failure (a killed git, an I/O error, a lock) gives way at the
    second ask, which then pins. A failure asking ``b.source`` (its pins, which objects
    it holds) says nothing of the borrower's history. A stamp stops every later try until
    the borrower moves, and the primary's gc may then prune what it stands on; a failure
    not stamped costs only a walk at the next run.
    """
    try:
        return unkept(b)
    except GitError as exc:
        if not _the_walks(exc, b):
            raise  # the moment's, or the source's: the next run tries again
        first = exc.first_line
    try:
        return unkept(b)
    except GitError as exc:
        if _the_walks(exc, b) and exc.first_line == first:
            with contextlib.suppress(OSError):  # unrecorded: the next run tries again
                write_stamp(b.borrower, state, UNKEPT_STAMP, exc.first_line)
        raise


def _the_walks(exc: GitError, b: Borrowed) -> bool:
    """Whether ``exc`` is git ending by itself on the borrower's history (run in it)."""
    return exc.exited and exc.repo == b.borrower


def keep_borrowers(moved: list[tuple[str, str, str]]) -> list[str]:
    """:func:`keep_borrowed` for each of :func:`router.git.borrowing.borrowers_to_keep`'s moved; what could
    not be kept, one line each (never raised: the callers go on)."""
    failed = []
    for admin, git_dir, source in moved:
        b = Borrowed(Path(git_dir), Path(source), borrow_pin(os.path.basename(admin)))
        try:
            keep_borrowed(b)
        except GitError as exc:
            failed.append(unwalked_warning(git_dir, exc.first_line))
        except OSError as exc:
            failed.append(f"{git_dir}: cannot record what its pins keep ({exc})")
    return failed


# How far back along HEAD's first parents a pin for an unpinned borrower is looked for.
_PIN_SEARCH = 1000


def pin_borrower(b: Borrowed) -> str | None:
    """Pin, in ``b.source``, the newest commit on ``b.borrower``'s HEAD (first parents) that
    ``b.source`` has; that commit, or None when it has none of them. Only while no pin is there.

    For a borrower made without one (by an earlier version): its own commits are
    in its own store, and what they stand on is the source's.
    """
    listed = Runner(b.borrower).run(
        "rev-list", "--first-parent", f"--max-count={_PIN_SEARCH}", "HEAD"
    )
    source = Runner(b.source)
    kinds = _kinds(source, listed.stdout.split())
    oid = next((oid for oid, kind in kinds.items() if kind == "commit"), None)
    if oid is not None:
        source.run("update-ref", "-m", f"team-router: borrowed by {b.borrower}", b.pin, oid, "")
    return oid


def borrow_pins(module: Path, prefix: str = BORROWED_PREFIX) -> dict[str, str]:
    """``ref -> commit`` of the pins under ``prefix`` (every worktree's by default) in the
    (primary's) submodule git dir ``module``."""
    res = Runner(module).run(
        "for-each-ref", "--format=%(refname) %(objectname)", prefix, check=False
    )
    if not res.ok:
        raise res.as_error()
    return dict(line.split(" ", 1) for line in res.stdout.splitlines() if " " in line)


def drop_borrow_pin(module: Path, ref: str, commit: str) -> None:
    """Delete the pin ``ref`` in ``module`` only while it is at ``commit``."""
    Runner(module).run("update-ref", "-d", ref, commit)
