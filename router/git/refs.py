"""Refs: branches, HEAD, symbolic refs, and moving or deleting one only from where it was."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from router.git import files as gitfiles
from router.git.layout import LayoutMethods
from router.git.run import GitError, verified
from router.names import Branch, Sha, cast
from router.records import record


class RefMethods(LayoutMethods):
    """What refs name, read from git's files where the layout is plain."""

    __slots__ = ()

    def current_branch(self) -> Branch | None:
        """Short name of the checked-out branch; None when detached."""
        res = self.run("symbolic-ref", "-q", "--short", "HEAD", check=False)
        return Branch(res.stdout.strip()) or None if res.ok else None

    def checked_out_branch(self, git_dir: Path) -> Branch | None:
        """The branch of the checkout at cwd, whose git dir is ``git_dir``: as its ``HEAD`` file
        names it, else git's own answer (a reftable, a detached or unreadable ``HEAD``)."""
        return (
            cast("Branch | None", gitfiles.head_branch(str(git_dir / "HEAD")))
            or self.current_branch()
        )

    def head(self) -> Sha | None:
        return self.rev_parse("HEAD")

    def head_commit(self) -> Sha:
        """The commit HEAD names; raises GitError when it names none (an unborn branch)."""
        return Sha(self.out("rev-parse", "--verify", "HEAD"))

    def rev_parse(self, rev: str) -> Sha | None:
        """The commit ``rev`` names, or None when it does not resolve.

        Raises GitError when git could not answer (not a repository, a
        corrupt one): a failed read is never "there is no such commit".
        """
        return self._about(("rev-parse", rev), lambda: self._rev_parse(rev))

    def _rev_parse(self, rev: str) -> Sha | None:
        res = self.run(
            "rev-parse", "-q", "--verify", "--end-of-options", f"{rev}^{{commit}}", check=False
        )
        return cast("Sha | None", verified(res))

    def commits(self, revs: Sequence[str]) -> dict[str, Sha | None]:
        """What :meth:`rev_parse` answers for each of ``revs``: from git's files, or one process.

        Full names of branches and remote-tracking refs, and ``HEAD``, are read
        from git's files when the checkout at cwd is in the plain layout
        (:func:`gitfiles.read_ref`). Anything else is one git process for all:
        ``cat-file --batch-check`` resolves each line as ``rev-parse --verify``
        does and answers "<rev> missing" for one that does not resolve, where a
        single ``rev-parse`` with several revisions stops at the first such one.
        """
        if not revs:
            return {}
        return self._about(("commits", *revs), lambda: self._commits(revs))

    def _commits(self, revs: Sequence[str]) -> dict[str, Sha | None]:
        # Read from the files, a ref naming an object the repository lacks (a
        # corrupt repo: git writes a ref only after its object) is answered as
        # that id, where ``rev-parse --verify`` answers None. Left unchecked on
        # purpose, as no caller can lose work by it; each errs towards "it
        # exists". Creation keeps such a branch (branch_created stays False, so
        # teardown never deletes it) and refuses a half-made worktree whose
        # branch left its base; its id then reaches git (worktree add, ls-tree,
        # merge-base), which fails on the missing object. A branch deleted at
        # its recorded base loses only the ref (the record keeps the id). A
        # .teamteardown pin at such an id finds no file, so no line runs, as
        # reading that ref unpinned would. A new caller that deletes on
        # "absent", or proves a merge from this answer, must ask git instead.
        plain = self._plain_layout() if all(map(gitfiles.readable_ref, revs)) else None
        if plain is not None:
            # Branches, remote-tracking refs and HEAD: from git's files, no process.
            try:
                return cast(
                    "dict[str, Sha | None]", gitfiles.read_refs(plain[2], plain[1], list(revs))
                )
            except gitfiles.Unsure:
                pass
        if any("\n" in rev for rev in revs):
            return {rev: self.rev_parse(rev) for rev in revs}  # one per line: never split one
        lines = "".join(f"{rev}^{{commit}}\n" for rev in revs)
        out = self.run(
            "cat-file", "--batch-check=%(objectname) %(objecttype)", input=lines
        ).stdout.splitlines()
        if len(out) != len(revs):
            raise GitError(["git", "cat-file"], 128, "unexpected --batch-check answer")
        found: dict[str, Sha | None] = {}
        for rev, line in zip(revs, out, strict=True):
            sha, _, kind = line.partition(" ")
            found[rev] = Sha(sha) if kind == "commit" else None
        return found

    def existing_refs(self, refs: Sequence[str]) -> set[str]:
        """Which of the given full ref names exist (one process for all)."""
        if not refs:
            return set()
        return self._recall(("existing", *refs), lambda: self._for_each_ref_names(refs))

    def _for_each_ref_names(self, refs: Sequence[str]) -> set[str]:
        out = self.out("for-each-ref", "--format=%(refname)", "--", *refs)
        return set(out.splitlines())

    def ref_tips(self, *prefixes: str, trees: bool = False) -> dict[str, RefTip]:
        """Every ref under ``prefixes`` -> its commit, its symref target and, with ``trees``,
        its commit's tree ("" unless asked): from git's files, or one process."""
        key = ("ref-tips-with-trees" if trees else "ref-tips", *prefixes)
        return self._recall(key, lambda: self._ref_tips(prefixes, trees))

    def _ref_tips(self, prefixes: Sequence[str], trees: bool) -> dict[str, RefTip]:
        plain = self._plain_layout()
        if plain is not None:
            # A few refs are read from git's files sooner than a process lists them.
            try:
                refs = gitfiles.refs_under(plain[2], tuple(prefixes), _READ_TIPS_MAX)
                return _with_trees(plain[2], refs) if trees else _tips(refs, {})
            except gitfiles.Unsure:
                pass
        # %(tree) makes git read each commit: asked for only when wanted.
        tree = "%(tree)" if trees else ""
        fields = f"--format=%(refname)%00%(objectname)%00{tree}%00%(symref)"
        out = self.out("for-each-ref", fields, "--", *prefixes)
        tips = {}
        for line in out.splitlines():
            name, sha, tree_id, target = [*line.split("\0"), "", "", ""][:4]
            tips[name] = RefTip(Sha(sha), tree_id, target)
        return tips

    def branch_exists(self, branch: str) -> bool:
        """Whether ``refs/heads/<branch>`` exists: from git's files where the layout is plain
        (as :meth:`commits` reads it, erring towards "it exists" for a branch whose commit
        the repository lacks, as every caller may), else ``show-ref``."""
        ref = f"refs/heads/{branch}"
        plain = self._plain_layout() if gitfiles.readable_ref(ref) else None
        if plain is not None:
            try:
                return gitfiles.read_ref(plain[2], plain[1], ref)[0] is not None
            except gitfiles.Unsure:
                pass
        return self._recall(
            ("show-ref", ref), lambda: self.says_yes("show-ref", "--verify", "--quiet", "--", ref)
        )

    def local_branches(self) -> list[Branch]:
        return self._recall(("local-branches",), self._local_branches)

    def _local_branches(self) -> list[Branch]:
        out = self.out("for-each-ref", "--format=%(refname:short)", "refs/heads/")
        return [Branch(b) for b in out.splitlines() if b]

    def check_ref_format_branch(self, name: str) -> bool:
        return self.ok("check-ref-format", "--branch", name)

    def branch_delete(self, branch: str) -> None:
        self.run("branch", "-D", "--", branch)

    def branch_delete_at(self, branch: str, tip: str) -> bool:
        """Delete ``branch`` only while it points at ``tip`` (git checks and deletes atomically).

        False when the branch has moved (or is gone): nothing was deleted. The
        caller checks first that no checkout has the branch (``git branch -D``
        would refuse) and drops its ``branch.<name>`` config section.
        """
        try:
            self.run("update-ref", "-d", f"refs/heads/{branch}", tip)
        except GitError as exc:
            if "but expected" in exc.stderr or "unable to resolve reference" in exc.stderr:
                return False
            raise
        return True


def update_ref(git: RefMethods, ref: str, new: str, *, old: str | None, message: str) -> None:
    """Move ``ref`` to ``new`` only while it is at ``old`` (None: only while it does not exist).

    git checks the old value under the ref's lock: a ref another process moved
    since it was read is never overwritten unseen (the command fails instead).
    """
    # --create-reflog: the ref's history is kept too (what a reflog can add to
    # what the new commit already holds of the old one).
    git.run("update-ref", "--create-reflog", "-m", message, ref, new, old or "")


@record
class RefTip:
    """Where one ref points: its commit, that commit's tree, and its symref target."""

    commit: Sha
    tree: str  # the commit's tree ("" when the ref names no commit)
    symref: str  # the symref's target, "" for a plain ref


# More refs than this: one git process lists them sooner than reading each commit here.
_READ_TIPS_MAX = 64


def _tips(refs: dict[str, tuple[str, str]], trees: dict[str, str]) -> dict[str, RefTip]:
    return {
        name: RefTip(Sha(oid), trees.get(oid, ""), target) for name, (oid, target) in refs.items()
    }


def _with_trees(common: str, refs: dict[str, tuple[str, str]]) -> dict[str, RefTip]:
    """The tips with their commits' trees, read from the object store (no process)."""
    from router.git.objectfiles import ObjectStore  # only a caller wanting trees loads it

    store = ObjectStore(common, gitfiles.files_format(common))
    return _tips(
        refs, {oid: store.commit_tree(oid) or "" for oid in {oid for oid, _ in refs.values()}}
    )
