"""What refuses a pr-cleanup before any step (DESIGN §11), nothing touched: the refusals
that need the local state alone, the fetch, then the merge proof's and a typo's."""

from __future__ import annotations

import dataclasses
import os

from router.errors import ErrorCode, RouterError
from router.git import GitError
from router.names import Branch
from router.teardown.blockers import (
    NO_PROC_NOTE,
    describe_dirt,
    in_use_blocker,
    nested_blocker,
    reflog_blocker,
    reused_checkout,
    worktrees_in_use,
)
from router.teardown.cleanup_survey import (
    AGAIN,
    CleanupOptions,
    Mode,
    Survey,
    survey,
)
from router.teardown.merged import Evidence, GhVerdict
from router.teardown.unshipped import (
    unshipped_message,
)
from router.topic import state, worktreelock
from router.topic.branches import (
    TopicLock,
    refuse_if_held,
)
from router.topic.workspace import Repo


def refuse_dirty(repo: Repo, found: Survey, mode: Mode) -> None:
    """A dirty primary clone always refuses; a dirty worktree refuses unless abandoning (snapshot)."""
    status = repo.git.status()
    if status.dirty:
        raise RouterError(
            ErrorCode.DIRTY_WORKTREE,
            # pr-cleanup updates the default branch there: its changes must be put away first.
            f"the primary clone {repo.primary} has {describe_dirt(status)}; commit or stash them "
            f"(`git -C {repo.primary} stash push --include-untracked`), then run this again; "
            "nothing was touched",
        )
    status = found.plan.status
    if status.dirty and mode is Mode.MERGED:
        raise RouterError(
            ErrorCode.DIRTY_WORKTREE,
            f"{found.worktree_path} has {describe_dirt(status)}; commit or discard them, "
            "nothing was touched",
        )


def refuse_blocked(repo: Repo, found: Survey, topic: TopicLock, warnings: list[str]) -> None:
    """teardown's blockers of a removal refuse before any step, as in its plan (``--abandon``
    too: the remove step checks again, but by then the PRs are closed and the default branch
    may have moved): a repository inside the worktree holding work of its own, commits only
    the worktree's HEAD reflog keeps, another process working in it (its shell or editor
    would lose its directory; asked under ``topic``'s lock, so another run queued on it
    is not one)."""
    plan, path = found.plan, found.worktree_path
    if path is None or plan.kept_worktree:
        return
    found_ = [nested_blocker(path, plan.nested, again=AGAIN)]
    if not plan.removing:
        found_.append(reflog_blocker(repo, path, plan.entries, again=AGAIN))
    users = worktrees_in_use([path], topic_lock=topic.lock_path)
    if users is None:
        warnings.append(NO_PROC_NOTE)
    elif path in users:
        found_.append(in_use_blocker(path, users[path], again=AGAIN))
    blocker = next((b for b in found_ if b is not None), None)
    if blocker is not None:
        raise RouterError(
            blocker.code or ErrorCode.STEP_REFUSED, f"{blocker.detail}; nothing was touched"
        )


def refuse_unshipped(found: Survey, mode: Mode, *, dry_run: bool = False) -> None:
    """A run that has not shipped keeps its artifacts: pr-cleanup is for after a merge (§9).

    ``--abandon`` is the explicit request to drop the work: it snapshots them instead.
    """
    dirs = list(found.plan.unshipped)
    if mode is not Mode.MERGED or not dirs:
        return
    why = unshipped_message(found.topic_id, dirs, command=AGAIN)  # type: ignore[arg-type]
    raise RouterError(
        ErrorCode.UNSHIPPED_RUN,
        f"{why}; nothing was touched",
        details=envelope(found.branch, mode, dry_run=dry_run),
    )


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


def refuse_unmerged(
    found: Survey, evidence: Evidence, warnings: list[str], *, dry_run: bool = False
) -> None:
    if evidence.merged or evidence.subject is None:
        return
    # A missing proof is not a reason to abandon: the merge may not have
    # reached origin yet, or the branch moved after it. Never suggest --abandon.
    fix = (
        f"merge its PR first; if it is merged, check that origin/{found.default.name} has every "
        f"commit of {found.branch}, then run this again"
    )
    if evidence.empty:
        teardown = f"`team-router teardown {found.topic_id}`" if found.topic_id else "teardown"
        fix = (
            f"nothing was merged, so there is nothing to clean up after: {teardown} takes it apart"
        )
    raise RouterError(
        ErrorCode.NOT_MERGED,
        f"{found.branch} is not proven merged into origin/{found.default.name}: {evidence.detail}; "
        f"nothing was deleted ({fix})",
        details={
            **envelope(found.branch, Mode.MERGED, dry_run=dry_run, proof=evidence),
            "warnings": warnings,
        },
    )


def refuse_content_only(
    found: Survey, evidence: Evidence, *, yes: bool, dry_run: bool = False
) -> None:
    """gh works and knows no merged PR from this repository: the content proof alone needs --yes.

    Without gh the content proof decides (gh's silence is no answer), but a gh
    that answers "no PR of ours" (none, or only a fork's) is a witness that
    did not see the merge: the user confirms what the content shows (§11).
    """
    if yes or not evidence.merged or evidence.gh is not GhVerdict.NO_PR:
        return
    raise RouterError(
        ErrorCode.NO_MERGED_PR,
        f"{found.branch}: {evidence.detail}; gh knows no merged PR from this repository, and "
        "the content proof alone does not license deleting it: check that the work is merged, "
        "then run again with --yes; nothing was deleted",
        details=envelope(found.branch, Mode.MERGED, dry_run=dry_run, proof=evidence),
    )


def refuse_unconfirmed(branch: str, confirmed: bool | None) -> None:
    if confirmed is None:
        raise RouterError(
            ErrorCode.CONFIRMATION_REQUIRED,
            f"--abandon deletes {branch} and its worktree without a merge; stdin is not a terminal, "
            "so nothing is asked: pass --yes to confirm",
        )
    raise RouterError(
        ErrorCode.NOT_CONFIRMED, f"abandoning {branch} was not confirmed; nothing was touched"
    )


def checked_survey(
    repo: Repo, topic: TopicLock, branch: Branch, opts: CleanupOptions, warnings: list[str]
) -> Survey:
    """Refusals that need only the local state, then the fetch, then the survey for the steps.

    The dry run's too, in the same order: a refusal the real run makes before it fetches
    is the plan's before anything is fetched, and the same refusal wins where several apply.
    """
    mode, reused, dry_run = opts.mode, opts.remove_reused, opts.dry_run
    local = survey(repo, branch, ask_remote=False, remove_reused=reused)
    if not dry_run:
        keep_locked(repo, local, warnings)
    refuse_dirty(repo, local, mode)
    refuse_unshipped(local, mode, dry_run=dry_run)
    refuse_blocked(repo, local, topic, warnings)
    refuse_if_held(topic)  # as the real run will: plan what it does
    # The dry run fetches like the real run (a fetch changes no local branch or
    # worktree): without it a merge made a minute ago would read as not merged.
    fetched = _fetch(repo, warnings)
    found = survey(repo, branch, ask_remote=True, remove_reused=reused)
    # What the fetch answered: origin's tips are its own now (an update needs no second fetch).
    found = dataclasses.replace(found, plan=dataclasses.replace(found.plan, reachable=fetched))
    refuse_unknown(repo, found, mode, dry_run=dry_run)
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
    try:
        worktreelock.lock(repo.git, entry, found.topic_id)
    except GitError as exc:
        warnings.append(
            f"{entry.path} is not locked and could not be locked ({exc.first_line}); "
            "other tools' cleanup may delete an unlocked worktree"
        )


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
    where = f" or on origin ({found.remote_error})" if found.remote_error else " or on origin"
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
