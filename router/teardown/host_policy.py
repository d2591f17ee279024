"""The host's removal of a worktree it asked for, as teardown's policy: a value, not flags.

The host (the WorktreeRemove hook, or ``sweep --host`` on its behalf) cannot be
asked "are you sure?". Its discard intent is ``--force`` for the work in the
worktree only: a lock or another live session still keeps it. And what
teardown alone would remove but the host must not (the topic's other repos,
the run's artifacts, what a sweep finds held now) keeps the worktree: these
are facts of the topic, read under its lock before any repo is planned.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from router.records import record
from router.teardown.steps import name_some
from router.topic.runs import PLANS_DIR

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.topic.scope import TopicScope


class HostCaller(StrEnum):
    """Who removes the host's worktree."""

    # The WorktreeRemove hook: the processes its session started (its MCP servers, a
    # subagent's tools) are its own, not someone else's work in the worktree; a process
    # it did not start still keeps it.
    HOOK = "hook"
    # `sweep --host`, for a worktree found idle: judged idle again under the topic's lock
    # (a session that took it, a file or a commit made meanwhile keeps it).
    SWEEP = "sweep"


@record
class HostPolicy:
    """Teardown as the host removes its ``worktree``."""

    worktree: Path
    caller: HostCaller = HostCaller.HOOK

    @property
    def own_processes(self) -> bool:
        """The calling session's processes do not keep the worktree (a user's sweep counts them)."""
        return self.caller is HostCaller.HOOK


class HostKeeps(Exception):
    """Why the host's worktree stays, found under the topic's lock before anything is planned."""


def host_keeps(scope: TopicScope, policy: HostPolicy) -> str | None:
    """Why the host's worktree stays whatever teardown would do, or None."""
    if len(scope.repos) > 1:
        names = ", ".join(t.name for t in scope.repos)
        return (
            f"the topic spans several repos ({names}); run `team-router teardown {scope.id}` "
            "to tear them down together"
        )
    artifacts = artifacts_in(policy.worktree / PLANS_DIR / scope.id)
    if artifacts:
        # git ignores the plan dir (info/exclude), so neither the dirty check nor a
        # snapshot would see these files: removing the worktree would lose them.
        return (
            f"its plan dir holds {name_some(artifacts)}; run `team-router teardown "
            f"{scope.id}` when the run is finished"
        )
    held = _held_now(scope, policy) if policy.caller is HostCaller.SWEEP else ()
    return f"it holds {'; '.join(held)}" if held else None


def artifacts_in(plan_dir: Path) -> list[str]:
    """The files a run wrote into the worktree's plan dir (relative paths), sorted."""
    if not plan_dir.is_dir() or plan_dir.is_symlink():
        return []
    return sorted(str(p.relative_to(plan_dir)) for p in plan_dir.rglob("*") if not p.is_dir())


def _held_now(scope: TopicScope, policy: HostPolicy) -> tuple[str, ...]:
    """What holds the worktree a sweep found idle, asked again now."""
    from router.phase.idle import host_worktree

    return host_worktree(scope.home, scope.id, str(policy.worktree)).holds
