"""History: ancestry, merge bases, commit ranges and what a commit records."""

from __future__ import annotations

import os

from router.git import files as gitfiles
from router.git.layout import LayoutMethods
from router.names import Sha
from router.records import record


@record
class CherryEntry:
    """One line of ``git cherry``: a commit and whether upstream has its patch."""

    sha: Sha
    present: bool  # True when an equivalent patch is already upstream ("-")


# Commits read from the object store, each way, before git is asked instead: a topic
# branch's few commits, or a merge of it a few commits down the default branch.
_ANCESTRY_READ_MAX = 64


class HistoryMethods(LayoutMethods):
    """Ancestry and commit ranges."""

    __slots__ = ()

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        return self._about(
            ("is-ancestor", ancestor, descendant), lambda: self._is_ancestor(ancestor, descendant)
        )

    def _is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """From the object store when it answers near the two commits, else ``merge-base``."""
        known = self.known_ancestry(ancestor, descendant)
        if known is not None:
            return known
        return self.ok("merge-base", "--is-ancestor", ancestor, descendant)

    def known_ancestry(self, ancestor: str, descendant: str) -> bool | None:
        """:meth:`is_ancestor` as the object store answers it with no git process; None when
        it does not (the commits far apart, a layout or history read only by git)."""
        plain = self._plain_layout()
        if plain is None:
            return None
        try:
            return _ancestry_from_files(plain[1], plain[2], ancestor, descendant)
        except gitfiles.Unsure:
            return None

    def count_commits(self, range_: str) -> int:
        return self._about(
            ("count", range_), lambda: int(self.out("rev-list", "--count", range_, "--") or 0)
        )

    def cherry(self, upstream: str, head: str) -> list[CherryEntry]:
        """``git cherry upstream head``: commits of head and whether upstream has their patch."""
        return self._about(("cherry", upstream, head), lambda: self._cherry(upstream, head))

    def _cherry(self, upstream: str, head: str) -> list[CherryEntry]:
        out = self.out("cherry", upstream, head)
        entries = []
        for line in out.splitlines():
            sign, _, sha = line.partition(" ")
            entries.append(CherryEntry(Sha(sha.strip()), sign == "-"))
        return entries


def _ancestry_from_files(git_dir: str, common: str, ancestor: str, descendant: str) -> bool:
    """``git merge-base --is-ancestor``'s answer from the commits themselves, each read checked
    against its id; Unsure when not found near them, or where git would not read raw parents.

    Both commits are read. ``descendant``'s parents are walked first: ``ancestor`` among them is a yes, and
    running out of them a no. Then ``ancestor``'s: ``descendant`` among them (another
    commit) is a no, as history has no cycle. A graft or shallow file, or a replace ref,
    changes the parents git sees: git is asked.
    """
    from router.git.objectfiles import ObjectStore, reaches

    if any(os.path.lexists(os.path.join(common, f)) for f in ("shallow", "info/grafts")) or any(
        v in os.environ for v in ("GIT_GRAFT_FILE", "GIT_SHALLOW_FILE")
    ):
        raise gitfiles.Unsure("grafts or a shallow history: git's parents, not the commits'")
    fmt = gitfiles.files_format(common)
    ids = [_commit_id(git_dir, common, fmt, rev) for rev in (ancestor, descendant)]
    store = ObjectStore(common, fmt)
    # The ancestor is read too (Unsure unless a commit that hashes to its id): an annotated
    # tag is git's to peel, and a commit missing or corrupt is no ancestor git would find,
    # though its descendant names it.
    for parent in store.parents(ids[0]):  # git's walk reads the ancestor's parents too
        store.parents(parent)
    found = reaches(store, ids[1], ids[0], limit=_ANCESTRY_READ_MAX)
    if found is not None:
        return found
    if ids[0] != ids[1] and reaches(store, ids[0], ids[1], limit=_ANCESTRY_READ_MAX):
        return False
    raise gitfiles.Unsure("neither commit is near the other")


def _commit_id(git_dir: str, common: str, fmt: gitfiles.RepoFormat, rev: str) -> str:
    """The object id ``rev`` names: an id itself, or a branch or remote-tracking ref's."""
    if fmt.is_id(rev):
        return rev
    found = gitfiles.read_ref(common, git_dir, rev)[0] if gitfiles.readable_ref(rev) else None
    if found is None:
        raise gitfiles.Unsure(f"{rev} is git's to resolve")
    return found


def unique_commits(git: HistoryMethods, tip: str, *, except_branch: str | None) -> int:
    """Commits reachable from ``tip`` and from no branch, tag or remote ref but ``except_branch``."""
    args = ["rev-list", "--count", tip, "--not"]
    if except_branch:
        # --exclude applies to the next --branches, and there it matches the
        # short name (a refs/heads/ pattern silently matches nothing): the
        # branch about to be deleted must not count as "elsewhere".
        args.append(f"--exclude={except_branch}")
    args += ["--branches", "--tags", "--remotes", "--"]
    return int(git.out(*args) or 0)


def commits_only_head_reaches(git: HistoryMethods) -> int:
    """Commits the checkout's HEAD reaches that no ref does (work on a detached HEAD)."""
    # --glob=* is every ref under refs/ and, unlike --all, no HEAD.
    # --ignore-missing: an unborn HEAD reaches nothing.
    out = git.out("rev-list", "--count", "--ignore-missing", "HEAD", "--not", "--glob=*", "--")
    return int(out or 0)


def commit_parents(git: HistoryMethods, commit: str) -> list[str]:
    """The parents of ``commit``, in order (raises GitError when git cannot say)."""
    return git.out("rev-list", "--parents", "--max-count=1", commit, "--").split()[1:]


def commit_message(git: HistoryMethods, commit: str) -> str:
    return git.run("log", "-1", "--format=%B", commit, "--").stdout


def log_subjects(git: HistoryMethods, rev: str, *, limit: int) -> list[str]:
    """The subjects of the last ``limit`` commits reachable from ``rev``, newest first."""
    out = git.out("log", f"--max-count={limit}", "--format=%s", "--end-of-options", rev, "--")
    return [line for line in out.splitlines() if line]


# How far back the default branch's history is read for the commits a gitlink used to name.
GITLINK_HISTORY = 50


def former_gitlinks(git: HistoryMethods, path: str, *, limit: int = GITLINK_HISTORY) -> set[str]:
    """The commits HEAD's first-parent history recorded at gitlink ``path`` before it moved.

    Read from ``git log --raw``: each change of the gitlink names its old value.
    """
    log = ("log", "--first-parent", f"--max-count={limit}", "--format=", "--raw", "--no-abbrev")
    out = git.out(*log, "HEAD", "--", path, env={"GIT_LITERAL_PATHSPECS": "1"})
    found = set()
    for line in out.splitlines():
        fields = line.partition("\t")[0].split()
        if len(fields) >= 4 and fields[0] == ":160000" and fields[2].strip("0"):
            found.add(fields[2])
    return found
