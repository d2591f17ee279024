"""The merge proof: whether a branch's work is on the default branch, and how it is known.

A branch is integrated when its commits are reachable from the default branch
(merged), when `git cherry` finds each of them there (cherry-picked or rebased),
or when nothing was committed on it since it was cut (empty); teardown's
integrate and branch steps and pr-cleanup all judge by :func:`integration`.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from router import git as g
from router.git import CherryEntry, Git, GitError
from router.reasons import Reason, Why
from router.records import record
from router.topic.workspace import DefaultBranch


class ProofKind(StrEnum):
    """How a merge is proven; each is also the reason that says it (the same word)."""

    ANCESTOR = "ancestor"  # the branch tip is an ancestor of the target
    PATCHES = "patches"  # every commit's patch is on the target (git cherry)
    SQUASH = "squash"  # merging the branch into the target changes nothing


@record
class Proof:
    kind: ProofKind
    target: str  # the ref the proof holds against

    @property
    def why(self) -> Why:
        """The proof as a reason's part (router.teardown.wording says it)."""
        return Why(Reason(self.kind), ref=self.target)


def merge_proof(git: Git, branch: str, target: str) -> Proof | None:
    """Proof that every change of ``branch`` is already on ``target``, or None.

    Three proofs: ancestry (a merge commit or fast-forward), patch identity
    (a rebase or cherry-pick), and for a squash merge the tree
    ``git merge-tree --write-tree target branch`` yields being the target's
    own tree.
    """
    return _judge(git, branch, target)[0]


def _judge(
    git: Git, branch: str, target: str, target_tree: str | None = None
) -> tuple[Proof | None, list[CherryEntry] | None]:
    """The merge proof and the ``git cherry target branch`` answer it read (None when cherry failed).

    Ancestry goes first where the commits themselves answer it (no process):
    a branch merged on the target needs no ``git cherry`` (it would list
    nothing). Otherwise ``git cherry`` goes first: it lists the non-merge
    commits of ``branch`` that ``target`` does not reach, so a non-empty
    answer already rules out ancestry, and the answer is the one the integrate
    step picks from. An empty one may still hide a merge commit (cherry skips
    merges): only then is git asked about ancestry. ``target_tree``: the
    target's tree, when already read.
    """
    known = git.known_ancestry(branch, target)
    if known:
        return Proof(ProofKind.ANCESTOR, target), []
    try:
        entries: list[CherryEntry] | None = git.cherry(target, branch)
    except GitError:
        entries = None
    if not entries and known is None and git.is_ancestor(branch, target):
        return Proof(ProofKind.ANCESTOR, target), entries
    if entries and all(e.present for e in entries):
        return Proof(ProofKind.PATCHES, target), entries
    tree = target_tree or git.tree_of(target)
    if tree is not None and git.merge_tree(target, branch) == tree:
        return Proof(ProofKind.SQUASH, target), entries
    return None, entries


@record
class Integration:
    """Where a branch's work stands against the repo's default branch."""

    proof: Proof | None
    missing: tuple[str, ...]  # commits whose patches the default branch lacks
    # No commit since the branch was cut: nothing to integrate, and nothing was merged
    # (a tip that is an ancestor of the target proves a merge only of commits it has).
    empty: bool = False

    @property
    def integrated(self) -> bool:
        return self.proof is not None or not self.missing

    def why(self, default: str) -> Why:
        """Why the branch may go: the merge proof, every patch on ``default``, or empty."""
        if self.empty:
            return Why(Reason.NOTHING_SINCE_CUT)
        return self.proof.why if self.proof else Why(Reason.PATCHES, ref=default)


def cut_from(git: Git, branch: str, recorded: str | None) -> str | None:
    """The commit ``branch`` was cut from: the topic record's ``base_commit``, else git's own
    answer, the creation entry of the branch's reflog.

    A record written before it kept the base, or a repo's record made without
    one, must not turn an empty branch into a "merged" one (DESIGN §9): its
    tip, an ancestor of every later default branch, proves no merge. None
    when neither knows: the merge proof alone decides.
    """
    return recorded or g.branch_created_at(git, branch)


def empty_branch(git: Git, tip: str, base: str | None, proof: Proof | None) -> bool:
    """The branch holds no commit of its own: its tip is where it was cut (``base``) or below.

    ``proof``: the merge proof found for ``tip``. A tip below its base is an
    ancestor of the target too, so only with an ancestry proof is git asked.
    Without the base (neither a record nor git's reflog knows it, see
    :func:`cut_from`) this cannot be told from a fast-forward merge, and False
    is answered: the merge proof decides.
    """
    if base is None:
        return False
    if tip == base:
        return True
    return proof is not None and proof.kind is ProofKind.ANCESTOR and git.is_ancestor(tip, base)


def integration(
    git: Git,
    tip: str,
    default: DefaultBranch,
    refs: Mapping[str, g.RefTip] | None = None,
    *,
    base: str | None = None,
) -> Integration:
    """Empty, merged on origin or on the local default branch, else the commits still missing.

    ``refs``: the repo's refs with their commits and trees, when the caller
    read them already. Then a target at the same commit as one already judged
    (origin's and the local default branch, right after a fetch) is not judged
    again, and the local target's ``git cherry`` answer is the missing list.
    ``base``: the commit the topic's branch was cut from (its record's).
    """
    if empty_branch(git, tip, base, None):
        return Integration(None, (), empty=True)
    refs = refs or {}
    targets = [ref for ref in (default.remote_ref, default.local_ref) if ref]
    judged: dict[str, list[CherryEntry] | None] = {}  # target commit (or ref) -> its cherry
    for ref in targets:
        known = refs.get(ref)
        key = known.commit if known else ref
        if key in judged:
            continue  # same commit as a target judged above: same answer
        proof, entries = _judge(git, tip, ref, known.tree if known else None)
        if proof is not None:
            return Integration(proof, (), empty=empty_branch(git, tip, base, proof))
        judged[key] = entries
    upstream = default.local_ref or default.remote_ref or default.best_ref
    known = refs.get(upstream)
    entries = judged.get(known.commit if known else upstream)
    if entries is None:
        entries = git.cherry(upstream, tip)  # never judged, or its cherry failed: ask (and raise)
    missing = tuple(e.sha for e in entries if not e.present)
    return Integration(None, missing)
