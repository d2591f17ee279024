"""Teardown's slowest reads, started before the plan's modules load: each repo's fetch from
origin and its worktree's status.

Light on purpose (the git layer and the topic's scope only): a teardown starts
them once it holds the topic's lock and has read the topic, so the git
processes run while the rest of the command (~100 ms of imports) loads and
every repo's start waits for no other repo's Python. The plan takes each one
over as its own (:meth:`EarlyGit.fetch`, :meth:`EarlyGit.status`): the same
command in the same directory it would have started moments later. Nothing is
read less: the plan reads every answer as before, and every check of the act
reads afresh. What the plan does not take over is waited for when it ends, so
no git of ours outlives it.
"""

from __future__ import annotations

import os

from router import git as g

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from router.git import ConfigView, Running
    from router.git.status import StartedStatus
    from router.topic.scope import TopicScope
    from router.topic.workspace import Repo


class EarlyGit:
    """The gits started for a topic's plan, by repo and worktree, until the plan takes them.

    A context manager: entering starts them, leaving ends what was not taken
    (a fetch is waited for, never cut short, unless a signal stopped the
    command: a killed fetch can leave its ref locks behind).
    """

    __slots__ = ("_fetches", "_scope", "_statuses")

    def __init__(self, scope: TopicScope) -> None:
        self._scope = scope
        self._fetches: dict[str, tuple[ConfigView, Running | None]] = {}
        self._statuses: dict[str, StartedStatus] = {}

    def __enter__(self) -> EarlyGit:
        repos = [(t.repo, t.worktree) for t in self._scope.repos if t.repo is not None]
        try:
            # The statuses first: they need no answer, and one of a worktree whose files
            # git must read again (written in the second its index was) is the longest.
            for repo, worktree in repos:
                self._start_status(repo, worktree)
            for repo, _ in repos:
                self._start_fetch(repo)
        except BaseException as exc:
            self._end(exc)
            raise
        return self

    def __exit__(self, _type: object, exc: BaseException | None, _tb: object) -> None:
        self._end(exc)

    def _start_status(self, repo: Repo, worktree: Path | None) -> None:
        # Only a directory apart from the primary clone: the plan reads the status of a
        # linked worktree it finds there (anything else it never asks).
        if worktree is not None and str(worktree) not in self._statuses and _linked(worktree, repo):
            self._statuses[str(worktree)] = g.Git(worktree).status_started()

    def _start_fetch(self, repo: Repo) -> None:
        # The config first, as the plan reads it: a repo without origin fetches nothing.
        config = g.config_view(repo.git)
        fetching = repo.git.start_fetch("origin") if config.has_remote("origin") else None
        self._fetches[str(repo.primary)] = (config, fetching)

    def fetch(self, repo: Repo) -> tuple[ConfigView, Running | None] | None:
        """``repo``'s config as read before its fetch, and that fetch (None: no origin), handed
        over once; None when none was started here."""
        return self._fetches.pop(str(repo.primary), None)

    def status(self, worktree: Path) -> StartedStatus | None:
        """The status started in ``worktree``, handed over once; None when none was."""
        return self._statuses.pop(str(worktree), None)

    def _end(self, exc: BaseException | None) -> None:
        """Every git not taken over ended: a signal passed on, anything else waited for."""
        fetches = [running for _, running in self._fetches.values() if running is not None]
        statuses = list(self._statuses.values())
        self._fetches, self._statuses = {}, {}
        signalled = exc is not None and not isinstance(exc, Exception)
        for running in fetches:
            if signalled:
                running.stop(exc)  # type: ignore[arg-type]
            else:
                running.error()
        for started in statuses:
            # A read that changes nothing (GIT_OPTIONAL_LOCKS=0): ended as the caller's error says.
            started.stop(exc if exc is not None else _UNUSED)


def _linked(worktree: Path, repo: Repo) -> bool:
    """``worktree`` is a directory, and not the primary clone itself."""
    return os.path.isdir(worktree) and os.path.realpath(worktree) != os.path.realpath(repo.primary)


_UNUSED = RuntimeError("the plan did not ask for this status")
