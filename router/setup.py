"""``init``: prepare a repository for team-router."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from router.errors import Refusal
from router.render import render, share_dir
from router.workspace import Repo, ensure_excludes, open_repo

PLUGIN_NAME = "team-router"


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
    try:
        return InitResult(repo.primary, _prepare(repo), plugin_commands())
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise Refusal(
            "setup-failed",
            f"init: {where}{exc.strerror or exc}; fix that path (permissions, a file in the way) "
            "and rerun",
        ) from None


def _prepare(repo: Repo) -> list[str]:
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
    return actions


def plugin_commands() -> list[str]:
    """The two lines that install the Claude Code plugin from this installation.

    The checkout (or the wheel's ``_share`` copy) is itself the marketplace:
    ``.claude-plugin/marketplace.json`` lists the plugin with source ``./``.
    """
    root = share_dir("skills").parent
    market, plugin = PLUGIN_NAME, PLUGIN_NAME
    manifest = root / ".claude-plugin" / "marketplace.json"
    with contextlib.suppress(OSError, ValueError, KeyError, IndexError, TypeError):
        data = json.loads(manifest.read_text(encoding="utf-8"))
        market, plugin = data["name"], data["plugins"][0]["name"]
    return [
        f"claude plugin marketplace add {root}",
        f"claude plugin install {plugin}@{market}",
    ]


def _write_example(path: Path, text: str) -> str:
    # lexists: a dangling symlink in the repo must not make init write where it points.
    if os.path.lexists(path):
        return f"{path.name}: exists, left as it is"
    with open(path, "x", encoding="utf-8") as fh:
        fh.write(text)
    return f"{path.name}: written (review it, then commit it to the default branch)"
