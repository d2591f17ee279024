"""What a worktree the host asked for holds, and whether it may go (DESIGN §8, §14).

The pinned client never asks to remove a finished worktree-isolated subagent's worktree
when the create hook is ours (without our hook it removes its own unchanged worktree
itself), and ``claude -p --worktree`` keeps its worktree at exit. Each stays a worktree, a
branch and a record. A host-made topic (``made_by: host``) with no artifact in its plan dir
(else it is a /team run) holds nothing when its worktree is clean, its branch has no
commits of its own and no live session holds it: ``status`` lists it apart, and
``sweep --host-worktrees`` gives the user what the client would have done.
"""

from __future__ import annotations

import os
from pathlib import Path

from router.git import Git, GitError
from router.phase.infer import TopicRepo, commits_ahead
from router.records import record
from router.topic import holders
from router.topic.discovery import repo_place, topics
from router.topic.runs import HOST, PLANS_DIR, Records
from router.topic.workspace import Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.git.status import StartedStatus


@record
class HostWorktree:
    """One host-made topic as ``status`` shows it and ``sweep --host-worktrees`` judges it."""

    id: str
    worktree: str | None  # None: its checkout is gone
    dirty: bool | None  # None: git could not tell
    ahead: int | None  # commits of its own; None: unknown
    held_by: tuple[str, ...] = ()  # every live holder, described
    # What else lies under its docs/plans/: a run `new` started in it keeps its plan dir there.
    plan_dirs: tuple[str, ...] = ()

    @property
    def holds(self) -> tuple[str, ...]:
        """What it still holds, each a reason to keep it; empty: nothing, it may go."""
        reasons = []
        if self.worktree is None:
            # No checkout, no state to read: that is said once, not also as a failed read.
            reasons.append("no worktree any more (`team-router doctor` says what is left)")
        elif self.dirty is None:
            reasons.append("a state git could not read")
        elif self.dirty:
            reasons.append("uncommitted or untracked files")
        if self.ahead is None:
            reasons.append("commits that could not be counted")
        elif self.ahead:
            reasons.append(f"{self.ahead} commit(s) of its own")
        reasons += [f"a live holder, {who}" for who in self.held_by]
        reasons += [f"docs/plans/{name}, another topic's" for name in self.plan_dirs]
        return tuple(reasons)

    @property
    def idle(self) -> bool:
        return not self.holds

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "worktree": self.worktree,
            "dirty": self.dirty,
            "ahead": self.ahead,
            "held_by": list(self.held_by),
            "plan_dirs": list(self.plan_dirs),
            "idle": self.idle,
            "holds": list(self.holds),
        }


def held_by(common_dir: Path, topic_id: str) -> tuple[str, ...]:
    """Every live holder of the topic, the asking session's own too: a worktree a session
    may still use is never taken, whoever asks (stale holders are left for doctor)."""
    found = holders.read_all(common_dir, topic_id)
    return tuple(
        holders.describe(f.holder)
        for f in found
        if f.holder is not None and holders.is_live(f.holder)
    )


def host_worktrees(repo: Repo) -> list[HostWorktree]:
    """Every live host-made topic of ``repo`` that no artifact made a run, by id."""
    records = Records(repo.common_dir)
    # As status lists them: a host's worktree deleted by hand is one too (it holds its branch).
    plans = topics(repo_place(repo, repo.git.worktree_list()), records)
    return [
        host_worktree(repo, topic_id, plan.checkout)
        for topic_id, plan in sorted(plans.items())
        if plan.kind == HOST and records.live(topic_id)
    ]


def host_worktree(repo: Repo, topic_id: str, checkout: str) -> HostWorktree:
    """What the host's worktree ``checkout`` of ``topic_id`` holds now: its state, its
    commits, its holders."""
    primary = str(repo.primary)
    worktree = checkout if checkout != primary and os.path.isdir(checkout) else None
    # The host's worktrees are made on a branch of the topic's id (a reused checkout is refused).
    ahead = commits_ahead(TopicRepo("home", primary, worktree, topic_id))
    return HostWorktree(
        topic_id,
        worktree,
        worktree_dirty(worktree),
        ahead,
        held_by(repo.common_dir, topic_id),
        _other_plan_dirs(worktree, topic_id),
    )


def _other_plan_dirs(worktree: str | None, topic_id: str) -> tuple[str, ...]:
    """Entries of the worktree's ``docs/plans/`` besides its own plan dir: git ignores them
    (info/exclude), so no clean status speaks for them."""
    if worktree is None:
        return ()
    try:
        names = os.listdir(os.path.join(worktree, PLANS_DIR))
    except FileNotFoundError:
        return ()
    except OSError:
        return ("(unreadable)",)
    return tuple(sorted(n for n in names if n != topic_id))


def worktree_dirty(worktree: str | None) -> bool | None:
    """Whether the checkout holds changes; None when there is none or git cannot say."""
    return DirtyAsked(worktree).dirty()


class DirtyAsked:
    """:func:`worktree_dirty` of a checkout, its git started at once: many run side by side
    while the caller works on, and each answer is read when needed (:meth:`dirty`)."""

    __slots__ = ("_started",)

    def __init__(self, worktree: str | None) -> None:
        self._started: StartedStatus | None = None
        if worktree is not None:
            self._started = Git(Path(worktree)).status_started()

    def dirty(self) -> bool | None:
        """Whether the checkout holds changes; None when there is none or git cannot say."""
        if self._started is None:
            return None
        try:
            return self._started.report().dirty
        except GitError:
            return None

    def stop(self, exc: BaseException) -> None:
        """The caller stopped (``exc``) before asking: git ends as the git layer says."""
        if self._started is not None:
            self._started.stop(exc)


# How many of DirtyAll's gits run at once: all of a usual home's, and two pipes each stay
# far below any limit of open files however many worktrees there are.
AT_ONCE = 16


class DirtyAll:
    """:func:`worktree_dirty` of many checkouts: each one's git starts as soon as it is
    named (:meth:`ask`; up to :data:`AT_ONCE` at a time, the next as one is answered), and
    runs while the caller works on; :meth:`dirty` answers. :meth:`close` ends the gits
    never answered for, as the git layer says when the caller stopped."""

    __slots__ = ("_answered", "_started", "_waiting")

    def __init__(self) -> None:
        self._waiting: dict[str, None] = {}  # named, not started yet, in order
        self._started: dict[str, DirtyAsked] = {}
        self._answered: dict[str, bool | None] = {}

    def ask(self, worktree: str) -> None:
        """Start asking about ``worktree`` (once) as soon as fewer than AT_ONCE gits run."""
        if worktree not in self._answered and worktree not in self._started:
            self._waiting[worktree] = None
            self._top_up()

    def dirty(self, worktree: str) -> bool | None:
        """The checkout's :func:`worktree_dirty` (its git started now if it was not yet)."""
        if worktree not in self._answered:
            asked = self._started.pop(worktree, None)
            if asked is None:
                self._waiting.pop(worktree, None)
                asked = DirtyAsked(worktree)
            self._answered[worktree] = asked.dirty()
            self._top_up()
        return self._answered[worktree]

    def _top_up(self) -> None:
        while self._waiting and len(self._started) < AT_ONCE:
            worktree = next(iter(self._waiting))
            del self._waiting[worktree]
            self._started[worktree] = DirtyAsked(worktree)

    def close(self, exc: BaseException | None = None) -> None:
        """End every git not answered for: waited for (``exc`` None), or ended as the error
        ``exc`` that stopped the caller asks (:meth:`DirtyAsked.stop`)."""
        self._waiting.clear()
        while self._started:
            _worktree, asked = self._started.popitem()
            if exc is None:
                asked.dirty()
            else:
                asked.stop(exc)
