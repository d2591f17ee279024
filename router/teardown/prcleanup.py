"""pr-cleanup (DESIGN §11): after a merge, or on an explicit abandon, take one branch apart.

Everything is decided before anything is touched: the primary clone is
confirmed by git (:func:`router.topic.workspace.primary_clone`: the command often
runs inside the worktree it removes), every branch name from outside is
validated and protected names are refused (:mod:`router.topic.branches`), dirty
checkouts are refused, and in merged mode the merge is proven
(:mod:`router.teardown.merged`). The PR it names or closes is
:mod:`router.teardown.prs`'s; ``--reclaim`` is :mod:`router.teardown.reclaim`'s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from router import git as g
from router import github, interrupt
from router.errors import ErrorCode, ExitCode, Refusal, RouterError
from router.git import Git, GitError, StatusReport, WorktreeEntry
from router.github import GhFailed, GitHub, PullRequest, Unavailable
from router.names import Branch, protected_reason
from router.plandir.artifacts import read_temp_paths
from router.progress import Echo
from router.teardown.blockers import (
    NO_PROC_NOTE,
    describe_dirt,
    in_use_blocker,
    nested_blocker,
    reflog_blocker,
    reused_branch,
    reused_checkout,
    worktrees_in_use,
)
from router.teardown.branch import delete_branch
from router.teardown.decide import (
    Decide,
    RepoRun,
    decide_branch,
    decide_local_state,
    decide_plan_dir,
    decide_remove,
    decide_update,
    decide_verify_gone,
)
from router.teardown.facts import RepoPlan, TeardownOptions, recreated
from router.teardown.localstate import DEFAULT_LINE_TIMEOUT, read_declaration
from router.teardown.merged import Evidence, GhVerdict, Tips, prove_merged
from router.teardown.nested import NestedRepo, survey_nested, survey_remains
from router.teardown.plan_dir import remove_plan_dir
from router.teardown.proof import Integration, merge_proof
from router.teardown.prs import (
    CleanupTarget,
    decide_close,
    no_pr_list,
    prs_to_close,
    resolve_target,
)
from router.teardown.reclaim import decide_reclaim
from router.teardown.record import TopicRef, forget_earlier_teardown
from router.teardown.remove import (
    copies_note,
    included_copies,
    removal_started,
)
from router.teardown.steps import STEPS as TEARDOWN_STEPS
from router.teardown.steps import (
    Decision,
    Outcome,
    Step,
    StepResult,
    StepRun,
    acting,
    done,
    failed,
    last_run,
    refused,
    settled,
    skipped,
    stopped_at,
    stopped_error,
)
from router.teardown.unshipped import (
    RunArtifacts,
    has_shipped,
    run_artifacts,
    unshipped,
    unshipped_message,
)
from router.teardown.update import prune_origin
from router.topic import state, worktreelock
from router.topic.branches import (
    TopicLock,
    branch_topic,
    refuse_if_held,
    refuse_protected,
    topic_lock,
)
from router.topic.runs import PLANS_DIR, plan_dir_link
from router.topic.scope import RepoTarget, TopicScope
from router.topic.workspace import DefaultBranch, Repo, default_branch, find_worktree, primary_clone


class Mode(StrEnum):
    MERGED = "merged"
    ABANDONED = "abandoned"


# -- what is there ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Survey:
    """The branch as pr-cleanup finds it, read before anything is touched: teardown's facts of
    its repo (``plan``, whose worktree is the one that has the branch checked out), and what
    pr-cleanup alone asks: origin's tip of the branch."""

    plan: RepoPlan
    topic_id: str | None
    temp_paths: tuple[str, ...] | None = None  # the topic's recorded temp paths (home only)
    remote_tip: str | None = None
    remote_error: str = ""  # origin could not be asked

    @property
    def branch(self) -> Branch:
        return Branch(self.plan.target.branch)

    @property
    def default(self) -> DefaultBranch:
        assert self.plan.default is not None  # survey() refuses without one
        return self.plan.default

    @property
    def record(self) -> state.TopicRecord | None:
        return self.plan.target.record

    @property
    def worktree_path(self) -> Path | None:
        return self.plan.worktree

    @property
    def entry(self) -> WorktreeEntry | None:
        """The linked worktree that has the branch checked out."""
        path = self.plan.worktree
        return (
            find_worktree(list(self.plan.entries), path) if path and self.plan.registered else None
        )

    @property
    def remote_known(self) -> bool:
        return not self.remote_error

    @property
    def tips(self) -> Tips:
        record = self.record
        return Tips(self.plan.tip, self.remote_tip, record.base_commit if record else None)

    def anything_left(self, repo: Repo) -> bool:
        plan = self.topic_id is not None and os.path.lexists(
            repo.primary / PLANS_DIR / self.topic_id
        )
        return bool(self.plan.tip or self.worktree_path or self.remote_tip or plan)


def survey(repo: Repo, branch: Branch, *, ask_remote: bool, remove_reused: bool = False) -> Survey:
    default = default_branch(repo.git)
    if default is None:
        raise RouterError(
            ErrorCode.NO_DEFAULT_BRANCH,
            f"cannot tell the default branch of {repo.primary}; run `git remote set-head origin --auto`",
        )
    refuse_protected(branch, default)
    entries = repo.git.worktree_list()
    _refuse_checked_out_in_primary(repo, branch, entries)
    topic_id = branch_topic(repo, branch)
    record, notes = _record(repo, topic_id)
    target = RepoTarget(
        # The repo's name in its topic, as teardown prints it; a branch of no topic
        # has only its directory's name.
        record.repo if record is not None else repo.primary.name,
        repo.primary,
        branch,
        None,
        repo,
        record,
        is_home=topic_id is not None and (record is None or record.repo == "home"),
        entries=tuple(entries),
    )
    plan = _facts(repo, target, default, topic_id, remove_reused=remove_reused)
    # The worktree is the topic's too: local state never deletes a temp path inside it.
    plan = dataclasses.replace(
        plan, target=dataclasses.replace(target, worktree=plan.worktree), notes=tuple(notes)
    )
    remote_tip, remote_error = (
        _remote(repo, branch) if ask_remote else (None, "not asked (dry run)")
    )
    temps = _temp_paths(repo, topic_id, record, plan.worktree if plan.registered else None)
    return Survey(plan, topic_id, temps, remote_tip, remote_error)


def _facts(
    repo: Repo,
    target: RepoTarget,
    default: DefaultBranch,
    topic_id: str | None,
    *,
    remove_reused: bool,
) -> RepoPlan:
    """teardown's facts of the repo, read for the branch's one worktree (and a removal of ours
    a kill interrupted, which the remove step finishes: its deletions are nobody's work)."""
    branch, record = target.branch, target.record
    topic = topic_ref(topic_id, record)
    # -D and every later step only for a branch whose name matches byte for byte.
    tip = (
        repo.git.rev_parse(f"refs/heads/{branch}") if branch in repo.git.local_branches() else None
    )
    entry = next((e for e in target.entries[1:] if e.branch == branch), None)  # type: ignore[index]
    worktree = Path(entry.path) if entry else _unfinished_removal(repo, topic, record)
    removing = bool(worktree and topic and removal_started(repo, topic, worktree) is not None)
    kept_worktree, kept_branch = (
        ("", "") if remove_reused else _reused(repo, branch, entry, record, exact=tip is not None)
    )
    # A kept checkout is not removed: its changes lose nothing, and refuse nothing.
    there = entry is not None and os.path.isdir(entry.path) and not removing and not kept_worktree
    config = g.config_view(repo.git)
    plan = RepoPlan(
        target,
        default,
        worktree,
        registered=entry is not None,
        entries=target.entries or (),
        status=Git(worktree).status() if there and worktree else StatusReport(),
        tip=tip,
        has_origin=config.has_remote("origin"),
        declaration=read_declaration(repo.git, default, record.declared_at if record else None),
        copies=copies_note(repo.primary, worktree, included_copies(record, worktree))
        if entry and worktree
        else "",
        nested=_nested(repo, worktree, removing) if worktree and not kept_worktree else (),
        kept_worktree=kept_worktree,
        kept_branch=kept_branch,
        config=config,
        status_read=there,
        removing=removing,
    )
    shipped = run_shipped(repo, topic_id, worktree)
    plan = dataclasses.replace(plan, shipped=shipped)
    return dataclasses.replace(plan, unshipped=tuple(run_at_stake(repo, topic_id, plan)))


def _nested(repo: Repo, worktree: Path, removing: bool) -> tuple[NestedRepo, ...]:
    """The repositories inside the worktree: what an interrupted removal of ours would still
    delete, and a directory deleted by hand leaves its submodules' git dirs in the registration."""
    if os.path.isdir(worktree) and not removing:
        return survey_nested(worktree)
    return survey_remains(repo.common_dir, worktree)


def _unfinished_removal(
    repo: Repo, topic: TopicRef | None, record: state.TopicRecord | None
) -> Path | None:
    """The topic's worktree, no longer registered, that a removal of ours left half-way (None: none)."""
    if topic is None or record is None or record.worktree is None:
        return None
    path = Path(record.worktree)
    if not os.path.lexists(path) or removal_started(repo, topic, path) is None:
        return None
    return path


def _reused(
    repo: Repo,
    branch: str,
    worktree: WorktreeEntry | None,
    record: state.TopicRecord | None,
    *,
    exact: bool,
) -> tuple[str, str]:
    """Why a topic's checkout and branch stay: `new` reused the user's own (teardown's rule).

    Only a topic's: a branch no record names is the user's to clean up, wherever
    its worktree is.
    """
    if record is None:
        return "", ""
    checkout = reused_checkout(repo, Path(worktree.path)) if worktree is not None else ""
    return checkout, reused_branch(branch, record) if exact else ""


def topic_ref(topic_id: str | None, record: state.TopicRecord | None) -> TopicRef | None:
    """The topic whose record marks a removal in progress: only one team-router made (it has a record)."""
    if topic_id is None or record is None:
        return None
    return TopicRef(topic_id, record.repo)


def _refuse_checked_out_in_primary(repo: Repo, branch: str, entries: list[WorktreeEntry]) -> None:
    if entries and entries[0].branch == branch:
        raise RouterError(
            ErrorCode.BRANCH_CHECKED_OUT,
            f"{branch} is checked out in the primary clone {repo.primary}; switch it to the default "
            "branch first (the primary clone is never removed)",
        )
    busy = g.busy_with_branch(str(repo.common_dir), branch)
    if busy is not None:
        # git lists it detached: without this, the removal would call it gone.
        raise RouterError(
            ErrorCode.BRANCH_CHECKED_OUT,
            f"{busy} is rebasing or bisecting {branch}; finish it or run `git -C {busy} rebase "
            "--abort` (or `bisect reset`), then rerun (nothing was removed)",
        )


def _record(repo: Repo, topic_id: str | None) -> tuple[state.TopicRecord | None, list[str]]:
    if topic_id is None:
        return None, []
    warnings: list[str] = []
    return state.read_record_or_none(repo.common_dir, topic_id, warnings), warnings


def _temp_paths(
    repo: Repo,
    topic_id: str | None,
    record: state.TopicRecord | None,
    worktree: Path | None,
) -> tuple[str, ...] | None:
    """The topic's recorded temp paths (home repo only), read before the plan dir goes."""
    if topic_id is None or (record is not None and record.repo != "home"):
        return None
    roots = [worktree] if worktree else []
    for root in [*roots, repo.primary]:
        if plan_dir_link(str(root), topic_id) is not None:
            continue  # behind a link it is not this repository's plan dir: nothing read there
        found = read_temp_paths(root / PLANS_DIR / topic_id)
        if found:
            return tuple(found)
    return record.temp_paths if record else ()


def _remote(repo: Repo, branch: str) -> tuple[str | None, str]:
    if not repo.git.has_remote("origin"):
        return None, "no origin"
    try:
        return g.remote_branch_tip(repo.git, "origin", branch), ""
    except GitError as exc:
        return None, exc.first_line


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


def run_at_stake(repo: Repo, topic_id: str | None, plan: RepoPlan) -> list[RunArtifacts]:
    """The artifacts of an unshipped run this cleanup would delete: in the worktree it
    removes, and in the primary clone when the plan-dir step would remove them there."""
    if topic_id is None:
        return []
    checkouts = []
    if plan.worktree is not None and not plan.kept_worktree and not plan.removing:
        checkouts.append(plan.worktree)
    if remove_plan_dir(repo, topic_id, dry_run=True, force=True).outcome is Outcome.DONE:
        checkouts.append(repo.primary)
    runs = (run_artifacts(c, topic_id) for c in checkouts)
    return unshipped(runs, shipped=plan.shipped)


def run_shipped(repo: Repo, topic_id: str | None, worktree: Path | None) -> bool:
    """The topic's pr.md is in one of its plan dirs (its worktree's or the primary clone's)."""
    if topic_id is None:
        return False
    places = [c for c in (worktree, repo.primary) if c is not None]
    return has_shipped(run_artifacts(c, topic_id) for c in places)


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


# -- the steps -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CleanupOptions:
    mode: Mode
    delete_remote: bool
    reclaim: bool
    dry_run: bool
    line_timeout: float = DEFAULT_LINE_TIMEOUT
    echo: Echo | None = None
    remove_reused: bool = False  # also remove a checkout and delete a branch `new` reused


# A PR that gh failed to close does not hold the git part back: deleting the
# branch on origin closes it on GitHub's side anyway, and the failure is reported.
CLEANUP_GUARDING = frozenset({Step.REMOVE, Step.SNAPSHOT, Step.BRANCH})
AGAIN = "pr-cleanup"  # the command a refusal says to run again


def policy(opts: CleanupOptions) -> TeardownOptions:
    """How teardown's steps run for pr-cleanup: forced only to abandon (after a snapshot), the
    default branch fast-forwarded, origin's ref pruned by a step of its own, and a dry run
    that fetched as the real run does."""
    return TeardownOptions(
        force=opts.mode is Mode.ABANDONED,
        dry_run=opts.dry_run,
        line_timeout=opts.line_timeout,
        echo=opts.echo,
        remove_reused=opts.remove_reused,
        again=AGAIN,
        rebase=False,
        prune_with_update=False,
        dry_run_fetched=True,
    )


def topic_scope(repo: Repo, found: Survey) -> TopicScope:
    """The topic as teardown's steps see it: this repo alone (another's worktree stays)."""
    record = found.record
    return TopicScope(
        found.topic_id or "",
        found.branch,
        repo,
        None,
        record,
        (found.plan.target,),
        found.temp_paths or (),
    )


def run_steps(
    repo: Repo,
    found: Survey,
    opts: CleanupOptions,
    evidence: Evidence | None,
    closing: list[PullRequest] | None,
    hub: GitHub | Unavailable,
    warnings: list[str],
) -> tuple[list[StepResult], list[dict[str, object]]]:
    """The steps, each decided once: carried out, or (``opts.dry_run``) reported as decided.

    The steps teardown has are decided by teardown's decisions, from the same facts.
    """
    plan = found.plan
    if evidence is not None and evidence.merged and evidence.subject == plan.tip:
        # The merge proof (on origin's default branch, or at the PR's merge commit) is the
        # branch step's judgement, used while the branch is still at the commit proven.
        plan = dataclasses.replace(plan, found=Integration(evidence.content, ()))
    if found.topic_id and recreated(plan) and not opts.dry_run:
        forget_earlier_teardown(repo.common_dir, found.topic_id)
    if not opts.dry_run:
        begin(repo, found, opts.mode)
    topic = topic_ref(found.topic_id, found.record)
    run = RepoRun(plan, repo, StepRun(CLEANUP_GUARDING, dry_run=opts.dry_run), topic)
    scope, how = topic_scope(repo, found), policy(opts)

    def shared(decide: Decide) -> Callable[[], Decision]:
        return lambda: decide(run, scope, how)

    steps, closed = run.runner, []  # type: ignore[var-annotated]
    abandon = opts.mode is Mode.ABANDONED
    if abandon:
        steps.decide(Step.CLOSE_PRS, lambda: decide_close(hub, closing, closed), guarded=False)
    steps.decide(Step.REMOVE, shared(decide_remove))
    steps.decide(Step.VERIFY_GONE, shared(decide_verify_gone))
    if not abandon:
        steps.decide(Step.UPDATE_DEFAULT, shared(decide_update), guarded=False)
    else:
        steps.decide(Step.SNAPSHOT, lambda: _decide_snapshot(repo, found))
    steps.decide(Step.BRANCH, shared(decide_branch))
    _remote_steps(repo, found, opts, evidence, steps, closing, hub)
    steps.decide(Step.PLAN_DIR, shared(decide_plan_dir))
    steps.decide(Step.LOCAL_STATE, shared(decide_local_state))
    removed = steps.steps[1 if abandon else 0]
    if abandon and plan.copies and removed.outcome is Outcome.DONE and not opts.dry_run:
        # Forced: the files a .worktreeinclude copy placed there are gone, edited or not.
        warnings.append(f"removing {plan.worktree}: {plan.copies}")
    return steps.steps, closed


def _remote_steps(
    repo: Repo,
    found: Survey,
    opts: CleanupOptions,
    evidence: Evidence | None,
    steps: StepRun,
    closing: list[PullRequest] | None,
    hub: GitHub | Unavailable,
) -> None:
    """pr-cleanup's own steps: origin's branch, a stack abandoned with it, the prune, reclaim."""
    gone = steps.decide(Step.REMOTE_BRANCH, lambda: _remote_decision(repo, found, opts, evidence))
    if opts.mode is Mode.ABANDONED:
        steps.decide(Step.STACK, lambda: _decide_stack(repo, found, opts, closing, hub))
    remote_gone = _remote_gone(found, gone)
    # Deleting origin's branch drops its remote-tracking ref too (git push updates it).
    deleted = found.remote_tip is not None and gone.outcome is Outcome.DONE
    steps.decide(Step.PRUNE, lambda: _decide_prune(repo, found.branch, remote_gone, deleted))
    steps.decide(Step.RECLAIM, lambda: decide_reclaim(repo, asked=opts.reclaim))


def _decide_snapshot(repo: Repo, found: Survey) -> Decision:
    if found.plan.tip is None:
        return settled(skipped(Step.SNAPSHOT, f"{found.branch} is already gone: nothing to keep"))
    return acting(
        lambda: _snapshot_branch(repo, found),
        Step.SNAPSHOT,
        f"keep {found.branch}'s tip in a snapshot ref",
    )


def _snapshot_branch(repo: Repo, found: Survey) -> StepResult:
    """Abandoned commits stay recoverable: the tip goes to the snapshot ref unless one covers it."""
    from router.teardown.snapshot import SnapshotFailed, covers, read_snapshot, snapshot_branch

    tip = repo.git.rev_parse(f"refs/heads/{found.branch}") if found.plan.tip else None
    if tip is None:
        return skipped(Step.SNAPSHOT, f"{found.branch} is already gone: nothing to keep")
    snap = read_snapshot(repo.git, found.branch)
    if not covers(repo.git, snap, tip):
        try:
            snap = snapshot_branch(repo, found.branch, tip)
        except SnapshotFailed as exc:
            return refused(Step.SNAPSHOT, exc.code, f"{exc.message}; {found.branch} is kept")
    return done(Step.SNAPSHOT, f"{found.branch}'s work is kept in {snap.ref} ({snap.commit[:12]})")  # type: ignore[union-attr]


def _delete_remote(
    repo: Repo, found: Survey, opts: CleanupOptions, evidence: Evidence | None
) -> StepResult:
    return _remote_decision(repo, found, opts, evidence).resolve(dry_run=False)


def _remote_decision(
    repo: Repo, found: Survey, opts: CleanupOptions, evidence: Evidence | None
) -> Decision:
    """Whether origin's branch goes: only on request (or abandoning), and only when nothing is lost."""
    name = Step.REMOTE_BRANCH
    if not found.remote_known:
        return settled(
            skipped(name, f"origin could not be asked ({found.remote_error}): not touched")
        )
    tip = found.remote_tip
    if tip is None:
        return settled(skipped(name, f"origin has no {found.branch}: already gone"))
    if not (opts.delete_remote or opts.mode is Mode.ABANDONED):
        return settled(
            skipped(
                name,
                f"origin still has {found.branch} ({tip[:12]}); pass --delete-remote to delete it",
            )
        )
    problem = _remote_loss(repo, found, opts.mode, evidence)
    if problem:
        return settled(
            refused(
                name, ErrorCode.UNINTEGRATED_COMMITS, f"origin's {found.branch} is kept: {problem}"
            )
        )

    def delete() -> StepResult:
        try:
            g.push_delete(repo.git, "origin", found.branch, expect=tip)
        except GitError as exc:
            return failed(
                name,
                f"deleting origin's {found.branch} failed ({exc.first_line}); it is kept",
                exc.code,
            )
        return done(name, f"deleted {found.branch} on origin (was {tip[:12]})")

    return acting(delete, name, f"delete {found.branch} on origin (at {tip[:12]})")


def _stacked_heads(
    found: Survey, closing: list[PullRequest] | None, hub: GitHub | Unavailable
) -> list[Branch] | None:
    """The branches of the PRs stacked on this one (this repo's heads only), children first."""
    if isinstance(hub, Unavailable) or closing is None:
        return None
    heads = [p.head_ref for p in closing if p.same_repo(hub.slug) and p.head_ref != found.branch]
    return [Branch(h) for h in dict.fromkeys(heads)]  # validated by prs_to_close


def _decide_stack(
    repo: Repo,
    found: Survey,
    opts: CleanupOptions,
    closing: list[PullRequest] | None,
    hub: GitHub | Unavailable,
) -> Decision:
    """Abandoning a stack deletes every branch of the chain, with the same snapshot rule (§11)."""
    heads = _stacked_heads(found, closing, hub)
    if heads is None:
        return settled(
            skipped(Step.STACK, "gh could not list the stacked PRs: no other branch is deleted")
        )
    if not heads:
        return settled(skipped(Step.STACK, "no branch is stacked on this one"))
    return acting(
        lambda: _abandon_stack(repo, heads, found, opts),
        Step.STACK,
        f"snapshot and delete {', '.join(heads)} here and on origin",
    )


def _abandon_stack(
    repo: Repo, heads: list[Branch], found: Survey, opts: CleanupOptions
) -> StepResult:
    deleted, gone, kept = [], [], []
    for head in heads:
        why = _abandon_branch(repo, head, found.default, opts)
        if why == GONE:
            gone.append(head)
        elif why:
            kept.append(f"{head} ({why})")
        else:
            deleted.append(head)
    names = ", ".join(deleted) or "none"
    if gone:
        names += f" ({', '.join(gone)} already gone)"
    if kept:
        return refused(
            Step.STACK,
            ErrorCode.STACK_KEPT,
            f"deleted {names}; kept {'; '.join(kept)}: every kept one is named with its cause",
        )
    return done(
        Step.STACK,
        f"deleted {names} here and on origin (each tip kept in its snapshot ref)",
    )


GONE = "gone"  # _abandon_branch: nothing of that branch was here nor on origin


def _abandon_branch(
    repo: Repo, branch: Branch, default: DefaultBranch, opts: CleanupOptions
) -> str:
    """Snapshot, then delete one stacked branch locally and on origin; why it stays, or ""."""
    reason = protected_reason(branch, default.name)
    if reason is not None:
        return f"protected: {reason}"
    try:
        child = survey(repo, branch, ask_remote=True)
    except Refusal as exc:
        return exc.message
    if child.plan.tip is None and child.remote_tip is None and child.entry is None:
        return GONE
    if child.entry is not None:
        return (
            f"checked out in {child.entry.path}; run `team-router pr-cleanup {branch} "
            "--abandon` there"
        )
    for step in (
        _snapshot_branch(repo, child),
        delete_branch(repo, child.branch, child.default, force=True)[0],
        _delete_remote(repo, child, opts, None),
    ):
        if step.stopped:
            return step.detail
    return ""


def _remote_loss(repo: Repo, found: Survey, mode: Mode, evidence: Evidence | None) -> str:
    """What deleting origin's branch would lose, or empty when nothing."""
    tip = found.remote_tip or ""
    if repo.git.rev_parse(tip) is None:
        return f"it is at {tip[:12]}, which this clone has not fetched"
    if mode is Mode.MERGED:
        if evidence is not None and evidence.merged and tip == evidence.subject:
            return ""
        if merge_proof(repo.git, tip, found.default.best_ref) is None:
            return f"it is at {tip[:12]}, which is not proven merged"
        return ""
    from router.teardown.snapshot import read_snapshot

    snap = read_snapshot(repo.git, found.branch)
    keepers = [c for c in (found.plan.tip, snap.commit if snap else None) if c]
    if any(tip == c or repo.git.is_ancestor(tip, c) for c in keepers):
        return ""
    return f"it is at {tip[:12]}, with commits this clone's {found.branch} and its snapshot lack"


def _remote_gone(found: Survey, result: StepResult) -> bool | None:
    if not found.remote_known:
        return None
    if found.remote_tip is None:
        return True
    return result.outcome is Outcome.DONE


def _decide_prune(repo: Repo, branch: str, remote_gone: bool | None, deleted: bool) -> Decision:
    """teardown's ``prune_origin``, once origin (asked directly) has no such branch.

    ``deleted``: this run deletes origin's branch (or, in a dry run, would), and with it
    the remote-tracking ref: nothing is left to prune then.
    """
    name = Step.PRUNE
    tracking = f"refs/remotes/origin/{branch}"
    nothing = skipped(name, f"no origin/{branch} ref: nothing to prune")
    if remote_gone is None:
        return settled(skipped(name, "origin could not be asked: not pruned"))
    if not remote_gone:
        return settled(skipped(name, f"origin still has {branch}: {tracking} stays"))
    if not repo.git.existing_refs([tracking]):
        return settled(nothing)

    def prune() -> StepResult:
        note = prune_origin(repo, branch, tracking=True)
        if repo.git.existing_refs([tracking]):
            return failed(
                name, f"{note}; {tracking} stays and keeps the branch's commits reachable"
            )
        return done(name, note)

    if deleted:
        # Only a fetch refspec that does not map the branch keeps the ref after the push.
        return Decision(
            act=lambda: prune() if repo.git.existing_refs([tracking]) else nothing,
            plan=lambda: nothing,
        )
    return acting(prune, name, f"prune {tracking} once origin has no {branch}")


def begin(repo: Repo, found: Survey, mode: Mode) -> None:
    """Before the first step, the topic's record says its cleanup is under way.

    A kill after the branch step leaves nothing named after the branch, here or
    on origin: the rerun finds the cleanup in the record and finishes it (the
    plan dir, the ``.teamteardown`` lines), never refusing ``unknown-branch``.
    """
    if found.topic_id is None or found.record is None:
        return

    state.update_record(
        repo.common_dir,
        found.topic_id,
        lambda record: dataclasses.replace(record, pr_cleanup_mode=str(mode)),
    )


def remember(repo: Repo, found: Survey, steps: list[StepResult], mode: Mode) -> None:
    """Mark the topic's record as teardown does, so a rerun (of either command) skips what is done.

    What is finished, and what was left to the user: a default branch --ff-only
    could not move leaves the cleanup complete (doctor has nothing to report), and
    a rerun says it is left instead of failing at it again.
    """
    if found.topic_id is None or found.record is None:
        return
    finished = {s.name for s in steps if s.name in TEARDOWN_STEPS and s.finished}
    ok = not any(s.blocks for s in steps)
    left = [s.name for s in steps if s.left_to_user]

    def change(record: state.TopicRecord) -> state.TopicRecord:
        mark = (record.teardown or state.TeardownMark()).with_done(
            finished, TEARDOWN_STEPS, complete=ok, left=left
        )
        return dataclasses.replace(
            record,
            teardown=mark,
            pr_cleanup_mode=str(mode),
            last_run=last_run("pr-cleanup", steps),
        )

    state.update_record(repo.common_dir, found.topic_id, change)


# -- the command --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CleanupResult:
    branch: str
    mode: Mode
    evidence: Evidence | None
    steps: tuple[StepResult, ...]
    prs: tuple[dict[str, object], ...] = ()
    dry_run: bool = False
    warnings: list[str] = field(default_factory=list)
    stopped_by: int = 0  # the signal that stopped the command (router.interrupt), if one did

    @property
    def interrupted(self) -> bool:
        return stopped_at(self.steps) is not None

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return ExitCode.for_signal(self.stopped_by or interrupt.SIGINT)
        # A default branch that cannot fast-forward is reported (a warning), not
        # a failure of the cleanup: it is the user's to resolve, never ours.
        return ExitCode.REFUSED if any(s.blocks for s in self.steps) else ExitCode.OK

    @property
    def error(self) -> dict[str, str] | None:
        """What made ``ok`` false: a signal, or the first step that stopped (§13)."""
        if self.interrupted:
            where = f"stopped {self.branch} {stopped_at(self.steps)}"
            return interrupt.interrupted_error(self.stopped_by, where)
        if not self.exit_code:
            return None
        return stopped_error((("", s) for s in self.steps), dry_run=self.dry_run)

    def to_json(self) -> dict[str, object]:
        return {
            "branch": self.branch,
            "mode": str(self.mode),
            "proof": self.evidence.to_json() if self.evidence else None,
            "steps": [s.to_json() for s in self.steps],
            "prs": list(self.prs),
            "dry_run": self.dry_run,
        }


def pr_cleanup(
    cwd: Path,
    target: str | None,
    *,
    abandon: bool = False,
    delete_remote: bool = False,
    reclaim: bool = False,
    confirmed: bool | None = False,
    yes: bool = False,
    dry_run: bool = False,
    wait: float = state.DEFAULT_WAIT,
    line_timeout: float = DEFAULT_LINE_TIMEOUT,
    echo: Echo | None = None,
    remove_reused: bool = False,
) -> CleanupResult:
    """Clean up one branch after its merge (or, with ``abandon``, without one).

    ``confirmed`` is True for ``--yes`` or a confirmed prompt, False for a
    declined prompt, None when no prompt could be shown (stdin not a terminal).
    ``yes`` (``--yes``) also lets a content proof stand alone where gh works
    but knows no merged PR from this repository. ``remove_reused``
    (``--remove-reused``) also removes a checkout and deletes a branch that
    ``new`` reused for a topic, which are kept otherwise, as teardown keeps them.
    """
    mode = Mode.ABANDONED if abandon else Mode.MERGED
    opts = CleanupOptions(
        mode, delete_remote, reclaim, dry_run, line_timeout, echo, remove_reused=remove_reused
    )
    repo = primary_clone(cwd)
    hub = github.connect(repo.git.remote_url("origin"), cwd=repo.primary)
    chosen = resolve_target(repo, cwd, target, hub)
    refuse_protected(chosen.branch, default_branch(repo.git))
    if abandon and not dry_run and not confirmed:
        _refuse_unconfirmed(chosen.branch, confirmed)
    warnings: list[str] = []
    topic = topic_lock(repo, chosen.branch)
    if dry_run:
        # Under the topic's lock too: another run cleaning the branch up now has its
        # git in the worktree, and the plan must wait for it (or say `locked`), never
        # take it for a process working there.
        with (
            state.held_lock(topic.home.common_dir, topic.name, wait=wait),
            _git_failure_refuses(chosen.branch),
        ):
            return _dry_run(repo, chosen, topic, opts, hub, warnings, yes=yes)
    with state.held_lock(topic.home.common_dir, topic.name, wait=wait):
        with (
            _git_failure_refuses(chosen.branch),
            interrupt.nothing_done(f"pr-cleanup of {chosen.branch}"),
        ):
            found = _checked_survey(repo, topic, chosen.branch, opts, warnings)
            evidence, closing = _decide(repo, found, chosen, hub, mode, warnings, yes=yes)
        if not found.anything_left(repo):
            warnings.append(
                f"nothing named {found.branch} is left here or on origin: already cleaned up"
            )
        if abandon and (isinstance(hub, Unavailable) or closing is None):
            warnings.append(f"{no_pr_list(hub)}: no PR was closed; close it on GitHub by hand")
        steps, closed = run_steps(repo, found, opts, evidence, closing, hub, warnings)
        remember(repo, found, steps, mode)
    _warn_about(steps, found, warnings)
    return CleanupResult(
        chosen.branch,
        mode,
        evidence,
        tuple(steps),
        tuple(closed),
        warnings=warnings,
        stopped_by=interrupt.received(),
    )


@contextlib.contextmanager
def _git_failure_refuses(branch: str) -> Iterator[None]:
    """A git command failing while the branch is surveyed or judged refuses; nothing is guessed."""
    try:
        yield
    except GitError as exc:
        raise RouterError(
            exc.code, f"checking {branch} failed ({exc.first_line}); nothing was touched"
        ) from None


def _refuse_unconfirmed(branch: str, confirmed: bool | None) -> None:
    if confirmed is None:
        raise RouterError(
            ErrorCode.CONFIRMATION_REQUIRED,
            f"--abandon deletes {branch} and its worktree without a merge; stdin is not a terminal, "
            "so nothing is asked: pass --yes to confirm",
        )
    raise RouterError(
        ErrorCode.NOT_CONFIRMED, f"abandoning {branch} was not confirmed; nothing was touched"
    )


def _checked_survey(
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


def _decide(
    repo: Repo,
    found: Survey,
    chosen: CleanupTarget,
    hub: GitHub | Unavailable,
    mode: Mode,
    warnings: list[str],
    *,
    yes: bool = False,
) -> tuple[Evidence | None, list[PullRequest] | None]:
    if mode is Mode.MERGED:
        evidence = prove_merged(repo, found.branch, found.default, found.tips, hub, chosen.pr)
        if evidence.gh is GhVerdict.UNAVAILABLE:
            warnings.append(f"merge proof from content alone: {evidence.detail}")
        refuse_unmerged(found, evidence, warnings)
        refuse_content_only(found, evidence, yes=yes)
        return evidence, None
    if isinstance(hub, Unavailable):
        return None, None
    try:
        return None, prs_to_close(repo, found.branch, hub, chosen.pr)
    except GhFailed as exc:
        warnings.append(f"listing the PRs to close failed ({exc})")
        return None, None


def _warn_about(steps: list[StepResult], found: Survey, warnings: list[str]) -> None:
    for s in steps:
        if s.left_to_user:
            warnings.append(f"{found.default.name} was not updated: {s.detail}")


def _dry_run(
    repo: Repo,
    chosen: CleanupTarget,
    topic: TopicLock,
    opts: CleanupOptions,
    hub: GitHub | Unavailable,
    warnings: list[str],
    *,
    yes: bool,
) -> CleanupResult:
    found = _checked_survey(repo, topic, chosen.branch, opts, warnings)
    evidence, closing = None, None
    if opts.mode is Mode.MERGED:
        evidence = prove_merged(repo, found.branch, found.default, found.tips, hub, chosen.pr)
        refuse_unmerged(found, evidence, warnings, dry_run=True)
        refuse_content_only(found, evidence, yes=yes, dry_run=True)
    elif isinstance(hub, GitHub):
        try:
            closing = prs_to_close(repo, found.branch, hub, chosen.pr)
        except GhFailed as exc:
            warnings.append(f"listing the PRs to close failed ({exc})")
    steps, _ = run_steps(repo, found, opts, evidence, closing, hub, warnings)
    return CleanupResult(
        chosen.branch, opts.mode, evidence, tuple(steps), dry_run=True, warnings=warnings
    )
