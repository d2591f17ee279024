"""pr-cleanup (DESIGN §11): after a merge, or on an explicit abandon, take one branch apart.

One pipeline, as teardown's: facts (:mod:`router.teardown.cleanup_survey`, teardown's
facts record of the repo beside what only pr-cleanup asks), the refusals that stop it
before any step (:mod:`router.teardown.cleanup_checks`), the merge proof
(:mod:`router.teardown.merged`), then each step decided once and carried out, or, in a
dry run, reported as decided. The steps teardown has are decided by teardown's own
decisions (:mod:`router.teardown.decide`) under pr-cleanup's policy; its own are origin's
branch and the prune (:mod:`router.teardown.remote`), what ``--abandon`` snapshots and
deletes (:mod:`router.teardown.abandon`), the PRs it closes (:mod:`router.teardown.prs`)
and ``--reclaim`` (:mod:`router.teardown.reclaim`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from router import git as g
from router import github, interrupt
from router.errors import ErrorCode, ExitCode, RouterError, error_json
from router.git import GitError
from router.github import GhFailed, GitHub, PullRequest, Unavailable
from router.progress import Echo
from router.records import field, record, replace
from router.teardown.abandon import decide_snapshot, decide_stack
from router.teardown.cleanup_checks import (
    fetched_survey,
    local_blockers,
    local_facts,
    proof_blockers,
    refusal,
    refuse_unconfirmed,
    refused_json,
)
from router.teardown.cleanup_survey import AGAIN, CleanupOptions, Mode, Survey, topic_ref
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
from router.teardown.facts import TeardownOptions, recreated
from router.teardown.factwords import pr_list_words
from router.teardown.localstate import DEFAULT_LINE_TIMEOUT
from router.teardown.merged import Evidence, GhVerdict, prove_merged
from router.teardown.proof import Integration
from router.teardown.prs import (
    CleanupTarget,
    decide_close,
    no_pr_list,
    prs_to_close,
    resolve_target,
)
from router.teardown.reclaim import decide_reclaim
from router.teardown.record import forget_earlier_teardown, record_steps
from router.teardown.remote import decide_prune, remote_decision, remote_gone
from router.teardown.steps import (
    Decision,
    Outcome,
    Step,
    StepResult,
    StepRun,
    stopped_at,
    stopped_error,
)
from router.teardown.wording import in_words
from router.topic import journal, state
from router.topic.branches import TopicLock, refuse_protected, topic_lock
from router.topic.scope import TopicScope
from router.topic.workspace import Repo, default_branch, primary_clone

# A PR that gh failed to close does not hold the git part back: deleting the
# branch on origin closes it on GitHub's side anyway, and the failure is reported.
CLEANUP_GUARDING = frozenset({Step.REMOVE, Step.SNAPSHOT, Step.BRANCH})


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
    return TopicScope(
        found.topic_id or "",
        found.branch,
        repo,
        None,
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
        plan = replace(plan, found=Integration(evidence.content, ()))
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
        steps.decide(Step.SNAPSHOT, lambda: decide_snapshot(repo, found))
    steps.decide(Step.BRANCH, shared(decide_branch))
    _remote_steps(repo, found, opts, evidence, steps, closing, hub)
    steps.decide(Step.PLAN_DIR, shared(decide_plan_dir))
    steps.decide(Step.LOCAL_STATE, shared(decide_local_state))
    removed = steps.steps[1 if abandon else 0]
    if abandon and plan.copies and removed.outcome is Outcome.DONE and not opts.dry_run:
        # Forced: the files a .worktreeinclude copy placed there are gone, edited or not.
        warnings.append(f"removing {plan.worktree}: {in_words(plan.copies)}")
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
    gone = steps.decide(Step.REMOTE_BRANCH, lambda: remote_decision(repo, found, opts, evidence))
    if opts.mode is Mode.ABANDONED:
        steps.decide(Step.STACK, lambda: decide_stack(repo, found, opts, closing, hub))
    origin_gone = remote_gone(found, gone)
    # Deleting origin's branch drops its remote-tracking ref too (git push updates it).
    deleted = found.remote_tip is not None and gone.outcome is Outcome.DONE
    steps.decide(Step.PRUNE, lambda: decide_prune(repo, found.branch, origin_gone, deleted))
    steps.decide(Step.RECLAIM, lambda: decide_reclaim(repo, asked=opts.reclaim))


def begin(repo: Repo, found: Survey, mode: Mode) -> None:
    """Before the first step, the topic's record says its cleanup is under way.

    A kill after the branch step leaves nothing named after the branch, here or
    on origin: the rerun finds the cleanup in the record and finishes it (the
    plan dir, the ``.teamteardown`` lines), never refusing ``unknown-branch``.
    """
    if found.topic_id is None or found.record is None:
        return
    journal.begin_teardown(repo.common_dir, found.topic_id, pr_cleanup_mode=str(mode))


def remember(repo: Repo, found: Survey, steps: list[StepResult], mode: Mode) -> None:
    """Mark the topic's record as teardown does, so a rerun (of either command) skips what is done.

    What is finished, and what was left to the user: a default branch --ff-only
    could not move leaves the cleanup complete (doctor has nothing to report), and
    a rerun says it is left instead of failing at it again. A signal that stopped
    the run leaves it under way, as teardown's (record_steps decides for both).
    """
    if found.topic_id is None or found.record is None:
        return
    record_steps(repo.common_dir, found.topic_id, "pr-cleanup", steps, pr_cleanup_mode=str(mode))


# -- the command --------------------------------------------------------------------------------------


@record
class CleanupResult:
    branch: str
    mode: Mode
    evidence: Evidence | None
    steps: tuple[StepResult, ...]
    prs: tuple[dict[str, object], ...] = ()
    dry_run: bool = False
    warnings: list[str] = field(default_factory=list)
    stopped_by: int = 0  # the signal that stopped the command (router.interrupt), if one did
    # A refused plan (a dry run's: the real run raises it): every blocker, and the error,
    # which is the first one's. No step is planned past them.
    blockers: tuple[StepResult, ...] = ()
    refusal: dict[str, str] | None = None

    @property
    def interrupted(self) -> bool:
        return stopped_at(self.steps) is not None

    @property
    def exit_code(self) -> int:
        if self.blockers:
            return (self.blockers[0].code or ErrorCode.STEP_REFUSED).exit_code
        if self.interrupted:
            return ExitCode.for_signal(self.stopped_by or interrupt.SIGINT)
        # A default branch that cannot fast-forward is reported (a warning), not
        # a failure of the cleanup: it is the user's to resolve, never ours.
        return ExitCode.REFUSED if any(s.blocks for s in self.steps) else ExitCode.OK

    @property
    def error(self) -> dict[str, str] | None:
        """What made ``ok`` false: the plan's refusal, a signal, or the first step that
        stopped (§13)."""
        if self.refusal is not None:
            return self.refusal
        if self.interrupted:
            where = f"stopped {self.branch} {stopped_at(self.steps)}"
            return interrupt.interrupted_error(self.stopped_by, where)
        if not self.exit_code:
            return None
        return stopped_error((("", s) for s in self.steps), dry_run=self.dry_run)

    def to_json(self) -> dict[str, object]:
        if self.blockers:
            return refused_json(
                self.branch, self.mode, self.blockers, dry_run=self.dry_run, proof=self.evidence
            )
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
        # Before the plan: the user's answer comes first (cleanup_checks says why).
        refuse_unconfirmed(chosen.branch, confirmed)
    topic = topic_lock(repo, chosen.branch)
    # The dry run under the topic's lock too: another run cleaning the branch up now has its
    # git in the worktree, and the plan must wait for it (or say `locked`), never take it
    # for a process working there.
    with state.held_lock(topic.home.common_dir, topic.name, wait=wait):
        return _cleanup(repo, chosen, topic, opts, hub, yes=yes)


def _cleanup(
    repo: Repo,
    chosen: CleanupTarget,
    topic: TopicLock,
    opts: CleanupOptions,
    hub: GitHub | Unavailable,
    *,
    yes: bool,
) -> CleanupResult:
    """Facts, then decisions, then actions: a dry run is the same pipeline stopped before it
    acts (the same blockers, and each step as the run decides it).

    The local state's blockers are judged before origin is fetched, the merge proof's after;
    either group refuses the plan as a whole (:func:`_blocked`), nothing touched.
    """
    warnings: list[str] = []
    name = f"pr-cleanup of {chosen.branch}"
    before = contextlib.nullcontext() if opts.dry_run else interrupt.nothing_done(name)
    with _git_failure_refuses(chosen.branch), before:
        if not opts.dry_run:  # a worktree a refusal keeps still has what its submodules stand on
            warnings += g.keep_borrowed_objects([str(repo.common_dir)])
        local = local_facts(repo, topic, chosen.branch, opts, warnings)
        blocked = local_blockers(local)
        if blocked:
            return _blocked(local.found, opts, blocked, None, warnings)
        found = fetched_survey(repo, chosen.branch, opts, warnings)
        evidence, closing = _decide(repo, found, chosen, hub, opts, warnings)
        blocked = proof_blockers(found, evidence, yes=yes) if evidence else ()
        if blocked:
            return _blocked(found, opts, blocked, evidence, warnings)
    if not opts.dry_run:
        _warn_before(repo, found, opts, hub, closing, warnings)
    steps, closed = run_steps(repo, found, opts, evidence, closing, hub, warnings)
    if not opts.dry_run:
        remember(repo, found, steps, opts.mode)
        warnings += [
            f"{found.default.name} was not updated: {s.detail}" for s in steps if s.left_to_user
        ]
    return CleanupResult(
        chosen.branch,
        opts.mode,
        evidence,
        tuple(steps),
        tuple(closed),
        dry_run=opts.dry_run,
        warnings=warnings,
        stopped_by=0 if opts.dry_run else interrupt.received(),
    )


def _blocked(
    found: Survey,
    opts: CleanupOptions,
    blockers: tuple[StepResult, ...],
    evidence: Evidence | None,
    warnings: list[str],
) -> CleanupResult:
    """The plan refused by its ``blockers``: the real run refuses with the first (as it
    always has, nothing touched); a dry run reports them all, with that same error."""
    error = refusal(found, opts.mode, blockers, warnings, dry_run=opts.dry_run, proof=evidence)
    if not opts.dry_run:
        raise error
    return CleanupResult(
        found.branch,
        opts.mode,
        evidence,
        (),
        dry_run=True,
        warnings=warnings,
        blockers=blockers,
        refusal=error_json(error.code, error.message),
    )


def _warn_before(
    repo: Repo,
    found: Survey,
    opts: CleanupOptions,
    hub: GitHub | Unavailable,
    closing: list[PullRequest] | None,
    warnings: list[str],
) -> None:
    if not found.anything_left(repo):
        warnings.append(
            f"nothing named {found.branch} is left here or on origin: already cleaned up"
        )
    if opts.mode is Mode.ABANDONED and (isinstance(hub, Unavailable) or closing is None):
        why = no_pr_list(hub)
        warnings.append(f"{pr_list_words(why)}: no PR was closed; close it on GitHub by hand")


@contextlib.contextmanager
def _git_failure_refuses(branch: str) -> Iterator[None]:
    """A git command failing while the branch is surveyed or judged refuses; nothing is guessed."""
    try:
        yield
    except GitError as exc:
        raise RouterError(
            exc.code, f"checking {branch} failed ({exc.first_line}); nothing was touched"
        ) from None


def _decide(
    repo: Repo,
    found: Survey,
    chosen: CleanupTarget,
    hub: GitHub | Unavailable,
    opts: CleanupOptions,
    warnings: list[str],
) -> tuple[Evidence | None, list[PullRequest] | None]:
    """The merge proof (merged mode), or the PRs ``--abandon`` closes."""
    if opts.mode is Mode.MERGED:
        evidence = prove_merged(repo, found.branch, found.default, found.tips, hub, chosen.pr)
        # Only a proof that holds rests on the content alone; an unproven merge is the
        # refusal's, whose message already carries the same detail.
        if evidence.gh is GhVerdict.UNAVAILABLE and evidence.merged:
            warnings.append(f"merge proof from content alone: {evidence.detail}")
        return evidence, None
    if isinstance(hub, Unavailable):
        return None, None
    try:
        return None, prs_to_close(repo, found.branch, hub, chosen.pr)
    except GhFailed as exc:
        warnings.append(f"listing the PRs to close failed ({exc})")
        return None, None
