"""Teardown of a whole topic (DESIGN §9), from the command's start: the topic read, its lock
taken, each repo's slowest git started, then the plan and the steps
(:mod:`router.teardown.overall`).

Light on purpose (the git layer and the topic's scope): the fetches from origin
and the worktrees' statuses (:mod:`router.teardown.early`) start before the
plan's and the steps' modules load, and run while they do.
"""

from __future__ import annotations

from router import git as g
from router.topic import state
from router.topic.scope import resolve_topic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from router.progress import Echo
    from router.teardown.early import EarlyGit
    from router.teardown.facts import TeardownOptions
    from router.teardown.host_policy import HostPolicy
    from router.teardown.overall import TeardownResult


def teardown(
    cwd: Path,
    target: str,
    *,
    integrate: bool = False,
    force: bool = False,
    dry_run: bool = False,
    wait: float = state.DEFAULT_WAIT,
    line_timeout: float | None = None,
    echo: Echo | None = None,
    remove_reused: bool = False,
    host: HostPolicy | None = None,
) -> TeardownResult:
    """Plan every repo of the topic, refuse if any would lose work, then tear each down.

    A signal (:mod:`router.interrupt`) ends the run at step boundaries: no step and
    no ``.teamteardown`` line starts after it, in any repo. ``host``: the host removes
    its worktree (:class:`HostPolicy`); what keeps it for the host is read from the
    topic as resolved under its lock, before anything is planned, and raised as
    :class:`HostKeeps`. ``line_timeout``: each ``.teamteardown`` line's, None for the
    default.
    """
    scope = resolve_topic(cwd, target)
    options = (integrate, force, dry_run, line_timeout, echo, remove_reused, host)
    if dry_run:
        from router.teardown.overall import plan_only

        return plan_only(cwd, target, scope, _options(*options), wait=wait)
    # Every step checks the world again before it acts, so what another run did
    # while this one waited for the lock is found, not redone.
    with state.held_lock(scope.home.common_dir, scope.id, wait=wait):
        # The facts: each git answer is asked once while they are read; the steps
        # that act read what they check afresh.
        with g.remembered():
            # The scope (records, worktree lists) was read before the lock: another
            # run may have torn the topic down or added a repo while this one waited.
            scope = resolve_topic(cwd, target)
            if host is not None:
                from router.teardown.host_policy import HostKeeps, host_keeps

                why = host_keeps(scope, host)
                if why is not None:
                    raise HostKeeps(why)
            from router.teardown.early import EarlyGit

            with EarlyGit(scope) as early:
                from router.teardown.overall import plan_topic

                opts = _options(*options, early=early)
                plans, warnings = plan_topic(scope, opts)
        from router.teardown.overall import act_on_plans

        acted = act_on_plans(scope, plans, warnings, opts)
        if not isinstance(acted, list):
            return acted  # the plan refused: nothing was removed in any repo
    from router.teardown.overall import finished

    return finished(scope, plans, warnings, acted)


def _options(
    integrate: bool,
    force: bool,
    dry_run: bool,
    line_timeout: float | None,
    echo: Echo | None,
    remove_reused: bool,
    host: HostPolicy | None,
    early: EarlyGit | None = None,
) -> TeardownOptions:
    from router.teardown.facts import TeardownOptions

    if line_timeout is None:
        from router.declared import DEFAULT_LINE_TIMEOUT

        line_timeout = DEFAULT_LINE_TIMEOUT
    return TeardownOptions(
        integrate, force, dry_run, line_timeout, echo, remove_reused, host, early=early
    )
