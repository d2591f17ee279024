"""team-router: safe multi-repository worktrees for coding-agent pipelines."""

from __future__ import annotations

__version__ = "0.1.0"
