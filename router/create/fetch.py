"""A creation's fetch from origin: started ahead of the step that needs it, or deferred.

Light on purpose (the git layer and the names only): ``new`` starts its home
repo's fetch here before it loads the creation pipeline, so the fetch runs
while the rest of the command loads (:func:`start_early`).
"""

from __future__ import annotations

import os
from pathlib import Path

from router import git as g
from router.errors import RouterError
from router.names import derive_id, parse_id, with_suffix
from router.topic.workspace import WORKTREES_DIR

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.git import Git, GitError


class Fetch:
    """A job's fetch from origin: a git process started ahead, or one deferred until asked for.

    ``result()`` waits for it, and is safe to call twice. Deferred, it runs
    when ``result()`` is first asked for, inline.
    """

    def __init__(self, git: Git, *, start: bool = True) -> None:
        self._git = git
        self._running = git.start_fetch("origin") if start else None

    @property
    def started(self) -> bool:
        return self._running is not None

    def of(self, git: Git) -> bool:
        """This is the fetch ``git`` would start: git run in the same directory."""
        return self._git.cwd == git.cwd

    def result(self) -> GitError | None:
        if self._running is None:
            self._running = self._git.start_fetch("origin")
        return self._running.error()


def start_early(
    cwd: Path, description: str, *, ticket: str | None, topic_id: str | None, date: str | None
) -> Fetch | None:
    """``new``'s fetch of the repo it runs in, started before the pipeline is loaded; or None.

    The pipeline takes it over as its own fetch (the same command in the same
    directory: :meth:`Fetch.of`), or its caller waits for it before any other
    fetch starts (two fetches at once would fight over origin's refs). Started
    only where that is the fetch the pipeline would start: ``cwd`` is a primary
    clone's top level in the plain layout (``.git`` a directory there: the
    pipeline runs git in the primary clone), and the topic's worktree does not
    look made yet (a rerun fetches only if it has to create it). Anything
    unusual (an id that does not parse) leaves the fetch to the pipeline.
    """
    top = Path(os.path.realpath(cwd))
    if not os.path.isdir(top / ".git") or os.path.islink(top / ".git"):
        return None
    branch = _first_branch(description, ticket=ticket, topic_id=topic_id, date=date)
    if branch is None or g.checkout_branch(top / WORKTREES_DIR / branch) == branch:
        return None
    return Fetch(g.Git(top))


def _first_branch(
    description: str, *, ticket: str | None, topic_id: str | None, date: str | None
) -> str | None:
    """The branch of the first id ``new`` tries (as ``router.create.topic`` chooses it)."""
    try:
        if topic_id is not None:
            return None if ticket or date else parse_id(topic_id).branch
        return parse_id(with_suffix(derive_id(description, ticket=ticket, date=date), 1)).branch
    except RouterError:
        return None
