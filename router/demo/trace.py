"""What the demo shows of its run: each step, its command and narration, and the whole result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from router.errors import Refusal
from router.records import field, record


@record
class DemoStep:
    title: str
    narration: tuple[str, ...]
    command: str | None = None  # the command line as a user would type it
    cwd: str | None = None
    exit: int | None = None
    result: dict[str, Any] | None = None  # the command's own JSON

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "command": self.command,
            "cwd": self.cwd,
            "exit": self.exit,
            "result": self.result,
            "narration": list(self.narration),
        }


@record(frozen=False)
class DemoResult:
    root: Path
    topic_id: str
    kept: bool
    steps: list[DemoStep]
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "dir": str(self.root),
            "kept": self.kept,
            "id": self.topic_id,
            "steps": [s.to_json() for s in self.steps],
        }


class DemoFailed(Refusal):
    """A step did not do what the pipeline expects (exit 1, ``demo-failed``)."""
