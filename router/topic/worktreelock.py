"""Our worktrees are locked against other tools' cleanup (DESIGN §10).

Claude Code's own cleanup deletes unlocked worktrees under
``.claude/worktrees/`` that it did not make, and ``git worktree prune`` drops
the registration of an unlocked one whose disk is not mounted. Every worktree
team-router makes is locked (``git worktree lock``) with a reason naming
team-router and the topic, so those skip it. team-router's own commands know
that reason: they lift the lock right before they remove the worktree (and put
it back if it stays). A lock with any other reason is someone else's, and
still keeps the worktree (``locked-worktree``).
"""

from __future__ import annotations

import re
from pathlib import Path

from router.git import Git, GitError, WorktreeEntry

_REASON = "team-router: topic {id} (team-router teardown {id} removes it)"
# The id repeated: a reason someone wrote by hand that merely mentions
# team-router is theirs, not ours.
_OWN = re.compile(
    r"team-router: topic (?P<id>[^\s()]+) \(team-router teardown (?P=id) removes it\)"
)


def reason_for(topic_id: str) -> str:
    """The lock reason of a worktree of topic ``topic_id``: who made it and how it goes."""
    return _REASON.format(id=topic_id)


def own_lock(entry: WorktreeEntry) -> bool:
    """The worktree is locked by team-router (with the reason :func:`reason_for` writes)."""
    return entry.locked and own_reason(entry.lock_reason)


def own_reason(reason: str) -> bool:
    """``reason`` (a registration's ``locked`` file) is the one :func:`reason_for` writes."""
    return _OWN.fullmatch(reason) is not None


def reason_topic(reason: str) -> str | None:
    """The topic id in a lock reason :func:`reason_for` wrote; None for any other reason."""
    found = _OWN.fullmatch(reason)
    return found["id"] if found else None


def locked_by_other(entry: WorktreeEntry) -> bool:
    """Locked by someone else (a user, another tool): that lock keeps the worktree."""
    return entry.locked and not own_lock(entry)


def lock(git: Git, entry: WorktreeEntry, topic_id: str) -> WorktreeEntry:
    """Lock an unlocked worktree of ours (made by an earlier version): the entry as it is now."""
    if entry.locked:
        return entry
    reason = reason_for(topic_id)
    git.worktree_lock(entry.path, reason)
    return _as_locked(entry, reason)


def lock_or_warn(
    git: Git, entry: WorktreeEntry, topic_id: str, name: str
) -> tuple[WorktreeEntry, str]:
    """Lock a worktree of ours an earlier version made unlocked, as every new one is: its
    entry as it is now, and "" or the warning saying it stays unlocked.

    Other tools' cleanup deletes an unlocked worktree under .claude/worktrees/;
    a lock of someone else's is theirs and stays as it is. A lock git cannot
    write is a warning (naming repo ``name`` and the command that locks it), not
    a refusal: the worktree is as it was, and what the command does next is
    what the user asked for.
    """
    try:
        return lock(git, entry, topic_id), ""
    except GitError as exc:
        return entry, _unlocked(name, entry.path, topic_id, exc.first_line)


def _unlocked(name: str, path: Path, topic_id: str, said: str) -> str:
    return (
        f"{name}: {path} is not locked and could not be locked ({said}); other tools' cleanup "
        f"may delete an unlocked worktree: `git worktree lock --reason '{reason_for(topic_id)}' "
        f"{path}`"
    )


def lift(git: Git, entry: WorktreeEntry) -> bool:
    """Unlock a worktree of ours right before removing it; True when a lock was lifted."""
    if not own_lock(entry):
        return False
    git.worktree_unlock(entry.path)
    return True


def put_back(git: Git, entry: WorktreeEntry) -> str:
    """Lock again a worktree of ours whose removal did not happen: "", or git's first line
    saying why it stays unlocked.

    Only after a removal git refused; a lock git cannot write is said, not raised:
    the refusal that kept the worktree is what the user has to act on first.
    """
    try:
        git.worktree_lock(entry.path, entry.lock_reason)
    except GitError as exc:
        return exc.first_line
    return ""


def with_lock(entries: list[WorktreeEntry], path: Path, topic_id: str) -> list[WorktreeEntry]:
    """``entries`` with the one at ``path`` shown locked by us (after :func:`lock`)."""
    reason = reason_for(topic_id)
    return [_as_locked(e, reason) if e.path == path else e for e in entries]


def _as_locked(entry: WorktreeEntry, reason: str) -> WorktreeEntry:
    from router.records import replace

    return replace(entry, locked=True, lock_reason=reason, prunable=False)
