"""Teardown (DESIGN §9): plan every repo first, then run the eight steps in each.

The plan step only reads (and fetches): if any repo would lose work — a dirty
or locked worktree, commits whose patches are on no target — the whole
teardown is refused and nothing is removed anywhere, unless ``--force``, in
which case a snapshot ref is written before anything that holds work goes.

The per-step functions (:func:`integrate_commits`, :func:`remove_worktree`,
:func:`delete_branch`, :func:`verify_gone`, :func:`update_default`,
:func:`prune_origin`, :func:`remove_plan_dir`, :func:`sweep_step`,
:func:`local_state_step`) and :func:`merge_proof` are usable on their own:
each checks the world again before it acts, so running one twice, or after a
crash, finishes the job instead of repeating it.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from router import git as g
from router import state
from router.errors import Refusal
from router.git import Git, GitError, StatusReport, WorktreeEntry
from router.localstate import (
    DEFAULT_LINE_TIMEOUT,
    Echo,
    LocalStateJob,
    LocalStateReport,
    run_local_state,
)
from router.snapshot import (
    Restored,
    RestoreStatus,
    Snapshot,
    SnapshotFailed,
    covers,
    read_snapshot,
    restore_repo,
    snapshot_branch,
    snapshot_worktree,
)
from router.sweep import Kept, SweepResult, Verdict, classify, sweep
from router.topicscope import RepoTarget, TopicScope, resolve_topic
from router.workspace import (
    PLANS_DIR,
    WORKTREES_DIR,
    DefaultBranch,
    Repo,
    default_branch,
    find_worktree,
)

STEPS = (
    "integrate",
    "remove",
    "branch",
    "verify-gone",
    "update-default",
    "plan-dir",
    "sweep",
    "local-state",
)
MAX_PARALLEL = 8
_NAMED = 5  # how many paths or commits a one-line detail names before "..."


class Outcome(StrEnum):
    DONE = "done"
    SKIPPED = "skipped"
    REFUSED = "refused"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class StepResult:
    name: str
    outcome: Outcome
    detail: str
    code: str = ""  # the refusal's error code (dirty-worktree, conflict, ...)

    @property
    def stopped(self) -> bool:
        return self.outcome in {Outcome.REFUSED, Outcome.FAILED}

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"name": self.name, "outcome": str(self.outcome), "detail": self.detail}
        if self.code:
            data["code"] = self.code
        return data


def done(name: str, detail: str) -> StepResult:
    return StepResult(name, Outcome.DONE, detail)


def skipped(name: str, detail: str) -> StepResult:
    return StepResult(name, Outcome.SKIPPED, detail)


def refused(name: str, code: str, detail: str) -> StepResult:
    return StepResult(name, Outcome.REFUSED, detail, code)


def failed(name: str, detail: str, code: str = "") -> StepResult:
    return StepResult(name, Outcome.FAILED, detail, code)


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

    Three proofs, cheapest first: ancestry (a merge commit or fast-forward),
    patch identity (a rebase or cherry-pick), and for a squash merge the
    tree ``git merge-tree --write-tree target branch`` yields being the
    target's own tree.
    """
    if git.is_ancestor(branch, target):
        return Proof(ProofKind.ANCESTOR, target)
    try:
        entries = git.cherry(target, branch)
    except GitError:
        entries = []
    if entries and all(e.present for e in entries):
        return Proof(ProofKind.PATCHES, target)
    target_tree = git.tree_of(target)
    if target_tree is not None and git.merge_tree(target, branch) == target_tree:
        return Proof(ProofKind.SQUASH, target)
    return None


def short_ref(ref: str) -> str:
    return ref.removeprefix("refs/remotes/").removeprefix("refs/heads/")


@dataclass(frozen=True, slots=True)
class Integration:
    """Where a branch's work stands against the repo's default branch."""

    proof: Proof | None
    missing: tuple[str, ...]  # commits whose patches the default branch lacks

    @property
    def integrated(self) -> bool:
        return self.proof is not None or not self.missing


def integration(git: Git, tip: str, default: DefaultBranch) -> Integration:
    """Merged on origin or on the local default branch, else the commits still missing."""
    targets = [ref for ref in (default.remote_ref, default.local_ref) if ref]
    for ref in targets:
        proof = merge_proof(git, tip, ref)
        if proof is not None:
            return Integration(proof, ())
    upstream = default.local_ref or default.remote_ref or default.best_ref
    missing = tuple(e.sha for e in git.cherry(upstream, tip) if not e.present)
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


def _busy_reason(status: StatusReport, current: str | None, default: DefaultBranch) -> str:
    if status.dirty:
        return f"it has uncommitted changes ({_names(status.tracked + status.untracked)})"
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
) -> StepResult:
    """Cherry-pick the branch's missing commits onto the default branch in the primary clone.

    ``known`` is a (tip, integration) judgement made moments ago (the plan's);
    without it the branch is judged afresh, which is what makes a rerun after
    a crash safe: commits already picked show as present and are not picked again.
    """
    name = "integrate"
    tip = known[0] if known else repo.git.rev_parse(f"refs/heads/{branch}")
    if tip is None:
        return skipped(name, f"branch {branch} is gone: nothing to integrate")
    if default is None:
        return refused(name, "no-default-branch", f"{repo.primary}: the default branch is unknown")
    found = known[1] if known else integration(repo.git, tip, default)
    if found.proof is not None:
        return skipped(name, f"nothing to integrate: {branch} is merged ({found.proof.detail})")
    if not found.missing:
        return skipped(name, f"nothing to integrate: every patch of {branch} is on {default.name}")
    if not apply:
        return refused(
            name, "unintegrated-commits",
            f"{len(found.missing)} commit(s) of {branch} are not on {default.name}: "
            f"{_names(c[:12] for c in found.missing)}; pass --integrate, or --force to snapshot them",
        )
    status, current = primary_state(repo)
    busy = _busy_reason(status, current, default)
    if busy:
        return refused(name, "primary-busy", f"cannot cherry-pick in {repo.primary}: {busy}")
    # git cherry lists oldest first, the order the commits must be applied in.
    try:
        g.cherry_pick(repo.git, found.missing)
    except GitError as exc:
        stopped_at = g.cherry_pick_head(repo.git) or found.missing[0]
        g.cherry_pick_abort(repo.git)
        return refused(
            name, "conflict",
            f"cherry-pick of {stopped_at[:12]} onto {default.name} failed ({exc.first_line}); "
            f"aborted, {default.name} is unchanged",
        )
    return done(
        name,
        f"cherry-picked {len(found.missing)} commit(s) onto {default.name} in {repo.primary} "
        f"(not pushed: push {default.name} when you are ready)",
    )


# -- step 2: remove -----------------------------------------------------------


def remove_worktree(
    repo: Repo, path: Path | None, branch: str, *, force: bool, entries: list[WorktreeEntry] | None = None
) -> tuple[StepResult, Snapshot | None]:
    """Remove a linked worktree; dirty or locked refuses unless ``force``, which snapshots first.

    Without ``force`` git's own check is the guard: ``git worktree remove``
    refuses a worktree with changed or untracked files, and only then is the
    status read, to name them.
    """
    name = "remove"
    entries = entries if entries is not None else repo.git.worktree_list()
    if path is None:
        return skipped(name, "no worktree recorded"), None
    if is_primary_clone(repo, path, entries):
        return skipped(name, f"{path} is the primary clone: never removed"), None
    entry = find_worktree(entries, path)
    if entry is None:
        there = "left to verify-gone and sweep" if os.path.lexists(path) else "already gone"
        return skipped(name, f"{path} is not a registered worktree: {there}"), None
    exists = os.path.isdir(path)
    if not force:
        if entry.locked:
            return _blocker(path, entry, StatusReport()), None  # type: ignore[return-value]
        try:
            # A registration whose directory is gone holds nothing: --force drops it.
            repo.git.worktree_remove(path, force=not exists)
        except GitError as exc:
            blocker = _blocker(path, entry, Git(path).status()) if exists else None
            return blocker or failed(name, f"git worktree remove {path} failed: {exc.first_line}"), None
        return done(name, f"removed {path}"), None
    status = Git(path).status() if exists else StatusReport()
    snap = None
    if exists and _holds_work(repo, path, branch, status):
        try:
            snap = snapshot_worktree(repo, path, branch)
        except SnapshotFailed as exc:
            return refused(name, exc.code, f"{exc.message}; the worktree is kept"), None
    try:
        repo.git.worktree_remove(path, force=True)
    except GitError as exc:
        return failed(name, f"git worktree remove {path} failed: {exc.first_line}"), snap
    kept = f"; its work is in {snap.ref} ({snap.commit[:12]})" if snap else ""
    return done(name, f"removed {path}{kept}"), snap


def _blocker(path: Path, entry: WorktreeEntry, status: StatusReport) -> StepResult | None:
    if entry.locked:
        why = f" ({entry.lock_reason})" if entry.lock_reason else ""
        return refused("remove", "locked-worktree", f"{path} is locked{why}; unlock it or pass --force")
    if status.dirty:
        parts = []
        if status.tracked:
            parts.append(f"{len(status.tracked)} changed tracked file(s): {_names(status.tracked)}")
        if status.untracked:
            parts.append(f"{len(status.untracked)} untracked file(s): {_names(status.untracked)}")
        return refused(
            "remove", "dirty-worktree",
            f"{path} has {'; '.join(parts)}; commit them, or pass --force to snapshot and remove",
        )
    return None


def _holds_work(repo: Repo, path: Path, branch: str, status: StatusReport) -> bool:
    """Anything a forced removal would lose: edits, untracked files, commits on no other ref."""
    if status.dirty:
        return True
    head = Git(path).head()
    if head is None:
        return False
    return g.unique_commits(repo.git, head, except_branch=branch) > 0


# -- step 3: branch -----------------------------------------------------------


def delete_branch(
    repo: Repo,
    branch: str,
    default: DefaultBranch | None,
    *,
    force: bool,
    known: tuple[str, Integration] | None = None,
) -> tuple[StepResult, Snapshot | None]:
    """Delete the branch when its work is integrated or proven merged, or snapshotted under force.

    ``known`` is an earlier (tip, integration) judgement, reused only while
    the branch still points at that tip.
    """
    name = "branch"
    tip = repo.git.rev_parse(f"refs/heads/{branch}")
    if tip is None:
        return skipped(name, f"{branch} is already gone"), None
    if known is not None and known[0] == tip:
        found = known[1]
    else:
        found = integration(repo.git, tip, default) if default else Integration(None, (tip,))
    snap = None
    if found.integrated:
        why = found.proof.detail if found.proof else f"every patch is on {default.name}"  # type: ignore[union-attr]
    elif not force:
        return refused(
            name, "unintegrated-commits",
            f"{branch} holds {len(found.missing)} commit(s) not on the default branch; kept",
        ), None
    else:
        snap = read_snapshot(repo.git, branch)
        if not covers(repo.git, snap, tip) and g.unique_commits(repo.git, tip, except_branch=branch):
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
            return skipped(name, f"{branch} is checked out in a worktree ({exc.first_line}): kept"), snap
        return failed(name, f"git branch -D {branch} failed: {exc.first_line}"), snap
    return done(name, f"deleted {branch} ({why})"), snap


# -- step 4: verify-gone ---------------------------------------------------------


def verify_gone(repo: Repo, path: Path | None) -> StepResult:
    """Re-check a removed path; a late writer's recreation goes only if it is residue."""
    name = "verify-gone"
    if path is None:
        return skipped(name, "no worktree recorded")
    if not os.path.lexists(path):
        return done(name, f"{path} is gone")
    entries = repo.git.worktree_list()
    if is_primary_clone(repo, path, entries):
        return skipped(name, f"{path} is the primary clone: never removed")
    if find_worktree(entries, path) is not None:
        return skipped(name, f"{path} is still a registered worktree")
    if Path(os.path.realpath(path.parent)) != Path(os.path.realpath(repo.primary / WORKTREES_DIR)):
        return refused(name, "residue-kept", f"{path} came back outside {WORKTREES_DIR}: kept")
    verdict, files = classify(path, {os.path.realpath(e.path) for e in entries})
    if verdict is not Verdict.RESIDUE:
        return refused(
            name, "residue-kept", f"{path} came back ({verdict}: {_names(files)}): kept for you to look at"
        )
    try:
        shutil.rmtree(path)
    except OSError as exc:
        return failed(name, f"{path} came back and could not be removed: {exc.strerror}")
    return done(name, f"{path} came back (a late writer) holding only residue: removed")


# -- step 5: update-default -------------------------------------------------------


def update_default(
    repo: Repo,
    default: DefaultBranch | None,
    *,
    rebase: bool = True,
    fetched: bool = False,
    has_origin: bool | None = None,
) -> StepResult:
    """``git pull --rebase`` (or ``--ff-only``) the default branch in a clean primary on it.

    Otherwise fetch only (unless ``fetched``) and say why. Never a merge
    commit; a pull that stops is aborted so the primary clone is left clean.
    """
    name = "update-default"
    if default is None:
        return skipped(name, "the default branch is unknown: nothing to update")
    if not (repo.git.has_remote("origin") if has_origin is None else has_origin):
        return skipped(name, "no origin: nothing to update")
    status, current = primary_state(repo)
    busy = _busy_reason(status, current, default)
    if busy:
        error = None if fetched else repo.git.fetch("origin")
        how = f"fetch failed ({error.first_line})" if error else "fetched only"
        return skipped(name, f"{how}: the primary clone was not updated because {busy}")
    mode = "--rebase" if rebase else "--ff-only"
    try:
        g.pull(repo.git, "origin", default.name, rebase=rebase)
    except GitError as exc:
        if rebase:
            g.rebase_abort(repo.git)
        return failed(
            name, f"git pull {mode} origin {default.name} failed ({exc.first_line}); aborted, "
            f"{default.name} left as it was",
        )
    how = "rebased onto" if rebase else "fast-forwarded to"
    return done(name, f"git pull {mode} origin {default.name}: {default.name} {how} origin/{default.name}")


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


def _with_prune(result: StepResult, repo: Repo, plan: RepoPlan) -> StepResult:
    if not plan.has_origin or plan.default is None:
        return result
    if not plan.reachable:
        note = "origin was not reachable: not pruned"
    else:
        note = prune_origin(repo, plan.target.branch, tracking=plan.tracking)
    return dataclasses.replace(result, detail=f"{result.detail}; {note}")


# -- step 6: plan-dir -------------------------------------------------------------


def remove_plan_dir(repo: Repo, topic_id: str) -> StepResult:
    """Remove ``docs/plans/<id>/`` from the primary clone once ``git ls-files`` proves it untracked."""
    name = "plan-dir"
    rel = PLANS_DIR / topic_id
    path = repo.primary / rel
    if not os.path.lexists(path):
        return skipped(name, f"no {rel}/ in the primary clone")
    if path.is_symlink() or not path.is_dir():
        return refused(name, "plan-dir-kept", f"{path} is not a plain directory: kept")
    tracked = repo.git.ls_files(rel.as_posix() + "/")
    if tracked is None:
        return refused(name, "plan-dir-kept", f"git ls-files {rel} failed, so it is not known to be untracked: kept")
    if tracked:
        return skipped(name, f"{rel}/ is tracked ({len(tracked)} file(s)): kept")
    try:
        shutil.rmtree(path)
    except OSError as exc:
        return failed(name, f"removing {path} failed: {exc.strerror}")
    return done(name, f"removed {path} (untracked)")


# -- step 7: sweep ----------------------------------------------------------------


def sweep_step(repo: Repo) -> tuple[StepResult, SweepResult]:
    result = sweep(repo.primary, None, git=repo.git)
    where = repo.primary / WORKTREES_DIR
    if result.failed:
        paths = _names(str(p) for p, _ in result.failed)
        return failed("sweep", f"could not remove residue: {paths}"), result
    if result.no_residue:
        return skipped("sweep", f"no residue under {where}"), result
    parts = []
    if result.swept:
        parts.append(f"swept {len(result.swept)}: {_names(str(p) for p in result.swept)}")
    if result.kept:
        parts.append(f"kept {len(result.kept)} (see kept): {_names(str(k.path) for k in result.kept)}")
    return done("sweep", "; ".join(parts)), result


# -- step 8: local-state ------------------------------------------------------------


def local_state_step(job: LocalStateJob, *, echo: Echo | None = None) -> tuple[StepResult, LocalStateReport]:
    report = run_local_state(job, echo=echo)
    outcome = Outcome.DONE if report.ok else Outcome.FAILED
    if report.declaration.source is None and not report.temp_paths:
        outcome = Outcome.SKIPPED
    return StepResult("local-state", outcome, report.summary()), report


# -- plan -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Options:
    integrate: bool = False
    force: bool = False
    dry_run: bool = False
    line_timeout: float = DEFAULT_LINE_TIMEOUT
    echo: Echo | None = None


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
    blockers: tuple[StepResult, ...] = ()
    notes: tuple[str, ...] = ()


def plan_repo(target: RepoTarget, opts: Options) -> RepoPlan:
    """Everything teardown needs to know about one repo, and what would stop it."""
    repo = target.repo
    if repo is None:
        return RepoPlan(target)
    reachable, notes = True, []
    has_origin = repo.git.has_remote("origin")
    if not opts.dry_run and has_origin:
        error = repo.git.fetch("origin")
        if error is not None:
            reachable = False
            notes.append(f"{target.name}: fetch from origin failed ({error.first_line}); using what is known")
    default = default_branch(repo.git)
    refs = g.ref_values(repo.git, [f"refs/heads/{target.branch}", f"refs/remotes/origin/{target.branch}"])
    entries = repo.git.worktree_list()
    worktree = target.worktree or _listed_worktree(entries, target.branch)
    on_primary = worktree is not None and is_primary_clone(repo, worktree, entries)
    entry = find_worktree(entries, worktree) if worktree and not on_primary else None
    status = Git(worktree).status() if entry and os.path.isdir(worktree) else StatusReport()  # type: ignore[arg-type]
    tip = refs.get(f"refs/heads/{target.branch}")
    found = integration(repo.git, tip, default) if tip and default else None
    plan = RepoPlan(
        target, default, worktree, on_primary, entry is not None, tuple(entries), status, tip, found,
        has_origin, reachable, f"refs/remotes/origin/{target.branch}" in refs, notes=tuple(notes),
    )
    return dataclasses.replace(plan, blockers=tuple(_plan_blockers(plan, entry, opts)))


def _listed_worktree(entries: list[WorktreeEntry], branch: str) -> Path | None:
    for entry in entries[1:]:
        if entry.branch == branch:
            return Path(entry.path)
    return None


def _plan_blockers(plan: RepoPlan, entry: WorktreeEntry | None, opts: Options) -> list[StepResult]:
    repo = plan.target.repo
    assert repo is not None
    found = []
    if entry is not None and not opts.force:
        blocker = _blocker(plan.worktree, entry, plan.status)  # type: ignore[arg-type]
        if blocker is not None:
            found.append(blocker)
        found += _detached_loss(repo, plan, entry)
    if plan.tip is not None and plan.default is None and not opts.force:
        found.append(refused("integrate", "no-default-branch", f"{repo.primary}: cannot tell the default branch"))
    missing = plan.found.missing if plan.found and not plan.found.integrated else ()
    if missing and opts.integrate:
        status, current = primary_state(repo)
        busy = _busy_reason(status, current, plan.default)  # type: ignore[arg-type]
        if busy:
            found.append(refused("integrate", "primary-busy", f"cannot cherry-pick in {repo.primary}: {busy}"))
    elif missing and not opts.force:
        found.append(refused(
            "integrate", "unintegrated-commits",
            f"{len(missing)} commit(s) of {plan.target.branch} are on no target branch: "
            f"{_names(c[:12] for c in missing)}; pass --integrate, or --force to snapshot them",
        ))
    return found


def _detached_loss(repo: Repo, plan: RepoPlan, entry: WorktreeEntry) -> list[StepResult]:
    """A worktree on a detached HEAD with commits no ref holds would lose them on removal."""
    if entry.branch is not None or entry.head is None:
        return []
    lost = g.unique_commits(repo.git, entry.head, except_branch=None)
    if not lost:
        return []
    return [refused(
        "remove", "unintegrated-commits",
        f"{plan.worktree} is on a detached HEAD holding {lost} commit(s) no branch has; "
        "put them on a branch, or pass --force to snapshot them",
    )]


# -- act ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RepoReport:
    name: str
    worktree: Path | None
    steps: tuple[StepResult, ...]
    sweep: SweepResult | None = None
    local_state: LocalStateReport | None = None
    problem: str = ""

    @property
    def ok(self) -> bool:
        return not any(s.stopped for s in self.steps)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "worktree": str(self.worktree) if self.worktree else None,
            "steps": [s.to_json() for s in self.steps],
        }


def teardown_repo(plan: RepoPlan, scope: TopicScope, opts: Options) -> RepoReport:
    """The eight steps in one repo; an earlier refusal keeps everything it guards."""
    target = plan.target
    repo = target.repo
    if repo is None:
        return RepoReport(
            target.name, target.worktree,
            tuple(skipped(s, f"repo not usable: {target.problem}") for s in STEPS), problem=target.problem,
        )
    steps: list[StepResult] = []
    held: StepResult | None = None

    def run(step: str, action: Callable[[], StepResult], *, guarded: bool) -> None:
        nonlocal held
        state.crash_point(step)
        if guarded and held is not None:
            result = skipped(step, f"not done: {held.name} {held.outcome}")
        else:
            result = action()
        steps.append(result)
        if held is None and result.stopped and step in {"integrate", "remove", "branch"}:
            held = result

    swept: list[SweepResult] = []
    local: list[LocalStateReport] = []
    run("integrate", lambda: _integrate_step(repo, target, plan, opts), guarded=False)
    run("remove", lambda: remove_worktree(
        repo, plan.worktree, target.branch, force=opts.force, entries=list(plan.entries)
    )[0], guarded=True)
    run("branch", lambda: _branch_step(
        repo, target, plan, opts, integrated_now=steps[0].outcome is Outcome.DONE
    ), guarded=True)
    run("verify-gone", lambda: verify_gone(repo, plan.worktree), guarded=True)
    run("update-default", lambda: _with_prune(
        update_default(repo, plan.default, fetched=True, has_origin=plan.has_origin), repo, plan
    ), guarded=False)
    run("plan-dir", lambda: remove_plan_dir(repo, scope.id) if target.is_home
        else skipped("plan-dir", "home repo only"), guarded=True)

    def do_sweep() -> StepResult:
        result, report = sweep_step(repo)
        swept.append(report)
        return result

    run("sweep", do_sweep, guarded=False)

    def do_local() -> StepResult:
        if _local_state_ran(repo, scope.id):
            return skipped("local-state", "already ran in an earlier teardown of this topic")
        job = _local_job(repo, target, plan, scope, opts)
        result, report = local_state_step(job, echo=opts.echo)
        local.append(report)
        return result

    run("local-state", do_local, guarded=True)
    report = RepoReport(
        target.name, plan.worktree, tuple(steps), swept[0] if swept else None, local[0] if local else None
    )
    _record_teardown(repo, target, scope, report)
    return report


def _integrate_step(repo: Repo, target: RepoTarget, plan: RepoPlan, opts: Options) -> StepResult:
    if plan.tip is None:
        return skipped("integrate", f"branch {target.branch} is gone: nothing to integrate")
    known = (plan.tip, plan.found) if plan.found else None
    result = integrate_commits(repo, target.branch, plan.default, apply=opts.integrate, known=known)
    if opts.force and result.code == "unintegrated-commits":
        # --force without --integrate: the commits are snapshotted, not applied.
        return skipped("integrate", result.detail.split(";")[0] + "; --force: they go into a snapshot ref")
    return result


def _branch_step(
    repo: Repo, target: RepoTarget, plan: RepoPlan, opts: Options, integrated_now: bool
) -> StepResult:
    # The plan's judgement holds unless the integrate step just moved the default branch.
    known = (plan.tip, plan.found) if plan.tip and plan.found and not integrated_now else None
    return delete_branch(repo, target.branch, plan.default, force=opts.force, known=known)[0]


def _local_job(repo: Repo, target: RepoTarget, plan: RepoPlan, scope: TopicScope, opts: Options) -> LocalStateJob:
    worktree = None if plan.on_primary else plan.worktree
    return LocalStateJob(
        target.name, repo.git, repo.primary, plan.default, target.branch, worktree,
        temp_paths=scope.temp_paths if target.is_home else None, timeout=opts.line_timeout,
    )


def _local_state_ran(repo: Repo, topic_id: str) -> bool:
    """Read now, not at resolution: another run may have finished while we waited for the lock."""
    try:
        record = state.read_record(repo.common_dir, topic_id)
    except state.RecordCorrupt:
        return False
    info = record.extra.get("teardown") if record else None
    return isinstance(info, dict) and "local-state" in info.get("done", [])


def _record_teardown(repo: Repo, target: RepoTarget, scope: TopicScope, report: RepoReport) -> None:
    """Keep the record, marked torn down, so a second run knows the topic and exits 0."""
    try:
        record = state.read_record(repo.common_dir, scope.id)
    except state.RecordCorrupt:
        return  # reported at resolution; never overwritten
    record = record or state.TopicRecord(id=scope.id, repo=target.name, branch=target.branch)
    previous = record.extra.get("teardown")
    done_before = list(previous.get("done", [])) if isinstance(previous, dict) else []
    finished = [s.name for s in report.steps if s.outcome is Outcome.DONE or (
        s.outcome is Outcome.SKIPPED and not s.detail.startswith("not done"))]
    info = {"done": sorted(set(done_before) | set(finished), key=STEPS.index), "complete": report.ok}
    state.write_record(repo.common_dir, dataclasses.replace(record, extra={**record.extra, "teardown": info}))


# -- the whole teardown ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TeardownResult:
    id: str
    repos: tuple[RepoReport, ...]
    dry_run: bool = False
    warnings: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 0 if all(r.ok for r in self.repos) else 1

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
) -> TeardownResult:
    """Plan every repo of the topic, refuse if any would lose work, then tear each down."""
    scope = resolve_topic(cwd, target)
    opts = Options(integrate, force, dry_run, line_timeout, echo)
    if dry_run:
        plans = _with_holders(scope, _parallel(lambda t: plan_repo(t, opts), scope.repos), opts)
        if any(p.blockers for p in plans):
            reports = [_refused_report(p) for p in plans]
        else:
            reports = _parallel(lambda p: preview_repo(p, scope, opts), plans)
        warnings = list(scope.warnings) + [n for p in plans for n in p.notes]
        return TeardownResult(scope.id, tuple(reports), dry_run=True, warnings=warnings)
    # Every step checks the world again before it acts, so what another run did
    # while this one waited for the lock is found, not redone.
    with state.held_lock(scope.home.common_dir, scope.id, wait=wait):
        plans = _with_holders(scope, _parallel(lambda t: plan_repo(t, opts), scope.repos), opts)
        warnings = list(scope.warnings) + [n for p in plans for n in p.notes]
        _refuse_if_blocked(scope, plans, warnings)
        _remember_scope(scope)
        reports = _parallel(lambda p: teardown_repo(p, scope, opts), plans)
    return TeardownResult(scope.id, tuple(reports), warnings=warnings)


def _parallel(fn: Callable, items) -> list:
    items = list(items)
    if len(items) <= 1:
        return [fn(i) for i in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(items))) as pool:
        return list(pool.map(fn, items))


def _with_holders(scope: TopicScope, plans: list[RepoPlan], opts: Options) -> list[RepoPlan]:
    """Another live session holding the topic stops the teardown (unless ``--force``)."""
    from router.holders import describe, other_holders

    others = other_holders(scope.home.common_dir, scope.id)
    if not others or not plans:
        return plans
    who = ", ".join(describe(h) for h in others)
    if opts.force:
        note = f"--force: tearing {scope.id} down although {who} still holds it"
        return [dataclasses.replace(plans[0], notes=(*plans[0].notes, note)), *plans[1:]]
    blocker = refused("remove", "held", f"{scope.id} is held by {who}; release it or pass --force")
    home = dataclasses.replace(plans[0], blockers=(blocker, *plans[0].blockers))
    return [home, *plans[1:]]


def _refuse_if_blocked(scope: TopicScope, plans: list[RepoPlan], warnings: list[str]) -> None:
    blocked = [(p, b) for p in plans for b in p.blockers]
    if not blocked:
        return
    first = blocked[0][1]
    lines = "; ".join(f"{p.target.name}: {b.detail}" for p, b in blocked)
    reports = [_refused_report(p) for p in plans]
    raise Refusal(
        first.code,
        f"teardown of {scope.id} refused, nothing was removed in any repo: {lines}",
        details={
            "id": scope.id,
            "dry_run": False,
            "repos": [r.to_json() for r in reports],
            "swept": [],
            "kept": [],
            "local_state": [],
            "warnings": warnings,
        },
    )


def _refused_report(plan: RepoPlan) -> RepoReport:
    by_step = {b.name: b for b in plan.blockers}
    why = "teardown refused" + (f" ({plan.blockers[0].code} here)" if plan.blockers else " (another repo)")
    steps = tuple(by_step.get(s) or skipped(s, f"not done: {why}") for s in STEPS)
    return RepoReport(plan.target.name, plan.worktree, steps)


def _remember_scope(scope: TopicScope) -> None:
    """Before anything is removed: the repo list and temp paths go into the home record."""
    try:
        record = state.read_record(scope.home.common_dir, scope.id)
    except state.RecordCorrupt:
        return
    record = record or state.TopicRecord(id=scope.id, repo="home", branch=scope.branch)
    known = {r.name: r for r in record.repos}
    for t in scope.repos:
        if t.repo is not None and t.name not in known:
            known[t.name] = state.RepoEntry(t.name, str(t.path), str(t.worktree) if t.worktree else None)
    extra = {**record.extra, "temp_paths": list(scope.temp_paths)}
    state.write_record(
        scope.home.common_dir, dataclasses.replace(record, repos=tuple(known.values()), extra=extra)
    )


# -- local-state and restore on their own ---------------------------------------------


@dataclass(frozen=True, slots=True)
class LocalStateResult:
    id: str
    reports: tuple[LocalStateReport, ...]
    warnings: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 0 if all(r.ok for r in self.reports) else 1

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "commands": [c.to_json() for r in self.reports for c in r.commands],
            "temp_paths": [t.to_json() for r in self.reports for t in r.temp_paths],
            "repos": [r.to_json() for r in self.reports],
        }


def local_state_for_topic(
    cwd: Path,
    target: str,
    *,
    line_timeout: float = DEFAULT_LINE_TIMEOUT,
    wait: float = state.DEFAULT_WAIT,
    echo: Echo | None = None,
) -> LocalStateResult:
    """DESIGN §12 alone: every repo's ``.teamteardown`` and the topic's recorded temp paths."""
    scope = resolve_topic(cwd, target)
    reports = []
    with state.held_lock(scope.home.common_dir, scope.id, wait=wait):
        for t in scope.repos:
            if t.repo is None:
                continue
            worktree = t.worktree if t.worktree and not is_primary_clone(
                t.repo, t.worktree, t.repo.git.worktree_list()) else None
            job = LocalStateJob(
                t.name, t.repo.git, t.repo.primary, default_branch(t.repo.git), t.branch, worktree,
                temp_paths=scope.temp_paths if t.is_home else None, timeout=line_timeout,
            )
            reports.append(run_local_state(job, echo=echo))
    return LocalStateResult(scope.id, tuple(reports), list(scope.warnings))


@dataclass(frozen=True, slots=True)
class RestoreResult:
    id: str
    repos: tuple[Restored, ...]
    warnings: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if any(r.status is RestoreStatus.REFUSED for r in self.repos) else 0

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "repos": [r.to_json() for r in self.repos]}


def restore_topic(
    cwd: Path, target: str, *, repo: str | None = None, wait: float = state.DEFAULT_WAIT
) -> RestoreResult:
    """Recreate each repo's worktree (or one, with ``repo``) from its snapshot ref."""
    scope = resolve_topic(cwd, target)
    chosen = scope.only(repo)
    with state.held_lock(scope.home.common_dir, scope.id, wait=wait):
        results = tuple(
            restore_repo(t.name, t.repo, scope.id, t.branch) if t.repo is not None
            else Restored(t.name, RestoreStatus.SKIPPED, f"repo not usable: {t.problem}")
            for t in chosen
        )
    if all(r.status is RestoreStatus.SKIPPED for r in results):
        raise Refusal(
            "no-snapshot",
            f"no snapshot to restore for {scope.id}: "
            + "; ".join(f"{r.name}: {r.detail}" for r in results),
            details={"id": scope.id, "repos": [r.to_json() for r in results]},
        )
    return RestoreResult(scope.id, results, list(scope.warnings))


# -- dry run ---------------------------------------------------------------------------


def preview_repo(plan: RepoPlan, scope: TopicScope, opts: Options) -> RepoReport:
    """What the eight steps would do in one repo; reads only, changes nothing."""
    target, repo = plan.target, plan.target.repo
    if repo is None:
        return teardown_repo(plan, scope, opts)  # every step is a "skipped", nothing runs
    if plan.blockers:
        return _refused_report(plan)
    sweep_report = sweep(repo.primary, repo.git.worktree_list(), dry_run=True)
    local = run_local_state(_local_job(repo, target, plan, scope, opts), dry_run=True)
    steps = (
        _preview_integrate(plan, opts),
        _preview_remove(plan, opts),
        _preview_branch(plan),
        skipped("verify-gone", "no worktree recorded") if plan.worktree is None or plan.on_primary
        else done("verify-gone", f"would re-check that {plan.worktree} is gone"),
        _preview_update(repo, plan),
        _preview_plan_dir(repo, scope.id) if target.is_home else skipped("plan-dir", "home repo only"),
        skipped("sweep", "no residue") if sweep_report.no_residue else done(
            "sweep", f"would sweep {len(sweep_report.swept)}, keep {len(sweep_report.kept)}"),
        done("local-state", "would run: " + local.summary()),
    )
    return RepoReport(target.name, plan.worktree, steps, sweep_report, local)


def _preview_integrate(plan: RepoPlan, opts: Options) -> StepResult:
    found = plan.found
    if plan.tip is None or found is None:
        return skipped("integrate", f"branch {plan.target.branch} is gone: nothing to integrate")
    if found.proof is not None:
        return skipped("integrate", f"nothing to integrate: merged ({found.proof.detail})")
    if not found.missing:
        return skipped("integrate", "nothing to integrate: every patch is on the default branch")
    if opts.integrate:
        return done("integrate", f"would cherry-pick {len(found.missing)} commit(s) onto the default branch")
    return skipped("integrate", f"--force: {len(found.missing)} unintegrated commit(s) would go into a snapshot")


def _preview_remove(plan: RepoPlan, opts: Options) -> StepResult:
    if plan.worktree is None:
        return skipped("remove", "no worktree recorded")
    if plan.on_primary:
        return skipped("remove", f"{plan.worktree} is the primary clone: never removed")
    if not plan.registered:
        return skipped("remove", f"{plan.worktree} is not a registered worktree")
    snap = " after writing a snapshot" if opts.force and plan.status.dirty else ""
    return done("remove", f"would remove {plan.worktree}{snap}")


def _preview_branch(plan: RepoPlan) -> StepResult:
    if plan.tip is None:
        return skipped("branch", f"{plan.target.branch} is already gone")
    if plan.on_primary:
        return skipped("branch", f"{plan.target.branch} stays while the primary clone holds the work")
    return done("branch", f"would delete {plan.target.branch}")


def _preview_update(repo: Repo, plan: RepoPlan) -> StepResult:
    if plan.default is None or not repo.git.has_remote("origin"):
        return skipped("update-default", "no origin or no default branch: nothing to update")
    status, current = primary_state(repo)
    busy = _busy_reason(status, current, plan.default)
    if busy:
        return skipped("update-default", f"would fetch only: {busy}")
    return done("update-default", f"would run git pull --rebase origin {plan.default.name}")


def _preview_plan_dir(repo: Repo, topic_id: str) -> StepResult:
    rel = PLANS_DIR / topic_id
    if not os.path.lexists(repo.primary / rel):
        return skipped("plan-dir", f"no {rel}/ in the primary clone")
    tracked = repo.git.ls_files(rel.as_posix() + "/")
    if tracked is None:
        return refused("plan-dir", "plan-dir-kept", f"git ls-files {rel} failed: would keep it")
    if tracked:
        return skipped("plan-dir", f"{rel}/ is tracked ({len(tracked)} file(s)): would keep it")
    return done("plan-dir", f"would remove {repo.primary / rel} (untracked)")


def _names(items) -> str:
    items = [str(i) for i in items]
    more = f" and {len(items) - _NAMED} more" if len(items) > _NAMED else ""
    return ", ".join(items[:_NAMED]) + more
