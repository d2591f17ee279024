"""The eight teardown steps (DESIGN §9) and the merge proof, each callable on its own.

:func:`integrate_commits`, :func:`remove_worktree`, :func:`delete_branch`,
:func:`verify_gone`, :func:`update_default` (with :func:`prune_origin`),
:func:`remove_plan_dir`, :func:`sweep_step` and :func:`local_state_step`
each return a :class:`StepResult` (outcome ``done``, ``skipped``,
``refused`` or ``failed`` and a detail) and check the world again before
they act, so running one twice, or after a crash, finishes the job instead of
repeating it. :mod:`router.teardown.topic` runs them over every repo of a
topic (plan first, then act); ``pr-cleanup`` reuses them for one branch.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from router import git as g
from router import interrupt
from router.errors import ErrorCode, describe_io, error_json
from router.git import CherryEntry, Git, GitError, StatusReport, WorktreeEntry
from router.mounts import worktree_unmounted
from router.progress import Echo
from router.teardown.localstate import LocalStateJob, LocalStateReport, run_local_state
from router.teardown.nested import (
    NestedKind,
    NestedRepo,
    departed,
    outer_clones,
    survey_directory,
    survey_nested,
    survey_registration,
    survey_remains,
)
from router.teardown.snapshot import (
    Snapshot,
    SnapshotFailed,
    covers,
    read_snapshot,
    snapshot_branch,
    snapshot_plan_dir,
    snapshot_worktree,
)
from router.teardown.sweep import (
    Kept,
    Runs,
    Snapshotted,
    SweepResult,
    SweepVerdict,
    classify,
    remove_residue,
    sweep,
)
from router.teardown.unshipped import (
    residue_message,
    run_artifacts,
    snapshot_note,
    unshipped,
    unshipped_message,
)
from router.topic import state, worktreelock
from router.topic.discovery import PLANS_DIR, plan_dir_link
from router.topic.removal import began, delete_judged, described, journal, unjudged, with_content
from router.topic.state import REMOVING, Picking
from router.topic.workspace import WORKTREES_DIR, DefaultBranch, Repo, find_worktree


class Step(StrEnum):
    """The steps of teardown (DESIGN §9, in their order) and pr-cleanup's own."""

    INTEGRATE = "integrate"
    REMOVE = "remove"
    BRANCH = "branch"
    VERIFY_GONE = "verify-gone"
    UPDATE_DEFAULT = "update-default"
    PLAN_DIR = "plan-dir"
    SWEEP = "sweep"
    LOCAL_STATE = "local-state"
    # pr-cleanup's
    CLOSE_PRS = "close-prs"
    SNAPSHOT = "snapshot"
    REMOTE_BRANCH = "remote-branch"
    STACK = "stack"
    PRUNE = "prune"
    RECLAIM = "reclaim"


STEPS = (
    Step.INTEGRATE,
    Step.REMOVE,
    Step.BRANCH,
    Step.VERIFY_GONE,
    Step.UPDATE_DEFAULT,
    Step.PLAN_DIR,
    Step.SWEEP,
    Step.LOCAL_STATE,
)
# Steps whose stop is the user's to resolve, never a failure of the command: a
# default branch that cannot move is reported and left as it was (DESIGN §9, §11).
LEFT_TO_USER = frozenset({Step.UPDATE_DEFAULT})
NAMED = 5  # how many paths or commits a one-line detail names before "..."
# How the detail of a step a signal stopped begins (its words; ``NotDone.INTERRUPTED`` says it).
INTERRUPTED_STEP = interrupt.NOT_DONE


class Outcome(StrEnum):
    DONE = "done"
    SKIPPED = "skipped"
    REFUSED = "refused"
    FAILED = "failed"


class NotDone(StrEnum):
    """Why a step that had work to do did not do it: a rerun does it, so the record does not
    count it among the done steps (a step skipped for good, as already done or kept, has none)."""

    INTERRUPTED = "interrupted"  # a signal stopped the run before or during the step
    HELD_BACK = "held-back"  # a guarding step before it stopped
    REFUSED = "refused"  # the teardown was refused as a whole: nothing was removed
    LEFT = "left"  # an earlier run left it to the user, who has not finished it yet


@dataclass(frozen=True, slots=True)
class StepResult:
    name: Step
    outcome: Outcome
    detail: str
    code: ErrorCode | None = None  # the refusal's error code (dirty-worktree, conflict, ...)
    not_done: NotDone | None = None  # why it had work left that it did not do
    # The refs holding the work the step removed, if any: a worktree's or branch's snapshot
    # (refs/team-router/snapshots/...), or a run's plan dir (refs/team-router/plan-dirs/<id>).
    snapshots: tuple[str, ...] = ()

    @property
    def finished(self) -> bool:
        """Done, or skipped for good (already done, kept): the record counts it done."""
        return self.outcome is Outcome.DONE or (
            self.outcome is Outcome.SKIPPED and self.not_done is None
        )

    @property
    def stopped(self) -> bool:
        return self.outcome in {Outcome.REFUSED, Outcome.FAILED}

    @property
    def left_to_user(self) -> bool:
        """Stopped at what the user finishes (the record keeps it as left, not as failed)."""
        return self.stopped and self.name in LEFT_TO_USER

    @property
    def blocks(self) -> bool:
        """Stopped, and the command failed for it (exit 1)."""
        return self.stopped and not self.left_to_user

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "name": self.name,
            "outcome": str(self.outcome),
            "detail": self.detail,
        }
        if self.code:
            data["code"] = self.code
        return data


def last_run(command: str, steps: Iterable[StepResult]) -> state.LastRun:
    """The steps a run took, for its record: what a rerun, ``status`` and a person read back."""
    return state.LastRun(
        command,
        tuple(
            state.RanStep(s.name, str(s.outcome), s.detail, str(s.code) if s.code else "")
            for s in steps
        ),
    )


def conditional(outcome: Outcome) -> str:
    """An outcome as a dry run words it: what the real run would report (``would be skipped``)."""
    return "would fail" if outcome is Outcome.FAILED else f"would be {outcome}"


def stopped_error(
    steps: Iterable[tuple[str, StepResult]], *, dry_run: bool = False
) -> dict[str, str] | None:
    """DESIGN §13's ``error`` for steps (``(where, step)``) that stopped: the first one, and how many more.

    A step left to the user (a default branch left as it was) is a warning, never the error.
    A dry run's error is the real run's, in the conditional.
    """
    stopped = [(where, s) for where, s in steps if s.blocks]
    if not stopped:
        return None
    where, step = stopped[0]
    more = f" (and {len(stopped) - 1} more stopped step(s))" if len(stopped) > 1 else ""
    outcome = conditional(step.outcome) if dry_run else str(step.outcome)
    return error_json(
        step.code
        or (ErrorCode.STEP_REFUSED if step.outcome is Outcome.REFUSED else ErrorCode.STEP_FAILED),
        f"{where + ': ' if where else ''}{step.name} {outcome}: {step.detail}{more}",
    )


def stopped_at(steps: Iterable[StepResult]) -> str | None:
    """Where a signal stopped a run of steps: ``at branch, after integrate, remove`` (None: it did not).

    What is done is named, the step it stopped at (and every one after it) is left.
    """
    steps = list(steps)
    at = next((n for n, s in enumerate(steps) if s.not_done is NotDone.INTERRUPTED), None)
    if at is None:
        return None
    finished = [s.name for s in steps[:at] if s.outcome is Outcome.DONE]
    after = f"after {', '.join(finished)}" if finished else "before any step was done"
    return f"at {steps[at].name}, {after}"


@dataclass(frozen=True, slots=True)
class Decision:
    """What one step will do, decided once: the dry run reports it, the real run carries it out.

    Either ``result``, the step settled without acting (skipped as already done,
    kept, refused: both runs report exactly this), or ``act``, the action the real
    run takes and reports, with ``plan``, the dry run's words for it (its detail
    says ``would …``; its outcome is the one the action reports when the world
    stays as the plan found it).
    """

    result: StepResult | None = None
    act: Callable[[], StepResult] | None = None
    plan: Callable[[], StepResult] | None = None

    def resolve(self, *, dry_run: bool) -> StepResult:
        if self.result is not None:
            return self.result
        assert self.act is not None and self.plan is not None
        return self.plan() if dry_run else self.act()


def settled(result: StepResult) -> Decision:
    """A step decided without acting: the dry run and the real run both report ``result``."""
    return Decision(result=result)


def acting(
    act: Callable[[], StepResult], name: Step, what: str, outcome: Outcome = Outcome.DONE
) -> Decision:
    """A step that acts: the real run calls ``act``; the dry run says it ``would {what}``."""
    return Decision(act=act, plan=lambda: StepResult(name, outcome, f"would {what}"))


def not_done(result: StepResult, why: NotDone) -> StepResult:
    """``result``, marked as work a rerun still does (``why``)."""
    return dataclasses.replace(result, not_done=why)


def done(name: Step, detail: str) -> StepResult:
    return StepResult(name, Outcome.DONE, detail)


def done_with(name: Step, detail: str, *refs: str) -> StepResult:
    """Done, naming the snapshot refs (if any) that hold the work the step removed."""
    return StepResult(name, Outcome.DONE, detail, snapshots=tuple(r for r in refs if r))


def skipped(name: Step, detail: str) -> StepResult:
    return StepResult(name, Outcome.SKIPPED, detail)


def refused(name: Step, code: ErrorCode, detail: str) -> StepResult:
    return StepResult(name, Outcome.REFUSED, detail, code)


def failed(name: Step, detail: str, code: ErrorCode | None = None) -> StepResult:
    return StepResult(name, Outcome.FAILED, detail, code)


def git_failed(name: Step, what: str, exc: GitError) -> StepResult:
    """A step git could not do; a git lock file in the way is named with its fix (``git-locked``)."""
    return failed(name, f"{what}: {exc.first_line}", exc.code)


# -- merge proof ----------------------------------------------------------------


class ProofKind(StrEnum):
    ANCESTOR = "ancestor"  # the branch tip is an ancestor of the target
    PATCHES = "patches"  # every commit's patch is on the target (git cherry)
    SQUASH = "squash"  # merging the branch into the target changes nothing


@dataclass(frozen=True, slots=True)
class Proof:
    kind: ProofKind
    target: str  # the ref the proof holds against

    @property
    def detail(self) -> str:
        what = {
            ProofKind.ANCESTOR: "its tip is an ancestor of",
            ProofKind.PATCHES: "every patch is on",
            ProofKind.SQUASH: "its squashed change is already on",
        }[self.kind]
        return f"{what} {short_ref(self.target)}"


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

    ``git cherry`` goes first: it lists the non-merge commits of ``branch``
    that ``target`` does not reach, so a non-empty answer already rules out
    ancestry, and the answer is the one the integrate step picks from. An
    empty one may still hide a merge commit (cherry skips merges): only then
    is ancestry asked. ``target_tree``: the target's tree, when already read.
    """
    try:
        entries: list[CherryEntry] | None = git.cherry(target, branch)
    except GitError:
        entries = None
    if not entries and git.is_ancestor(branch, target):
        return Proof(ProofKind.ANCESTOR, target), entries
    if entries and all(e.present for e in entries):
        return Proof(ProofKind.PATCHES, target), entries
    tree = target_tree or git.tree_of(target)
    if tree is not None and git.merge_tree(target, branch) == tree:
        return Proof(ProofKind.SQUASH, target), entries
    return None, entries


def short_ref(ref: str) -> str:
    return ref.removeprefix("refs/remotes/").removeprefix("refs/heads/")


@dataclass(frozen=True, slots=True)
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

    def reason(self, default: str) -> str:
        """Why the branch may go: the merge proof, every patch on ``default``, or empty."""
        if self.empty:
            return "empty: nothing on it since it was cut"
        return self.proof.detail if self.proof else f"every patch is on {default}"


EMPTY = "empty (nothing on it since it was cut)"


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


# -- the primary clone --------------------------------------------------------


def is_primary_clone(repo: Repo, path: Path, entries: list[WorktreeEntry]) -> bool:
    """Decided by git: the first ``worktree list`` entry, or a checkout whose git dir is the common dir."""
    real = os.path.realpath(path)
    if real == str(repo.primary) or (entries and real == os.path.realpath(entries[0].path)):
        return True
    if any(real == os.path.realpath(e.path) for e in entries[1:]):
        return False  # git lists it as a linked worktree
    layout = Git(Path(real)).try_layout() if os.path.isdir(real) else None
    return layout is not None and layout.toplevel == Path(real) and not layout.is_linked_worktree


def primary_state(repo: Repo) -> tuple[StatusReport, str | None]:
    """The primary clone's status and checked-out branch (one git process)."""
    return g.status_with_branch(repo.git)


def primary_busy(
    repo: Repo, default: DefaultBranch, now: tuple[StatusReport, str | None] | None = None
) -> str:
    """Why the primary clone cannot take a cherry-pick now, with the command that clears it ("" when it can).

    ``now``: the primary's status and branch, when the caller just read them.
    """
    busy, fix = why_primary_busy(repo, default, now)
    return f"{busy}; {fix}" if fix else busy


def why_primary_busy(
    repo: Repo, default: DefaultBranch, now: tuple[StatusReport, str | None] | None = None
) -> tuple[str, str]:
    """The one answer to "may the primary's default branch move now": (why not, the fix).

    A stopped operation comes first: a cherry-pick with nothing left to commit
    looks clean and on the branch, yet a pull or a pick would drop its state.
    """
    operation = g.operation_in_progress(repo.common_dir)
    if operation is not None:
        return f"a {operation} is in progress there", _sequence_ways_out(repo, operation)
    status, current = now if now is not None else primary_state(repo)
    busy = busy_reason(status, current, default)
    if busy and status.dirty:
        return (
            busy,
            f"commit or stash them (`git -C {repo.primary} stash push --include-untracked`)",
        )
    if busy and current != default.name and default.local_ref is not None:
        return busy, f"switch back with `git -C {repo.primary} switch {default.name}`"
    return busy, ""


def busy_reason(status: StatusReport, current: str | None, default: DefaultBranch) -> str:
    if status.dirty:
        return f"it has uncommitted changes ({name_some(status.tracked + status.untracked)})"
    if current != default.name:
        return f"it is on {current or 'a detached HEAD'}, not {default.name}"
    if default.local_ref is None:
        return f"it has no local {default.name}"
    return ""


# -- step 1: integrate ----------------------------------------------------------


def integrate_commits(
    repo: Repo,
    branch: str,
    default: DefaultBranch | None,
    *,
    apply: bool,
    known: tuple[str, Integration] | None = None,
    topic: TopicRef | None = None,
    committer_known: bool = False,
) -> StepResult:
    """Cherry-pick the branch's missing commits onto the default branch in the primary clone.

    With ``topic``, the topic's record in this repo marks the pick while it
    runs, so :func:`resume_integration` can undo one a kill interrupted.

    ``known`` is a (tip, integration) judgement made moments ago (the plan's);
    without it the branch is judged afresh, which is what makes a rerun after
    a crash safe: commits already picked show as present and are not picked again.
    ``committer_known``: ``git var`` named a committer earlier in this command
    (the plan asks once per repo; the pick reports a missing one anyway).
    """
    name = Step.INTEGRATE
    tip = known[0] if known else repo.git.rev_parse(f"refs/heads/{branch}")
    if tip is None:
        return skipped(name, f"branch {branch} is gone: nothing to integrate")
    if default is None:
        return refused(
            name, ErrorCode.NO_DEFAULT_BRANCH, f"{repo.primary}: the default branch is unknown"
        )
    found = known[1] if known else integration(repo.git, tip, default)
    if found.empty:
        return skipped(name, f"nothing to integrate: {branch} is {EMPTY}")
    if found.proof is not None:
        return skipped(name, f"nothing to integrate: {branch} is merged ({found.proof.detail})")
    if not found.missing:
        return skipped(name, f"nothing to integrate: every patch of {branch} is on {default.name}")
    if not apply:
        return refused(
            name,
            ErrorCode.UNINTEGRATED_COMMITS,
            f"{len(found.missing)} commit(s) of {branch} are not on {default.name}: "
            f"{name_some(c[:12] for c in found.missing)}; pass --integrate, or --force to snapshot them",
        )
    # The one re-check of the primary in the act, right before the pick changes
    # it: the plan read it too, but the user may have edited or switched it since.
    # The same status names HEAD, the commit an abort must come back to.
    now = g.checkout_state(repo.git)
    busy = primary_busy(repo, default, (now.status, now.branch))
    if busy:
        return refused(
            name, ErrorCode.PRIMARY_BUSY, f"cannot cherry-pick in {repo.primary}: {busy}"
        )
    unknown = None if committer_known else g.committer_unknown(repo.git)
    if unknown is not None:
        return no_identity(repo, unknown)
    # Marked before the first pick: a kill mid-pick leaves the primary busy, and
    # only this mark lets the rerun tell its own half-done pick from the user's.
    head = now.head or repo.git.head_commit()
    pick = Picking(branch, default.name, head, found.missing)
    if topic is not None:
        # .teamteardown is read from the default branch as it is before the
        # picks: a rerun after a kill, or `local-state`, must not find the
        # branch's own copy there and run it.
        remote = default.remote_ref
        pin = (repo.git.commits((remote,))[remote] if remote else None) or head
        set_mark(repo, topic, DECLARED_AT, pin, branch=branch)
        set_mark(repo, topic, INTEGRATING, pick, branch=branch)
    # git cherry lists oldest first, the order the commits must be applied in.
    try:
        g.cherry_pick(repo.git, found.missing)
    except GitError as exc:
        if exc.returncode < 0:
            # git was killed (a terminal's Ctrl-C reaches it too) at a point only the
            # mark describes: it stays, and the rerun undoes the pick with its proofs.
            return failed(
                name,
                f"the cherry-pick onto {default.name} in {repo.primary} was interrupted "
                f"({exc.first_line}); run teardown again: it undoes the half-done pick first",
            )
        stopped_at = g.cherry_pick_head(repo.git) or found.missing[0]
        not_undone = _abort_pick(repo, pick)
        if not_undone is not None:
            # The mark stays: until the pick is undone, only it tells the rerun
            # that the stopped cherry-pick in the primary is ours to undo.
            return refused(
                name,
                not_undone.code if not_undone.lock_file else exc.code,
                f"cherry-pick onto {default.name} in {repo.primary} stopped ({exc.first_line}) "
                f"and could not be undone yet ({not_undone.first_line}); "
                "run teardown again once that is fixed: it undoes the half-done pick first",
            )
        if topic is not None:
            set_mark(repo, topic, INTEGRATING, None, branch=branch)
        if g.is_identity_error(exc):
            return no_identity(repo, exc)
        if exc.lock_file is not None:
            return refused(
                name,
                exc.code,
                f"cherry-pick onto {default.name} stopped: {exc.first_line}; aborted, "
                f"{default.name} is unchanged",
            )
        return refused(
            name,
            ErrorCode.CONFLICT,
            f"cherry-pick of {stopped_at[:12]} onto {default.name} failed ({exc.first_line}); "
            f"aborted, {default.name} is unchanged",
        )
    if topic is not None:
        set_mark(repo, topic, INTEGRATING, None, branch=branch)
    return done(
        name,
        f"cherry-picked {len(found.missing)} commit(s) onto {default.name} in {repo.primary} "
        f"(not pushed: push {default.name} when you are ready){_follow_submodules(repo)}",
    )


def _sequence_ways_out(repo: Repo, operation: str) -> str:
    """The commands that end a stopped ``operation``, the one that keeps its commits included.

    A cherry-pick or revert sequence can be left without its ``*_HEAD`` (a
    conflict committed by hand, or a git killed as it finished): ``--abort``
    then rewinds every commit the sequence made, ``--quit`` keeps them.
    """
    cmd = f"git -C {repo.primary} {operation}"
    if operation == "bisect":
        return f"end it with `{cmd} reset`"
    if operation in {"cherry-pick", "revert"}:
        return (
            f"finish it (`{cmd} --continue`), end it keeping the commits it made "
            f"(`{cmd} --quit`), or undo it (`{cmd} --abort`)"
        )
    return f"finish it, or undo it with `{cmd} --abort`"


def _abort_pick(repo: Repo, pick: Picking) -> GitError | None:
    """Undo a stopped pick of ours; None once the primary is back at its start with no pick in it.

    Judged by the state git leaves, not by ``--abort``'s exit code: a pick
    that stopped before it began leaves nothing to abort, and one that meets
    a lock file leaves ``sequencer/`` that only a later ``--abort`` can undo.
    """
    error = g.cherry_pick_abort(repo.git)
    if g.operation_in_progress(repo.common_dir) is None and repo.git.head() == pick.tip:
        # The pick began on a clean primary: any change now is what it left
        # (a file written before git stopped, with nothing for --abort to
        # undo). Not undone then: the mark stays, and the rerun sorts those
        # changes out, as after a kill.
        left, _ = primary_state(repo)
        if not left.dirty:
            return None
        if error is not None and error.lock_file is not None:
            return error  # the lock is what to fix first: it names it
        return GitError(
            ["git", "-C", str(repo.primary), "cherry-pick", "--abort"],
            1,
            f"the stopped cherry-pick left changes in {repo.primary} "
            f"({name_some([*left.tracked, *left.untracked])})",
        )
    return error or GitError(
        ["git", "-C", str(repo.primary), "cherry-pick", "--abort"],
        1,
        f"{repo.primary} is not back at {pick.tip[:12]} with no cherry-pick in progress",
    )


def _follow_submodules(repo: Repo) -> str:
    """Check out, in the primary, the submodules a move of its branch left behind; "" when none.

    git does not follow a gitlink a cherry-pick or a pull moves: the submodule
    stays at the commit the branch recorded before, and the primary shows it
    changed. Every run that moves the default branch ends here, and every
    update-default step after it decides the same (:func:`left_behind`), so a
    rerun after a kill (or after a ``submodule update`` that could not fetch
    yet) finishes what the first run could not. Only a submodule clean inside
    and at a commit the branch used to record is moved: that loses nothing (the
    old commit stays in the branch's history); any other change is left for the
    busy check to name. Without a ``.gitmodules`` there is no submodule git
    could update: nothing to read.
    """
    if not os.path.lexists(repo.primary / ".gitmodules"):
        return ""
    status, _ = primary_state(repo)
    behind = [p for p in status.tracked if _left_behind(repo, p)]
    if not behind:
        return ""
    try:
        g.submodule_update(repo.git, behind)
    except GitError as exc:
        return (
            f"; git submodule update failed ({exc.first_line}), so {name_some(behind)} "
            f"show as changed in {repo.primary}: run `git submodule update` there"
        )
    return f"; submodule(s) {name_some(behind)} checked out at their new commit"


def _left_behind(repo: Repo, path: str) -> bool:
    """The submodule at ``path`` is clean and at a commit its gitlink named before it moved."""
    sub = Git(repo.primary / path)
    if not os.path.lexists(repo.primary / path / ".git"):
        return False  # not an initialised submodule: git shows no such change for one
    try:
        head = sub.head()
        return (
            head is not None
            and not sub.status().dirty
            and head in g.former_gitlinks(repo.git, path)
        )
    except GitError:
        return False


def no_identity(repo: Repo, exc: GitError) -> StepResult:
    return refused(
        Step.INTEGRATE,
        ErrorCode.NO_IDENTITY,
        f"git cannot name a committer in {repo.primary} ({exc.first_line.removeprefix('fatal: ')}), "
        "so nothing was cherry-picked; set one with "
        f'`git -C {repo.primary} config user.name "Your Name"` and '
        f"`git -C {repo.primary} config user.email you@example.com` (or `git config --global ...`), "
        "then run teardown again",
    )


# -- interrupted steps: what the record says this tool was in the middle of -------

INTEGRATING = "integrating"  # record field: a cherry-pick onto the default branch is running
DECLARED_AT = "declared_at"  # record field: where .teamteardown is read once picks began


@dataclass(frozen=True, slots=True)
class TopicRef:
    """The topic whose record (in each repo's common git dir) marks that repo's teardown."""

    id: str
    repo_name: str  # the repo's name in the topic, for a record made afresh


def read_mark(common_dir: Path, topic_id: str, key: str) -> object:
    record = state.read_record_or_none(common_dir, topic_id)
    return getattr(record, key) if record else None


def set_mark(repo: Repo, topic: TopicRef, key: str, value: object, *, branch: str) -> None:
    """Write (``value``) or clear (None) one mark of the topic's record, atomically.

    A corrupt record is reported elsewhere and never overwritten (a rerun then
    refuses, naming the fix).
    """

    def new() -> state.TopicRecord:
        return state.TopicRecord(id=topic.id, repo=topic.repo_name, branch=branch)

    state.update_record(
        repo.common_dir,
        topic.id,
        lambda r: dataclasses.replace(r, **{key: value}),  # type: ignore[arg-type]
        new=new if value is not None else None,
    )


def pending_pick(repo: Repo, topic: TopicRef) -> Picking | None:
    """The cherry-pick of ours the record marks as running (one a kill interrupted)."""
    mark = read_mark(repo.common_dir, topic.id, INTEGRATING)
    return mark if isinstance(mark, Picking) else None


def resume_integration(repo: Repo, topic: TopicRef, branch: str) -> StepResult | None:
    """Undo what a killed cherry-pick of ours left in the primary clone; None when there is none.

    Only a state the record's mark proves ours is touched: git's own
    ``cherry-pick --abort`` for a pick it still tracks, and ``reset --hard``
    only when every changed path holds content from the picked commits or
    HEAD (nothing else can be lost). Anything else is left for the busy
    check, which refuses and names the command that clears it.
    """
    pick = pending_pick(repo, topic)
    if pick is None:
        return None
    undone = []
    operation = g.operation_in_progress(repo.common_dir)
    if operation is not None:
        if operation != "cherry-pick" or not _our_pick_stopped(repo, pick):
            return None
        running = _pick_still_running(repo)
        if running is not None:
            return running
        locked = _stopped_by_lock(repo, g.cherry_pick_abort(repo.git))
        if locked is not None:
            # Neither --abort nor --quit: the mark stays, and once the lock is
            # gone the rerun's --abort puts the default branch back where it was.
            return _pick_locked(repo, pick, "undoing", locked)
        undone.append("aborted its cherry-pick")
        if g.operation_in_progress(repo.common_dir) is not None:
            # A kill right after a pick's commit, before git noted it: --abort
            # will not rewind past it ("you seem to have moved HEAD") and keeps
            # CHERRY_PICK_HEAD. The commits it made are our picks: they stay.
            locked = _stopped_by_lock(repo, g.cherry_pick_quit(repo.git))
            if locked is not None:
                # The same kill may leave the lock git deletes CHERRY_PICK_HEAD
                # under: the pick is still ours (the mark stays), the lock is in the way.
                return _pick_locked(repo, pick, "ending", locked)
            undone[-1] = "ended its cherry-pick, keeping the commits it had picked"
        if g.operation_in_progress(repo.common_dir) is not None:
            # Still there, with no lock named: never carried past (a teardown
            # with nothing left to pick would finish and leave it in the
            # primary), nor called someone else's. The mark stays.
            return refused(
                Step.INTEGRATE,
                ErrorCode.PRIMARY_BUSY,
                f"{repo.primary}: the cherry-pick of {pick.branch} onto {pick.target} was "
                "interrupted, and neither `git cherry-pick --abort` nor `--quit` ended it; run "
                f"`git -C {repo.primary} cherry-pick --quit` (it keeps the commits already "
                "picked), then run teardown again",
            )
    status, current = primary_state(repo)
    if current != pick.target:
        return None
    if status.dirty:
        foreign, residue = _sort_changes(repo, pick, status)
        if foreign:
            return refused(
                Step.INTEGRATE,
                ErrorCode.PRIMARY_BUSY,
                f"{repo.primary}: the cherry-pick of {pick.branch} onto {pick.target} was "
                f"interrupted, and {name_some(foreign)} hold changes that are not from it: kept; "
                f"save them (`git -C {repo.primary} stash push --include-untracked`), then run "
                "teardown again",
            )
        g.reset_hard(repo.git, "HEAD")
        _remove_residue(repo.primary, residue)
        undone.append(
            f"dropped its half-applied changes ({name_some([*status.tracked, *residue])})"
        )
    set_mark(repo, topic, INTEGRATING, None, branch=branch)
    what = "; ".join(undone) or "nothing was left half-done"
    return done(
        Step.INTEGRATE,
        f"{repo.primary}: the cherry-pick of {pick.branch} onto {pick.target} was interrupted: "
        f"{what}; its commits are judged again",
    )


def _stopped_by_lock(repo: Repo, error: GitError | None) -> GitError | None:
    """``error`` when git met a lock file ending the pick: it gave up, or went on and left the pick.

    The second is how --abort and --quit take a lock on CHERRY_PICK_HEAD: they
    exit 0 without deleting it, so only the state they leave tells. A lock
    that kept nothing of the pick (say ``ORIG_HEAD.lock``) stops nothing here:
    the run goes on, and its warnings name the lock.
    """
    if error is None or error.lock_file is None:
        return None
    if error.returncode != 0 or g.operation_in_progress(repo.common_dir) is not None:
        return error
    return None


def _pick_locked(repo: Repo, pick: Picking, doing: str, error: GitError) -> StepResult:
    """The refusal naming the lock that stopped git ``doing`` (undoing, ending) our killed pick."""
    return refused(
        Step.INTEGRATE,
        error.code,
        f"{repo.primary}: the cherry-pick of {pick.branch} onto {pick.target} was "
        f"interrupted, and {doing} it stopped: {error.first_line}",
    )


def _pick_still_running(repo: Repo) -> StepResult | None:
    """A refusal while a live process holds a lock inside ``sequencer/``: that git is still at work.

    Only this command was killed, not its git: ending the pick now would pull
    the sequence out from under it. A lock no process holds is a killed git's,
    and ``--abort``/``--quit`` remove it with the rest of ``sequencer/``.
    """
    from router.processes import processes_using

    locks = [os.path.realpath(lock) for lock in g.sequencer_locks(repo.common_dir)]
    held = processes_using(locks) if locks else {}
    if held is None and locks:
        held = {lock: [] for lock in locks}  # no /proc: nothing shows the lock is free
    if not held:
        return None
    return refused(
        Step.INTEGRATE,
        ErrorCode.GIT_LOCKED,
        f"{repo.primary}: a git still holds {name_some(sorted(held))}; wait for it to finish "
        "(if no git command is running there, remove the lock), then run teardown again",
    )


def _our_pick_stopped(repo: Repo, pick: Picking) -> bool:
    """The stopped cherry-pick is the one the mark names (its commit, its starting point)."""
    head = g.cherry_pick_head(repo.git)
    start = g.sequencer_start(repo.common_dir)
    if head is None and start is None:
        if g.sequencer_empty(repo.common_dir):
            # Killed removing its sequencer/ as the sequence ended (or before it
            # wrote anything there): --quit ends it, keeping what was picked.
            return True
        # Killed as it began: git made sequencer/ and picked nothing, so HEAD is
        # still where the mark says the pick started.
        return g.sequencer_unstarted(repo.common_dir) and repo.git.head() == pick.tip
    return (head is None or head in pick.commits) and (start is None or start == pick.tip)


def _sort_changes(repo: Repo, pick: Picking, status: StatusReport) -> tuple[list[str], list[str]]:
    """The changed paths that are not the killed pick's own, and the untracked files that are.

    A tracked path is the pick's when its index and file content are exactly
    those of the picked commits or HEAD (a deleted one loses nothing: HEAD
    has it); anything else may be an edit made since, and ``reset --hard``
    would lose it. An untracked file is the pick's when its bytes are the
    blob a picked commit has at that path, or the start of it: git writes a
    new file before it updates the index, so a kill in between (or in the
    middle of the write) leaves it untracked, and every byte of it is in the
    picked commit.
    """
    paths = [*status.tracked, *status.untracked]
    ours: dict[str, set[str]] = {p: set() for p in paths}
    for rev in pick.commits:
        for path, blob in g.tree_blobs(repo.git, rev, paths).items():
            ours[path].add(blob)
    picked = {p: set(blobs) for p, blobs in ours.items()}
    for path, blob in g.tree_blobs(repo.git, "HEAD", list(status.tracked)).items():
        ours[path].add(blob)
    staged = g.index_blobs(repo.git, list(status.tracked))
    on_disk = g.worktree_blobs(repo.git, paths)
    foreign = [
        p
        for p in status.tracked
        if not staged.get(p, set()) <= ours[p] or (p in on_disk and on_disk[p] not in ours[p])
    ]

    def picked_bytes(path: str) -> bool:
        blobs = picked[path]
        return on_disk.get(path, "") in blobs or any(
            g.is_cut_short(repo.git, repo.primary / path, b) for b in blobs
        )

    residue = [p for p in status.untracked if picked[p] and picked_bytes(p)]
    foreign += [p for p in status.untracked if p not in residue]
    return foreign, residue


def _remove_residue(primary: Path, residue: list[str]) -> None:
    """Delete the untracked files a killed pick wrote, and the directories it left empty."""
    for rel in residue:
        path = primary / rel
        path.unlink(missing_ok=True)
        parent = path.parent
        while parent != primary and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent


# -- step 2: remove -----------------------------------------------------------


def remove_worktree(
    repo: Repo,
    path: Path | None,
    branch: str,
    *,
    force: bool,
    entries: list[WorktreeEntry] | None = None,
    topic: TopicRef | None = None,
    proven_clean: bool = False,
    again: str = "teardown",
) -> tuple[StepResult, Snapshot | None]:
    """Remove a linked worktree; dirty or locked refuses unless ``force``, which snapshots first.

    A repository inside it (a submodule, a nested clone) holding work refuses
    whatever ``force`` says: the snapshot cannot keep it. Without ``force``
    git's own check is the guard: ``git worktree remove`` refuses a worktree
    with changed or untracked files, and only then is the status read, to
    name them. Before git deletes anything, the removal journal (with
    ``topic``, in the record) names every file there: a rerun after a kill,
    or after a file git could not delete, finishes the removal from it
    instead of reading its deletions as work. ``proven_clean``: this
    command's plan read the worktree's status and found it clean; git's own
    check covers the moments since. ``again``: the command a message says to
    run again. The artifacts of a run that has not shipped (the topic's plan
    dir, which git ignores) refuse unless ``force``, which snapshots them.
    """
    name = Step.REMOVE
    entries = entries if entries is not None else repo.git.worktree_list()
    if path is None:
        return skipped(name, "no worktree recorded"), None
    if is_primary_clone(repo, path, entries):
        return skipped(name, f"{path} is the primary clone: never removed"), None
    entry = find_worktree(entries, path)
    started = removal_started(repo, topic, path) if topic is not None else None
    if topic is not None and started is not None:
        registered = entry is not None
        finished = finish_removal(
            repo, path, started, topic, branch, registered=registered, again=again
        )
        return finished, None
    if entry is None:
        there = "left to verify-gone and sweep" if os.path.lexists(path) else "already gone"
        return skipped(name, f"{path} is not a registered worktree: {there}"), None
    other = foreign_worktree(repo, path, branch, entry)
    if other:
        return skipped(name, other), None
    exists = os.path.isdir(path)
    unmounted = None if exists else unmounted_blocker(repo, path, again=again)
    if unmounted is not None:
        return unmounted, None
    # A directory deleted by hand leaves its submodules' git dirs in the registration.
    nested = survey_nested(path) if exists else survey_registration(repo.common_dir, path)
    blocker = nested_blocker(path, nested, again=again)
    if blocker is not None:
        return blocker, None
    gone = gone_with(nested)
    topic_id = topic.id if topic is not None else None
    if not force:
        if worktreelock.locked_by_other(entry):
            return worktree_blocker(path, entry, StatusReport()), None  # type: ignore[return-value]
        if exists:
            # git's own check below does not see what our info/exclude line hides.
            status = with_hidden(
                Git(path).status() if topic is not None and not proven_clean else StatusReport(),
                hidden_work(path, topic_id),
            )
            if status.dirty:
                return worktree_blocker(path, entry, status), None  # type: ignore[return-value]
        run = unshipped([run_artifacts(path, topic_id)]) if exists and topic_id else []
        if run:
            # The plan refused these already; this covers artifacts written since.
            why = unshipped_message(topic_id, run, command=again)  # type: ignore[arg-type]
            return refused(name, ErrorCode.UNSHIPPED_RUN, why), None
        removal = _mark_removal(repo, topic, path, branch)
        lifted = False
        try:
            # Our own lock comes off right before git removes the worktree: git's own
            # check still guards it. The journal is written first, so a kill in between
            # leaves a removal the rerun finishes, never an unlocked worktree of ours
            # taken for someone else's. A registration whose directory is gone holds
            # nothing: --force drops it, locked or not.
            lifted = exists and worktreelock.lift(repo.git, entry)
            repo.git.worktree_remove(path, force=not exists)
        except GitError as exc:
            if exc.returncode < 0:
                return removal_interrupted(path, exc, again), None
            if exists and g.SUBMODULES_REFUSAL in exc.stderr:
                result = _remove_with_submodules(
                    repo, path, entry, gone, removal, topic, branch, again
                )
                if lifted and result.outcome is not Outcome.DONE:
                    result = _locked_again(result, repo, entry, topic)
                return result, None
            if _began(repo, path, removal):
                return _finish_after(repo, path, removal, topic, branch, exc, again), None
            _unmark_removal(repo, topic, branch)
            blocker = worktree_blocker(path, entry, Git(path).status()) if exists else None
            result = blocker or git_failed(name, f"git worktree remove {path} failed", exc)
            return (_locked_again(result, repo, entry, topic) if lifted else result), None
        _unmark_removal(repo, topic, branch)
        return done(name, f"removed {path}{gone}"), None
    # Judged before the status the snapshot is made from, and journaled only once
    # the snapshot holds it: a file written in between is in neither the journal
    # nor (perhaps) the snapshot, so a rerun after a kill keeps it.
    judged = journal(path) if exists else state.Removal(str(path))
    hidden = hidden_work(path, topic_id) if exists else ()
    status = with_hidden(Git(path).status(), hidden) if exists else StatusReport()
    # The topic's plan dir goes into every snapshot (it is the run's record, and
    # git ignores it); the artifacts of a run that has not shipped are work themselves.
    own = run_artifacts(path, topic_id) if exists and topic_id else None
    unshipped_here = unshipped([own])
    snap = None
    if exists and (unshipped_here or _holds_work(repo, path, branch, status)):
        try:
            outer = outer_clones(nested)
            snap = snapshot_worktree(
                repo,
                path,
                branch,
                exclude=outer,
                ignored=(*hidden, *(own.in_checkout if own else ())),
                departed=departed(path, nested, outer),
            )
        except SnapshotFailed as exc:
            return refused(name, exc.code, f"{exc.message}; the worktree is kept"), None
    removal = _mark_removal(repo, topic, path, branch, judged)
    try:
        repo.git.worktree_remove(path, force=True)
    except GitError as exc:
        if exc.returncode < 0:
            return removal_interrupted(path, exc, again), snap
        if _began(repo, path, removal):
            return _finish_after(repo, path, removal, topic, branch, exc, again), snap
        _unmark_removal(repo, topic, branch)
        return git_failed(name, f"git worktree remove {path} failed", exc), snap
    _unmark_removal(repo, topic, branch)
    kept = f"; its work is in {snap.ref} ({snap.commit[:12]})" if snap else ""
    if snap and unshipped_here:
        kept += f", {snapshot_note(unshipped_here)} included"
    return done_with(name, f"removed {path}{kept}{gone}", snap.ref if snap else ""), snap


def _locked_again(
    result: StepResult, repo: Repo, entry: WorktreeEntry, topic: TopicRef | None
) -> StepResult:
    """The removal did not happen: the worktree stays, and so does our lock on it.

    Not while its journal stays: that removal is the rerun's to finish.
    """
    if not os.path.isdir(entry.path):
        return result
    if topic is not None and removal_started(repo, topic, entry.path) is not None:
        return result
    return dataclasses.replace(
        result, detail=result.detail + worktreelock.put_back(repo.git, entry)
    )


def _remove_with_submodules(
    repo: Repo,
    path: Path,
    entry: WorktreeEntry,
    gone: str,
    removal: state.Removal,
    topic: TopicRef | None,
    branch: str,
    again: str,
) -> StepResult:
    """git removes a worktree holding submodules only with --force: our checks stand in for its own.

    Its own check is the status read here (submodules included), and every
    repository inside was just found to hold nothing that exists only there.
    """
    blocker = worktree_blocker(path, entry, Git(path).status())
    if blocker is not None:
        _unmark_removal(repo, topic, branch)
        return blocker
    try:
        repo.git.worktree_remove(path, force=True, keep_locked=True)
    except GitError as exc:
        if exc.returncode < 0:
            return removal_interrupted(path, exc, again)
        if _began(repo, path, removal):
            return _finish_after(repo, path, removal, topic, branch, exc, again)
        _unmark_removal(repo, topic, branch)
        return failed(Step.REMOVE, f"git worktree remove --force {path} failed: {exc.first_line}")
    _unmark_removal(repo, topic, branch)
    return done(Step.REMOVE, f"removed {path}{gone}")


def nested_blocker(
    path: Path,
    nested: tuple[NestedRepo, ...],
    *,
    again: str = "teardown",
    step: Step = Step.REMOVE,
    what: str = "the worktree",
) -> StepResult | None:
    """Refuse (``--force`` or not) while a repository inside the worktree holds work of its own.

    ``again`` is the command the message says to run again; ``step`` the
    step that refuses, and ``what`` the directory it would have removed.
    """
    holding = [n for n in nested if n.holds_work]
    if not holding:
        return None
    return refused(
        step,
        ErrorCode.NESTED_WORK,
        f"{path} holds other repositories whose work exists nowhere else; removing {what} "
        "would delete it and --force cannot snapshot it: "
        + ", ".join(nested_loss(n) for n in holding)
        + ". Push those commits, or a tag holding them (`git log --oneline --all --reflog "
        "--not --remotes` there lists them, reflog-only ones included; "
        "`git reflog expire --expire-unreachable=now "
        "--all` there drops those no branch holds), commit and push (or discard) those changes, "
        f"or move the repository out of {what}; then run {again} again",
    )


def nested_loss(repo: NestedRepo) -> str:
    """``submodule lib (2 commit(s) on none of its remote-tracking refs; 1 untracked file(s): a)``."""
    if repo.problem:
        return f"{repo.kind} {repo.rel} ({repo.problem})"
    parts = (
        [f"{repo.unpushed} commit(s) on none of its remote-tracking refs"] if repo.unpushed else []
    )
    if repo.unpushed and repo.gone:
        # Its tracking refs still name the commits, but the remote they copy is gone.
        parts.append(f"remote {', '.join(repo.gone)} points at a path that no longer exists")
    if repo.status.dirty:
        parts.append(describe_dirt(repo.status))
    if repo.kind is NestedKind.UNINITIALISED:
        parts.append("git does not see files there: move them out of the worktree")
    if repo.kind is NestedKind.MODULE:
        # Its config names a checkout that may be gone, and git then stops unless told.
        parts.append(f"git reads it as `git --git-dir={repo.rel} --work-tree={repo.rel}`")
    return f"{repo.kind} {repo.rel} ({'; '.join(parts)})"


def gone_with(nested: tuple[NestedRepo, ...]) -> str:
    if not nested:
        return ""
    names = name_some(f"{n.kind} {n.rel}" for n in nested)
    return f"; the repositories inside, holding nothing unpushed, go with it: {names}"


def removal_interrupted(path: Path, exc: GitError, again: str = "teardown") -> StepResult:
    # git was killed mid-removal (Ctrl-C reaches it too): the journal stays, so the
    # rerun finishes the half-deleted worktree instead of reading it as work.
    return failed(
        Step.REMOVE,
        f"git worktree remove {path} was interrupted ({exc.first_line}); "
        f"run {again} again to finish the removal",
    )


def _mark_removal(
    repo: Repo,
    topic: TopicRef | None,
    path: Path,
    branch: str,
    judged: state.Removal | None = None,
) -> state.Removal:
    """Journal every file of ``path`` before git deletes any (in the record, with ``topic``).

    Only ever called once the worktree is proven clean or snapshotted: what
    the journal names (``judged``: walked before that proof) is known to be
    safe to delete, and anything not in it is someone's work. Without a topic (no record) the journal lives only in
    this process: enough to finish a removal git stopped half-way now.
    """
    removal = judged if judged is not None else journal(path)
    if topic is not None:
        set_mark(repo, topic, REMOVING, removal, branch=branch)
    return removal


def _unmark_removal(repo: Repo, topic: TopicRef | None, branch: str) -> None:
    if topic is not None:
        set_mark(repo, topic, REMOVING, None, branch=branch)


def removal_started(repo: Repo, topic: TopicRef, path: Path) -> state.Removal | None:
    """The journal of a removal of ``path`` this tool began and did not finish (a kill, a blocked file)."""
    mark = read_mark(repo.common_dir, topic.id, REMOVING)
    if not isinstance(mark, state.Removal):
        return None
    if os.path.realpath(mark.path) != os.path.realpath(path):
        return None
    return mark


def _began(repo: Repo, path: Path, removal: state.Removal) -> bool:
    """git failed after it began deleting: its registration is gone, or a file it judged is."""
    if find_worktree(repo.git.worktree_list(), path) is None:
        return True
    return began(path, removal)


def _finish_after(
    repo: Repo,
    path: Path,
    removal: state.Removal,
    topic: TopicRef | None,
    branch: str,
    exc: GitError,
    again: str,
) -> StepResult:
    """git stopped half-way (it drops the registration even when files are left): finish now.

    Deleting the rest ourselves names the file that stops it, which git's own
    message does not (it names the worktree).
    """
    registered = find_worktree(repo.git.worktree_list(), path) is not None
    result = finish_removal(
        repo, path, removal, topic, branch, registered=registered, again=again, first=True
    )
    if result.outcome is Outcome.DONE:
        return done(Step.REMOVE, f"removed {path} (git worktree remove stopped: {exc.first_line})")
    return result


def finish_removal(
    repo: Repo,
    path: Path,
    removal: state.Removal,
    topic: TopicRef | None,
    branch: str,
    *,
    registered: bool,
    again: str = "teardown",
    first: bool = False,
) -> StepResult:
    """Finish a removal that stopped half-way: what is left was judged safe before it began.

    Its deletions are the removal's own, never work to commit. A file left
    there goes only while it is exactly one the journal names; anything
    written, moved in or edited since keeps the remains, named. A file that
    cannot be deleted is named with its cause; the journal stays (with the
    content of what is left) so the rerun finishes once the cause is gone.
    ``first``: the removal stopped in this very run (no "interrupted" to tell).
    """
    name = Step.REMOVE
    blocker = finish_blocker(repo, path, removal, again=again)
    if blocker is not None:
        return blocker
    kept, blocked = delete_judged(path, removal) if os.path.lexists(path) else ([], [])
    if kept or blocked:
        if topic is not None:
            set_mark(repo, topic, REMOVING, with_content(path, removal), branch=branch)
        what = "removing" if first else "finishing the removal of"
        named = f"{name_some(kept)} appeared there meanwhile: kept" if kept else ""
        stuck = f"cannot delete {described(blocked)}" if blocked else ""
        fix = "once that is cleared," if blocked else f"move them out of {path}, then"
        detail = (
            f"{what} {path} stopped half-way: {'; '.join(x for x in (stuck, named) if x)}; "
            f"the rest is deleted, and the record keeps what the removal judged; {fix} "
            f"run {again} again to finish the removal"
        )
        if blocked:
            return failed(name, detail, ErrorCode.REMOVAL_BLOCKED)
        return refused(name, ErrorCode.REMOVAL_INTERRUPTED, detail)
    if registered:
        # The directory is gone now, and git drops the registration of a missing one.
        repo.git.worktree_remove(path, force=True)
    _unmark_removal(repo, topic, branch)
    return done(name, f"removed {path} (finished a removal that was interrupted)")


def finish_blocker(
    repo: Repo, path: Path, removal: state.Removal, *, again: str = "teardown"
) -> StepResult | None:
    """Why a removal that stopped half-way cannot be finished now (None: it can).

    A file written there since is not what the removal judged; a repository
    inside holding work would go with the rest.
    """
    newer = unjudged(path, removal) if os.path.isdir(path) else []
    if newer:
        return refused(
            Step.REMOVE,
            ErrorCode.REMOVAL_INTERRUPTED,
            f"removing {path} was interrupted, and {name_some(newer)} were written there since "
            f"(they are not what the removal judged): kept; move them out of {path}, then run "
            f"{again} again to finish the removal",
        )
    # The journal was made before the removal began: a submodule used since keeps
    # its new commits in the registration's modules/, which no file there shows.
    return nested_blocker(path, survey_remains(repo.common_dir, path), again=again)


def included_copies(record: state.TopicRecord | None, worktree: Path | None) -> tuple[str, ...]:
    """The files a ``.worktreeinclude`` copy placed in ``worktree`` (per its record) that are still there."""
    if worktree is None or record is None:
        return ()
    return tuple(p for p in record.included if os.path.lexists(worktree / p))


def copies_note(primary: Path, worktree: Path, included: tuple[str, ...]) -> str:
    """Names the ``.worktreeinclude`` copies a removal deletes (git ignores them), and the edited ones."""
    if not included:
        return ""
    edited = [p for p in included if _differs(primary / p, worktree / p)]
    note = f"it held copies placed by .worktreeinclude: {name_some(included)}"
    if edited:
        note += f" (edited since copied, not kept: {name_some(edited)})"
    return note


def _differs(original: Path, copy: Path) -> bool:
    try:
        return original.read_bytes() != copy.read_bytes()
    except OSError:
        return True


def foreign_worktree(repo: Repo, path: Path, branch: str, entry: WorktreeEntry) -> str:
    """Why the worktree at ``path`` is not this branch's to remove (empty when it is).

    The path comes from a record or from ``repos.md`` (written by a model); git
    decides whose worktree it is: one on another branch belongs to other work
    (with its own plan dir and ignored files), and a detached one counts only
    at this branch's own worktree path.
    """
    if entry.branch == branch:
        return ""
    if entry.branch is None and os.path.realpath(path) == os.path.realpath(
        repo.worktree_path(branch)
    ):
        return ""
    on = f"on {entry.branch}" if entry.branch else "on a detached HEAD"
    if entry.branch and os.path.realpath(path) == os.path.realpath(repo.worktree_path(branch)):
        # The topic's own path: an agent switched it (`new` reruns take it as the
        # topic's). Its work is on that branch, not this one's: kept, and said how
        # to take it apart with the topic.
        return (
            f"{path} is the topic's worktree, switched to {entry.branch}: kept with that "
            f"branch's work (`git -C {path} switch {branch}`, then teardown again, removes it "
            f"with the topic; or merge {entry.branch} first)"
        )
    return f"{path} is a worktree {on}, not on {branch}: not this topic's, kept"


def hidden_work(worktree: Path, topic_id: str | None) -> tuple[str, ...]:
    """Untracked files under ``docs/plans/`` that only an exclude file (ours) hides, sorted.

    ``new`` adds ``/docs/plans/`` to the repo's ``info/exclude`` so a plan dir
    stays out of ``git status``; that line hides every other untracked file
    under ``docs/plans/`` of every worktree too, and neither git's dirty check
    nor ``add --all`` sees them. They are the user's work all the same; one
    a ``.gitignore`` ignores is not (ignored files are never work to teardown,
    as in git's own check). The topic's own plan dir
    (``docs/plans/<topic_id>/``) is not counted: it is the run's, its own
    rules apply. Nothing is listed behind a symlinked ``docs/`` or
    ``docs/plans/`` (removing the worktree deletes the link, not its target);
    a nested repository is left to :mod:`router.teardown.nested`. Raises
    GitError when git cannot list them: nothing is assumed.
    """
    for part in (worktree / "docs", worktree / PLANS_DIR):
        if os.path.islink(part) or not os.path.isdir(part):
            return ()
    if topic_id and os.listdir(worktree / PLANS_DIR) in ([], [topic_id]):
        return ()  # the plan dir alone (the usual case): no git to ask
    untracked = Git(worktree).untracked_under(f"{PLANS_DIR}/")
    own = f"{PLANS_DIR}/{topic_id}" if topic_id else None
    return tuple(
        sorted(
            p
            for p in untracked
            if not p.endswith("/") and (own is None or (p != own and not p.startswith(f"{own}/")))
        )
    )


def with_hidden(status: StatusReport, hidden: tuple[str, ...]) -> StatusReport:
    """``status`` with the hidden untracked files of :func:`hidden_work` counted as untracked."""
    if not hidden:
        return status
    extra = tuple(p for p in hidden if p not in status.untracked)
    return dataclasses.replace(status, untracked=(*status.untracked, *extra))


def unmounted_blocker(repo: Repo, path: Path, *, again: str = "teardown") -> StepResult | None:
    """A registered worktree whose directory is missing because its disk is not mounted: refused.

    --force or not: git would drop the registration of a directory it cannot
    see, and the checkout, with whatever work is in it, would no longer be a
    git repository once the disk is back.
    """
    unmounted = worktree_unmounted(repo.common_dir, path)
    if unmounted is None:
        return None
    return refused(
        Step.REMOVE,
        ErrorCode.NOT_MOUNTED,
        f"{path} is not there because its filesystem is not mounted ({unmounted.why}); "
        f"kept: mount it at {unmounted.point}, then run {again} again (if it is "
        f"really gone, `git worktree remove {path}` first)",
    )


def worktree_blocker(path: Path, entry: WorktreeEntry, status: StatusReport) -> StepResult | None:
    # Our own lock (DESIGN §10) keeps other tools away, not team-router: only another's refuses.
    if worktreelock.locked_by_other(entry):
        why = f" ({entry.lock_reason})" if entry.lock_reason else ""
        return refused(
            Step.REMOVE,
            ErrorCode.LOCKED_WORKTREE,
            f"{path} is locked{why}; unlock it or pass --force",
        )
    if status.dirty:
        hidden = any(p.startswith(f"{PLANS_DIR}/") for p in status.untracked)
        # git status does not list them (our info/exclude line): a plain `git add` skips them.
        add = f" (`git add -f` those under {PLANS_DIR}/)" if hidden else ""
        return refused(
            Step.REMOVE,
            ErrorCode.DIRTY_WORKTREE,
            f"{path} has {describe_dirt(status)}; commit them{add}, or pass --force to snapshot "
            "and remove",
        )
    return None


def describe_dirt(status: StatusReport) -> str:
    """``N changed tracked file(s): a, b; M untracked file(s): c`` (the parts that apply)."""
    parts = []
    if status.tracked:
        parts.append(f"{len(status.tracked)} changed tracked file(s): {name_some(status.tracked)}")
    if status.untracked:
        parts.append(f"{len(status.untracked)} untracked file(s): {name_some(status.untracked)}")
    return "; ".join(parts)


def _holds_work(repo: Repo, path: Path, branch: str, status: StatusReport) -> bool:
    """Anything a forced removal would lose: edits, untracked files, commits on no other ref."""
    if status.dirty:
        return True
    head = Git(path).head()
    if head is None:
        return False
    return g.unique_commits(repo.git, head, except_branch=branch) > 0


def worktrees_in_use(
    paths: Iterable[Path], *, host: bool = False, topic_lock: Path | None = None
) -> dict[Path, list[str]] | None:
    """``path -> ["process 123 (vim)", ...]`` for each of ``paths`` another process works in.

    Its working directory or an open file is there: git removes the tree from
    under it, and a shell is left in a deleted directory, an editor writes its
    buffers back into one. One scan of /proc answers every path (a teardown
    asks once for all its repos). The command line that asked for the removal
    is left out (:func:`requesters`: this process, the ones above it, the rest of
    its pipeline): it may sit in the worktree itself. ``host``: the session that
    called is a host removing a worktree it made, and every process below it is
    its own (:func:`router.processes.session_processes`). ``topic_lock``: the topic's lock,
    which the caller holds; another team-router run that has it open is queued
    behind this one for the same topic (it sees what this one leaves), not work in
    the worktree. None where there is no /proc to read.
    """
    from router.processes import (
        describe_process,
        processes_using,
        queued_on,
        requesters,
        session_processes,
    )

    real = {os.path.realpath(p): p for p in paths}
    if not real:
        return {}
    users = processes_using(list(real))
    if users is None:
        return None
    if not users:
        return {}  # nobody there: the exclusions need no scan of /proc of their own
    mine = requesters() | (session_processes() if host else set())
    if topic_lock is not None:
        mine |= queued_on(topic_lock, {pid for pids in users.values() for pid in pids})
    others = {r: sorted(set(pids) - mine) for r, pids in users.items()}
    return {real[r]: [describe_process(pid) for pid in pids] for r, pids in others.items() if pids}


def reflog_blocker(
    repo: Repo, path: Path, entries: Iterable[WorktreeEntry], *, again: str = "teardown"
) -> StepResult | None:
    """Refuse (``--force`` or not) while the worktree's HEAD reflog is the only record of commits.

    A commit made on a detached HEAD that was then left (checking the branch
    out again) is reachable from that reflog alone, and ``git worktree remove``
    deletes it with the registration. What an amend or a rebase replaced is
    still in the branch's own reflog: that does not count. No snapshot keeps a
    reflog, so ``--force`` does not override it; the fixes name the commits.
    """
    admin = g.registration_of(str(repo.common_dir), str(path))
    if admin is None:
        return None
    log = g.head_reflog_where(repo.common_dir, admin)
    # Its own HEAD counts as kept: a detached HEAD's commits are the detached-HEAD
    # check's (and a --force snapshot's parent), not the reflog's.
    heads = [e.head for e in entries if e.head]
    try:
        only = g.head_reflog_only(repo.git, repo.common_dir, admin, heads=heads)
    except (g.Unsure, GitError, g.DanglingHead) as exc:
        why = exc.first_line if isinstance(exc, GitError) else str(exc)
        fix = exc.fix if isinstance(exc, g.DanglingHead) else "keep those commits on a branch"
        return refused(
            Step.REMOVE,
            ErrorCode.UNINTEGRATED_COMMITS,
            f"what the HEAD reflog of {path} ({log}) alone keeps is unknown ({why}): {fix}, "
            f"then run {again} again",
        )
    if not only.count:
        return None
    shown = ", ".join(c[:12] for c in only.tips[:5])
    return refused(
        Step.REMOVE,
        ErrorCode.UNINTEGRATED_COMMITS,
        f"the HEAD reflog of {path} is the only record of {only.count} commit(s) (a detached "
        f"HEAD's work, left behind; newest first: {shown}): `git -C {path} branch <name> "
        f"<commit>` keeps each, or `git -C {path} reflog expire --expire-unreachable=now HEAD` "
        f"drops them; then run {again} again",
    )


def in_use_blocker(path: Path, users: list[str], *, again: str = "teardown") -> StepResult:
    """The removal refused while ``users`` work in the worktree: ``held``, as --reclaim says of
    a process in a checkout. --force does not override it (it snapshots files, and no
    snapshot keeps an editor's buffers): closing the process is the fix that loses nothing."""
    return refused(
        Step.REMOVE,
        ErrorCode.HELD,
        f"{path} is in use by {', '.join(users)} (its working directory or an open file is "
        "there): removing the worktree would pull the directory out from under it; close it "
        f"(exit the shell, quit the editor, stop the server), then run {again} again",
    )


NO_PROC_NOTE = (
    "this system has no /proc: processes working in the worktree were not looked for "
    "(close any shell or editor there before it is removed)"
)


REUSED_FLAG = "--remove-reused"


def reused_checkout(repo: Repo, worktree: Path) -> str:
    """Why a linked worktree outside ``.claude/worktrees/`` stays: `new` reused the user's
    checkout, never made it ("" for one of ours). teardown and pr-cleanup keep it
    unless :data:`REUSED_FLAG` is given."""
    ours = repo.primary / WORKTREES_DIR
    if Path(os.path.realpath(worktree)).parent == Path(os.path.realpath(ours)):
        return ""
    return (
        f"kept {worktree}: team-router did not create this checkout (`new` reused it); "
        f"pass {REUSED_FLAG} to remove it"
    )


def reused_branch(branch: str, record: state.TopicRecord | None) -> str:
    """Why the branch stays: the topic's record says team-router did not create it ("" else)."""
    if record is None or record.branch_created:
        return ""
    return f"kept {branch}: team-router did not create this branch; pass {REUSED_FLAG} to delete it"


# -- step 3: branch -----------------------------------------------------------


def delete_branch(
    repo: Repo,
    branch: str,
    default: DefaultBranch | None,
    *,
    force: bool,
    known: tuple[str, Integration] | None = None,
    config: g.ConfigView | None = None,
) -> tuple[StepResult, Snapshot | None]:
    """Delete the branch when its work is integrated or proven merged, or snapshotted under force.

    ``known`` is an earlier (tip, integration) judgement, reused only while
    the branch still points at that tip; ``config`` the repo's config as read
    with it (for the ``branch.<name>`` section the deletion drops).
    """
    name = Step.BRANCH
    if known is not None and config is not None and default is not None:
        judged = _delete_judged(repo, branch, default, known, config)
        if judged is not None:
            return judged, None
    tip = repo.git.rev_parse(f"refs/heads/{branch}")
    if tip is None:
        return skipped(name, f"{branch} is already gone"), None
    if known is not None and known[0] == tip:
        found = known[1]
    else:
        found = integration(repo.git, tip, default) if default else Integration(None, (tip,))
    snap = None
    if found.integrated:
        why = found.reason(default.name)  # type: ignore[union-attr]
    elif not force:
        return refused(
            name,
            ErrorCode.UNINTEGRATED_COMMITS,
            f"{branch} holds {len(found.missing)} commit(s) not on the default branch; kept",
        ), None
    else:
        snap = read_snapshot(repo.git, branch)
        if not covers(repo.git, snap, tip) and g.unique_commits(
            repo.git, tip, except_branch=branch
        ):
            try:
                snap = snapshot_branch(repo, branch, tip)
            except SnapshotFailed as exc:
                return refused(name, exc.code, f"{exc.message}; {branch} is kept"), None
        why = f"--force; its commits stay reachable from {snap.ref}" if snap else "--force"
    try:
        repo.git.branch_delete(branch)
    except GitError as exc:
        # git refuses to delete a branch some worktree has checked out: keep it.
        if "checked out" in exc.stderr or "used by worktree" in exc.stderr:
            return skipped(
                name, f"{branch} is checked out in a worktree ({exc.first_line}): kept"
            ), snap
        return git_failed(name, f"git branch -D {branch} failed", exc), snap
    return done_with(name, f"deleted {branch} ({why})", snap.ref if snap else ""), snap


def _delete_judged(
    repo: Repo,
    branch: str,
    default: DefaultBranch,
    known: tuple[str, Integration],
    config: g.ConfigView,
) -> StepResult | None:
    """Delete an integrated branch in one process, only while it is still at the judged tip.

    What ``git branch -D`` does, with the tip check made by git in the same
    step as the deletion (``update-ref -d <ref> <tip>``): a commit made on the
    branch since it was judged keeps it. None when this cannot decide (the
    branch moved, or some checkout may have it): the caller judges afresh.
    """
    tip, found = known
    if not found.integrated:
        return None
    checked_out = g.checked_out_branches(str(repo.common_dir))
    if checked_out is None or branch in checked_out:
        return None  # git branch -D decides, and refuses a checked-out branch
    if not repo.git.branch_delete_at(branch, tip):
        return None
    why = found.reason(default.name)
    # Config already read says whether there is a section: no process when there is none.
    left = repo.git.drop_branch_config(branch) if config.has_section(f"branch.{branch}") else ""
    return done(Step.BRANCH, f"deleted {branch} ({why}){left}")


# -- step 4: verify-gone ---------------------------------------------------------


def verify_gone(
    repo: Repo, path: Path | None, runs: Runs | None = None, *, again: str = "teardown"
) -> StepResult:
    """Re-check a removed path; a late writer's recreation goes only if it is residue.

    ``runs``: as for the sweep, what lets a run's artifacts in it go (by
    default, only a shipped run's); ``again``: the command a refusal names.
    """
    name = Step.VERIFY_GONE
    runs = runs or Runs(repo.primary)
    if path is None:
        return skipped(name, "no worktree recorded")
    if not os.path.lexists(path):
        return done(name, f"{path} is gone")
    entries = repo.git.worktree_list()
    if is_primary_clone(repo, path, entries):
        return skipped(name, f"{path} is the primary clone: never removed")
    if find_worktree(entries, path) is not None:
        return skipped(name, f"{path} is still a registered worktree")
    if os.path.realpath(path.parent) != os.path.join(os.path.realpath(repo.primary), WORKTREES_DIR):
        return refused(
            name, ErrorCode.RESIDUE_KEPT, f"{path} came back outside {WORKTREES_DIR}: kept"
        )
    judged = classify(path, {os.path.realpath(e.path) for e in entries}, runs=runs)
    forced = judged.reason is SweepVerdict.UNSHIPPED and runs.force
    if judged.reason is not SweepVerdict.RESIDUE and not forced:
        return _came_back(judged, again)
    outcome = remove_residue(path, runs)  # judged again once moved aside: a writer may be at it
    if isinstance(outcome, Kept):
        return _came_back(outcome, again)
    if isinstance(outcome, str):
        return failed(name, f"{path} came back and could not be removed: {outcome}")
    if isinstance(outcome, Snapshotted):
        return done(
            name,
            f"{path} came back (a late writer) holding the artifacts of a run that has not "
            f"shipped: removed; {'; '.join(outcome.notes)}",
        )
    return done(name, f"{path} came back (a late writer) holding only residue: removed")


def _came_back(kept: Kept, again: str) -> StepResult:
    """verify-gone's refusal of a path that came back holding what is not residue."""
    if kept.reason is SweepVerdict.UNSHIPPED:
        return refused(
            Step.VERIFY_GONE,
            ErrorCode.UNSHIPPED_RUN,
            f"{kept.path} came back; {residue_message(list(kept.runs), command=again)}",
        )
    return refused(
        Step.VERIFY_GONE,
        ErrorCode.RESIDUE_KEPT,
        f"{kept.path} came back ({kept.reason}: {name_some(kept.files)}): kept for you to look at",
    )


# -- step 5: update-default -------------------------------------------------------


def update_default(
    repo: Repo,
    default: DefaultBranch | None,
    *,
    rebase: bool = True,
    has_origin: bool | None = None,
    known: tuple[StatusReport, str | None] | None = None,
    at_origin: bool = False,
    fresh: bool = False,
) -> StepResult:
    """``git pull --rebase`` (or ``--ff-only``) the default branch in a clean primary on it.

    Otherwise say why it stays (the caller fetched origin already): see
    :func:`update_decision`, which decides it.
    """
    decision = update_decision(
        repo,
        default,
        rebase=rebase,
        has_origin=has_origin,
        known=known,
        at_origin=at_origin,
        fresh=fresh,
    )
    return decision.resolve(dry_run=False)


def update_decision(
    repo: Repo,
    default: DefaultBranch | None,
    *,
    rebase: bool = True,
    has_origin: bool | None = None,
    known: tuple[StatusReport, str | None] | None = None,
    at_origin: bool = False,
    fresh: bool = False,
    fetched: bool = True,
) -> Decision:
    """Whether the default branch moves in the primary clone, or why it stays.

    It moves (``git pull --rebase``, or ``--ff-only``) only in a clean primary
    on it; never a merge commit, and a pull that stops is aborted so the
    primary clone is left clean. ``known``: the primary's status and branch as
    this command's own last change left them (a cherry-pick onto the default
    branch), not read again. ``at_origin``: this command fetched moments ago
    and the local default branch was then at origin's tip, so a pull has
    nothing to bring (our own picks, if any, already sit on that tip).
    ``fresh``: that fetch succeeded moments ago, so ``origin/<default>`` is
    origin's tip: a branch behind it is fast-forwarded there without a pull
    fetching the same commits again (a branch with commits of its own is
    still pulled). ``fetched``: this command fetched origin at all (a
    teardown's dry run does not): the words say which tip was judged.
    """
    name = Step.UPDATE_DEFAULT
    if default is None:
        return settled(skipped(name, "the default branch is unknown: nothing to update"))
    behind = left_behind(repo, default) if known is None else None
    if behind is not None:
        # An earlier run of ours moved the branch and was stopped before its
        # submodules followed: they follow first, and the primary is judged after.
        status, current, paths = behind
        clean = dataclasses.replace(
            status, tracked=tuple(p for p in status.tracked if p not in paths)
        )
        after = update_decision(
            repo,
            default,
            rebase=rebase,
            has_origin=has_origin,
            known=(clean, current),
            at_origin=at_origin,
            fresh=fresh,
            fetched=fetched,
        )
        return _following(repo, paths, after)
    if not (repo.git.has_remote("origin") if has_origin is None else has_origin):
        return settled(skipped(name, "no origin: nothing to update"))
    as_fetched = "as this command fetched it" if fetched else "as last fetched"
    if at_origin and not fetched:
        # Not fetched (a dry run): the real run fetches first, and judges origin's tip then.
        return settled(
            done(
                name,
                f"would leave {default.name} as it is: it already holds origin/{default.name} "
                f"{as_fetched}",
            )
        )
    if at_origin:
        return settled(
            done(
                name,
                f"{default.name} already holds origin/{default.name} {as_fetched}: nothing to pull",
            )
        )
    busy, _ = why_primary_busy(repo, default, known)
    if busy:
        if not fetched:
            return settled(skipped(name, f"would fetch only: {busy}"))
        how = "fetched only" if fresh else "origin could not be fetched"
        return settled(skipped(name, f"{how}: the primary clone was not updated because {busy}"))
    return Decision(
        act=lambda: _pull_default(repo, default, rebase=rebase, fresh=fresh),
        plan=lambda: _planned_pull(
            repo, default, rebase=rebase, fresh=fresh, as_fetched=as_fetched
        ),
    )


def _following(repo: Repo, paths: list[str], after: Decision) -> Decision:
    """Check the submodules at ``paths`` out at the commits the branch records, then ``after``."""
    names = name_some(paths)
    followed = f"submodule(s) {names} checked out at the commit {repo.primary} records"

    def act() -> StepResult:
        try:
            g.submodule_update(repo.git, paths)
        except GitError as exc:
            return skipped(
                Step.UPDATE_DEFAULT,
                f"git submodule update failed ({exc.first_line}), so {names} show as changed "
                f"in {repo.primary} and it was not updated: run `git submodule update` there",
            )
        result = after.resolve(dry_run=False)
        return dataclasses.replace(result, detail=f"{followed}; {result.detail}")

    def plan() -> StepResult:
        result = after.resolve(dry_run=True)
        return dataclasses.replace(result, detail=f"would have {followed}; {result.detail}")

    return Decision(act=act, plan=plan)


def left_behind(
    repo: Repo, default: DefaultBranch
) -> tuple[StatusReport, str | None, list[str]] | None:
    """The primary's status and branch, and the submodules a move of the branch left behind.

    None when there are none: no ``.gitmodules``, the primary on another branch,
    or no changed submodule clean inside and at a commit the branch recorded
    before (:func:`_left_behind`).
    """
    if not os.path.lexists(repo.primary / ".gitmodules"):
        return None
    status, current = primary_state(repo)
    if current != default.name:
        return None
    paths = [p for p in status.tracked if _left_behind(repo, p)]
    return (status, current, paths) if paths else None


def _pull_default(repo: Repo, default: DefaultBranch, *, rebase: bool, fresh: bool) -> StepResult:
    """Bring the default branch in the (clean, checked-out) primary clone up to origin's."""
    name = Step.UPDATE_DEFAULT
    moved = g.fast_forward(repo.git, default.remote_ref) if fresh and default.remote_ref else None
    if moved is g.FastForward.CURRENT:
        return done(
            name,
            f"{default.name} already holds origin/{default.name} as this command fetched it: "
            "nothing to pull",
        )
    if moved is g.FastForward.MOVED:
        return done(
            name,
            f"{default.name} fast-forwarded to origin/{default.name} as this command fetched it"
            f"{_follow_submodules(repo)}",
        )
    mode = "--rebase" if rebase else "--ff-only"
    try:
        g.pull(repo.git, "origin", default.name, rebase=rebase)
    except GitError as exc:
        if rebase:
            g.rebase_abort(repo.git)
        own = _own_commits(repo, default) if not rebase else 0
        return failed(
            name,
            f"git pull {mode} origin {default.name} failed ({exc.first_line}); aborted, "
            f"{default.name} left as it was"
            + (f"; left to you: {diverged(repo, default, own)}" if own else ""),
            exc.code,
        )
    how = "rebased onto" if rebase else "fast-forwarded to"
    # The primary was clean before the pull: a gitlink the pulled commits moved
    # would otherwise leave its submodule behind and the primary dirty.
    return done(
        name,
        f"git pull {mode} origin {default.name}: {default.name} {how} origin/{default.name}"
        f"{_follow_submodules(repo)}",
    )


def _planned_pull(
    repo: Repo, default: DefaultBranch, *, rebase: bool, fresh: bool, as_fetched: str
) -> StepResult:
    """What :func:`_pull_default` would do, read from the refs as they are (a dry run)."""
    name = Step.UPDATE_DEFAULT
    local, remote = default.local_ref, default.remote_ref
    mode = "--rebase" if rebase else "--ff-only"
    if local is None or remote is None or not fresh:
        return done(name, f"would run git pull {mode} origin {default.name}")
    if repo.git.is_ancestor(remote, local):
        return done(
            name,
            f"would leave {default.name} as it is: it already holds origin/{default.name} "
            f"{as_fetched}",
        )
    own = repo.git.count_commits(f"{remote}..{local}")
    if not own:
        return done(name, f"would fast-forward {default.name} to origin/{default.name}")
    if rebase and repo.git.merge_tree(remote, local) is None:
        # Its own commits and origin's change the same lines: the rebase stops, and the real
        # run aborts it and leaves the branch to the user, as the plan must say.
        return failed(
            name,
            f"would fail and be left to you: git pull --rebase origin {default.name} would stop "
            f"at a conflict ({default.name}'s {own} commit(s) of its own and "
            f"origin/{default.name} change the same lines)",
        )
    if rebase:
        return done(
            name,
            f"would run git pull --rebase origin {default.name} ({default.name} has {own} "
            "commit(s) of its own)",
        )
    return failed(name, f"would fail and be left to you: {diverged(repo, default, own)}")


def _own_commits(repo: Repo, default: DefaultBranch) -> int:
    """Commits of the local default branch that origin's lacks (0 when either ref is missing)."""
    if default.local_ref is None or default.remote_ref is None:
        return 0
    try:
        return repo.git.count_commits(f"{default.remote_ref}..{default.local_ref}")
    except GitError:
        return 0


def left_earlier(record: state.TopicRecord | None, name: Step, why: str) -> StepResult | None:
    """``name`` when an earlier run left it to the user (its record says so): not tried again.

    Tried again it would fail the same way (the default branch has not moved
    for the user yet) and report the same failure on every rerun. "not done"
    keeps it out of the record's done steps: it stays left.
    """
    mark = record.teardown if record is not None else None
    if mark is None or name not in mark.left:
        return None
    return not_done(skipped(name, f"not done: left to you by an earlier run: {why}"), NotDone.LEFT)


def diverged(repo: Repo, default: DefaultBranch, own: int) -> str:
    """Why --ff-only cannot move the default branch, and what the user does about it."""
    return (
        f"{default.name} has {own} commit(s) of its own that origin/{default.name} lacks, so "
        f"--ff-only cannot move it; rebase them yourself (`git -C {repo.primary} pull --rebase "
        f"origin {default.name}`)"
    )


def prune_origin(repo: Repo, branch: str, *, tracking: bool | None = None) -> str:
    """``git remote prune origin`` when origin no longer has ``branch``; a note saying what happened.

    A merge that deleted the branch on origin leaves ``refs/remotes/origin/<branch>``
    behind, and it keeps every commit of the branch reachable. ``remote prune``
    drops only refs whose branch origin no longer has, so running it while that
    ref exists is safe, and whether it dropped the ref tells if origin still has
    the branch. ``tracking`` says whether that ref exists, when already known.
    """
    ref = f"refs/remotes/origin/{branch}"
    if tracking is None:
        tracking = bool(repo.git.existing_refs([ref]))
    if not tracking:
        return f"no origin/{branch} ref: nothing to prune"
    try:
        pruned = g.remote_prune_refs(repo.git, "origin")
    except GitError as exc:
        return f"git remote prune origin failed ({exc.first_line})"
    if f"origin/{branch}" in pruned:
        return f"origin no longer has {branch}: pruned origin/{branch}"
    return f"origin still has {branch}: not pruned"


# -- step 6: plan-dir -------------------------------------------------------------


def remove_plan_dir(
    repo: Repo,
    topic_id: str,
    *,
    dry_run: bool = False,
    force: bool = False,
    shipped: bool = False,
    again: str = "teardown",
) -> StepResult:
    """Remove ``docs/plans/<id>/`` from the primary clone once ``git ls-files`` proves it untracked."""
    decision = plan_dir_decision(repo, topic_id, force=force, shipped=shipped, again=again)
    return decision.resolve(dry_run=dry_run)


def plan_dir_decision(
    repo: Repo,
    topic_id: str,
    *,
    force: bool = False,
    shipped: bool = False,
    again: str = "teardown",
) -> Decision:
    """Whether ``docs/plans/<id>/`` in the primary clone goes (untracked, holding no other
    repository's work), or why it stays.

    The artifacts of a run that has not shipped (it fell back to the primary
    clone) refuse ``unshipped-run`` unless ``force``, which first writes them to
    their own snapshot ref; ``shipped``: the command found the run's ``pr.md``
    before (in its worktree, gone by now); ``again`` is the command a refusal names.
    """
    name = Step.PLAN_DIR
    rel = Path(PLANS_DIR, topic_id)
    path = repo.primary / rel
    if not os.path.lexists(path):
        return settled(skipped(name, f"no {rel}/ in the primary clone"))
    if path.is_symlink() or not path.is_dir():
        return settled(
            refused(name, ErrorCode.PLAN_DIR_KEPT, f"{path} is not a plain directory: kept")
        )
    link = plan_dir_link(str(repo.primary), topic_id)
    if link is not None:
        # git ls-files does not see past an untracked symlinked docs/ or docs/plans/:
        # what lies behind it is somewhere else on the machine, never ours to delete.
        return settled(
            refused(
                name, ErrorCode.PLAN_DIR_KEPT, f"{path} is reached through a symlink ({link}): kept"
            )
        )
    tracked = repo.git.ls_files(rel.as_posix() + "/")
    if tracked is None:
        return settled(
            refused(
                name,
                ErrorCode.PLAN_DIR_KEPT,
                f"git ls-files {rel} failed, so it is not known to be untracked: kept",
            )
        )
    if tracked:
        return settled(skipped(name, f"{rel}/ is tracked ({len(tracked)} file(s)): kept"))
    # A plan dir in the primary clone (the run fell back to it) is no worktree:
    # no earlier step looked for a repository someone cloned into it.
    try:
        nested = survey_directory(path)
    except OSError as exc:
        return settled(
            refused(name, ErrorCode.PLAN_DIR_KEPT, f"cannot read {exc.filename} in {path}: kept")
        )
    blocker = nested_blocker(path, nested, again="the same command", step=name, what="the plan dir")
    if blocker is not None:
        return settled(
            dataclasses.replace(blocker, detail=f"{blocker.detail}; the plan dir is kept")
        )
    run = unshipped([run_artifacts(repo.primary, topic_id)], shipped=shipped)
    if run and not force:
        return settled(
            refused(name, ErrorCode.UNSHIPPED_RUN, unshipped_message(topic_id, run, command=again))
        )
    kept = f" after writing a snapshot holding {snapshot_note(run)}" if run else ""

    def remove() -> StepResult:
        snap = None
        if run:
            try:
                snap = snapshot_plan_dir(repo, topic_id)
            except SnapshotFailed as exc:
                return refused(name, exc.code, f"{exc.message}; the plan dir is kept")
        try:
            shutil.rmtree(path)
        except OSError as exc:
            return failed(name, f"removing {path} failed: {exc.strerror}")
        if snap is None:
            return done(name, f"removed {path} (untracked)")
        note = f"; {snapshot_note(run)} are in {snap.ref} ({snap.commit[:12]})"
        return done_with(name, f"removed {path} (untracked){note}", snap.ref)

    return acting(remove, name, f"remove {path} (untracked){kept}")


# -- step 7: sweep ----------------------------------------------------------------


def sweep_step(
    repo: Repo,
    *,
    dry_run: bool = False,
    leaving: tuple[Path, ...] = (),
    runs: Runs | None = None,
) -> tuple[StepResult, SweepResult]:
    """The sweep, or (``dry_run``) what it would sweep and keep, judged by the same rule.

    ``leaving``: the worktree a dry run's remove step would take first.
    ``runs``: what lets a run's artifacts in residue go (see :class:`Runs`);
    residue an unshipped run's artifacts keep refuses the step
    (``unshipped-run``), the rest of the sweep done all the same.
    """
    result = sweep(
        repo.primary,
        None,
        git=repo.git,
        common_dir=repo.common_dir,
        dry_run=dry_run,
        leaving=leaving,
        runs=runs or Runs(repo.primary),
    )
    where = repo.primary / WORKTREES_DIR
    if result.failed:
        paths = name_some(str(p) for p, _ in result.failed)
        return failed(Step.SWEEP, f"could not remove residue: {paths}"), result
    if result.no_residue:
        return skipped(Step.SWEEP, f"no residue under {where}"), result
    would = "would " if dry_run else ""
    parts = []
    if result.swept:
        verb = "sweep" if dry_run else "swept"
        parts.append(
            f"{would}{verb} {len(result.swept)}: {name_some(str(p) for p in result.swept)}"
        )
    parts += [note for s in result.snapshotted for note in s.notes]
    if result.kept:
        verb = "keep" if dry_run else "kept"
        parts.append(
            f"{would}{verb} {len(result.kept)} (see kept): "
            f"{name_some(str(k.path) for k in result.kept)}"
        )
    if result.unshipped:
        why = residue_message(result.unshipped, command="teardown")
        return refused(Step.SWEEP, ErrorCode.UNSHIPPED_RUN, "; ".join([why, *parts])), result
    refs = (r for s in result.snapshotted for r in s.refs)
    return done_with(Step.SWEEP, "; ".join(parts), *refs), result


# -- step 8: local-state ------------------------------------------------------------


def local_state_step(
    job: LocalStateJob, *, echo: Echo | None = None, dry_run: bool = False
) -> tuple[StepResult, LocalStateReport]:
    """Run the repo's local state, or (``dry_run``) say what would run, with the same outcome.

    Nothing declared and no temp path is ``skipped`` in both; a temp path the
    checks refuse fails both.
    """
    report = run_local_state(job, echo=echo, dry_run=dry_run)
    if report.interrupted:
        # "not done": the record does not count it, so a rerun runs the step again.
        signal = interrupt.name(interrupt.received() or interrupt.SIGINT)
        stopped = skipped(Step.LOCAL_STATE, f"{INTERRUPTED_STEP} ({signal}): {report.summary()}")
        return not_done(stopped, NotDone.INTERRUPTED), report
    outcome = Outcome.DONE if report.ok else Outcome.FAILED
    if report.declaration.source is None and not report.temp_paths:
        return skipped(Step.LOCAL_STATE, report.summary()), report
    return StepResult(
        Step.LOCAL_STATE, outcome, f"{'would run: ' if dry_run else ''}{report.summary()}"
    ), report


def local_state_ran(common_dir: Path, topic_id: str) -> bool:
    """The topic's record says its local state already ran (read now: another run may just have)."""
    record = state.read_record_or_none(common_dir, topic_id)
    mark = record.teardown if record else None
    return mark is not None and "local-state" in mark.done


def torn_down(record: state.TopicRecord | None) -> bool:
    """The record says a teardown of the topic finished (every step, every repo it ran in)."""
    return record is not None and record.torn_down


def forget_earlier_teardown(common_dir: Path, topic_id: str) -> None:
    """Drop what an earlier teardown recorded, once the topic has a worktree again.

    An id torn down and then created again keeps its record, and with it the
    earlier teardown's steps; its new worktree shows that they describe another
    run. (Local state runs only after the worktree is gone, so a crash-resumed
    teardown never finds both.)
    """
    record = state.read_record_or_none(common_dir, topic_id)
    if record is None or record.teardown is None:
        return
    state.update_record(common_dir, topic_id, lambda r: dataclasses.replace(r, teardown=None))


def mark_done(common_dir: Path, topic_id: str, step: str, *, repo_name: str, branch: str) -> None:
    """Add ``step`` to the record's teardown steps at once (a record is made if there is none)."""

    def change(record: state.TopicRecord) -> state.TopicRecord:
        mark = record.teardown or state.TeardownMark()
        done = mark.with_done([step], STEPS, complete=mark.complete)
        return dataclasses.replace(record, teardown=done)

    state.update_record(
        common_dir,
        topic_id,
        change,
        new=lambda: state.TopicRecord(id=topic_id, repo=repo_name, branch=branch),
    )


def name_some(items) -> str:
    items = [str(i) for i in items]
    more = f" and {len(items) - NAMED} more" if len(items) > NAMED else ""
    return ", ".join(items[:NAMED]) + more


@dataclass(slots=True)
class StepRun:
    """Steps as they happen: a stopped guarding step holds back the guarded ones after it.

    An unexpected git or filesystem failure becomes that step's ``failed``
    outcome, never a traceback.
    """

    guarding: frozenset[Step]
    crash_seam: bool = False  # call state.crash_point before each step (teardown's steps)
    steps: list[StepResult] = field(default_factory=list)
    held: StepResult | None = None
    # A dry run: each step's decision is reported, none acted on; the same steps, in
    # the same order, held back by the same refusals as the real run's.
    dry_run: bool = False

    @property
    def interrupted(self) -> bool:
        return any(s.not_done is NotDone.INTERRUPTED for s in self.steps)

    def decide(
        self, name: Step, decision: Callable[[], Decision], *, guarded: bool = True
    ) -> StepResult:
        """Run step ``name`` as ``decision`` decides it: acted on, or (dry run) reported."""
        return self.step(name, lambda: decision().resolve(dry_run=self.dry_run), guarded=guarded)

    def step(
        self, name: Step, action: Callable[[], StepResult], *, guarded: bool = True
    ) -> StepResult:
        if self.crash_seam and not self.dry_run:
            state.crash_point(name)
        # After a signal (router.interrupt) no step starts, and the one under way
        # stops at its next git call: what it did is as a kill would leave it.
        result = interrupt.unless_stopped(
            lambda: self._attempt(name, action, guarded=guarded),
            lambda why, started: not_done(
                (failed if started else skipped)(name, why), NotDone.INTERRUPTED
            ),
        )
        self.steps.append(result)
        if self.held is None and result.stopped and name in self.guarding:
            self.held = result
        return result

    def _attempt(
        self, name: Step, action: Callable[[], StepResult], *, guarded: bool
    ) -> StepResult:
        if guarded and self.held is not None:
            return not_done(
                skipped(name, f"not done: {self.held.name} {self.held.outcome}"), NotDone.HELD_BACK
            )
        try:
            return action()
        except GitError as exc:
            return git_failed(name, "git failed", exc)
        except OSError as exc:
            return failed(name, describe_io(exc), ErrorCode.IO_ERROR)
