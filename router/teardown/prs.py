"""The PR of the branch pr-cleanup takes apart: the one the target names, and the ones
``--abandon`` closes (DESIGN §11)."""

from __future__ import annotations

import re
from pathlib import Path

from router import github
from router.errors import ErrorCode, RouterError
from router.git import Git, GitError
from router.github import GhFailed, GitHub, PullRequest, Unavailable
from router.names import Branch
from router.plandir.artifacts import PR as PR_FILE
from router.plandir.artifacts import recorded_prs
from router.reasons import Reason, Why
from router.records import record
from router.teardown.steps import Decision, Step, StepResult, acting, done, failed, settled, skipped
from router.topic import state
from router.topic.branches import branch_topic, validate_branch
from router.topic.target import resolve
from router.topic.workspace import Repo

PR_NUMBER_RE = re.compile(r"[0-9]{1,10}")
MAX_STACK = 20  # stacked PRs deeper than this are not followed (and a cycle is not looped)


@record
class CleanupTarget:
    branch: Branch
    pr: PullRequest | None = None  # the PR the user named (number or URL)


def resolve_target(
    repo: Repo, cwd: Path, target: str | None, hub: GitHub | Unavailable
) -> CleanupTarget:
    """PR number, PR URL, branch, or the branch checked out at ``cwd``; validated."""
    if target is None:
        current = Git(cwd).current_branch()
        if current is None:
            raise RouterError(
                ErrorCode.INVALID_BRANCH,
                f"{cwd} is on a detached HEAD; name the branch or the PR to clean up",
            )
        branch = validate_branch(repo.git, current, what="the checked-out branch")
        return CleanupTarget(branch, recorded_pr(repo, branch, hub))
    if PR_NUMBER_RE.fullmatch(target):
        return _from_pr(repo, int(target), hub)
    if target.startswith("https://"):
        parsed = github.parse_pr_url(target)
        if parsed is None:
            raise RouterError(
                ErrorCode.INVALID_TARGET,
                f"{target!r} is not a PR URL (https://HOST/OWNER/NAME/pull/N)",
            )
        if isinstance(hub, GitHub) and not parsed.slug.same(hub.slug):
            raise RouterError(
                ErrorCode.INVALID_TARGET,
                f"{target} is a PR of {parsed.slug.arg}, not of {hub.slug.arg}",
            )
        origin = github.parse_remote_url(repo.git.remote_url("origin"))
        if origin is not None and not parsed.slug.same(origin):
            raise RouterError(
                ErrorCode.INVALID_TARGET,
                f"{target} is a PR of {parsed.slug.arg}, not of {origin.arg}",
            )
        return _from_pr(repo, parsed.number, hub)
    branch = validate_branch(repo.git, target, what="branch")
    return CleanupTarget(branch, recorded_pr(repo, branch, hub))


def recorded_pr(repo: Repo, branch: Branch, hub: GitHub | Unavailable) -> PullRequest | None:
    """This repo's PR of the topic, as ``pr.md`` records it (``prs:``), read through gh.

    A multi-repo topic has one PR per repo: pr-cleanup of the topic's branch asks gh
    about the PR recorded for the repo it runs in rather than searching by head name.
    None (search by head as before) when nothing is recorded for this repo, the
    recorded PR is another repository's or a fork's, names another head, or gh
    cannot answer: a record never widens what the merge proof accepts.
    """
    topic_id = branch_topic(repo, branch)
    if not isinstance(hub, GitHub) or topic_id is None:
        return None
    record = state.read_record_or_none(repo.common_dir, topic_id)
    try:
        _home, plan, _entries, _missing = resolve(repo.primary, topic_id)
    except (RouterError, GitError, OSError):
        return None  # no plan dir to read: the search by head answers as before
    name = record.repo if record is not None else "home"
    url = next((p.url for p in recorded_prs(plan.path / PR_FILE) if p.repo == name), None)
    parsed = github.parse_pr_url(url) if url else None
    if parsed is None or not parsed.slug.same(hub.slug):
        return None
    try:
        found = hub.view(parsed.number)
    except GhFailed:
        return None
    return found if found.same_repo(hub.slug) and found.head_ref == branch else None


def _from_pr(repo: Repo, number: int, hub: GitHub | Unavailable) -> CleanupTarget:
    if isinstance(hub, Unavailable):
        raise RouterError(
            ErrorCode.GH_UNAVAILABLE,
            f"PR #{number} names no branch without gh ({hub}); name the branch instead",
        )
    try:
        found = hub.view(number)
    except GhFailed as exc:
        raise RouterError(
            ErrorCode.GH_UNAVAILABLE, f"cannot read PR #{number}: {exc}; name the branch instead"
        ) from None
    branch = validate_branch(repo.git, found.head_ref, what=f"PR #{number}'s head branch")
    if not found.same_repo(hub.slug):
        raise RouterError(
            ErrorCode.FORK_PR,
            f"PR #{number} comes from a fork ({found.head_owner or 'another repository'}): its head "
            f"{branch} is not this repo's branch, and a fork's PR never licenses a deletion",
        )
    return CleanupTarget(branch, found)


def prs_to_close(
    repo: Repo, branch: Branch, hub: GitHub, named: PullRequest | None
) -> list[PullRequest]:
    """The open same-repo PR(s) of ``branch`` and every open PR stacked on it, children first."""
    order: list[PullRequest] = []
    seen: set[int] = set()

    def children(base: str, depth: int) -> None:
        for child in hub.list_by_base(base, state="open"):
            if child.number in seen:
                continue
            seen.add(child.number)
            # Only a same-repo head can carry further PRs of this repo on it.
            if child.same_repo(hub.slug) and depth < MAX_STACK:
                head = validate_branch(
                    repo.git, child.head_ref, what=f"stacked PR #{child.number}'s head"
                )
                children(head, depth + 1)
            order.append(child)

    own = [named] if named is not None else hub.list_by_head(branch, state="open")
    own = [p for p in own if p.open and p.same_repo(hub.slug) and p.head_ref == branch]
    seen.update(p.number for p in own)
    children(branch, 0)
    return order + own


# -- close-prs (abandoned) ---


def decide_close(
    hub: GitHub | Unavailable,
    closing: list[PullRequest] | None,
    closed: list[dict[str, object]],
) -> Decision:
    if isinstance(hub, Unavailable) or closing is None:
        return settled(skipped(Step.CLOSE_PRS, no_pr_list(hub)))
    if not closing:
        return settled(skipped(Step.CLOSE_PRS, Why(Reason.NO_OPEN_PR)))
    names = tuple(f"#{p.number}" for p in closing)
    return acting(
        lambda: _close_prs(hub, closing, closed),
        Step.CLOSE_PRS,
        Why(Reason.PRS_CLOSED, items=names),
    )


def no_pr_list(hub: GitHub | Unavailable) -> Why:
    """Why no PR is known to close: gh unavailable (why, a part), or its listing failed (flag)."""
    if isinstance(hub, Unavailable):
        return Why(Reason.NO_PR_LIST, parts=(hub.why,))
    return Why(Reason.NO_PR_LIST, flag=True)


def _close_prs(
    hub: GitHub, closing: list[PullRequest], closed: list[dict[str, object]]
) -> StepResult:
    bad = []
    for p in closing:
        outcome = "closed"
        try:
            hub.close(p.number)
        except GhFailed as exc:
            bad.append(Why(Reason.PR_NOT_CLOSED, count=p.number, parts=(exc.why,)))
            outcome = "failed"
        closed.append({"number": p.number, "head": p.head_ref, "url": p.url, "outcome": outcome})
    names = tuple(f"#{p.number}" for p in closing)
    if bad:
        not_closed = Why(Reason.PRS_NOT_CLOSED, items=names, parts=tuple(bad))
        return failed(Step.CLOSE_PRS, not_closed)
    return done(Step.CLOSE_PRS, Why(Reason.PRS_CLOSED, items=names))
