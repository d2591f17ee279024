"""Teardown of a whole topic (DESIGN §9): plan every repo first, then run the eight steps.

The plan only reads (and fetches): if any repo would lose work — a dirty or
locked worktree, commits whose patches are on no target, a live holder — the
whole teardown is refused and nothing is removed anywhere, unless ``--force``,
in which case a snapshot ref is written before anything that holds work goes.
Then every repo runs its steps (:mod:`router.teardown.act`), repos in parallel,
reported in ``repos.md`` order.
"""

from __future__ import annotations

from pathlib import Path

from router import git as g
from router import interrupt
from router.errors import ErrorCode, ExitCode, Interrupted, error_json
from router.parallel import parallel_map
from router.progress import Echo, Progress
from router.reasons import Reason, Why
from router.records import field, record, replace
from router.teardown.act import TeardownReport, git_steps, local_state_last, teardown_repo
from router.teardown.blockers import NO_PROC_NOTE, holding_parts, in_use_blocker, worktrees_in_use
from router.teardown.decide import RepoRun
from router.teardown.facts import RepoPlan, TeardownOptions, plan_repo
from router.teardown.host_policy import HostKeeps, HostPolicy, host_keeps
from router.teardown.localstate import DEFAULT_LINE_TIMEOUT
from router.teardown.steps import (
    STEPS,
    NotDone,
    Outcome,
    Step,
    StepResult,
    not_done,
    noting,
    refused,
    skipped,
    stopped_at,
    stopped_error,
)
from router.teardown.sweep import Kept
from router.teardown.wording import in_words
from router.topic import state
from router.topic.scope import TopicScope, resolve_topic


@record
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
    host: HostPolicy | None = None,
) -> TeardownResult:
    """Plan every repo of the topic, refuse if any would lose work, then tear each down.

    A signal (:mod:`router.interrupt`) ends the run at step boundaries: no step and
    no ``.teamteardown`` line starts after it, in any repo. ``host``: the host removes
    its worktree (:class:`HostPolicy`); what keeps it for the host is read from the
    topic as resolved under its lock, before anything is planned, and raised as
    :class:`HostKeeps`.
    """
    scope = resolve_topic(cwd, target)
    opts = TeardownOptions(integrate, force, dry_run, line_timeout, echo, remove_reused, host)
    if dry_run:
        return _plan_only(cwd, target, scope, opts, wait=wait)
    # Every step checks the world again before it acts, so what another run did
    # while this one waited for the lock is found, not redone.
    with state.held_lock(scope.home.common_dir, scope.id, wait=wait):
        # The facts: each git answer is asked once while they are read; the steps
        # that act read what they check afresh.
        with g.remembered():
            # The scope (records, worktree lists) was read before the lock: another
            # run may have torn the topic down or added a repo while this one waited.
            scope = resolve_topic(cwd, target)
            why = host_keeps(scope, host) if host is not None else None
            if why is not None:
                raise HostKeeps(why)
            plans, warnings = _plan_topic(scope, opts)
        # What the worktrees' submodules stand on in the primaries is pinned first:
        # a worktree a refusal keeps, or a repo whose removal fails, still has it.
        commons = [scope.home.common_dir] + [t.repo.common_dir for t in scope.repos if t.repo]
        warnings += g.keep_borrowed_objects([str(c) for c in commons])
        refusal = _refusal(scope, plans, warnings, opts)
        if refusal is not None:
            return refusal
        _stop_if_interrupted(scope, warnings)
        _remember_scope(scope)
        reports = _run_steps(plans, scope, opts)
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


def _plan_only(
    cwd: Path, target: str, scope: TopicScope, opts: TeardownOptions, *, wait: float
) -> TeardownResult:
    """The real run's plan and steps, each step reporting its decision instead of acting on it.

    Under the topic's lock too: another run tearing the topic down now has its git
    in the worktree, and the plan must wait for it (or say `locked`), never take it
    for a process working there.
    """
    with state.held_lock(scope.home.common_dir, scope.id, wait=wait), g.remembered():
        scope = resolve_topic(cwd, target)
        plans, warnings = _plan_topic(scope, opts)
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


def _plan_topic(scope: TopicScope, opts: TeardownOptions) -> tuple[list[RepoPlan], list[str]]:
    """Every repo's plan, with the topic's holders and the worktrees' users among its
    blockers, and the warnings the scope and the plans give."""
    plans = _with_users(
        _with_holders(
            scope, parallel_map(lambda t: plan_repo(t, opts, scope.id), scope.repos), opts
        ),
        opts,
        state.lock_path(scope.home.common_dir, scope.id),
    )
    return plans, list(scope.warnings) + [n for p in plans for n in p.notes]


def _stop_if_interrupted(scope: TopicScope, warnings: list[str]) -> None:
    """A signal that came during the plan stops the teardown before anything is removed."""
    signum = interrupt.received()
    if signum:
        raise Interrupted(
            f"teardown of {scope.id} interrupted ({interrupt.name(signum)}) before anything "
            "was removed; run the same command again",
            details={"id": scope.id, "warnings": warnings},
            signum=signum,
        )


def _run_steps(
    plans: list[RepoPlan], scope: TopicScope, opts: TeardownOptions
) -> list[TeardownReport]:
    """Every repo's steps, repos in parallel, each repo's progress line as it finishes."""
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
    return parallel_map(finish, begun)


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
    from router.topic.holders import other_holders

    others = holding_parts(other_holders(scope.home.common_dir, scope.id))
    if not others or not plans:
        return plans
    if opts.force and not opts.keep_held:
        who = ", ".join(map(in_words, others))
        note = f"--force: tearing {scope.id} down although {who} still holds it"
        return [replace(plans[0], notes=(*plans[0].notes, note)), *plans[1:]]
    held = Why(Reason.HELD, topic=scope.id, parts=others)
    blocker = refused(Step.REMOVE, ErrorCode.HELD, held)
    home = replace(plans[0], blockers=(blocker, *plans[0].blockers))
    return [home, *plans[1:]]


def _with_users(plans: list[RepoPlan], opts: TeardownOptions, lock: Path) -> list[RepoPlan]:
    """A process working in a worktree the teardown would remove stops it, --force or not.

    Asked once for every repo's worktree (one scan of /proc per command), under
    the topic's ``lock``.
    """
    removed = {p.worktree: p for p in plans if p.worktree is not None and _removes(p)}
    own = opts.host is not None and opts.host.own_processes
    users = worktrees_in_use(removed, host=own, topic_lock=lock)
    if users is None:
        if not removed:
            return plans
        return [replace(plans[0], notes=(*plans[0].notes, NO_PROC_NOTE)), *plans[1:]]
    return [_in_use(p, users) for p in plans]


def _removes(plan: RepoPlan) -> bool:
    """The remove step would delete the plan's worktree (ours, registered, not kept)."""
    return plan.registered and not plan.kept_worktree


def _in_use(plan: RepoPlan, users: dict[Path, list[Why]]) -> RepoPlan:
    found = users.get(plan.worktree) if plan.worktree is not None and _removes(plan) else None
    if plan.worktree is None or not found:
        return plan
    return replace(plan, blockers=(*plan.blockers, in_use_blocker(plan.worktree, found)))


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
    planning = replace(opts, refused_plan=True)
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
        by_step[b.name] = b if seen is None else noting(seen, b.why)
    # The first blocker is the one the teardown's error names (see _refusal).
    code = plan.blockers[0].code if plan.blockers else None
    why = Why(Reason.TEARDOWN_REFUSED, code=str(code or ""))
    # Each step as it would go once the blockers are gone: none holds another back.
    planned = (
        teardown_repo(plan, scope, planning).steps
        if plan.checked
        else tuple(skipped(s, Why(Reason.UNCHECKED)) for s in STEPS)
    )

    def refused_step(step: StepResult) -> StepResult:
        blocker = by_step.get(step.name)
        if blocker is not None:
            return blocker
        if step.outcome is Outcome.SKIPPED and not plan.checked:
            return not_done(skipped(step.name, why), NotDone.REFUSED)
        if step.outcome is Outcome.SKIPPED:
            return step
        would = replace(why, inner=(step.why,))
        return not_done(skipped(step.name, would), NotDone.REFUSED)

    steps = tuple(map(refused_step, planned))
    return TeardownReport(plan.target.name, plan.worktree, steps, planned=planned, refused_by=code)


def _remember_scope(scope: TopicScope) -> None:
    """Before anything is removed: the repo list and temp paths go into the home record."""

    def change(record: state.TopicRecord) -> state.TopicRecord:
        known = {r.name: r for r in record.repos}
        for t in scope.repos:
            if t.repo is not None and t.name not in known:
                known[t.name] = state.RepoEntry(
                    t.name, str(t.path), str(t.worktree) if t.worktree else None
                )
        return replace(record, repos=tuple(known.values()), temp_paths=tuple(scope.temp_paths))

    state.update_record(
        scope.home.common_dir,
        scope.id,
        change,
        new=lambda: state.TopicRecord(id=scope.id, repo="home", branch=scope.branch),
    )
