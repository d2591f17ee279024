"""A branch named from outside the router: validated, never a protected one, and the topic
it belongs to, with the lock and holders a command acting on it heeds (DESIGN §10, §11)."""

from __future__ import annotations

from pathlib import Path

from router.errors import ErrorCode, RouterError
from router.git import Git
from router.names import ID_RE, Branch, branch_for, branch_problem, protected_reason
from router.records import record
from router.topic import state
from router.topic.target import home_repo
from router.topic.workspace import DefaultBranch, Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.topic.holders import Holder

MAX_LOCK_NAME = 100  # a topic id is at most this long; a longer branch name is hashed


def validate_branch(git: Git, name: str, *, what: str) -> Branch:
    """An externally sourced branch name, allowlisted then checked by git; else ``invalid-branch``."""
    problem = branch_problem(name)
    if problem is None and not git.check_ref_format_branch(name):
        problem = "git check-ref-format --branch rejects it"
    if problem is not None:
        raise RouterError(
            ErrorCode.INVALID_BRANCH, f"{what} {name!r} is not a usable branch name: {problem}"
        )
    return Branch(name)


def refuse_protected(branch: str, default: DefaultBranch | None) -> None:
    reason = protected_reason(branch, default.name if default else None)
    if reason is not None:
        raise RouterError(
            ErrorCode.PROTECTED_BRANCH, f"{branch} is protected and is never deleted: {reason}"
        )


def branch_topic(repo: Repo, branch: str) -> str | None:
    """The topic ``branch`` belongs to: its id, or the one whose record names the branch
    (``new`` reused a checkout on the user's own branch); None for no topic's branch."""
    return branch if ID_RE.fullmatch(branch) else state.topic_of_branch(repo.common_dir, branch)


@record
class TopicLock:
    """The lock a command on a branch holds and the holders it heeds: the topic's own, at its home."""

    home: Repo  # the repo whose common dir holds the topic's lock and holders
    name: str  # the topic id, or the branch's own lock name when it is no topic's
    topic_id: str | None

    @property
    def lock_path(self) -> Path:
        return state.lock_path(self.home.common_dir, self.name)


def topic_lock(repo: Repo, branch: Branch) -> TopicLock:
    """The lock of the topic ``branch`` belongs to, where every other command takes it.

    Run in a secondary repo, pr-cleanup acts there alone, but teardown, record
    and worktrees take the topic's lock at the home (the secondary's record
    names it, DESIGN §8/§10): a copy of the lock in the secondary would let both
    run at once on the same worktree. The topic is the branch's id, or the one
    whose record names the branch (``new`` reused a checkout on the user's own
    branch). A branch that is no topic's is locked under its own name, here.
    """
    topic_id = branch_topic(repo, branch)
    if topic_id is None:
        return TopicLock(repo, lock_name(branch), None)
    return TopicLock(home_repo(repo, topic_id), topic_id, topic_id)


def lock_name(branch: str) -> str:
    """The topic lock's name: the topic id (= its branch), bounded to a file name's length."""
    name = branch_for(branch)
    if len(name) <= MAX_LOCK_NAME:
        return name
    import hashlib

    return f"{name[:64]}-{hashlib.sha256(branch.encode()).hexdigest()[:16]}"


def holders_of(topic: TopicLock) -> list[Holder]:
    """The other live sessions holding the topic (none when there is no topic): its
    holders are at the topic's home (``hold`` and the session-start hook write them there
    from any repo of the topic)."""
    if topic.topic_id is None:
        return []
    from router.topic.holders import other_holders

    return other_holders(topic.home.common_dir, topic.topic_id)
