"""Repositories inside a worktree — initialised submodules, nested clones — and their work (DESIGN §9).

Removing a worktree deletes every repository inside it: a nested clone's
``.git`` directory, a bare repository, and in a linked worktree a
submodule's git dir as well (git keeps it under
``<common>/worktrees/<name>/modules/``). A snapshot of the worktree records
such a repository only as a gitlink, so its work is judged on its own:
uncommitted changes, untracked files, and commits that no remote-tracking
ref of its own reaches (reflog entries included; a remote whose local path
is gone reaches nothing). Any of those makes teardown refuse, ``--force`` or
not, naming the repository; one that holds none goes with the worktree (its
commits are on its remote). A checkout whose repository lives outside the
worktree (a linked worktree of another repository) loses only its files and
the commits its HEAD alone reaches.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path

from router import git as g
from router.fsutil import files_under
from router.git import Git, GitError, StatusReport
from router.reasons import Reason, Why
from router.records import field, record


class NestedKind(StrEnum):
    SUBMODULE = "submodule"
    CLONE = "nested repository"
    MODULE = "submodule git dir"  # kept by the worktree's git dir, not checked out
    BARE = "nested bare repository"  # a git dir with no checkout (``git clone --bare``)
    UNINITIALISED = "uninitialised submodule"  # its directory holds files git does not see


@record
class NestedRepo:
    # Where it is: relative to the worktree; for a submodule git dir, its absolute path.
    rel: str
    kind: NestedKind
    status: StatusReport = field(default_factory=StatusReport)
    unpushed: int = 0  # commits (reflogs included) no live remote-tracking ref of its own reaches
    problem: Why | None = None  # why it could not be inspected (then it counts as holding work)
    git_dir: Path | None = None
    gone: tuple[str, ...] = ()  # its remotes whose local path is gone: they keep nothing

    @property
    def holds_work(self) -> bool:
        return bool(self.problem) or self.status.dirty or self.unpushed > 0


def survey_nested(worktree: Path, files: list[str] | None = None) -> tuple[NestedRepo, ...]:
    """Every repository removing ``worktree`` would delete, with what it would lose.

    Those are the checkouts below it and the submodule git dirs its own git
    dir keeps (``modules/``), checked out or not: a submodule that was
    deinitialised or ``git rm``-ed leaves its git dir, commits and all, there.
    Raises OSError when a directory cannot be read: a repository there could
    not be ruled out. ``files``: filled with the files the walk passed (see
    :func:`repositories_below`).
    """
    # The worktree's own .git names its git dir; git is asked only when it does not.
    git_dir = Git(worktree).git_dir()
    doomed = (Path(os.path.realpath(worktree)), Path(os.path.realpath(git_dir)))
    found, bare = repositories_below(worktree, files)
    # Every gitlink, .gitmodules or not: `git add` of a nested repository makes
    # one that no .gitmodules names, and its directory hides files all the same.
    gitlinks = Git(worktree).gitlinks(git_dir)
    submodules = set(found) & set(gitlinks)
    repos = _judged(worktree, doomed, found, untracked_bare(worktree, found, bare), submodules)
    seen = {r.git_dir for r in repos if r.git_dir is not None}
    repos += _uninitialised(worktree, gitlinks, found)
    return (*repos, *_modules_of(git_dir, seen, doomed))


def _uninitialised(worktree: Path, gitlinks: list[str], checkouts: list[str]) -> list[NestedRepo]:
    """Uninitialised submodules whose directory holds files: ``git status`` lists none of them.

    git does not look inside a gitlink's directory with no repository in it,
    so neither its dirty check nor a snapshot's ``add --all`` sees a file put
    there, and removing the worktree deletes it.
    """
    found = []
    for rel in gitlinks:
        path = worktree / rel
        if rel in checkouts or path.is_symlink() or not path.is_dir():
            continue
        # Unreadable raises: the survey then says it could not rule a repository out.
        files = files_under(path, raise_unreadable=True)
        if files:
            found.append(NestedRepo(rel, NestedKind.UNINITIALISED, StatusReport((), files)))
    return found


def survey_registration(common_dir: Path, worktree: Path) -> tuple[NestedRepo, ...]:
    """The submodule git dirs the registration of a worktree whose directory is gone still keeps.

    Deleting the directory by hand leaves ``<common>/worktrees/<name>/modules/``
    behind, commits and all; unregistering the worktree deletes it.
    """
    admin = g.registration_of(str(common_dir), str(worktree))
    if admin is None:
        return ()
    return _modules_of(Path(admin), set(), (Path(os.path.realpath(admin)),))


def survey_at(common_dir: Path, worktree: Path, *, live: bool) -> tuple[NestedRepo, ...]:
    """The repositories inside ``worktree``: read in it while it is there and ours to read
    (``live``), else what removing it would still delete (:func:`survey_remains`)."""
    return survey_nested(worktree) if live else survey_remains(common_dir, worktree)


def survey_remains(common_dir: Path, worktree: Path) -> tuple[NestedRepo, ...]:
    """What finishing a removal a kill interrupted deletes: the repositories in what is
    left of the worktree, and the submodule git dirs its registration still keeps.

    git deletes the files first and the registration (``modules/`` with it)
    last. A commit made in a submodule after the removal was proven safe
    lands in that git dir, outside the worktree, where no file's date shows
    it; the worktree's own ``.git`` may be gone, so git is not asked where
    its git dir is (it would answer for the repository around it).
    """
    if not os.path.isdir(worktree):
        return survey_registration(common_dir, worktree)
    admin = g.registration_of(str(common_dir), str(worktree))
    doomed = [Path(os.path.realpath(worktree))]
    doomed += [Path(os.path.realpath(admin))] if admin is not None else []
    found, bare = repositories_below(worktree)
    if g.checkout_git_dir(worktree) is not None:
        # Else its index is not at hand: every bare repository is judged, none known tracked.
        bare = untracked_bare(worktree, found, bare)
    submodules = {rel for rel in found if _kept_by(worktree / rel, admin)} if admin else set()
    repos = _judged(worktree, tuple(doomed), found, bare, submodules)
    seen = {r.git_dir for r in repos if r.git_dir is not None}
    return (*repos, *(_modules_of(Path(admin), seen, tuple(doomed)) if admin is not None else ()))


def _kept_by(checkout: Path, admin: str) -> bool:
    """The checkout's git dir is under the registration's ``modules/``: a submodule of the worktree."""
    git_dir = g.checkout_git_dir(checkout)
    modules = Path(os.path.realpath(admin)) / "modules"
    return git_dir is not None and Path(os.path.realpath(git_dir)).is_relative_to(modules)


def _modules_of(git_dir: Path, seen: set[Path], doomed: tuple[Path, ...]) -> tuple[NestedRepo, ...]:
    modules = git_dir / "modules"
    if not os.path.isdir(modules):
        return ()
    return tuple(
        _inspect_git_dir(d, NestedKind.MODULE, str(d), doomed=doomed)
        for d in module_git_dirs(modules)
        if d.resolve() not in seen
    )


def survey_directory(directory: Path) -> tuple[NestedRepo, ...]:
    """Every repository below a directory no checkout tracks (an in-place plan dir), as deleting it would find them.

    Raises OSError when a directory cannot be read, as :func:`survey_nested`.
    """
    found, bare = repositories_below(directory)
    return tuple(_judged(directory, (Path(os.path.realpath(directory)),), found, bare))


def _judged(
    directory: Path,
    doomed: tuple[Path, ...],
    checkouts: list[str],
    bare: list[str],
    submodules: set[str] | frozenset[str] = frozenset(),
) -> list[NestedRepo]:
    """The checkouts below ``directory`` (submodules among them), then the bare repositories
    none of them is the git dir of, each with what removing ``doomed`` would lose."""
    repos = [
        _inspect(
            directory,
            rel,
            NestedKind.SUBMODULE if rel in submodules else NestedKind.CLONE,
            doomed=doomed,
        )
        for rel in checkouts
    ]
    seen = {r.git_dir for r in repos if r.git_dir is not None}
    return repos + [
        _inspect_git_dir(directory / rel, NestedKind.BARE, rel, doomed=doomed)
        for rel in bare
        if (directory / rel).resolve() not in seen
    ]


def outer_clones(repos: tuple[NestedRepo, ...]) -> tuple[str, ...]:
    """The nested clones and bare repositories no other checkout contains, to leave out of a snapshot.

    git takes no pathspec beyond a repository, and a snapshot keeps a clone
    only as a gitlink; a bare repository's files would come back without the
    empty ``refs/`` git needs to see a repository there. Those reaching here
    hold nothing unpushed: they go with the worktree.
    """
    checkouts = [r.rel for r in repos if r.kind in (NestedKind.SUBMODULE, NestedKind.CLONE)]
    return tuple(
        r.rel
        for r in repos
        if r.kind in (NestedKind.CLONE, NestedKind.BARE)
        and not any(r.rel.startswith(f"{c}/") for c in checkouts)
    )


@record
class Departed:
    """A repository that goes with the worktree (nothing unpushed): where to get it back."""

    rel: str
    url: str  # its origin ("" when it has none)
    head: str  # the commit it had checked out ("" when unknown)
    bare: bool = False


def departed(
    worktree: Path, repos: tuple[NestedRepo, ...], rels: tuple[str, ...]
) -> tuple[Departed, ...]:
    """Origin and HEAD of the repositories at ``rels``, for the snapshot that leaves them out."""
    kinds = {r.rel: r.kind for r in repos}
    found = []
    for rel in rels:
        git = Git(worktree / rel)
        try:
            url, head = git.remote_url("origin") or "", git.head() or ""
        except GitError:
            url, head = "", ""
        found.append(Departed(rel, url, head, kinds.get(rel) is NestedKind.BARE))
    return tuple(found)


def _fail(exc: OSError) -> None:
    raise exc


def repositories_below(
    worktree: Path, files: list[str] | None = None
) -> tuple[list[str], list[str]]:
    """The checkouts below ``worktree`` (a ``.git`` entry) and the bare repositories, relative.

    A bare repository (``HEAD``, ``objects/`` and ``refs/`` with no ``.git``)
    is as much a repository as a clone, and one in an ignored directory
    is not even in ``git status``: removing the worktree deletes its commits.

    The whole tree is walked, ignored directories included: ``git status``
    shows a nested clone only as ``?? dir/`` and one under an ignored
    directory not at all, yet removing the worktree deletes both. Symlinks
    are not followed (removing the worktree deletes the link, not what it
    points to), and a git dir is not entered. One ``scandir`` per directory
    and nothing else: teardown walks every worktree twice (plan and act), and
    ``os.walk`` spent twice as long sorting each directory's entries into
    lists this never reads. An unreadable directory raises OSError: a
    repository there could not be ruled out.

    ``files``: filled with every entry passed that is not a directory (a
    ``.git`` file, a symlink), relative; not those inside a repository's git
    dir, which is not entered. The removal's journal takes them from here
    rather than walking the worktree once more.
    """
    found: list[str] = []
    bare: list[str] = []
    pending = [(str(worktree), "")]  # (path, relative path), a stack: outermost first
    while pending:
        path, rel = pending.pop()
        subdirs = []
        has_git = has_head = False
        prefix = f"{rel}/" if rel else ""
        with os.scandir(path) as entries:
            for entry in entries:
                name = entry.name
                # Inline, not a function: this runs once per file of the worktree.
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if is_dir:
                    if name == ".git":
                        has_git = True  # git finds a repository there: not entered
                    else:
                        subdirs.append(name)
                    continue
                if name == ".git":
                    has_git = True  # a file or a link: git finds it there too
                elif name == "HEAD":
                    has_head = True
                if files is not None:
                    files.append(prefix + name)
        if rel and not has_git and has_head and {"objects", "refs"} <= set(subdirs):
            bare.append(rel)  # a git dir: like a checkout's .git, not entered
            continue
        if has_git and rel:
            found.append(rel)
        subdirs.sort(reverse=True)  # popped in name order
        pending += [(f"{path}/{name}", f"{rel}/{name}" if rel else name) for name in subdirs]
    return found, bare


def untracked_bare(worktree: Path, checkouts: list[str], bare: list[str]) -> list[str]:
    """Those of ``bare`` whose files no checkout tracks: a committed fixture comes back with its branch."""
    loose = []
    for rel in bare:
        owner = max((c for c in checkouts if rel.startswith(f"{c}/")), key=len, default="")
        inner = rel[len(owner) + 1 :] if owner else rel
        try:
            tracked = g.index_blobs(Git(worktree / owner if owner else worktree), [f"{inner}/HEAD"])
        except GitError:
            tracked = {}  # the checkout around it could not answer: judge the repository itself
        if not tracked:
            loose.append(rel)
    return loose


def module_git_dirs(modules: Path) -> list[Path]:
    """The git dirs under a ``modules/`` directory (a name with ``/`` nests; so do their own)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(modules, onerror=_fail):
        if "HEAD" in filenames and "objects" in dirnames:
            found.append(Path(dirpath))
            # Inside a git dir only its own modules/ can hold more git dirs.
            dirnames[:] = ["modules"] if "modules" in dirnames else []
        else:
            dirnames.sort()
    return found


def _inspect(worktree: Path, rel: str, kind: NestedKind, *, doomed: tuple[Path, ...]) -> NestedRepo:
    """A checkout below the worktree; ``doomed``: the directories removing the worktree deletes."""
    path = worktree / rel
    git = Git(path)
    try:
        # A .git git cannot use makes git look further up and answer for the
        # worktree itself: only an answer about this very directory counts.
        layout = git.try_layout()
        if layout is None or layout.toplevel != Path(os.path.realpath(path)):
            return NestedRepo(rel, kind, problem=Why(Reason.NOT_A_REPOSITORY))
        if not any(layout.common_dir.is_relative_to(d) for d in doomed):
            # Its repository lives elsewhere (a linked worktree of another
            # repository, a clone made with --separate-git-dir) and keeps its
            # commits; only the files and the commits its HEAD alone reaches
            # (dropped when git prunes the missing checkout) go.
            unpushed = g.commits_only_head_reaches(git)
            return NestedRepo(rel, kind, git.status(), unpushed, git_dir=layout.git_dir)
        orphaned = _orphaned(layout.common_dir, doomed)
        if orphaned:
            return NestedRepo(rel, kind, problem=orphaned)
        gone = tuple(g.gone_remotes(git))
        unpushed = g.commits_on_no_remote(git, gone=gone)
        return NestedRepo(rel, kind, git.status(), unpushed, git_dir=layout.git_dir, gone=gone)
    except GitError as exc:
        return NestedRepo(rel, kind, problem=Why(Reason.NOT_INSPECTED, text=exc.first_line))


def _orphaned(common_dir: Path, doomed: tuple[Path, ...]) -> Why | None:
    """Why removing a doomed repository would orphan checkouts of it elsewhere (None: none)."""
    elsewhere = _checkouts_outside(common_dir, doomed)
    return Why(Reason.ORPHANS, items=tuple(elsewhere)) if elsewhere else None


def _checkouts_outside(common_dir: Path, doomed: tuple[Path, ...]) -> list[str]:
    """The linked worktrees of a doomed repository that live outside the doomed directories.

    Their files would stay, but their HEAD, index and branches go with the
    repository: git no longer knows them.
    """
    found = []
    for _admin, dotgit in g.registrations(str(common_dir)):
        if not dotgit or not os.path.lexists(dotgit):
            continue  # a registration whose checkout is gone holds no files
        real = Path(os.path.realpath(dotgit))
        if not any(real.is_relative_to(d) for d in doomed):
            found.append(os.path.dirname(dotgit))
    return found


def _inspect_git_dir(
    git_dir: Path, kind: NestedKind, where: str, *, doomed: tuple[Path, ...]
) -> NestedRepo:
    """A git dir nothing here checks out (a submodule's, a bare repository): its commits can be
    lost, and the linked worktrees it has outside ``doomed`` (as a nested clone's)."""
    # A submodule's git dir names its checkout (core.worktree), and git stops
    # when that is gone (deleted by hand): its commits are read all the same.
    where_git = str(git_dir)
    git = Git(git_dir, {"GIT_DIR": where_git, "GIT_WORK_TREE": where_git})
    try:
        if g.absolute_git_dir(git) != git_dir.resolve():
            return NestedRepo(where, kind, problem=Why(Reason.NOT_A_REPOSITORY))
        orphaned = _orphaned(git_dir.resolve(), doomed)
        if orphaned:
            return NestedRepo(where, kind, problem=orphaned)
        gone = tuple(g.gone_remotes(git))
        unpushed = g.commits_on_no_remote(git, gone=gone)
        return NestedRepo(where, kind, unpushed=unpushed, git_dir=git_dir.resolve(), gone=gone)
    except GitError as exc:
        return NestedRepo(where, kind, problem=Why(Reason.NOT_INSPECTED, text=exc.first_line))
