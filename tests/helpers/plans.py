"""Helpers for the phase-area tests: topics made with `team-router new`, artifacts on disk."""

from __future__ import annotations

import os
from pathlib import Path

from helpers.repos import write


def topic_of(plan: Path) -> str:
    return plan.name.split("-", 3)[3]


def artifact(plan: Path, name: str, **fields: object) -> Path:
    """``plan/name`` with a valid frontmatter (topic from the directory) plus ``fields``."""
    phase = name.removesuffix(".md").split("-", 1)[0] if "review" not in name else "review"
    lines = [f"topic: {topic_of(plan)}", "date: 2026-05-01", f"phase: {phase}"]
    lines += [f"{k}: {v}" for k, v in fields.items()]
    return write(plan / name, "---\n" + "\n".join(lines) + "\n---\n\n# " + name + "\n")


def touch(path: Path, stamp: float) -> None:
    os.utime(path, (stamp, stamp))


def repos_md(
    home: Path,
    *secondaries: tuple[str, Path | str],
    topic: str | None = "add-rate-limiting",
    date: str = "2026-05-01",
    role: str = "part",
    notes: str = "",
) -> str:
    """A repos.md (DESIGN §6): home repo ``web`` at ``home``, one item per ``(name, path)``.

    With ``topic`` None it has no frontmatter (as a hand-written one may not);
    ``notes`` follows the repo list verbatim (other sections, a ``## Worktrees``).
    """
    extra = "".join(
        f"- **name:** {n}\n  **path:** {p}\n  **role:** {role}\n" for n, p in secondaries
    )
    head = (
        f"---\ntopic: {topic}\ndate: {date}\nphase: repos\n---\n\n# Repos: {topic}\n\n"
        if topic is not None
        else "# Repos\n\n"
    )
    return (
        f"{head}## Home repo\n- **name:** web\n- **path:** {home}\n- **role:** the UI\n\n"
        f"## Additional repos\n{extra}\n{notes}"
    )
