"""Whether a branch is merged (DESIGN §11): the content proof on origin's default branch, with
gh as a second witness that must agree when it can be asked, and whose silence is no answer."""

from __future__ import annotations

from enum import StrEnum

from router.git import Git
from router.github import GhFailed, GitHub, PullRequest, Unavailable
from router.names import Branch
from router.reasons import Reason, Why
from router.records import record
from router.teardown.proof import Proof, cut_from, empty_branch, merge_proof
from router.teardown.wording import in_words
from router.topic.workspace import DefaultBranch, Repo


class GhVerdict(StrEnum):
    AGREED = "agreed"  # a same-repo merged PR with this head commit, merged into the default
    DISAGREED = "disagreed"  # a same-repo PR exists and says otherwise: not merged
    NO_PR = "no-pr"  # gh works and knows no same-repo PR for this branch
    UNAVAILABLE = "unavailable"  # gh missing, unauthenticated or failing: no answer either way
    NOT_ASKED = "not-asked"  # nothing left to prove


@record
class Tips:
    """Where the branch is: its local tip, origin's, and the commit it was cut from (recorded)."""

    local: str | None
    remote: str | None
    base: str | None = None


@record
class Evidence:
    """Why the branch counts as merged (or not): the content proof and what gh said."""

    subject: str | None  # the commit proven (the local tip, else origin's tip)
    content: Proof | None
    target: str  # the ref the content proof was sought on
    gh: GhVerdict
    pr: int | None = None
    # What holds (or why nothing does), then what gh said: each a reason with its facts.
    said: tuple[Why, ...] = ()
    empty: bool = False  # the branch has no commits of its own: there is no merge to prove

    @property
    def detail(self) -> str:
        """The evidence in words (the JSON's ``detail``, pr-cleanup's refusals)."""
        return "; ".join(map(in_words, self.said))

    @property
    def merged(self) -> bool:
        return self.content is not None and self.gh is not GhVerdict.DISAGREED

    def to_json(self) -> dict[str, object]:
        return {
            "content": str(self.content.kind) if self.content else None,
            "target": self.content.target if self.content else self.target,
            "gh": str(self.gh),
            "pr": self.pr,
            "commit": self.subject,
            "merged": self.merged,
            "detail": self.detail,
        }


def prove_merged(
    repo: Repo,
    branch: Branch,
    default: DefaultBranch,
    tips: Tips,
    hub: GitHub | Unavailable,
    named: PullRequest | None,
) -> Evidence:
    """Content proof on origin/<default>, checked against the same-repo PR when gh answers."""
    target = default.remote_ref or f"refs/remotes/origin/{default.name}"
    subject = tips.local or tips.remote
    if subject is None:
        gone = Why(Reason.GONE_EVERYWHERE, branch=branch)
        return Evidence(None, None, target, GhVerdict.NOT_ASKED, said=(gone,))
    if default.remote_ref is None:
        unknown = Why(Reason.NO_ORIGIN_DEFAULT, default=default.name)
        return Evidence(subject, None, target, GhVerdict.NOT_ASKED, said=(unknown,))
    content = merge_proof(repo.git, subject, default.remote_ref)
    base = cut_from(repo.git, branch, tips.base)
    if base is not None and empty_branch(repo.git, subject, base, content):
        # Its tip is an ancestor of every later default branch: that proves no merge.
        empty = Why(Reason.CUT_EMPTY, branch=branch, commit=base)
        return Evidence(subject, None, target, GhVerdict.NOT_ASKED, said=(empty,), empty=True)
    verdict, pr, why = _ask_gh(repo, branch, hub, named, subject, default.remote_ref)
    if content is None and verdict is GhVerdict.AGREED and pr is not None:
        # A squash merge followed by other changes to the same lines defeats the
        # squash proof on today's tip; the PR's own merge commit still shows it.
        merge = pr.merge_commit if pr.merge_commit and repo.git.rev_parse(pr.merge_commit) else None
        content = merge_proof(repo.git, subject, merge) if merge else None
    held = content.why if content else Why(Reason.NO_CONTENT_PROOF, ref=target)
    return Evidence(subject, content, target, verdict, pr.number if pr else None, (held, why))


def _ask_gh(
    repo: Repo,
    branch: Branch,
    hub: GitHub | Unavailable,
    named: PullRequest | None,
    tip: str,
    target: str,
) -> tuple[GhVerdict, PullRequest | None, Why]:
    if isinstance(hub, Unavailable):
        return GhVerdict.UNAVAILABLE, None, Why(Reason.GH_SILENT, parts=(hub.why,))
    try:
        prs = [named] if named is not None else hub.list_by_head(branch)
    except GhFailed as exc:
        return GhVerdict.UNAVAILABLE, None, Why(Reason.GH_SILENT, parts=(exc.why,))
    ours = [p for p in prs if p.same_repo(hub.slug) and p.head_ref == branch]
    forks = tuple(f"#{p.number}" for p in prs if not p.same_repo(hub.slug))
    if not ours:
        return GhVerdict.NO_PR, None, Why(Reason.GH_NO_PR, branch=branch, others=forks)
    for p in ours:
        if p.merged and p.head_oid == tip and _merged_into(repo.git, p.merge_commit, target):
            return GhVerdict.AGREED, p, Why(Reason.GH_AGREES, count=p.number, others=forks)
    why_not = tuple(_why_not(p, tip, target) for p in ours)
    return GhVerdict.DISAGREED, ours[0], Why(Reason.GH_DISAGREES, parts=why_not, others=forks)


def _merged_into(git: Git, merge_commit: str | None, target: str) -> bool:
    if not merge_commit:
        return False
    return git.rev_parse(merge_commit) is not None and git.is_ancestor(merge_commit, target)


def _why_not(p: PullRequest, tip: str, target: str) -> Why:
    """Why PR ``p`` of ours does not show this head merged into ``target``."""
    if not p.merged:
        return Why(Reason.PR_NOT_MERGED, count=p.number, text=p.state.lower())
    if p.head_oid != tip:
        return Why(Reason.PR_OTHER_HEAD, count=p.number, items=(p.head_oid, tip))
    return Why(Reason.PR_MERGED_ELSEWHERE, count=p.number, ref=target)
