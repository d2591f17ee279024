"""What creating one repo's worktree answers: its status, what it made, the report."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from router.create.include import Copied
from router.create.setupcmds import SetupReport
from router.errors import ErrorCode
from router.records import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.create.submodules import SubmoduleOutcome


class Status(StrEnum):
    CREATED = "created"
    EXISTING = "existing"
    REUSED = "reused"
    FALLBACK = "fallback"
    REFUSED = "refused"


@record
class Created:
    """What this run made, so a rollback removes exactly that and nothing else."""

    directory: bool = False
    registration: bool = False
    branch: bool = False


@record
class CreateReport:
    """One repo's outcome of worktree creation, as ``new`` and ``worktrees`` report it."""

    name: str
    path: Path  # the repo's primary root (or the path repos.md gave, when refused)
    worktree: Path | None
    branch: str | None
    status: Status
    reason: ErrorCode | None = None
    message: str = ""
    # The commit the worktree was made at: the base a branch this run cut starts from, the tip
    # of a branch that existed already (``on_existing_branch``), or for a worktree made
    # before, the base its record kept from creation.
    base: str | None = None
    warnings: tuple[str, ...] = ()
    created: Created = field(default_factory=Created)
    submodules: tuple[SubmoduleOutcome, ...] = ()  # what this run did for each submodule
    copied: Copied | None = None  # the .worktreeinclude copy; None when the repo has none
    sparse: tuple[str, ...] | None = None  # the cone of a sparse worktree; None: the whole tree
    setup: SetupReport | None = None  # the setup-commands stage (None: no worktree to set up)
    # Made by this run on a branch that was there before (its commits carried on): ``base``
    # is the branch's tip, not the default branch's commit.
    on_existing_branch: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "path": str(self.path),
            "worktree": str(self.worktree) if self.worktree else None,
            "branch": self.branch,
            "status": str(self.status),
            "reason": self.reason or None,
            "submodules": [s.to_json() for s in self.submodules],
            "copied": self.copied.to_json() if self.copied else None,
            "sparse": list(self.sparse) if self.sparse is not None else None,
            "setup": self.setup.to_json() if self.setup else None,
        }


def refused_report(name: str, path: Path, reason: ErrorCode | None, message: str) -> CreateReport:
    return CreateReport(name, path, None, None, Status.REFUSED, reason, message)
