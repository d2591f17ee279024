"""The repos of a topic, decided in one place: which repos, where each one's work is.

Three sources name them: the home record (which outlives the plan dir), the
plan dir's ``repos.md`` (its repo list and its ``## Worktrees`` section), and
each repo's own record (how its worktree got there, what this tool created).
Phase inference, ``status``, the session-start hook and teardown all read the
list from :func:`repo_places`, so they agree on the repos and their order.

No git runs here, and only the standard library and the artifact module the hook
loads anyway are imported at the top: the session-start hook reaches this when the
phase depends on commits.
"""

from __future__ import annotations

import os

from router.plandir.artifacts import HOME  # the hook has it loaded already
from router.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from router.plandir.reposmd import WorktreeLine
    from router.topic.state import TopicRecord


@record
class RepoPlace:
    """One repo of a topic: its name, its primary clone and the checkout carrying its work.

    ``primary`` is None when only the ``## Worktrees`` section names the repo;
    ``worktree`` is None when nothing places the topic's work outside the primary.
    """

    name: str
    primary: str | None
    worktree: str | None

    @property
    def is_home(self) -> bool:
        return self.name == HOME


def works_in_main_tree(name: str, primary: str | None, worktree: str | None) -> bool:
    """The repo's work for the topic happens in its primary clone (it fell back there).

    A secondary that fell back is placed at its primary; the home repo that fell
    back has no worktree at all (its plan dir is in the primary clone).
    """
    if worktree is None:
        return name == HOME
    return primary is not None and os.path.realpath(worktree) == os.path.realpath(primary)


def repo_places(
    home_primary: str | Path,
    home_worktree: str | Path | None,
    record: TopicRecord | None,
    secondaries: Iterable[tuple[str, str | Path]] = (),
    lines: Iterable[WorktreeLine] = (),
) -> list[RepoPlace]:
    """Every repo of the topic: home, then ``repos.md``'s secondaries in order, then any
    only the home record knows, then any only the ``## Worktrees`` section names.

    ``record`` is the home record; ``secondaries`` the ``(name, primary)`` pairs of
    ``repos.md``; ``lines`` its ``## Worktrees`` entries. A repo's worktree is the
    one the section places, else the one the home record remembers.
    """
    entries = {e.name: e for e in record.repos} if record is not None else {}
    placed = {ln.name: str(ln.placed) for ln in lines if ln.placed is not None}
    order: dict[str, str | None] = {}
    for name, listed in secondaries:
        order.setdefault(name, str(listed))
    for name, entry in entries.items():
        order.setdefault(name, entry.path)
    for name in placed:
        order.setdefault(name, None)
    order.pop(HOME, None)
    found = [RepoPlace(HOME, str(home_primary), str(home_worktree) if home_worktree else None)]
    for name, primary in order.items():
        recorded = entries.get(name)
        worktree = placed.get(name) or (recorded.worktree if recorded else None)
        found.append(RepoPlace(name, primary, worktree))
    return found
