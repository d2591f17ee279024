"""Objects: blobs and trees read, trees and commits written, unreachable ones pruned."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from router.git import files as gitfiles
from router.git.layout import LayoutMethods
from router.git.run import GitError, verified
from router.git.sparse import mark_unmaterialised, unmaterialised


class ObjectMethods(LayoutMethods):
    """Blobs and trees by id or by ``rev:path``."""

    __slots__ = ()

    def blob(self, sha: str) -> bytes:
        """The exact bytes of blob ``sha`` (text mode would turn its CRLFs into LFs)."""
        return self.run_bytes("cat-file", "blob", sha)

    def tree_of(self, rev: str) -> str | None:
        """The tree ``rev`` names, or None when it does not resolve (raises as :meth:`rev_parse`)."""
        return self._about(("tree", rev), lambda: self._tree_of(rev))

    def _tree_of(self, rev: str) -> str | None:
        res = self.run("rev-parse", "-q", "--verify", f"{rev}^{{tree}}", check=False)
        return verified(res)

    def merge_tree(self, ours: str, theirs: str) -> str | None:
        """Tree of a clean ``merge-tree --write-tree`` merge; None on conflict or failure."""
        return self._about(("merge-tree", ours, theirs), lambda: self._merge_tree(ours, theirs))

    def _merge_tree(self, ours: str, theirs: str) -> str | None:
        res = self.run("merge-tree", "--write-tree", ours, theirs, check=False)
        if not res.ok:
            return None
        return res.stdout.splitlines()[0].strip() if res.stdout else None


# Paths from status are file names, never patterns: a file named "*.py" is that file.
_LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}


def index_blobs(git: ObjectMethods, paths: Sequence[str]) -> dict[str, set[str]]:
    """``path -> blobs`` the index holds for ``paths`` (every stage of a conflicted one)."""
    if not paths:
        return {}
    out = git.out("ls-files", "--stage", "-z", "--", *paths, env=_LITERAL)
    found: dict[str, set[str]] = {}
    for entry in out.split("\0"):
        meta, _, path = entry.partition("\t")
        if path:
            found.setdefault(path, set()).add(meta.split()[1])
    return found


def tree_blobs(git: ObjectMethods, rev: str, paths: Sequence[str]) -> dict[str, str]:
    """``path -> blob`` for those of ``paths`` that ``rev`` has."""
    if not paths:
        return {}
    out = git.out("ls-tree", "-r", "-z", rev, "--", *paths, env=_LITERAL)
    found = {}
    for entry in out.split("\0"):
        meta, _, path = entry.partition("\t")
        if path:
            found[path] = meta.split()[2]
    return found


def tree_files(git: ObjectMethods, rev: str) -> dict[str, str]:
    """``path -> blob`` for every file of ``rev``'s tree (gitlinks left out)."""
    out = git.out("ls-tree", "-r", "-z", "--full-tree", rev)
    found = {}
    for entry in out.split("\0"):
        meta, _, path = entry.partition("\t")
        fields = meta.split()
        if path and len(fields) == 3 and fields[1] == "blob":
            found[path] = fields[2]
    return found


def files_below(git: ObjectMethods, rev: str, rel: str) -> tuple[str, ...]:
    """The files ``rev``'s tree holds below the directory ``rel``, relative to it, sorted."""
    out = git.out("ls-tree", "-r", "-z", "--name-only", rev, "--", rel, env=_LITERAL)
    below = [p.removeprefix(f"{rel}/") for p in out.split("\0") if p.startswith(f"{rel}/")]
    return tuple(sorted(below))


HASH_BATCH = 500  # files per hash-object, well below any argv limit


def file_blobs(git: ObjectMethods, files: Sequence[Path]) -> list[str]:
    """The blob each file's bytes would be stored as, as they are on disk (no filters)."""
    blobs: list[str] = []
    for start in range(0, len(files), HASH_BATCH):
        batch = [str(f) for f in files[start : start + HASH_BATCH]]
        blobs += git.out("hash-object", "--no-filters", "--", *batch).split()
    return blobs


def is_cut_short(git: ObjectMethods, file: Path, blob: str) -> bool:
    """``file`` holds the start of ``blob``'s bytes: a git killed while writing it left it so.

    git writes each file front to back, so the one a kill interrupts holds a
    prefix of its content; every byte of it is in the blob, and removing it
    loses nothing.
    """
    try:
        written = file.read_bytes()
    except OSError:
        return False
    try:
        return git.blob(blob).startswith(written)
    except GitError:
        return False


def worktree_blobs(git: ObjectMethods, paths: Sequence[str]) -> dict[str, str]:
    """``path -> blob`` the files at ``paths`` would be stored as (missing files left out)."""
    present = [p for p in paths if os.path.isfile(git.cwd / p)]
    if not present:
        return {}
    return dict(zip(present, git.out("hash-object", "--", *present).split(), strict=True))


def first_blob(git: ObjectMethods, specs: Sequence[str]) -> tuple[str, str] | None:
    """The first of ``rev:path`` specs that names a file: (spec, text), in one process at most.

    Where the repository's files are the plain layout, read from them (each
    object checked against its id); else ``cat-file --batch``.
    """
    if not specs:
        return None
    plain = git.files_layout()
    if plain is not None:
        try:
            return _first_blob_from_files(str(plain.git_dir), str(plain.common_dir), specs)
        except gitfiles.Unsure:
            pass
    res = git.run("cat-file", "--batch", input="".join(f"{s}\n" for s in specs), check=False)
    raw = res.stdout.encode("utf-8", "surrogateescape")
    for spec in specs:
        header, _, raw = raw.partition(b"\n")
        fields = header.split()
        if len(fields) == 3 and fields[1] in {b"blob", b"tree", b"commit", b"tag"}:
            size = int(fields[2])
            body, raw = raw[:size], raw[size + 1 :]
            if fields[1] == b"blob":
                return spec, body.decode("utf-8", "surrogateescape")
    return None


def _first_blob_from_files(
    git_dir: str, common: str, specs: Sequence[str]
) -> tuple[str, str] | None:
    from router.git.objectfiles import ObjectStore

    fmt = gitfiles.files_format(common)
    store = ObjectStore(common, fmt)
    for spec in specs:
        rev, sep, path = spec.partition(":")
        if not sep:
            raise gitfiles.Unsure(f"{spec} names no path")
        if fmt.is_id(rev):
            commit: str | None = rev
        elif gitfiles.readable_ref(rev):
            commit = gitfiles.read_ref(common, git_dir, rev)[0]
        else:
            raise gitfiles.Unsure(f"{rev} is git's to resolve")
        data = store.file_at(commit, path) if commit is not None else None
        if data is not None:
            return spec, data.decode("utf-8", "surrogateescape")
    return None


def moved_gitlinks(git: ObjectMethods, old: str, new: str) -> dict[str, str]:
    """Submodule paths whose recorded commit differs from ``old`` to ``new``: path -> new commit."""
    # A .gitmodules `ignore = all` hides a moved gitlink from diff-tree too.
    out = git.out(
        "diff-tree", "-r", "-z", "--no-renames", "--ignore-submodules=none", old, new, "--"
    )
    fields = out.split("\0")
    moved = {}
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        parts = meta.split()
        if len(parts) == 5 and parts[1] == "160000":
            moved[path] = parts[3]
    return moved


def changed_paths(git: ObjectMethods, old: str, new: str, *, only: str = "") -> set[str]:
    """Paths (top-level relative) that differ between trees (or commits) ``old`` and ``new``.

    ``only``: git's ``--diff-filter`` letters (``A``: the paths only ``new`` has).
    """
    kinds = [f"--diff-filter={only}"] if only else []
    out = git.out("diff-tree", "-r", "-z", "--no-renames", "--name-only", *kinds, old, new, "--")
    return {p for p in out.split("\0") if p}


def snapshot_tree(
    worktree: ObjectMethods,
    index_file: Path,
    *,
    exclude: Sequence[str] = (),
    ignored: Sequence[str] = (),
) -> str:
    """Tree of the worktree's files (untracked included, ignored not) via a private index.

    GIT_INDEX_FILE points at a throw-away file, so the worktree's own index
    (what the user staged) is neither read nor changed. ``exclude`` names
    top-level-relative directories left out (git cannot add a repository
    with no commit, and a nested clone would only become a gitlink).
    ``ignored`` names ignored files that are work all the same (added with
    ``--force``): files only team-router's own info/exclude line hides.
    """
    env = {"GIT_INDEX_FILE": str(index_file)}
    worktree.run("read-tree", "HEAD", env=env)
    # A sparse worktree's files outside its cone were never written: as in its
    # own index they stay as HEAD has them, never recorded as deleted. Every
    # other file is work wherever it lies: --sparse, or `add` would leave out
    # an edit or a new file outside the cone (silently, or failing the snapshot).
    top = worktree.cwd
    mark_unmaterialised(worktree, unmaterialised(worktree, top), index_file)
    skip = [f":(exclude,top,literal){path}" for path in exclude]
    worktree.run("add", "--all", "--sparse", "--", ":/", *skip, env=env)
    if ignored:
        extra = [f":(top,literal){path}" for path in ignored]
        worktree.run("add", "--force", "--sparse", "--", *extra, env=env)
    return worktree.out("write-tree", env=env)


def directory_tree(
    git: ObjectMethods,
    rel: str,
    index_file: Path,
    *,
    work_tree: Path | None = None,
    over: str | None = None,
) -> str:
    """Tree holding ``rel`` alone (a directory of the work tree), ignored files included.

    Through a private index (``GIT_INDEX_FILE``), started empty: the repo's own
    index is neither read nor changed. For a directory git ignores (a plan dir
    under our ``info/exclude`` line), which no commit of the repo holds.
    ``work_tree``: ``rel`` lies in that directory instead (one laid out as a
    checkout that git no longer knows), and the tree holds it at ``rel``.
    ``over``: a tree the files are laid over instead of the empty one: a file
    there and on disk takes the disk's content, one there alone stays.
    """
    env = {"GIT_INDEX_FILE": str(index_file)}
    if work_tree is not None:
        env["GIT_WORK_TREE"] = str(work_tree)
    git.run("read-tree", *([over] if over else ["--empty"]), env=env)
    # --ignore-removal: a file of ``over`` missing on disk is kept, not staged as deleted.
    git.run("add", "--force", "--ignore-removal", "--", f":(top,literal){rel}", env=env)
    return git.out("write-tree", env=env)


def index_tree(worktree: ObjectMethods) -> str:
    """Tree of what is staged in the worktree's own index (as ``git stash`` records it).

    Fails (GitError) while the index has unmerged paths: there is no one tree
    to record until the merge is finished or aborted.
    """
    return worktree.out("write-tree")


def commit_tree(git: ObjectMethods, tree: str, parents: Sequence[str], message: str) -> str:
    """A new commit of ``tree`` with ``parents`` (in order), on no branch."""
    flags = [flag for parent in parents for flag in ("-p", parent)]
    return git.out("commit-tree", tree, *flags, "-m", message)


def commit_all(git: ObjectMethods, message: str) -> str:
    """Stage everything in the checkout and commit it; the new commit's sha."""
    git.run("add", "--all")
    git.run("commit", "--quiet", "--no-verify", "-m", message)
    return git.out("rev-parse", "HEAD")


RECLAIM_TIMEOUT = 600.0  # gc on a large repository takes minutes, not hours


# refs/stash's reflog is the stash list itself (stash@{1} is an entry no newer
# stash reaches): an explicit --expire-unreachable would apply to it too and drop
# every stash but the newest (all of them once older than gc.reflogExpire).
# The expiry is therefore given as config, with refs/stash set to never.
KEEP_STASHES = ("gc.refs/stash.reflogExpire=never", "gc.refs/stash.reflogExpireUnreachable=never")


def reflog_expire_unreachable(git: ObjectMethods) -> None:
    expiry = ("gc.reflogExpireUnreachable=now", *KEEP_STASHES)
    git.run("reflog", "expire", "--all", timeout=RECLAIM_TIMEOUT, config=expiry)


def gc_prune_now(git: ObjectMethods) -> None:
    git.run("gc", "--quiet", "--prune=now", timeout=RECLAIM_TIMEOUT, config=KEEP_STASHES)
