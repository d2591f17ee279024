"""What teardown knows of a repo before it acts (its facts), and the options it runs with.

:func:`plan_repo` reads each repo once (and fetches): its worktree and branch, the
merge proof, the nested repositories, what ``new`` reused, and the blockers that
refuse the whole teardown before anything is removed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from router import git as g
from router.errors import ErrorCode
from router.git import Git, GitError, StatusReport, WorktreeEntry
from router.ioerror import describe_io
from router.progress import Echo
from router.reasons import Reason, Why
from router.records import field, record, replace
from router.teardown.blockers import (
    foreign_worktree,
    found_blockers,
    hidden_work,
    nested_blocker,
    reflog_blocker,
    reused_branch,
    reused_checkout,
    unmounted_blocker,
    with_hidden,
    worktree_blocker,
)
from router.teardown.host_policy import HostPolicy
from router.teardown.integrate import no_identity, resume_integration
from router.teardown.localstate import DEFAULT_LINE_TIMEOUT, Declaration, read_declaration
from router.teardown.nested import NestedRepo, survey_at
from router.teardown.plan_dir import artifacts_at_stake
from router.teardown.primary import is_primary_clone, primary_busy
from router.teardown.proof import Integration, cut_from, integration
from router.teardown.record import TopicRef, pending_pick
from router.teardown.remove import copies_note, included_copies, interrupted_removal
from router.teardown.steps import Step, StepResult, refused
from router.teardown.sweep import Runs, SweepVerdict, classify
from router.teardown.unshipped import RunArtifacts, run_shipped, unshipped_why
from router.teardown.wording import in_words
from router.topic import worktreelock
from router.topic.scope import RepoTarget
from router.topic.workspace import WORKTREES_DIR, DefaultBranch, Repo, default_branch, find_worktree


@record
class TeardownOptions:
    integrate: bool = False
    force: bool = False
    dry_run: bool = False
    line_timeout: float = DEFAULT_LINE_TIMEOUT
    echo: Echo | None = None
    remove_reused: bool = False  # also remove a checkout and delete a branch `new` reused
    # The host removing a worktree it asked for (its hook, or a sweep for it): see HostPolicy.
    host: HostPolicy | None = None
    # The plan a refusal prints: each step's decision as if no blocker stood in the
    # way (none holds another back), reported and never acted on.
    refused_plan: bool = False
    # pr-cleanup's policy where it differs from teardown's, decided by the same steps: the
    # command a refusal says to run again, the default branch moved --ff-only rather than
    # rebased, origin's ref of the branch pruned by a step of its own rather than with the
    # update, and a dry run that fetched as the real run does.
    again: str = "teardown"
    rebase: bool = True
    prune_with_update: bool = True
    dry_run_fetched: bool = False

    @property
    def fetched(self) -> bool:
        """This run fetched origin before its plan (a teardown's dry run does not)."""
        return not self.dry_run or self.dry_run_fetched

    @property
    def keep_held(self) -> bool:
        """--force for the work in the worktree only: a lock or another live holder still
        keeps it (the host's discard intent, which cannot be asked "are you sure?")."""
        return self.host is not None

    @property
    def acts(self) -> bool:
        """The steps act on their decisions (not a dry run, nor a refusal's plan)."""
        return not (self.dry_run or self.refused_plan)


@record
class RepoPlan:
    target: RepoTarget
    default: DefaultBranch | None = None
    worktree: Path | None = None
    on_primary: bool = False
    registered: bool = False
    entries: tuple[WorktreeEntry, ...] = ()
    status: StatusReport = field(default_factory=StatusReport)
    tip: str | None = None
    found: Integration | None = None
    has_origin: bool = False
    reachable: bool = True  # origin answered the plan's fetch (or there is none)
    tracking: bool = False  # refs/remotes/origin/<branch> exists
    foreign: Why | None = None  # why the worktree named for this repo is another branch's (kept)
    declaration: Declaration | None = (
        None  # .teamteardown as the default branch had it before teardown
    )
    copies: Why | None = None  # the .worktreeinclude copies the removal deletes (git ignores them)
    nested: tuple[NestedRepo, ...] = ()  # repositories inside the worktree (submodules, clones)
    resuming: bool = False  # dry run: an interrupted cherry-pick of ours is still in the primary
    # Why the worktree / the branch stays: team-router did not create it (`new`
    # reused the user's own checkout or branch); "" when it is ours to remove.
    kept_worktree: Why | None = None  # `new` reused the checkout: kept (KEPT)
    kept_branch: Why | None = None  # `new` reused the branch: kept (KEPT)
    committer_known: bool = False  # the plan's `git var` named a committer (asked once per command)
    # The artifacts of a run that has not shipped that this teardown would delete (home only).
    unshipped: tuple[RunArtifacts, ...] = ()
    shipped: bool = False  # the run's pr.md is in one of its plan dirs (home only)
    # The repo's config, read once (origin, committer, the branch's section).
    config: g.ConfigView | None = None
    # The plan read the worktree's status (and it is the remove step's proof when clean).
    status_read: bool = False
    # The local default branch was at origin's tip as this command fetched it:
    # after the pick, or with none, there is nothing for a pull to bring.
    default_at_origin: bool = False
    # A removal of ours that a kill interrupted: the remove step finishes it.
    removing: bool = False
    # The repo was checked (False: a git command failed while reading it; only the blocker is known).
    checked: bool = True
    blockers: tuple[StepResult, ...] = ()
    notes: tuple[str, ...] = ()


def plan_repo(target: RepoTarget, opts: TeardownOptions, topic_id: str = "") -> RepoPlan:
    """Everything teardown needs to know about one repo, and what would stop it.

    A git command failing here is a refusal for the whole teardown, never a guess.
    With ``topic_id`` (a real run), a cherry-pick of ours that a kill left
    half-done is undone first, so the plan judges the default branch as it is.
    """
    try:
        return _plan_repo(target, opts, topic_id)
    except (GitError, OSError) as exc:
        what = exc.first_line if isinstance(exc, GitError) else describe_io(exc)
        code = exc.code if isinstance(exc, GitError) else ErrorCode.IO_ERROR
        failure = Why(Reason.CHECK_FAILED, repo=target.name, text=what)
        blocker = refused(Step.INTEGRATE, code, failure)
        return RepoPlan(target, checked=False, blockers=(blocker,))


def _plan_repo(target: RepoTarget, opts: TeardownOptions, topic_id: str) -> RepoPlan:
    repo = target.repo
    if repo is None:
        return RepoPlan(target)
    notes: list[str] = []
    topic = TopicRef(topic_id, target.name) if topic_id else None
    stopped, resuming = _pick_left(target, repo, topic, opts, notes)
    if stopped is not None:
        return RepoPlan(target, checked=False, blockers=(stopped,))
    config = g.config_view(repo.git)
    has_origin = config.has_remote("origin")
    place, reachable = _place_while_fetching(target, repo, topic, opts, has_origin, notes)
    # One for-each-ref, after the fetch, answers the default branch, the topic
    # branch's tip and tracking ref, and the targets' trees for the merge proof.
    tips = repo.git.ref_tips("refs/remotes/origin/", "refs/heads/", trees=True)
    default = default_branch(repo.git, {name: t.symref for name, t in tips.items()})
    refs = {name: t.commit for name, t in tips.items()}
    tip = refs.get(f"refs/heads/{target.branch}")
    recorded = target.record.base_commit if target.record else None
    base = cut_from(repo.git, target.branch, recorded) if tip and default else None
    found = integration(repo.git, tip, default, tips, base=base) if tip and default else None
    plan = RepoPlan(
        target,
        default,
        place.worktree,
        place.on_primary,
        place.entry is not None,
        place.entries,
        place.status,
        tip,
        found,
        has_origin,
        reachable,
        f"refs/remotes/origin/{target.branch}" in refs,
        place.foreign,
        read_declaration(repo.git, default, target.record.declared_at if target.record else None),
        place.copies(repo, target),
        place.nested,
        notes=tuple(notes),
    )
    plan = replace(
        plan,
        config=config,
        status_read=place.there,
        default_at_origin=reachable and _at_origin(default, refs),
        resuming=resuming,
        removing=place.removing,
        kept_worktree=_kept_worktree(repo, place.worktree, place.entry, opts),
        kept_branch=_kept_branch(target, tip, opts),
    )
    return _with_blockers(plan, repo, place, topic, opts)


def _pick_left(
    target: RepoTarget, repo: Repo, topic: TopicRef | None, opts: TeardownOptions, notes: list[str]
) -> tuple[StepResult | None, bool]:
    """A cherry-pick of ours a kill left half-done: undone first in a real run (the result
    when it cannot be), said in a dry run (True: the plan is resuming it)."""
    resumed = resume_integration(repo, topic) if topic is not None and not opts.dry_run else None
    # A dry run changes nothing, so an interrupted pick of ours is still there: said, not refused.
    resuming = (
        opts.dry_run and topic is not None and pending_pick(repo.common_dir, topic) is not None
    )
    if resuming:
        notes.append(
            f"{target.name}: a cherry-pick team-router started in {repo.primary} was interrupted; "
            "the real run undoes it first (when it can prove the changes are its own)"
        )
    if resumed is not None and resumed.stopped:
        return resumed, resuming
    if resumed is not None:
        notes.append(f"{target.name}: {resumed.detail}")
    return None, resuming


def _place_while_fetching(
    target: RepoTarget,
    repo: Repo,
    topic: TopicRef | None,
    opts: TeardownOptions,
    has_origin: bool,
    notes: list[str],
) -> tuple[_WorktreePlace, bool]:
    """The worktree as the plan finds it, read while origin is fetched (neither needs the
    other's answer), and whether origin answered; the notes in that order."""
    fetching = repo.git.start_fetch("origin") if has_origin and not opts.dry_run else None
    place_notes: list[str] = []
    try:
        place = _worktree_place(target, repo, topic, place_notes)
    except BaseException as exc:
        # A signal is passed on to the fetch; any other failure lets it end as it
        # would have (a killed fetch can leave its ref locks behind).
        if fetching is not None and isinstance(exc, Exception):
            fetching.error()
        elif fetching is not None:
            fetching.stop(exc)
        raise
    reachable = _fetched(target, fetching, notes) if has_origin else True
    notes += place_notes
    return place, reachable


def _fetched(target: RepoTarget, fetching: g.Running | None, notes: list[str]) -> bool:
    """The fetch of origin ended (None: a dry run, which fetches nothing): False when origin
    did not answer, which the notes say."""
    error = fetching.error() if fetching is not None else None
    if error is None:
        return True
    notes.append(
        f"{target.name}: fetch from origin failed ({error.first_line}); using what is known"
    )
    return False


@record
class _WorktreePlace:
    """The topic's worktree in one repo as the plan found it."""

    entries: tuple[WorktreeEntry, ...]
    worktree: Path | None
    on_primary: bool
    entry: WorktreeEntry | None  # registered, ours to remove (None: foreign, or none)
    foreign: Why | None
    removing: bool  # a removal of ours that a kill interrupted
    there: bool  # the directory is there and its status was read
    status: StatusReport
    nested: tuple[NestedRepo, ...]

    def copies(self, repo: Repo, target: RepoTarget) -> Why | None:
        if not (self.entry and self.worktree):
            return None
        return copies_note(
            repo.primary, self.worktree, included_copies(target.record, self.worktree)
        )


def _worktree_place(
    target: RepoTarget, repo: Repo, topic: TopicRef | None, notes: list[str]
) -> _WorktreePlace:
    # The home's worktree list was read while resolving the topic, moments ago.
    entries = list(target.entries) if target.entries is not None else repo.git.worktree_list()
    worktree = target.worktree or _listed_worktree(entries, target.branch)
    on_primary = worktree is not None and is_primary_clone(repo, worktree, entries)
    entry = find_worktree(entries, worktree) if worktree and not on_primary else None
    foreign = foreign_worktree(repo, worktree, target.branch, entry) if entry else None  # type: ignore[arg-type]
    if foreign is not None:
        notes.append(f"{target.name}: {in_words(foreign)}")
        entry = None
    removing = interrupted_removal(repo, topic, worktree)
    there = entry is not None and not removing and os.path.isdir(worktree)  # type: ignore[arg-type]
    topic_id = topic.id if topic is not None else None
    status = (
        with_hidden(Git(worktree).status(), hidden_work(worktree, topic_id or None))  # type: ignore[arg-type]
        if there
        else StatusReport()
    )
    # Or what a removal of ours that a kill interrupted would still delete, or
    # the registration of a directory deleted by hand keeps.
    nested = (
        survey_at(repo.common_dir, worktree, live=there)  # type: ignore[arg-type]
        if there or entry is not None or removing
        else ()
    )
    return _WorktreePlace(
        tuple(entries), worktree, on_primary, entry, foreign, removing, there, status, nested
    )


def _with_blockers(
    plan: RepoPlan,
    repo: Repo,
    place: _WorktreePlace,
    topic: TopicRef | None,
    opts: TeardownOptions,
) -> RepoPlan:
    """The plan with what would stop it, and whether it asked for a committer."""
    target, worktree, entry, removing = plan.target, place.worktree, place.entry, place.removing
    topic_id = topic.id if topic is not None else ""
    if topic is not None and not opts.dry_run and entry is not None and not removing:
        plan = _keep_locked(repo, plan, entry, topic.id)
    # A kept worktree is not removed: its dirt and nested clones lose nothing.
    kept = removing or bool(plan.kept_worktree)
    blockers = _plan_blockers(plan, None if kept else entry, opts)
    if removing:
        # --force or not: the rerun would delete the repositories left in it.
        blockers += [b for b in [nested_blocker(worktree, place.nested)] if b is not None]  # type: ignore[arg-type]
    if target.is_home and topic_id:
        removed = (
            worktree
            if entry is not None and not kept
            else _worktree_back_with_artifacts(plan, topic_id)
        )
        # Shipped is the run's, wherever its pr.md is: a kept worktree's plan dir counts too.
        shipped = run_shipped(repo.primary, topic_id, worktree)
        found_dirs, plan_blockers = _plan_dir_blockers(repo, topic_id, removed, shipped, opts)
        plan = replace(plan, unshipped=found_dirs, shipped=shipped)
        blockers += plan_blockers
    # The plan asked `git var` exactly when the act will pick: with no blocker, it named a committer.
    committer = _picks(plan, opts) and not plan.resuming and not blockers
    return replace(plan, blockers=tuple(blockers), committer_known=committer)


def _worktree_back_with_artifacts(plan: RepoPlan, topic_id: str) -> Path | None:
    """The topic's worktree path when it is no worktree any more, yet verify-gone would delete
    it but for the run's artifacts in it (a late writer, the pipeline, wrote them after or
    during the removal): the plan dir of the home worktree all the same."""
    worktree, repo = plan.worktree, plan.target.repo
    if worktree is None or repo is None or plan.registered or plan.removing or plan.on_primary:
        return None
    folder = os.path.join(os.path.realpath(repo.primary), WORKTREES_DIR)
    if not os.path.isdir(worktree) or os.path.realpath(worktree.parent) != folder:
        return None
    live = {os.path.realpath(e.path) for e in plan.entries}
    judged = classify(worktree, live, runs=Runs(repo.primary))
    return worktree if judged.reason is SweepVerdict.UNSHIPPED else None


def _keep_locked(repo: Repo, plan: RepoPlan, entry: WorktreeEntry, topic_id: str) -> RepoPlan:
    """Our worktree made by an earlier version, unlocked: locked now (DESIGN §10).

    Whether the teardown then removes it or refuses, it is never left unlocked
    for other tools' cleanup; the remove step lifts the lock right before git
    removes the worktree. A checkout `new` reused is the user's, never locked.
    """
    if entry.locked or reused_checkout(repo, entry.path):
        return plan
    _, warning = worktreelock.lock_or_warn(repo.git, entry, topic_id, plan.target.name)
    if warning:
        return replace(plan, notes=(*plan.notes, warning))
    entries = worktreelock.with_lock(list(plan.entries), entry.path, topic_id)
    return replace(plan, entries=tuple(entries))


def _plan_dir_blockers(
    repo: Repo, topic_id: str, removed: Path | None, shipped: bool, opts: TeardownOptions
) -> tuple[tuple[RunArtifacts, ...], list[StepResult]]:
    """The unshipped run's artifacts this teardown would delete, and what they refuse.

    A plan dir in the primary clone holding another repository's unpushed work
    refuses, --force or not: step 6 finds it too, but only after every worktree
    and branch is gone. The artifacts of a run that has not shipped refuse
    unless --force (which snapshots them): in the worktree the remove step
    deletes (``removed``), and in the primary clone when step 6 would delete them.
    """
    found, dirs = artifacts_at_stake(repo, topic_id, removed, shipped=shipped)
    if found.code == ErrorCode.NESTED_WORK:
        return (), [found]
    if not dirs or opts.force:
        return tuple(dirs), []
    why = unshipped_why(topic_id, dirs, command="teardown")
    return tuple(dirs), [refused(Step.PLAN_DIR, ErrorCode.UNSHIPPED_RUN, why)]


def _at_origin(default: DefaultBranch | None, refs: Mapping[str, str]) -> bool:
    """The local default branch is at origin's tip (both known, same commit)."""
    if default is None or default.remote_ref is None or default.local_ref is None:
        return False
    return refs.get(default.local_ref) == refs.get(default.remote_ref)


def _kept_worktree(
    repo: Repo, worktree: Path | None, entry: WorktreeEntry | None, opts: TeardownOptions
) -> Why | None:
    """Why a linked worktree stays: `new` reused it, never made it (None unless --remove-reused)."""
    if opts.remove_reused or worktree is None or entry is None:
        return None
    return reused_checkout(repo, worktree)


def _kept_branch(target: RepoTarget, tip: str | None, opts: TeardownOptions) -> Why | None:
    """Why the branch stays: the record says team-router did not create it."""
    if opts.remove_reused or tip is None:
        return None
    return reused_branch(target.branch, target.record)


def _listed_worktree(entries: list[WorktreeEntry], branch: str) -> Path | None:
    for entry in entries[1:]:
        if entry.branch == branch:
            return Path(entry.path)
    return None


def _plan_blockers(
    plan: RepoPlan, entry: WorktreeEntry | None, opts: TeardownOptions
) -> list[StepResult]:
    repo = plan.target.repo
    assert repo is not None
    found: list[StepResult] = []
    if entry is not None and not os.path.isdir(plan.worktree):  # type: ignore[arg-type]
        # --force or not: a worktree whose disk is not mounted is not gone.
        found += found_blockers(unmounted_blocker(repo, plan.worktree))  # type: ignore[arg-type]
    if entry is not None:
        # --force or not: a snapshot cannot keep another repository's work, nor a reflog.
        found += found_blockers(
            nested_blocker(plan.worktree, plan.nested),  # type: ignore[arg-type]
            reflog_blocker(repo, plan.worktree, plan.entries),  # type: ignore[arg-type]
        )
    if entry is not None and not opts.force:
        found += found_blockers(worktree_blocker(plan.worktree, entry, plan.status))  # type: ignore[arg-type]
        found += _detached_loss(repo, plan, entry)
    elif entry is not None and opts.keep_held and worktreelock.locked_by_other(entry):
        found.append(worktree_blocker(plan.worktree, entry, StatusReport()))  # type: ignore[arg-type]
    if plan.tip is not None and plan.default is None and not opts.force:
        unknown_default = Why(Reason.NO_DEFAULT_BRANCH, path=str(repo.primary), flag=True)
        found.append(refused(Step.INTEGRATE, ErrorCode.NO_DEFAULT_BRANCH, unknown_default))
    missing = plan.found.missing if plan.found and not plan.found.integrated else ()
    if _picks(plan, opts):
        # A dry run with an interrupted pick of ours: the real run undoes it first.
        busy = None if plan.resuming else primary_busy(repo, plan.default)  # type: ignore[arg-type]
        unknown = g.committer_unknown(repo.git, plan.config)
        if busy is not None:
            busy_now = Why(Reason.PRIMARY_BUSY, path=str(repo.primary), parts=(busy,))
            found.append(refused(Step.INTEGRATE, ErrorCode.PRIMARY_BUSY, busy_now))
        elif unknown is not None:
            found.append(no_identity(repo, unknown))
    elif missing and not opts.force and not plan.kept_branch:
        # A kept branch keeps its commits: nothing to refuse.
        commits = tuple(c[:12] for c in missing)
        unintegrated = Why(Reason.UNINTEGRATED, branch=plan.target.branch, items=commits)
        unintegrated = replace(unintegrated, count=len(commits), flag=_pushed(repo, plan))
        found.append(refused(Step.INTEGRATE, ErrorCode.UNINTEGRATED_COMMITS, unintegrated))
    return found


def _pushed(repo: Repo, plan: RepoPlan) -> bool:
    """Origin's branch keeps the unintegrated commits already (as last fetched)."""
    pushed = f"refs/remotes/origin/{plan.target.branch}"
    return bool(plan.tracking and plan.tip and repo.git.is_ancestor(plan.tip, pushed))


def _picks(plan: RepoPlan, opts: TeardownOptions) -> bool:
    """The act will cherry-pick: ``--integrate`` and commits the default branch lacks."""
    return opts.integrate and bool(plan.found and not plan.found.integrated and plan.found.missing)


def _detached_loss(repo: Repo, plan: RepoPlan, entry: WorktreeEntry) -> list[StepResult]:
    """A worktree on a detached HEAD with commits no ref holds would lose them on removal."""
    if entry.branch is not None or entry.head is None:
        return []
    lost = g.unique_commits(repo.git, entry.head, except_branch=None)
    if not lost:
        return []
    detached = Why(Reason.DETACHED_COMMITS, path=str(plan.worktree), count=lost)
    return [refused(Step.REMOVE, ErrorCode.UNINTEGRATED_COMMITS, detached)]


def recreated(plan: RepoPlan) -> bool:
    """The topic has a worktree of ours again: what an earlier teardown recorded describes
    another run (the real run forgets it; its local state runs again).

    A kept checkout (one `new` reused) is still there after every teardown: it does
    not show the topic was created again.
    """
    return plan.registered and not plan.kept_worktree
