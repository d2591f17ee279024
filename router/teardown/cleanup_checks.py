"""What refuses a pr-cleanup before any step (DESIGN §11), nothing touched: the plan's blockers.

As teardown's (:mod:`router.teardown.blockers`), each check is a function of the facts,
asking nothing itself, that returns the refusal (a :class:`StepResult` of the step it keeps
from running, naming its error code and the fix) or None. The plan carries every one: a dry
run lists them all, and the real run refuses with the first (:func:`refusal`), in the order
the checks have always come, before it touches anything. They come in two groups, as the
run meets them: what the local state answers (:func:`local_blockers`, judged before origin
is fetched, so a refused plan moves no ref), then the merge proof's (:func:`proof_blockers`,
after the fetch).

Two refusals stay before the plan, as bad input does, since there is no plan to show: a
name nothing carries, here or on origin (:func:`refuse_unknown`: no branch to plan for), and
an ``--abandon`` nobody confirmed (:func:`refuse_unconfirmed`: the user's answer is asked
before anything is read, and a dry run, which changes nothing, needs none).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from router.errors import ErrorCode, RouterError
from router.git import StatusReport
from router.names import Branch
from router.reasons import Reason, Why
from router.records import record, replace
from router.teardown.blockers import (
    NO_PROC_NOTE,
    found_blockers,
    holding_parts,
    in_use_blocker,
    nested_blocker,
    reflog_blocker,
    reused_checkout,
    worktrees_in_use,
)
from router.teardown.cleanup_survey import AGAIN, CleanupOptions, Mode, Survey, survey
from router.teardown.merged import Evidence, GhVerdict
from router.teardown.steps import Step, StepResult, refused
from router.teardown.unshipped import unshipped_why
from router.teardown.wording import in_words
from router.topic import state, worktreelock
from router.topic.branches import TopicLock, holders_of
from router.topic.workspace import Repo

# Said after a refusal of the plan's whose own words do not say it: nothing was touched.
UNTOUCHED = Why(Reason.UNTOUCHED)


@record
class LocalFacts:
    """What the refusals before the fetch judge, read once under the topic's lock."""

    found: Survey
    mode: Mode
    primary: StatusReport  # the primary clone's (pr-cleanup updates its default branch)
    users: tuple[Why, ...] = ()  # other processes working in the worktree (each a PROCESS)
    holders: tuple[Why, ...] = ()  # the other live sessions holding the topic (HOLDER)
    # teardown's check of commits that only the worktree's HEAD reflog keeps (it reads the
    # reflog as it checks, as teardown's facts call it)
    reflog: StepResult | None = None


def local_facts(
    repo: Repo, topic: TopicLock, branch: Branch, opts: CleanupOptions, warnings: list[str]
) -> LocalFacts:
    """The branch as the local state shows it, and what its refusals need beside: the
    primary clone's status, who works in the worktree or holds the topic (asked under
    ``topic``'s lock, so another run queued on it is not one)."""
    found = survey(repo, branch, ask_remote=False, remove_reused=opts.remove_reused)
    if not opts.dry_run:
        keep_locked(repo, found, warnings)
    facts = LocalFacts(
        found, opts.mode, repo.git.status(), holders=holding_parts(holders_of(topic))
    )
    path = _worktree_removed(found)
    if path is None:
        return facts
    in_use = worktrees_in_use([path], topic_lock=topic.lock_path)
    if in_use is None:
        warnings.append(NO_PROC_NOTE)
    return replace(
        facts,
        users=tuple(in_use.get(path, ())) if in_use else (),
        reflog=None
        if found.plan.removing
        else reflog_blocker(repo, path, found.plan.entries, again=AGAIN),
    )


def _worktree_removed(found: Survey) -> Path | None:
    """The worktree the remove step would take (None: none, or a checkout kept as reused)."""
    path = found.worktree_path
    return None if path is None or found.plan.kept_worktree else path


def local_blockers(facts: LocalFacts) -> tuple[StepResult, ...]:
    """Every refusal the local state answers, in the order the real run has always met them."""
    found = facts.found
    return found_blockers(
        checked_out(found),
        dirty_primary(found, facts.primary),
        dirty_worktree(found, facts.mode),
        unshipped_run(found, facts.mode),
        *removal_blockers(facts),
        held_topic(found, facts.holders),
    )


def checked_out(found: Survey) -> StepResult | None:
    """A branch the primary clone has checked out, or a rebase or bisect works on, stays:
    git refuses to delete it, and the half-done work is in that checkout."""
    if found.in_primary:
        primary = Why(Reason.IN_PRIMARY, branch=str(found.branch), path=str(found.plan.target.path))
        return refused(Step.BRANCH, ErrorCode.BRANCH_CHECKED_OUT, primary)
    if found.busy is not None:
        # git lists it detached: without this, the removal would call it gone.
        busy = Why(Reason.REBASING, branch=str(found.branch), path=str(found.busy))
        return refused(Step.BRANCH, ErrorCode.BRANCH_CHECKED_OUT, busy)
    return None


def dirty_primary(found: Survey, status: StatusReport) -> StepResult | None:
    """A dirty primary clone always refuses: pr-cleanup updates the default branch there, and
    its changes must be put away first."""
    if not status.dirty:
        return None
    dirty = _dirt(Reason.PRIMARY_DIRTY, found.plan.target.path, status)
    return refused(Step.UPDATE_DEFAULT, ErrorCode.DIRTY_WORKTREE, dirty.noting(UNTOUCHED))


def dirty_worktree(found: Survey, mode: Mode) -> StepResult | None:
    """A dirty worktree refuses unless abandoning (which snapshots it)."""
    status = found.plan.status
    if not status.dirty or mode is not Mode.MERGED:
        return None
    dirty = _dirt(Reason.UNCOMMITTED, found.worktree_path, status)
    return refused(Step.REMOVE, ErrorCode.DIRTY_WORKTREE, dirty)


def _dirt(reason: Reason, path: Path | None, status: StatusReport) -> Why:
    """``reason`` about the changed tracked and the untracked files of the checkout at ``path``."""
    return Why(reason, path=str(path), items=tuple(status.tracked), others=tuple(status.untracked))


def unshipped_run(found: Survey, mode: Mode) -> StepResult | None:
    """A run that has not shipped keeps its artifacts: pr-cleanup is for after a merge (§9).

    ``--abandon`` is the explicit request to drop the work: it snapshots them instead.
    """
    dirs = list(found.plan.unshipped)
    if mode is not Mode.MERGED or not dirs:
        return None
    why = unshipped_why(found.topic_id, dirs, command=AGAIN).noting(UNTOUCHED)  # type: ignore[arg-type]
    return refused(Step.PLAN_DIR, ErrorCode.UNSHIPPED_RUN, why)


def removal_blockers(facts: LocalFacts) -> list[StepResult]:
    """teardown's blockers of a removal (``--abandon`` too: the remove step checks again, but by
    then the PRs are closed and the default branch may have moved): a repository inside the
    worktree holding work of its own, commits only the worktree's HEAD reflog keeps, another
    process working in it (its shell or editor would lose its directory)."""
    path = _worktree_removed(facts.found)
    if path is None:
        return []
    found = [
        nested_blocker(path, facts.found.plan.nested, again=AGAIN),
        facts.reflog,
        in_use_blocker(path, facts.users, again=AGAIN) if facts.users else None,
    ]
    return [
        refused(b.name, b.code or ErrorCode.STEP_REFUSED, b.why.noting(UNTOUCHED))
        for b in found
        if b is not None
    ]


def held_topic(found: Survey, holders: tuple[Why, ...]) -> StepResult | None:
    """Another live session holds the topic: its worktree is that session's to release."""
    if not holders:
        return None
    # flag: pr-cleanup has no --force to pass; releasing the topic is the fix.
    held = Why(Reason.HELD, topic=str(found.topic_id), parts=holders, flag=True)
    return refused(Step.REMOVE, ErrorCode.HELD, held)


def proof_blockers(found: Survey, evidence: Evidence, *, yes: bool) -> tuple[StepResult, ...]:
    """The merge proof's refusals (merged mode): no proof, or gh's silence unconfirmed."""
    return found_blockers(not_merged(found, evidence), content_only(found, evidence, yes=yes))


def not_merged(found: Survey, evidence: Evidence) -> StepResult | None:
    if evidence.merged or evidence.subject is None:
        return None
    # A missing proof is not a reason to abandon: the merge may not have
    # reached origin yet, or the branch moved after it. The words never suggest --abandon.
    unproven = Why(
        Reason.NOT_MERGED,
        branch=str(found.branch),
        default=str(found.default.name),
        parts=evidence.said,
        topic=found.topic_id or "",
        flag=evidence.empty,
    )
    return refused(Step.BRANCH, ErrorCode.NOT_MERGED, unproven)


def content_only(found: Survey, evidence: Evidence, *, yes: bool) -> StepResult | None:
    """gh works and knows no merged PR from this repository: the content proof alone needs --yes.

    Without gh the content proof decides (gh's silence is no answer), but a gh
    that answers "no PR of ours" (none, or only a fork's) is a witness that
    did not see the merge: the user confirms what the content shows (§11).
    """
    if yes or not evidence.merged or evidence.gh is not GhVerdict.NO_PR:
        return None
    alone = Why(Reason.NO_MERGED_PR, branch=str(found.branch), parts=evidence.said)
    return refused(Step.BRANCH, ErrorCode.NO_MERGED_PR, alone)


def refusal(
    found: Survey,
    mode: Mode,
    blockers: Sequence[StepResult],
    warnings: list[str],
    *,
    dry_run: bool,
    proof: Evidence | None = None,
) -> RouterError:
    """The plan refused: the first blocker's code and words (the refusal the real run has
    always named first), the others counted; each one is in the JSON beside it, as a step."""
    first, more = blockers[0], blockers[1:]
    also = (
        f" (and {len(more)} more blocker(s): {', '.join(str(b.code) for b in more)})"
        if more
        else ""
    )
    return RouterError(
        first.code or ErrorCode.STEP_REFUSED,
        f"{first.detail}{also}",
        details={
            **refused_json(found.branch, mode, blockers, dry_run=dry_run, proof=proof),
            "warnings": list(warnings),
        },
    )


def refused_json(
    branch: str,
    mode: Mode,
    blockers: Sequence[StepResult],
    *,
    dry_run: bool,
    proof: Evidence | None = None,
) -> dict[str, object]:
    """A refused plan's JSON keys beside ``error``, the dry run's and the real run's alike."""
    return {
        **envelope(branch, mode, dry_run=dry_run, proof=proof),
        "blockers": [b.to_json() for b in blockers],
    }


def envelope(
    branch: str, mode: Mode, *, dry_run: bool, proof: Evidence | None = None
) -> dict[str, object]:
    """A refusal's JSON keys beside ``error``: pr-cleanup's, with no step taken."""
    json = proof.to_json() if proof else None
    return {
        "branch": branch,
        "mode": str(mode),
        "proof": json,
        "steps": [],
        "dry_run": dry_run,
        "prs": [],
    }


def refuse_unconfirmed(branch: str, confirmed: bool | None) -> None:
    """An ``--abandon`` without a yes: refused before anything is read (see the module's note)."""
    if confirmed is None:
        raise RouterError(
            ErrorCode.CONFIRMATION_REQUIRED,
            f"--abandon deletes {branch} and its worktree without a merge; stdin is not a terminal, "
            "so nothing is asked: pass --yes to confirm",
        )
    raise RouterError(
        ErrorCode.NOT_CONFIRMED, f"abandoning {branch} was not confirmed; nothing was touched"
    )


def fetched_survey(repo: Repo, branch: Branch, opts: CleanupOptions, warnings: list[str]) -> Survey:
    """The fetch, then the survey the steps and the merge proof are decided on.

    The dry run fetches like the real run (a fetch changes no local branch or
    worktree): without it a merge made a minute ago would read as not merged.
    """
    fetched = _fetch(repo, warnings)
    found = survey(repo, branch, ask_remote=True, remove_reused=opts.remove_reused)
    # What the fetch answered: origin's tips are its own now (an update needs no second fetch).
    found = replace(found, plan=replace(found.plan, reachable=fetched))
    refuse_unknown(repo, found, opts.mode, dry_run=opts.dry_run)
    warnings.extend(found.plan.notes)
    warnings.extend(_other_repos(repo, found))
    return found


def keep_locked(repo: Repo, found: Survey, warnings: list[str]) -> None:
    """A topic's worktree made by an earlier version, unlocked: locked now (DESIGN §10).

    Whether this run removes it or refuses, it is never left unlocked for other
    tools' cleanup (the remove step lifts the lock right before git removes it).
    """
    entry = found.entry
    if entry is None or entry.locked or found.topic_id is None or found.record is None:
        return
    if found.plan.removing or reused_checkout(repo, entry.path) or not os.path.isdir(entry.path):
        return
    _, warning = worktreelock.lock_or_warn(repo.git, entry, found.topic_id, found.plan.target.name)
    if warning:
        warnings.append(warning)


def _fetch(repo: Repo, warnings: list[str]) -> bool:
    """Fetch origin; True when it answered (so its remote-tracking refs are its tips now)."""
    if not repo.git.has_remote("origin"):
        return False
    error = repo.git.fetch("origin")
    if error is not None:
        warnings.append(
            f"git fetch origin failed ({error.first_line}); using what was fetched before"
        )
    return error is None


def refuse_unknown(repo: Repo, found: Survey, mode: Mode, *, dry_run: bool = False) -> None:
    """A name nothing carries, here or on origin, and no record of a cleanup: a typo, refused.

    A rerun after a finished cleanup is told apart by the topic's record (it
    stays, marked torn down), so it still exits 0 and reports every step done.
    """
    if found.anything_left(repo) or _cleaned_before(found.record):
        return
    unknown = found.remote_error
    where = f" or on origin ({in_words(unknown)})" if unknown is not None else " or on origin"
    raise RouterError(
        ErrorCode.UNKNOWN_BRANCH,
        f"no branch, worktree or plan dir named {found.branch} exists in {repo.primary}{where}, "
        "and no record shows an earlier cleanup of it: check the name (`git branch -a`); "
        "nothing was touched",
        details=envelope(found.branch, mode, dry_run=dry_run),
    )


def _cleaned_before(record: state.TopicRecord | None) -> bool:
    return record is not None and (
        record.teardown is not None or record.pr_cleanup_mode is not None
    )


def _other_repos(repo: Repo, found: Survey) -> list[str]:
    """pr-cleanup works in one repo; a multi-repo topic's other worktrees are named, not touched."""
    from router.topic.model import repo_places

    record = found.record
    if record is None or record.repo != "home":
        return []
    places = repo_places(repo.primary, None, record)[1:]
    names = [p.name for p in places if p.worktree and os.path.isdir(p.worktree)]
    if not names:
        return []
    return [
        f"{found.topic_id} also has worktrees in {', '.join(names)}: run pr-cleanup in each after "
        f"its PR merges, or `team-router teardown {found.topic_id}`; they were not touched"
    ]
