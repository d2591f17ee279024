"""Teardown of a whole topic (DESIGN §9): plan every repo first, then run the eight steps.

The plan step only reads (and fetches): if any repo would lose work — a dirty
or locked worktree, commits whose patches are on no target, a live holder —
the whole teardown is refused and nothing is removed anywhere, unless
``--force``, in which case a snapshot ref is written before anything that
holds work goes. Then every repo runs the steps of :mod:`router.teardown.steps`,
repos in parallel, reported in ``repos.md`` order. ``local-state`` and
``restore`` over a topic live here too.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from router import git as g
from router import interrupt
from router.errors import BadInput, ErrorCode, ExitCode, Interrupted, RouterError, error_json
from router.git import Git, GitError, StatusReport, WorktreeEntry
from router.ioerror import describe_io
from router.names import ID_RE, Branch, branch_for
from router.parallel import parallel_map
from router.progress import Echo, Progress
from router.teardown.blockers import (
    NO_PROC_NOTE,
    foreign_worktree,
    hidden_work,
    in_use_blocker,
    nested_blocker,
    reflog_blocker,
    reused_branch,
    reused_checkout,
    unmounted_blocker,
    with_hidden,
    worktree_blocker,
    worktrees_in_use,
)
from router.teardown.branch import delete_branch, verify_gone
from router.teardown.integrate import integrate_commits, no_identity, resume_integration
from router.teardown.localstate import (
    DEFAULT_LINE_TIMEOUT,
    Declaration,
    LineOutcome,
    LocalStateJob,
    LocalStateReport,
    TempOutcome,
    local_state_step,
    read_declaration,
    run_local_state,
)
from router.teardown.nested import NestedRepo, survey_nested, survey_remains
from router.teardown.plan_dir import plan_dir_decision, remove_plan_dir
from router.teardown.primary import is_primary_clone, primary_busy
from router.teardown.proof import EMPTY, Integration, cut_from, integration
from router.teardown.record import (
    LOCAL_STATE_RAN,
    TopicRef,
    forget_earlier_teardown,
    local_state_ran,
    mark_done,
    pending_pick,
)
from router.teardown.remove import (
    copies_note,
    finish_blocker,
    gone_with,
    included_copies,
    removal_started,
    remove_worktree,
)
from router.teardown.snapshot import (
    RestoredRepo,
    RestoreStatus,
    plan_dir_ref,
    read_snapshot,
    restore_plan_dir,
    restore_repo,
)
from router.teardown.steps import (
    STEPS,
    Decision,
    NotDone,
    Outcome,
    Step,
    StepResult,
    StepRun,
    acting,
    last_run,
    name_some,
    not_done,
    refused,
    settled,
    skipped,
    stopped_at,
    stopped_error,
)
from router.teardown.sweep import Kept, Runs, SweepResult, SweepVerdict, classify, sweep_step
from router.teardown.unshipped import (
    RunArtifacts,
    has_shipped,
    run_artifacts,
    snapshot_note,
    unshipped,
    unshipped_message,
)
from router.teardown.update import left_earlier, prune_origin, update_decision
from router.topic import state, worktreelock
from router.topic.scope import RepoTarget, TopicScope, resolve_topic
from router.topic.target import home_repo
from router.topic.workspace import (
    WORKTREES_DIR,
    DefaultBranch,
    Repo,
    default_branch,
    find_worktree,
    open_repo,
)

# -- plan -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TeardownOptions:
    integrate: bool = False
    force: bool = False
    dry_run: bool = False
    line_timeout: float = DEFAULT_LINE_TIMEOUT
    echo: Echo | None = None
    remove_reused: bool = False  # also remove a checkout and delete a branch `new` reused
    # --force for the work in the worktree only: a lock or another live holder still
    # keeps it (the host's discard intent, which cannot be asked "are you sure?").
    keep_held: bool = False
    # The host removing a worktree it made (the WorktreeRemove hook): the processes
    # it started (its MCP servers, a subagent's tools) are its own, not someone
    # else's work in the worktree; a process it did not start still keeps it.
    host: bool = False
    # The plan a refusal prints: each step's decision as if no blocker stood in the
    # way (none holds another back), reported and never acted on.
    refused_plan: bool = False

    @property
    def acts(self) -> bool:
        """The steps act on their decisions (not a dry run, nor a refusal's plan)."""
        return not (self.dry_run or self.refused_plan)


@dataclass(frozen=True, slots=True)
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
    foreign: str = ""  # why the worktree named for this repo is another branch's (kept)
    declaration: Declaration | None = (
        None  # .teamteardown as the default branch had it before teardown
    )
    copies: str = ""  # the .worktreeinclude copies the removal deletes (git ignores them)
    nested: tuple[NestedRepo, ...] = ()  # repositories inside the worktree (submodules, clones)
    resuming: bool = False  # dry run: an interrupted cherry-pick of ours is still in the primary
    # Why the worktree / the branch stays: team-router did not create it (`new`
    # reused the user's own checkout or branch); "" when it is ours to remove.
    kept_worktree: str = ""
    kept_branch: str = ""
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
        blocker = refused(Step.INTEGRATE, code, f"{target.name}: checking the repo failed: {what}")
        return RepoPlan(target, checked=False, blockers=(blocker,))


def _plan_repo(target: RepoTarget, opts: TeardownOptions, topic_id: str) -> RepoPlan:
    repo = target.repo
    if repo is None:
        return RepoPlan(target)
    reachable, notes = True, []
    topic = TopicRef(topic_id, target.name) if topic_id else None
    resumed = (
        resume_integration(repo, topic, target.branch)
        if topic is not None and not opts.dry_run
        else None
    )
    # A dry run changes nothing, so an interrupted pick of ours is still there: said, not refused.
    resuming = opts.dry_run and topic is not None and pending_pick(repo, topic) is not None
    if resuming:
        notes.append(
            f"{target.name}: a cherry-pick team-router started in {repo.primary} was interrupted; "
            "the real run undoes it first (when it can prove the changes are its own)"
        )
    if resumed is not None and resumed.stopped:
        return RepoPlan(target, checked=False, blockers=(resumed,))
    if resumed is not None:
        notes.append(f"{target.name}: {resumed.detail}")
    config = g.config_view(repo.git)
    has_origin = config.has_remote("origin")
    if not opts.dry_run and has_origin:
        error = repo.git.fetch("origin")
        if error is not None:
            reachable = False
            notes.append(
                f"{target.name}: fetch from origin failed ({error.first_line}); using what is known"
            )
    # One for-each-ref, after the fetch, answers the default branch, the topic
    # branch's tip and tracking ref, and the targets' trees for the merge proof.
    tips = g.ref_tips_with_trees(repo.git, "refs/remotes/origin/", "refs/heads/")
    default = default_branch(repo.git, {name: t.symref for name, t in tips.items()})
    refs = {name: t.commit for name, t in tips.items()}
    # The home's worktree list was read while resolving the topic, moments ago.
    entries = list(target.entries) if target.entries is not None else repo.git.worktree_list()
    worktree = target.worktree or _listed_worktree(entries, target.branch)
    on_primary = worktree is not None and is_primary_clone(repo, worktree, entries)
    entry = find_worktree(entries, worktree) if worktree and not on_primary else None
    foreign = foreign_worktree(repo, worktree, target.branch, entry) if entry else ""  # type: ignore[arg-type]
    if foreign:
        notes.append(f"{target.name}: {foreign}")
        entry = None
    # A removal of ours that a kill interrupted: its deletions are not work (the remove step finishes it).
    # (Registered or not: git drops the registration even when it stops half-way.)
    removing = bool(worktree and topic and removal_started(repo, topic, worktree) is not None)  # type: ignore[arg-type]
    there = entry is not None and not removing and os.path.isdir(worktree)  # type: ignore[arg-type]
    status = (
        with_hidden(Git(worktree).status(), hidden_work(worktree, topic_id or None))  # type: ignore[arg-type]
        if there
        else StatusReport()
    )
    nested = (
        survey_nested(worktree)  # type: ignore[arg-type]
        if there
        # What a removal of ours that a kill interrupted would still delete, or
        # the registration of a directory deleted by hand keeps.
        else survey_remains(repo.common_dir, worktree)  # type: ignore[arg-type]
        if entry is not None or removing
        else ()
    )
    tip = refs.get(f"refs/heads/{target.branch}")
    recorded = target.record.base_commit if target.record else None
    base = cut_from(repo.git, target.branch, recorded) if tip and default else None
    found = integration(repo.git, tip, default, tips, base=base) if tip and default else None
    plan = RepoPlan(
        target,
        default,
        worktree,
        on_primary,
        entry is not None,
        tuple(entries),
        status,
        tip,
        found,
        has_origin,
        reachable,
        f"refs/remotes/origin/{target.branch}" in refs,
        foreign,
        read_declaration(repo.git, default, target.record.declared_at if target.record else None),
        copies_note(repo.primary, worktree, included_copies(target.record, worktree))
        if entry and worktree
        else "",
        nested,
        notes=tuple(notes),
    )
    plan = dataclasses.replace(
        plan,
        config=config,
        status_read=there,
        default_at_origin=reachable and _at_origin(default, refs),
        resuming=resuming,
        removing=removing,
        kept_worktree=_kept_worktree(repo, worktree, entry, opts),
        kept_branch=_kept_branch(target, tip, opts),
    )
    if topic is not None and not opts.dry_run and entry is not None and not removing:
        plan = _keep_locked(repo, plan, entry, topic.id)
    # A kept worktree is not removed: its dirt and nested clones lose nothing.
    kept = removing or bool(plan.kept_worktree)
    blockers = _plan_blockers(plan, None if kept else entry, opts)
    if removing:
        # --force or not: the rerun would delete the repositories left in it.
        blockers += [b for b in [nested_blocker(worktree, nested)] if b is not None]  # type: ignore[arg-type]
    if target.is_home and topic_id:
        removed = (
            worktree
            if entry is not None and not kept
            else _worktree_back_with_artifacts(plan, topic_id)
        )
        # Shipped is the run's, wherever its pr.md is: a kept worktree's plan dir counts too.
        shipped = has_shipped(run_artifacts(c, topic_id) for c in {worktree, repo.primary} if c)
        found_dirs, plan_blockers = _plan_dir_blockers(repo, topic_id, removed, shipped, opts)
        plan = dataclasses.replace(plan, unshipped=found_dirs, shipped=shipped)
        blockers += plan_blockers
    # The plan asked `git var` exactly when the act will pick: with no blocker, it named a committer.
    committer = _picks(plan, opts) and not plan.resuming and not blockers
    return dataclasses.replace(plan, blockers=tuple(blockers), committer_known=committer)


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
    try:
        worktreelock.lock(repo.git, entry, topic_id)
    except GitError as exc:
        note = (
            f"{plan.target.name}: {entry.path} is not locked and could not be locked "
            f"({exc.first_line}); other tools' cleanup may delete an unlocked worktree"
        )
        return dataclasses.replace(plan, notes=(*plan.notes, note))
    entries = worktreelock.with_lock(list(plan.entries), entry.path, topic_id)
    return dataclasses.replace(plan, entries=tuple(entries))


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
    found = remove_plan_dir(repo, topic_id, dry_run=True, force=True)  # would it go at all?
    if found.code == ErrorCode.NESTED_WORK:
        return (), [found]
    checkouts = [removed] if removed is not None else []
    checkouts += [repo.primary] if found.outcome is Outcome.DONE else []
    dirs = unshipped((run_artifacts(c, topic_id) for c in checkouts), shipped=shipped)
    if not dirs or opts.force:
        return tuple(dirs), []
    why = unshipped_message(topic_id, dirs, command="teardown")
    return tuple(dirs), [refused(Step.PLAN_DIR, ErrorCode.UNSHIPPED_RUN, why)]


def _at_origin(default: DefaultBranch | None, refs: Mapping[str, str]) -> bool:
    """The local default branch is at origin's tip (both known, same commit)."""
    if default is None or default.remote_ref is None or default.local_ref is None:
        return False
    return refs.get(default.local_ref) == refs.get(default.remote_ref)


def _kept_worktree(
    repo: Repo, worktree: Path | None, entry: WorktreeEntry | None, opts: TeardownOptions
) -> str:
    """Why a linked worktree stays: `new` reused it, never made it ("" unless --remove-reused)."""
    if opts.remove_reused or worktree is None or entry is None:
        return ""
    return reused_checkout(repo, worktree)


def _kept_branch(target: RepoTarget, tip: str | None, opts: TeardownOptions) -> str:
    """Why the branch stays: the record says team-router did not create it."""
    if opts.remove_reused or tip is None:
        return ""
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
    found = []
    if entry is not None and not os.path.isdir(plan.worktree):  # type: ignore[arg-type]
        # --force or not: a worktree whose disk is not mounted is not gone.
        unmounted = unmounted_blocker(repo, plan.worktree)  # type: ignore[arg-type]
        found += [unmounted] if unmounted else []
    if entry is not None:
        # --force or not: a snapshot cannot keep another repository's work, nor a reflog.
        nested = nested_blocker(plan.worktree, plan.nested)  # type: ignore[arg-type]
        found += [nested] if nested else []
        reflog = reflog_blocker(repo, plan.worktree, plan.entries)  # type: ignore[arg-type]
        found += [reflog] if reflog else []
    if entry is not None and not opts.force:
        blocker = worktree_blocker(plan.worktree, entry, plan.status)  # type: ignore[arg-type]
        if blocker is not None:
            found.append(blocker)
        found += _detached_loss(repo, plan, entry)
    elif entry is not None and opts.keep_held and worktreelock.locked_by_other(entry):
        found.append(worktree_blocker(plan.worktree, entry, StatusReport()))  # type: ignore[arg-type]
    if plan.tip is not None and plan.default is None and not opts.force:
        found.append(
            refused(
                Step.INTEGRATE,
                ErrorCode.NO_DEFAULT_BRANCH,
                f"{repo.primary}: cannot tell the default branch",
            )
        )
    missing = plan.found.missing if plan.found and not plan.found.integrated else ()
    if _picks(plan, opts):
        # A dry run with an interrupted pick of ours: the real run undoes it first.
        busy = "" if plan.resuming else primary_busy(repo, plan.default)  # type: ignore[arg-type]
        unknown = g.committer_unknown(repo.git, plan.config)
        if busy:
            found.append(
                refused(
                    Step.INTEGRATE,
                    ErrorCode.PRIMARY_BUSY,
                    f"cannot cherry-pick in {repo.primary}: {busy}",
                )
            )
        elif unknown is not None:
            found.append(no_identity(repo, unknown))
    elif missing and not opts.force and not plan.kept_branch:
        # A kept branch keeps its commits: nothing to refuse.
        found.append(
            refused(
                Step.INTEGRATE,
                ErrorCode.UNINTEGRATED_COMMITS,
                f"{len(missing)} commit(s) of {plan.target.branch} are on no target branch: "
                f"{name_some(c[:12] for c in missing)}; {_ways_out(repo, plan)}",
            )
        )
    return found


def _ways_out(repo: Repo, plan: RepoPlan) -> str:
    """What to do about unintegrated commits, and whether origin's branch keeps them already."""
    pushed = f"refs/remotes/origin/{plan.target.branch}"
    if plan.tracking and plan.tip and repo.git.is_ancestor(plan.tip, pushed):
        return (
            f"they are safe on origin/{plan.target.branch} (pushed, as last fetched), so "
            "--force removes only the local copy (after a snapshot); or pass --integrate"
        )
    return "pass --integrate, or --force to snapshot them"


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
    return [
        refused(
            Step.REMOVE,
            ErrorCode.UNINTEGRATED_COMMITS,
            f"{plan.worktree} is on a detached HEAD holding {lost} commit(s) no branch has; "
            "put them on a branch, or pass --force to snapshot them",
        )
    ]


def _with_prune(result: StepResult, repo: Repo, plan: RepoPlan) -> StepResult:
    if not plan.has_origin or plan.default is None:
        return result
    if not plan.reachable:
        note = "origin was not reachable: not pruned"
    else:
        note = prune_origin(repo, plan.target.branch, tracking=plan.tracking)
    return dataclasses.replace(result, detail=f"{result.detail}; {note}")


# -- act ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TeardownReport:
    name: str
    worktree: Path | None
    steps: tuple[StepResult, ...]
    sweep: SweepResult | None = None
    local_state: LocalStateReport | None = None
    # A refused repo's plan: each step as it would go once every blocker is gone.
    planned: tuple[StepResult, ...] = ()

    @property
    def ok(self) -> bool:
        # A default branch that cannot be rebased is reported (a warning), not a
        # failure of the teardown: it is the user's to resolve, and counting it
        # would make every later teardown of the torn-down topic exit 1.
        return not any(s.blocks for s in self.steps)

    @property
    def interrupted(self) -> bool:
        return stopped_at(self.steps) is not None

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "worktree": str(self.worktree) if self.worktree else None,
            "steps": [s.to_json() for s in self.steps],
        }


# A stopped step of these holds back the guarded steps after it (what it guards stays).
GUARDING = frozenset({Step.INTEGRATE, Step.REMOVE, Step.BRANCH})


def teardown_repo(plan: RepoPlan, scope: TopicScope, opts: TeardownOptions) -> TeardownReport:
    """The eight steps in one repo (or, unless ``opts.acts``, what each would do); a refusal
    of a guarding step keeps everything it guards."""
    begun = git_steps(plan, scope, opts)
    return begun if isinstance(begun, TeardownReport) else local_state_last(begun, scope, opts)


@dataclass(slots=True)
class RepoRun:
    """One repo's teardown between its seven git steps and its local state (steps accrue)."""

    plan: RepoPlan
    repo: Repo
    runner: StepRun
    sweep: SweepResult | None = None
    local: LocalStateReport | None = None

    def outcome(self, name: str) -> Outcome | None:
        """The outcome of step ``name`` so far in this run: as done, or (dry run) as planned."""
        return next((s.outcome for s in self.runner.steps if s.name == name), None)


# Each step of a repo decides once, from the plan and the steps before it (as they went
# or, in a dry run, as they would go), what it does: the dry run reports that decision,
# the real run carries it out. (name, decide, guarded: a stopped guarding step holds it back.)
Decide = Callable[[RepoRun, TopicScope, TeardownOptions], Decision]


def git_steps(plan: RepoPlan, scope: TopicScope, opts: TeardownOptions) -> RepoRun | TeardownReport:
    """Steps 1-7 in one repo: a report at once when the repo cannot be used at all."""
    target = plan.target
    repo = target.repo
    if repo is None:
        return TeardownReport(
            target.name,
            target.worktree,
            tuple(skipped(s, f"repo not usable: {target.problem}") for s in STEPS),
        )
    if _recreated(plan) and opts.acts:
        forget_earlier_teardown(repo.common_dir, scope.id)
    runner = StepRun(
        frozenset() if opts.refused_plan else GUARDING, crash_seam=True, dry_run=not opts.acts
    )
    begun = RepoRun(plan, repo, runner)
    for name, decide, guarded in _GIT_STEPS:
        runner.decide(name, _deciding(decide, begun, scope, opts), guarded=guarded)
    return begun


def _deciding(
    decide: Decide, run: RepoRun, scope: TopicScope, opts: TeardownOptions
) -> Callable[[], Decision]:
    return lambda: decide(run, scope, opts)


def local_state_last(begun: RepoRun, scope: TopicScope, opts: TeardownOptions) -> TeardownReport:
    """Step 8 in one repo, run once every repo of the topic is past step 7, then the record.

    A ``.teamteardown`` line and the temp-path checks then see the topic as the
    teardown leaves it, not another repo's worktree still half there.
    """
    plan, repo = begun.plan, begun.repo
    begun.runner.decide(Step.LOCAL_STATE, lambda: _decide_local_state(begun, scope, opts))
    report = TeardownReport(
        plan.target.name, plan.worktree, tuple(begun.runner.steps), begun.sweep, begun.local
    )
    if opts.acts:
        _record_teardown(repo, plan.target, scope, report)
    return report


def _recreated(plan: RepoPlan) -> bool:
    """The topic has a worktree of ours again: what an earlier teardown recorded describes
    another run (the real run forgets it; its local state runs again).

    A kept checkout (one `new` reused) is still there after every teardown: it does
    not show the topic was created again.
    """
    return plan.registered and not plan.kept_worktree


def _earlier(plan: RepoPlan) -> state.TopicRecord | None:
    """The repo's record as the steps read it: without an earlier teardown's marks once forgotten."""
    record = plan.target.record
    if record is None or not _recreated(plan):
        return record
    return dataclasses.replace(record, teardown=None)


def _decide_integrate(run: RepoRun, scope: TopicScope, opts: TeardownOptions) -> Decision:
    plan, repo = run.plan, run.repo
    name, branch = Step.INTEGRATE, plan.target.branch
    if plan.tip is None:
        return settled(skipped(name, f"branch {branch} is gone: nothing to integrate"))
    if plan.kept_branch and not opts.integrate:
        return settled(_kept_integrate(plan))
    found, default, tip = plan.found, plan.default, plan.tip
    if found is None or default is None:
        return settled(
            refused(
                name, ErrorCode.NO_DEFAULT_BRANCH, f"{repo.primary}: the default branch is unknown"
            )
        )
    if found.empty:
        return settled(skipped(name, f"nothing to integrate: {branch} is {EMPTY}"))
    if found.proof is not None:
        return settled(
            skipped(name, f"nothing to integrate: {branch} is merged ({found.proof.detail})")
        )
    if not found.missing:
        return settled(
            skipped(name, f"nothing to integrate: every patch of {branch} is on {default.name}")
        )
    missing = (
        f"{len(found.missing)} commit(s) of {branch} are not on {default.name}: "
        f"{name_some(c[:12] for c in found.missing)}"
    )
    if opts.integrate:
        return acting(
            lambda: integrate_commits(
                repo,
                branch,
                default,
                apply=True,
                known=(tip, found),
                topic=TopicRef(scope.id, plan.target.name),
                committer_known=plan.committer_known,
            ),
            name,
            f"cherry-pick {len(found.missing)} commit(s) onto {default.name}",
        )
    if opts.force:
        # --force without --integrate: the commits are snapshotted, not applied.
        return settled(skipped(name, f"{missing}; --force: they go into a snapshot ref"))
    return settled(
        refused(
            name,
            ErrorCode.UNINTEGRATED_COMMITS,
            f"{missing}; pass --integrate, or --force to snapshot them",
        )
    )


def _decide_remove(run: RepoRun, scope: TopicScope, opts: TeardownOptions) -> Decision:
    plan, repo = run.plan, run.repo
    name, worktree = Step.REMOVE, plan.worktree
    if worktree is None:
        return settled(skipped(name, "no worktree recorded"))
    if plan.on_primary:
        return settled(skipped(name, f"{worktree} is the primary clone: never removed"))
    if plan.kept_worktree:
        return settled(skipped(name, plan.kept_worktree))
    topic = TopicRef(scope.id, plan.target.name)

    def remove() -> StepResult:
        result, _ = remove_worktree(
            repo,
            worktree,
            plan.target.branch,
            force=opts.force,
            entries=list(plan.entries),
            topic=topic,
            proven_clean=plan.status_read and not plan.status.dirty,
        )
        return _with_copies(result, plan)

    if plan.removing:
        # A removal of ours a kill interrupted, registered or not: finished from its journal.
        started = removal_started(repo, topic, worktree)
        blocker = finish_blocker(repo, worktree, started) if started is not None else None
        if blocker is not None:
            return settled(blocker)
        return acting(remove, name, f"finish removing {worktree} (its removal was interrupted)")
    if plan.foreign:
        return settled(skipped(name, plan.foreign))
    if not plan.registered:
        there = "left to verify-gone and sweep" if os.path.lexists(worktree) else "already gone"
        return settled(skipped(name, f"{worktree} is not a registered worktree: {there}"))
    in_worktree = [a for a in plan.unshipped if a.checkout == worktree]
    snap = ""
    if opts.force and (plan.status.dirty or in_worktree):
        snap = " after writing a snapshot"
        snap += f" holding {snapshot_note(in_worktree)}" if in_worktree else ""
    copies = f"; {plan.copies}" if plan.copies else ""
    return acting(remove, name, f"remove {worktree}{snap}{gone_with(plan.nested)}{copies}")


def _decide_branch(run: RepoRun, scope: TopicScope, opts: TeardownOptions) -> Decision:
    plan, repo = run.plan, run.repo
    name, branch = Step.BRANCH, plan.target.branch
    if plan.kept_branch:
        return settled(skipped(name, plan.kept_branch))
    if plan.tip is None:
        return settled(skipped(name, f"{branch} is already gone"))
    holder = _still_checked_out(run)
    if holder is not None:
        # git refuses to delete a branch some checkout has: said before it is asked.
        return settled(
            skipped(name, f"{branch} stays while the primary clone holds the work")
            if holder == 0
            else skipped(name, f"{branch} is checked out in {plan.entries[holder].path}: kept")
        )
    # The plan's judgement holds, and after our own pick we know the new one:
    # every missing commit of the plan's tip is now on the default branch. Either
    # is used only while the branch still points at the plan's tip (delete_branch
    # reads the tip again: another process may have moved the branch since).
    picked = run.outcome(Step.INTEGRATE) is Outcome.DONE
    found = Integration(None, ()) if picked else plan.found
    known = (plan.tip, found) if found else None

    def delete() -> StepResult:
        return delete_branch(
            repo, branch, plan.default, force=opts.force, known=known, config=plan.config
        )[0]

    if found is None or found.integrated:
        return acting(delete, name, f"delete {branch}")
    if opts.force:
        return acting(delete, name, f"delete {branch} once a snapshot ref holds its commits")
    return settled(
        refused(
            name,
            ErrorCode.UNINTEGRATED_COMMITS,
            f"{branch} holds {len(found.missing)} commit(s) not on the default branch; kept",
        )
    )


def _still_checked_out(run: RepoRun) -> int | None:
    """Which checkout of the plan's worktree list (0: the primary) still has the branch once
    the remove step has done its part; None: none."""
    plan = run.plan
    removed = plan.worktree if run.outcome(Step.REMOVE) is Outcome.DONE else None
    for index, entry in enumerate(plan.entries):
        if entry.branch != plan.target.branch:
            continue
        if removed is not None and index and find_worktree([entry], removed) is not None:
            continue
        return index
    return None


def _decide_verify_gone(run: RepoRun, scope: TopicScope, opts: TeardownOptions) -> Decision:
    plan, repo = run.plan, run.repo
    name, worktree = Step.VERIFY_GONE, plan.worktree
    if worktree is None:
        return settled(skipped(name, "no worktree recorded"))
    if plan.kept_worktree:
        return settled(skipped(name, "the worktree is kept"))
    if plan.on_primary:
        return settled(skipped(name, f"{worktree} is the primary clone: never removed"))
    if plan.foreign:
        return settled(skipped(name, f"{worktree} is still a registered worktree"))
    runs = _runs(run, scope, opts)
    return acting(
        lambda: verify_gone(repo, worktree, runs), name, f"re-check that {worktree} is gone"
    )


def _decide_update(run: RepoRun, scope: TopicScope, opts: TeardownOptions) -> Decision:
    plan, repo = run.plan, run.repo
    left = left_earlier(
        _earlier(plan),
        Step.UPDATE_DEFAULT,
        f"the default branch could not be updated in {repo.primary}; update it yourself",
    )
    if left is not None:
        return settled(left)
    update = update_decision(
        repo,
        plan.default,
        has_origin=plan.has_origin,
        known=_after_pick(repo, plan, picked=run.outcome(Step.INTEGRATE) is Outcome.DONE),
        at_origin=plan.default_at_origin,
        fresh=plan.reachable,
        fetched=not opts.dry_run,
    )
    if not plan.has_origin or plan.default is None:
        return update  # no origin to prune either
    # Whatever the default branch does, origin's ref of the branch is pruned once origin lacks it.
    return Decision(
        act=lambda: _with_prune(update.resolve(dry_run=False), repo, plan),
        plan=lambda: _with_planned_prune(update.resolve(dry_run=True), plan),
    )


def _decide_plan_dir(run: RepoRun, scope: TopicScope, opts: TeardownOptions) -> Decision:
    if not run.plan.target.is_home:
        return settled(skipped(Step.PLAN_DIR, "home repo only"))
    return plan_dir_decision(run.repo, scope.id, force=opts.force, shipped=run.plan.shipped)


def _decide_sweep(run: RepoRun, scope: TopicScope, opts: TeardownOptions) -> Decision:
    plan = run.plan
    # A dry run's remove step has not taken the worktree yet (one a kill left
    # half-removed is no registered worktree), nor its verify-gone step the directory a late
    # writer made where the worktree was: not residue, it goes first, as in the real run.
    goes = Outcome.DONE in (run.outcome(Step.REMOVE), run.outcome(Step.VERIFY_GONE))
    leaving = (plan.worktree,) if plan.worktree is not None and goes else ()

    runs = _runs(run, scope, opts)

    def sweep_now(dry_run: bool) -> StepResult:
        result, run.sweep = sweep_step(run.repo, dry_run=dry_run, leaving=leaving, runs=runs)
        return result

    return Decision(act=lambda: sweep_now(False), plan=lambda: sweep_now(True))


def _runs(run: RepoRun, scope: TopicScope, opts: TeardownOptions) -> Runs:
    """What lets a run's artifacts left in a directory git no longer knows go (verify-gone,
    sweep): the topic's own run shipped (its pr.md, seen before its worktree went), or
    --force, which snapshots them first."""
    shipped = frozenset({scope.id}) if run.plan.shipped else frozenset()
    return Runs(run.repo.primary, shipped, opts.force)


def _decide_local_state(run: RepoRun, scope: TopicScope, opts: TeardownOptions) -> Decision:
    plan, repo = run.plan, run.repo
    target = plan.target
    # Read now (another run may just have run it), unless the topic was created again.
    if not _recreated(plan) and local_state_ran(repo.common_dir, scope.id):
        return settled(skipped(Step.LOCAL_STATE, LOCAL_STATE_RAN.format(id=scope.id)))
    job = _local_job(repo, target, plan, scope, opts)

    def plan_it() -> StepResult:
        result, run.local = local_state_step(job, dry_run=True)
        return result

    def run_it() -> StepResult:
        result, run.local = local_state_step(job, echo=opts.echo)
        if run.local.interrupted:
            return result  # not recorded: the rerun runs the step again
        # Recorded at once, failed lines or not: a rerun (or a run killed after
        # this point) must not run the lines again. This run reports the
        # failure; `team-router local-state` is how to run them again on purpose.
        mark_done(
            repo.common_dir, scope.id, Step.LOCAL_STATE, repo_name=target.name, branch=target.branch
        )
        return result

    return Decision(act=run_it, plan=plan_it)


_GIT_STEPS: tuple[tuple[Step, Decide, bool], ...] = (
    (Step.INTEGRATE, _decide_integrate, False),
    (Step.REMOVE, _decide_remove, True),
    (Step.BRANCH, _decide_branch, True),
    (Step.VERIFY_GONE, _decide_verify_gone, True),
    (Step.UPDATE_DEFAULT, _decide_update, False),
    (Step.PLAN_DIR, _decide_plan_dir, True),
    (Step.SWEEP, _decide_sweep, False),
)


def _kept_integrate(plan: RepoPlan) -> StepResult:
    missing = len(plan.found.missing) if plan.found and not plan.found.integrated else 0
    return skipped(
        Step.INTEGRATE,
        f"{plan.target.branch} is kept, with its {missing} commit(s) not on the default branch"
        if missing
        else f"nothing to integrate: {plan.target.branch} is kept",
    )


def _with_copies(result: StepResult, plan: RepoPlan) -> StepResult:
    if result.outcome is not Outcome.DONE or not plan.copies:
        return result
    return dataclasses.replace(result, detail=f"{result.detail}; {plan.copies}")


def _with_planned_prune(result: StepResult, plan: RepoPlan) -> StepResult:
    """A dry run's update-default: origin's ref of the branch is pruned too, once origin lacks it."""
    branch = plan.target.branch
    note = (
        f"would prune origin/{branch} if origin no longer has it"
        if plan.tracking
        else f"no origin/{branch} ref: nothing to prune"
    )
    return dataclasses.replace(result, detail=f"{result.detail}; {note}")


def _after_pick(
    repo: Repo, plan: RepoPlan, *, picked: bool
) -> tuple[StatusReport, str | None] | None:
    """The primary as our cherry-pick left it (clean, on the default branch); None: read it.

    The pick began on a clean primary on the default branch (re-checked right
    before it) and succeeded, so that is still its state as far as this
    command changed it. A change by someone else since is git's to refuse:
    ``pull --rebase --no-autostash`` will not run over uncommitted changes,
    and no git command overwrites untracked files. With a ``.gitmodules`` the
    pick may have moved submodules, so the primary is read again.
    """
    if not picked or plan.default is None or os.path.lexists(repo.primary / ".gitmodules"):
        return None
    return StatusReport(), plan.default.name


def _local_job(
    repo: Repo, target: RepoTarget, plan: RepoPlan, scope: TopicScope, opts: TeardownOptions
) -> LocalStateJob:
    worktree = None if plan.on_primary or plan.foreign or plan.kept_worktree else plan.worktree
    return LocalStateJob(
        target.name,
        repo.git,
        repo.primary,
        plan.default,
        target.branch,
        worktree,
        temp_paths=scope.temp_paths if target.is_home else None,
        timeout=opts.line_timeout,
        declaration=plan.declaration,
        protected=scope.repo_paths(),
    )


def _record_teardown(
    repo: Repo, target: RepoTarget, scope: TopicScope, report: TeardownReport
) -> None:
    """Keep the record, marked torn down, so a second run knows the topic and exits 0."""
    finished = [s.name for s in report.steps if s.finished]
    complete = report.ok and not report.interrupted
    left = [s.name for s in report.steps if s.left_to_user]

    def change(record: state.TopicRecord) -> state.TopicRecord:
        mark = (record.teardown or state.TeardownMark()).with_done(
            finished, STEPS, complete=complete, left=left
        )
        return dataclasses.replace(
            record, teardown=mark, last_run=last_run("teardown", report.steps)
        )

    # A corrupt record was reported at resolution; it is never overwritten.
    state.update_record(
        repo.common_dir,
        scope.id,
        change,
        new=lambda: state.TopicRecord(id=scope.id, repo=target.name, branch=target.branch),
    )


# -- the whole teardown ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TeardownResult:
    id: str
    repos: tuple[TeardownReport, ...]
    dry_run: bool = False
    warnings: list[str] = field(default_factory=list)
    # Set when the plan refused the whole teardown: nothing was removed, and
    # ``repos`` is the plan, every blocker of every repo in it.
    refusal: dict[str, str] | None = None
    stopped_by: int = 0  # the signal that stopped the command (router.interrupt), if one did

    @property
    def interrupted(self) -> bool:
        return any(r.interrupted for r in self.repos)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return ExitCode.for_signal(self.stopped_by or interrupt.SIGINT)
        ok = self.refusal is None and all(r.ok for r in self.repos)
        return ExitCode.OK if ok else ExitCode.REFUSED

    @property
    def error(self) -> dict[str, str] | None:
        """What made ``ok`` false: a signal, or the first step that stopped and how many others did (§13)."""
        if self.refusal is not None:
            return self.refusal
        if self.interrupted:
            where = "; ".join(
                f"stopped {r.name} {stopped_at(r.steps)}" for r in self.repos if r.interrupted
            )
            return interrupt.interrupted_error(self.stopped_by, where)
        if self.exit_code == 0:
            return None
        return stopped_error(
            ((r.name, s) for r in self.repos for s in r.steps), dry_run=self.dry_run
        )

    @property
    def swept(self) -> list[Path]:
        return [p for r in self.repos if r.sweep for p in r.sweep.swept]

    @property
    def kept(self) -> list[Kept]:
        return [k for r in self.repos if r.sweep for k in r.sweep.kept]

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "dry_run": self.dry_run,
            "repos": [r.to_json() for r in self.repos],
            "swept": [str(p) for p in self.swept],
            "kept": [k.to_json() for k in self.kept],
            "local_state": [r.local_state.to_json() for r in self.repos if r.local_state],
        }


def teardown(
    cwd: Path,
    target: str,
    *,
    integrate: bool = False,
    force: bool = False,
    dry_run: bool = False,
    wait: float = state.DEFAULT_WAIT,
    line_timeout: float = DEFAULT_LINE_TIMEOUT,
    echo: Echo | None = None,
    remove_reused: bool = False,
    keep_held: bool = False,
    check: Callable[[TopicScope], None] | None = None,
    host: bool = False,
) -> TeardownResult:
    """Plan every repo of the topic, refuse if any would lose work, then tear each down.

    A signal (:mod:`router.interrupt`) ends the run at step boundaries: no step and
    no ``.teamteardown`` line starts after it, in any repo. ``check`` is called with
    the topic as resolved under its lock, before anything is planned; it raises
    to stop the teardown there.
    """
    scope = resolve_topic(cwd, target)
    opts = TeardownOptions(
        integrate, force, dry_run, line_timeout, echo, remove_reused, keep_held, host
    )
    if dry_run:
        # The real run's plan and steps, each step reporting its decision instead of acting on
        # it. Under the topic's lock too: another run tearing the topic down now has its git
        # in the worktree, and the plan must wait for it (or say `locked`), never take it for
        # a process working there.
        with state.held_lock(scope.home.common_dir, scope.id, wait=wait):
            scope = resolve_topic(cwd, target)
            plans = _with_users(
                _with_holders(
                    scope, parallel_map(lambda t: plan_repo(t, opts, scope.id), scope.repos), opts
                ),
                opts,
                state.lock_path(scope.home.common_dir, scope.id),
            )
            warnings = list(scope.warnings) + [n for p in plans for n in p.notes]
            if any(p.has_origin for p in plans):
                # The real run fetches first; a dry run changes nothing, not even origin's refs.
                warnings.append(
                    "dry run: origin was not fetched, so the plan uses what was fetched before "
                    "(a merge made since is not seen: `git fetch origin` first for an "
                    "up-to-date plan)"
                )
            refusal = _refusal(scope, plans, warnings, opts)
            if refusal is not None:
                return refusal
            reports = parallel_map(lambda p: teardown_repo(p, scope, opts), plans)
        return TeardownResult(scope.id, tuple(reports), dry_run=True, warnings=warnings)
    # Every step checks the world again before it acts, so what another run did
    # while this one waited for the lock is found, not redone.
    with state.held_lock(scope.home.common_dir, scope.id, wait=wait):
        # The scope (records, worktree lists) was read before the lock: another
        # run may have torn the topic down or added a repo while this one waited.
        scope = resolve_topic(cwd, target)
        if check is not None:
            check(scope)
        plans = _with_users(
            _with_holders(
                scope, parallel_map(lambda t: plan_repo(t, opts, scope.id), scope.repos), opts
            ),
            opts,
            state.lock_path(scope.home.common_dir, scope.id),
        )
        warnings = list(scope.warnings) + [n for p in plans for n in p.notes]
        refusal = _refusal(scope, plans, warnings, opts)
        if refusal is not None:
            return refusal
        signum = interrupt.received()
        if signum:
            raise Interrupted(
                f"teardown of {scope.id} interrupted ({interrupt.name(signum)}) before anything "
                "was removed; run the same command again",
                details={"id": scope.id, "warnings": warnings},
                signum=signum,
            )
        _remember_scope(scope)
        progress = Progress(len(plans), label="teardown")

        def finish(begun: RepoRun | TeardownReport) -> TeardownReport:
            report = (
                begun if isinstance(begun, TeardownReport) else local_state_last(begun, scope, opts)
            )
            progress.step(report.name, _summary(report))
            return report

        # Local state waits for every repo's git steps: its lines and its temp-path
        # checks see every worktree of the topic gone, whichever repo finished first.
        begun = parallel_map(lambda p: git_steps(p, scope, opts), plans)
        reports = parallel_map(finish, begun)
    warnings += [
        f"{r.name}: the default branch was not updated: {s.detail}"
        for r in reports
        for s in r.steps
        if s.left_to_user
    ]
    warnings += _left_locks(plans)
    return TeardownResult(
        scope.id, tuple(reports), warnings=warnings, stopped_by=interrupt.received()
    )


def _left_locks(plans: list[RepoPlan]) -> list[str]:
    """Name git lock files still in a repo after the teardown, with the fix."""
    return [
        warning
        for p in plans
        if p.target.repo is not None
        for warning in g.left_lock_warnings(
            p.target.name, p.target.repo.primary, p.target.repo.common_dir
        )
    ]


def _summary(report) -> str:
    """``refused`` / ``failed`` / ``done`` for a progress line: the worst step outcome."""
    outcomes = {str(s.outcome) for s in report.steps}
    return next((o for o in ("refused", "failed") if o in outcomes), "done")


def _with_holders(
    scope: TopicScope, plans: list[RepoPlan], opts: TeardownOptions
) -> list[RepoPlan]:
    """Another live session holding the topic stops the teardown (unless ``--force``)."""
    from router.topic.holders import describe, other_holders

    others = other_holders(scope.home.common_dir, scope.id)
    if not others or not plans:
        return plans
    who = ", ".join(describe(h) for h in others)
    if opts.force and not opts.keep_held:
        note = f"--force: tearing {scope.id} down although {who} still holds it"
        return [dataclasses.replace(plans[0], notes=(*plans[0].notes, note)), *plans[1:]]
    blocker = refused(
        Step.REMOVE, ErrorCode.HELD, f"{scope.id} is held by {who}; release it or pass --force"
    )
    home = dataclasses.replace(plans[0], blockers=(blocker, *plans[0].blockers))
    return [home, *plans[1:]]


def _with_users(plans: list[RepoPlan], opts: TeardownOptions, lock: Path) -> list[RepoPlan]:
    """A process working in a worktree the teardown would remove stops it, --force or not.

    Asked once for every repo's worktree (one scan of /proc per command), under
    the topic's ``lock``.
    """
    removed = {p.worktree: p for p in plans if p.worktree is not None and _removes(p)}
    users = worktrees_in_use(removed, host=opts.host, topic_lock=lock)
    if users is None:
        if not removed:
            return plans
        return [dataclasses.replace(plans[0], notes=(*plans[0].notes, NO_PROC_NOTE)), *plans[1:]]
    return [_in_use(p, users) for p in plans]


def _removes(plan: RepoPlan) -> bool:
    """The remove step would delete the plan's worktree (ours, registered, not kept)."""
    return plan.registered and not plan.kept_worktree


def _in_use(plan: RepoPlan, users: dict[Path, list[str]]) -> RepoPlan:
    found = users.get(plan.worktree) if plan.worktree is not None and _removes(plan) else None
    if plan.worktree is None or not found:
        return plan
    return dataclasses.replace(
        plan, blockers=(*plan.blockers, in_use_blocker(plan.worktree, found))
    )


def _refusal(
    scope: TopicScope, plans: list[RepoPlan], warnings: list[str], opts: TeardownOptions
) -> TeardownResult | None:
    """The whole teardown refused, as the plan: every repo's steps with every blocker in place.

    The error's code is the first blocker's; the plan names all of them, so one
    rerun after fixing them all is enough. A dry run says the same, in the conditional.
    """
    blocked = [(p, b) for p in plans for b in p.blockers]
    if not blocked:
        return None
    first = blocked[0][1]
    lines = "; ".join(f"{p.target.name}: {b.detail}" for p, b in blocked)
    refused_ = "would be refused" if opts.dry_run else "refused"
    error = error_json(
        first.code or ErrorCode.STEP_REFUSED,
        f"teardown of {scope.id} {refused_}, nothing was removed in any repo: {lines}",
    )
    planning = dataclasses.replace(opts, refused_plan=True)
    reports = tuple(parallel_map(lambda p: _refused_report(p, scope, planning), plans))
    return TeardownResult(scope.id, reports, dry_run=opts.dry_run, warnings=warnings, refusal=error)


def _refused_report(plan: RepoPlan, scope: TopicScope, planning: TeardownOptions) -> TeardownReport:
    """One repo of a refused teardown: its blockers, and what each other step would have done.

    A step that would be skipped anyway says why; one that would act is not
    done, and says what it would have done once the blockers are gone.
    """
    by_step: dict[str, StepResult] = {}
    for b in plan.blockers:
        # Two blockers of one step (a dirty worktree and a nested clone) are both named.
        seen = by_step.get(b.name)
        by_step[b.name] = (
            b if seen is None else dataclasses.replace(seen, detail=f"{seen.detail}; {b.detail}")
        )
    why = "teardown refused" + (
        f" ({plan.blockers[0].code} here)" if plan.blockers else " (another repo)"
    )
    # Each step as it would go once the blockers are gone: none holds another back.
    planned = (
        teardown_repo(plan, scope, planning).steps
        if plan.checked
        else tuple(skipped(s, "not known until the repo can be checked") for s in STEPS)
    )

    def refused_step(step: StepResult) -> StepResult:
        blocker = by_step.get(step.name)
        if blocker is not None:
            return blocker
        if step.outcome is Outcome.SKIPPED and not plan.checked:
            return not_done(skipped(step.name, f"not done: {why}"), NotDone.REFUSED)
        if step.outcome is Outcome.SKIPPED:
            return step
        return not_done(skipped(step.name, f"not done: {why}: {step.detail}"), NotDone.REFUSED)

    steps = tuple(map(refused_step, planned))
    return TeardownReport(plan.target.name, plan.worktree, steps, planned=planned)


def _remember_scope(scope: TopicScope) -> None:
    """Before anything is removed: the repo list and temp paths go into the home record."""

    def change(record: state.TopicRecord) -> state.TopicRecord:
        known = {r.name: r for r in record.repos}
        for t in scope.repos:
            if t.repo is not None and t.name not in known:
                known[t.name] = state.RepoEntry(
                    t.name, str(t.path), str(t.worktree) if t.worktree else None
                )
        return dataclasses.replace(
            record, repos=tuple(known.values()), temp_paths=tuple(scope.temp_paths)
        )

    state.update_record(
        scope.home.common_dir,
        scope.id,
        change,
        new=lambda: state.TopicRecord(id=scope.id, repo="home", branch=scope.branch),
    )


# -- local-state and restore on their own ---------------------------------------------


@dataclass(frozen=True, slots=True)
class LocalStateResult:
    id: str
    reports: tuple[LocalStateReport, ...]
    warnings: list[str] = field(default_factory=list)
    dry_run: bool = False
    interrupted: int = 0  # the signal that stopped it (router.interrupt): no line started after it

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return ExitCode.for_signal(self.interrupted)
        return ExitCode.OK if all(r.ok for r in self.reports) else ExitCode.REFUSED

    @property
    def error(self) -> dict[str, str] | None:
        """What made ``ok`` false: the lines that failed and the temp paths refused (§13)."""
        if self.interrupted:
            return interrupt.interrupted_error(self.interrupted, "the lines after it did not run")
        if self.exit_code == 0:
            return None
        bad = [
            f"{r.repo}: `{c.line}` {c.label}"
            for r in self.reports
            for c in r.commands
            if c.outcome is not LineOutcome.OK
        ] + [
            f"{r.repo}: temp path {t.path} {t.outcome} ({t.check})"
            for r in self.reports
            for t in r.temp_paths
            if t.outcome is TempOutcome.REFUSED
        ]
        return error_json(ErrorCode.LOCAL_STATE_FAILED, "; ".join(bad))

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "commands": [c.to_json() for r in self.reports for c in r.commands],
            "temp_paths": [t.to_json() for r in self.reports for t in r.temp_paths],
            "repos": [r.to_json() for r in self.reports],
            "dry_run": self.dry_run,
        }


def local_state_for_topic(
    cwd: Path,
    target: str,
    *,
    line_timeout: float = DEFAULT_LINE_TIMEOUT,
    wait: float = state.DEFAULT_WAIT,
    echo: Echo | None = None,
    dry_run: bool = False,
) -> LocalStateResult:
    """DESIGN §12 alone: every repo's ``.teamteardown`` and the topic's recorded temp paths."""
    scope = resolve_topic(cwd, target)
    reports = []
    with state.held_lock(scope.home.common_dir, scope.id, wait=wait):
        for t in scope.repos:
            if interrupt.received():
                break
            if t.repo is None:
                continue
            worktree = (
                t.worktree
                if t.worktree
                and not is_primary_clone(t.repo, t.worktree, t.repo.git.worktree_list())
                else None
            )
            job = LocalStateJob(
                t.name,
                t.repo.git,
                t.repo.primary,
                default_branch(t.repo.git),
                t.branch,
                worktree,
                temp_paths=scope.temp_paths if t.is_home else None,
                timeout=line_timeout,
                protected=scope.repo_paths(),
                declared_at=t.record.declared_at if t.record else None,
            )
            reports.append(run_local_state(job, echo=echo, dry_run=dry_run))
    signum = interrupt.received()
    return LocalStateResult(scope.id, tuple(reports), list(scope.warnings), dry_run, signum)


@dataclass(frozen=True, slots=True)
class RestoreResult:
    id: str
    repos: tuple[RestoredRepo, ...]
    warnings: list[str] = field(default_factory=list)
    stopped_by: int = 0  # the signal that stopped the command (router.interrupt), if one did

    @property
    def interrupted(self) -> bool:
        return any(r.status is RestoreStatus.INTERRUPTED for r in self.repos)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return ExitCode.for_signal(self.stopped_by or interrupt.SIGINT)
        refused = any(r.status is RestoreStatus.REFUSED for r in self.repos)
        return ExitCode.REFUSED if refused else ExitCode.OK

    @property
    def error(self) -> dict[str, str] | None:
        """What made ``ok`` false: a signal, or the repos whose restore was refused (§13)."""
        if self.interrupted:
            stopped = next(r for r in self.repos if r.status is RestoreStatus.INTERRUPTED)
            done = [r.name for r in self.repos if r.status is RestoreStatus.RESTORED]
            after = f"after restoring {', '.join(done)}" if done else "before any repo was restored"
            return interrupt.interrupted_error(
                self.stopped_by, f"stopped at {stopped.name}, {after}"
            )
        bad = [r for r in self.repos if r.status is RestoreStatus.REFUSED]
        if not bad:
            return None
        return error_json(
            ErrorCode.RESTORE_REFUSED, "; ".join(f"{r.name}: {r.detail}" for r in bad)
        )

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "repos": [r.to_json() for r in self.repos]}


def restore_topic(
    cwd: Path, target: str, *, repo: str | None = None, wait: float = state.DEFAULT_WAIT
) -> RestoreResult:
    """Recreate each repo's worktree (or one, with ``repo``) from its snapshot ref."""
    if not ID_RE.fullmatch(Path(target).name):
        branch_restore = _restore_branch(cwd, target, wait=wait)
        if branch_restore is not None:
            return branch_restore
    try:
        scope = resolve_topic(cwd, target)
    except BadInput as exc:
        if exc.code != ErrorCode.NO_PLAN_DIR:
            raise
        # Not the topic's home (a secondary repo, or a home whose record is
        # gone): the snapshot this repo holds is enough to restore it here.
        scope = _snapshot_scope(cwd, target, exc)
    chosen = scope.only(repo)
    with state.held_lock(scope.home.common_dir, scope.id, wait=wait):
        results = tuple(_restore_target(t, scope.id) for t in chosen)
    if any(r.status is RestoreStatus.INTERRUPTED for r in results):
        return RestoreResult(scope.id, results, list(scope.warnings), interrupt.received())
    if all(r.status is RestoreStatus.SKIPPED for r in results):
        raise RouterError(
            ErrorCode.NO_SNAPSHOT,
            f"no snapshot to restore for {scope.id}: "
            + "; ".join(f"{r.name}: {r.detail}" for r in results),
            details={"id": scope.id, "repos": [r.to_json() for r in results]},
        )
    return RestoreResult(scope.id, results, list(scope.warnings))


def _restore_branch(cwd: Path, branch: str, *, wait: float) -> RestoreResult | None:
    """A branch that is no topic, whose snapshot the repo at ``cwd`` holds (``pr-cleanup --abandon``)."""
    from router.names import branch_problem
    from router.topic.branches import topic_lock

    if branch_problem(branch) is not None:
        return None
    here = open_repo(cwd)
    if read_snapshot(here.git, branch) is None:
        return None
    # The branch may be a topic's (one `new` reused): then its topic's lock, at its home,
    # and its record is read and written as `restore <id>` does, so that status,
    # phase and teardown find the restored worktree.
    lock = topic_lock(here, Branch(branch))
    record = state.read_record_or_none(here.common_dir, lock.topic_id) if lock.topic_id else None
    name = record.repo if record is not None else here.primary.name
    with state.held_lock(lock.home.common_dir, lock.name, wait=wait):
        result = _restore_unless_stopped(
            name, lambda: restore_repo(name, here, lock.topic_id if record else None, branch)
        )
    return RestoreResult(branch, (result,), stopped_by=interrupt.received())


def _restore_target(target: RepoTarget, topic_id: str) -> RestoredRepo:
    repo = target.repo
    if repo is None:
        return RestoredRepo(
            target.name, RestoreStatus.SKIPPED, f"repo not usable: {target.problem}"
        )
    restored = _restore_unless_stopped(
        target.name, lambda: restore_repo(target.name, repo, topic_id, target.branch)
    )
    if not target.is_home or restored.status is RestoreStatus.INTERRUPTED:
        return restored
    # A run that fell back to the primary clone kept its plan dir there: its snapshot
    # has a ref of its own (teardown --force wrote it), and it goes back in place.
    in_place = restore_plan_dir(target.name, repo, topic_id)
    return restored if in_place is None else _with_plan_dir(restored, in_place)


def _with_plan_dir(worktree: RestoredRepo, plan_dir: RestoredRepo) -> RestoredRepo:
    """One repo's answer for its worktree's snapshot and its in-place plan dir's."""
    if worktree.status is RestoreStatus.SKIPPED:
        return plan_dir
    order = (RestoreStatus.REFUSED, RestoreStatus.RESTORED, RestoreStatus.EXISTING)
    status = next(s for s in order if s in {worktree.status, plan_dir.status})
    return dataclasses.replace(
        worktree, status=status, detail=f"{worktree.detail}; {plan_dir.detail}"
    )


def _restore_unless_stopped(name: str, restore: Callable[[], RestoredRepo]) -> RestoredRepo:
    """One repo's restore, unless a signal stopped the command first or on the way.

    A restore stopped part-way is left as a kill leaves it: its note in the
    worktree's git dir tells the rerun to finish it.
    """
    return interrupt.unless_stopped(
        restore, lambda why, _started: RestoredRepo(name, RestoreStatus.INTERRUPTED, why)
    )


def _snapshot_scope(cwd: Path, target: str, original: BadInput) -> TopicScope:
    """The repo at ``cwd`` alone, when it holds a snapshot of the topic's branch, or of the
    run's plan dir (a sweep's under --force: the run's record may be long gone)."""
    topic_id = Path(target).name
    if not ID_RE.fullmatch(topic_id):
        raise original
    here = open_repo(cwd)
    try:
        record = state.read_record(here.common_dir, topic_id)
    except state.RecordCorrupt:
        record = None
    branch = record.branch if record is not None else branch_for(topic_id)
    plan_dir = here.git.rev_parse(plan_dir_ref(topic_id)) is not None
    if read_snapshot(here.git, branch) is None and not plan_dir:
        raise original
    name = record.repo if record is not None else here.primary.name
    # A plan dir's snapshot goes back into this repo's primary clone, as the home's does.
    only = RepoTarget(name, here.primary, branch, None, here, record, is_home=plan_dir)
    # Only this repo is restored, but the topic's lock is at its home wherever
    # that is (this repo's record names it): every other command takes it there.
    home = home_repo(here, topic_id)
    return TopicScope(topic_id, branch, home, None, None, (only,), ())
