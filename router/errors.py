"""The error types every command maps to the JSON envelope and an exit code."""

from __future__ import annotations

from typing import Any


class RouterError(Exception):
    """An expected failure: a stable ``code``, a one-line message naming the fix."""

    exit_code = 1

    def __init__(self, code: str, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        # Extra JSON keys a refusal still reports (for example the per-repo plan).
        self.details = details or {}


class Refusal(RouterError):
    """Refused or failed: safety refusal, git failure, lock timeout (exit 1)."""

    exit_code = 1


class Interrupted(RouterError):
    """Stopped by Ctrl-C (SIGINT) at a step boundary; running the command again resumes (exit 130)."""

    exit_code = 130

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__("interrupted", message, details=details)


class BadInput(RouterError):
    """Bad input: usage, invalid id or branch, malformed repos.md (exit 2)."""

    exit_code = 2
