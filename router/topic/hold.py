"""``hold`` / ``release``: resolve the topic a command names, then write or drop its holders.

The holder files themselves are router.topic.holders (the process checks
router.processes), which stay light for the session-start hook; this module
resolves topics, so it may import the record and the repo layer.
"""

from __future__ import annotations

from pathlib import Path

from router.errors import BadInput, ErrorCode, RouterError
from router.names import ID_RE
from router.processes import process_alive, session_pid
from router.topic import state
from router.topic.holders import (
    Holder,
    holders_dir,
    live_holders,
    make_holder,
    register,
    release,
    valid_session,
)
from router.topic.target import home_repo, resolve
from router.topic.workspace import open_repo


class HoldResult:
    """What ``hold``/``release`` did: the holders written or dropped, and who holds it now."""

    __slots__ = ("action", "holders", "id", "live", "repo", "warnings")

    def __init__(
        self,
        topic_id: str,
        repo: Path,
        action: str,  # "held" | "released"
        holders: tuple[Holder, ...],
        live: tuple[Holder, ...],
        warnings: tuple[str, ...] = (),
    ) -> None:
        self.id, self.repo, self.action = topic_id, repo, action
        self.holders, self.live, self.warnings = holders, live, list(warnings)

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "repo": str(self.repo),
            "action": self.action,
            "holders": [h.to_json() for h in self.holders],
            "live": [h.to_json() for h in self.live],
        }


def hold(cwd: Path, target: str | None, *, pid: int | None, session: str | None) -> HoldResult:
    """Register a holder for the topic: ``pid`` (default: the calling session) and ``session``."""
    common_dir, topic_id, repo = _topic_for(cwd, target)
    who = session_pid() if pid is None else pid
    if session is not None and not valid_session(session):
        raise RouterError(ErrorCode.INVALID_SESSION, "--session must be 1-128 of A-Z a-z 0-9 . _ -")
    if not process_alive(who):
        raise RouterError(
            ErrorCode.NO_SUCH_PROCESS,
            f"process {who} is not running; pass the pid of a live session",
        )
    holder = make_holder(who, session)
    register(common_dir, topic_id, holder)
    live = live_holders(common_dir, topic_id)
    return HoldResult(topic_id, repo, "held", (holder,), tuple(live))


def release_topic(
    cwd: Path, target: str | None, *, pid: int | None, session: str | None
) -> HoldResult:
    """Drop the holders of ``pid`` and/or ``session`` (default: the calling session's pid)."""
    common_dir, topic_id, repo = _topic_for(cwd, target)
    if session is not None and not valid_session(session):
        raise RouterError(ErrorCode.INVALID_SESSION, "--session must be 1-128 of A-Z a-z 0-9 . _ -")
    who = session_pid() if pid is None and session is None else pid
    dropped = release(common_dir, topic_id, pid=who, session=session)
    warnings = () if dropped else (f"no holder of {topic_id} matched; nothing released",)
    live = live_holders(common_dir, topic_id)
    return HoldResult(topic_id, repo, "released", tuple(dropped), tuple(live), warnings)


def _topic_for(cwd: Path, target: str | None) -> tuple[Path, str, Path]:
    """(common dir of the home repo, topic id, home primary root) for a target."""
    try:
        repo, plan, _entries, _missing = resolve(cwd, target)
        return repo.common_dir, plan.id, repo.primary
    except BadInput:
        # After teardown the plan dir is gone but a record may remain: an id
        # still names the topic then.
        if not target or not ID_RE.fullmatch(target):
            raise
        # The topic's home, as from a secondary its record names it: teardown and
        # pr-cleanup read the holders there, wherever they run.
        repo = home_repo(open_repo(cwd), target)
        if (
            not state.record_path(repo.common_dir, target).exists()
            and not holders_dir(repo.common_dir, target).is_dir()
        ):
            raise
        return repo.common_dir, target, repo.primary
