"""``init``: prepare a repository for team-router."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from router.render import render, share_dir
from router.workspace import ensure_excludes, open_repo

PLUGIN_SOURCE = "https://github.com/team-router/team-router"


@dataclass(frozen=True, slots=True)
class InitResult:
    repo: Path
    actions: list[str]
    plugin_commands: list[str]
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "repo": str(self.repo),
            "actions": self.actions,
            "plugin_commands": self.plugin_commands,
        }


def init_repo(cwd: Path) -> InitResult:
    """Add the exclude lines and example files that are missing; never overwrite one."""
    repo = open_repo(cwd)
    actions = [
        "info/exclude: added /.claude/worktrees/ and /docs/plans/"
        if ensure_excludes(repo.common_dir)
        else "info/exclude: already lists /.claude/worktrees/ and /docs/plans/"
    ]
    for name, template in ((".worktreeinclude", "worktreeinclude.j2"),):
        actions.append(_write_example(repo.primary / name, render(template)))
    example = share_dir("templates").parent / ".teamteardown.example"
    actions.append(
        _write_example(repo.primary / ".teamteardown.example", example.read_text(encoding="utf-8"))
    )
    plugin = share_dir("skills").parent
    commands = [
        f"claude plugin marketplace add {plugin}",
        "claude plugin install team-router@team-router",
    ]
    return InitResult(repo.primary, actions, commands)


def _write_example(path: Path, text: str) -> str:
    if path.exists():
        return f"{path.name}: exists, left as it is"
    path.write_text(text, encoding="utf-8")
    return f"{path.name}: written (review it, then commit it to the default branch)"
