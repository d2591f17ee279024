"""What doctor reports: the kinds of finding, a finding, and a problem (a finding and its repair)."""

from __future__ import annotations

import os
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path

from router.names import ID_RE
from router.records import record, replace
from router.topic.workspace import WORKTREES_DIR, Repo

LIST_SHOWN = 5


class Kind(StrEnum):
    RECORD_CORRUPT = "record-corrupt"
    RECORD_INCOMPLETE = "record-incomplete"
    RECORD_DIR_GONE = "record-dir-gone"
    UNKNOWN_DIR = "unknown-dir"
    REGISTRATION_DIR_GONE = "registration-dir-gone"
    ORPHAN_BRANCH = "orphan-branch"
    STALE_LOCK = "stale-lock"
    STALE_HOLDER = "stale-holder"
    HOLDER_CORRUPT = "holder-corrupt"
    WORKTREES_SECTION = "worktrees-section"
    RESTORE_UNFINISHED = "restore-unfinished"
    HALF_MADE_REGISTRATION = "half-made-registration"
    UNLOCKED_WORKTREE = "unlocked-worktree"
    STALE_BORROW_PIN = "stale-borrow-pin"
    UNPINNED_BORROW = "unpinned-borrow"


# A repair returns what it did, or raises NotSafe saying why it left the thing.
Fix = Callable[[], str]


class NotSafe(Exception):
    pass


@record
class Finding:
    kind: Kind
    path: str
    detail: str
    repo: Path
    topic: str | None = None
    repaired: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "kind": str(self.kind),
            "path": self.path,
            "repaired": self.repaired,
            "detail": self.detail,
            "repo": str(self.repo),
            "topic": self.topic,
        }


@record
class Problem:
    finding: Finding
    fix: Fix | None = None  # None: never repaired automatically
    lock: str | None = None  # the lock a repair holds; default: the finding's topic

    @property
    def lock_name(self) -> str | None:
        return self.lock or self.finding.topic


def new_finding(
    repo: Repo, kind: Kind, path: Path | str, detail: str, topic: str | None
) -> Finding:
    return Finding(kind, str(path), detail, repo.primary, topic)


def as_topic_id(name: str) -> str | None:
    # A worktree directory and its branch are named after the id (ids hold no "/").
    return name if ID_RE.fullmatch(name) else None


def is_ours(repo: Repo, path: Path) -> bool:
    """True for ``<primary>/.claude/worktrees/<name>`` (checked on the path, not its target)."""
    root = os.path.realpath(repo.primary / WORKTREES_DIR)
    parent = os.path.realpath(Path(os.path.abspath(path)).parent)
    return parent == root


def with_detail(finding: Finding, detail: str) -> Finding:
    return replace(finding, detail=detail)
