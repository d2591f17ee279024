"""A Claude Code settings file read: its text exactly as it is, and the settings in it.

Whether a settings file allows something (the agent's permission, which every
``worktrees`` looks for in the home repo) is read here; writing one, and the
host's worktree hooks, are :mod:`router.create.hostsettings`'s, loaded only where a
file is edited.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from router.errors import ErrorCode, RouterError
from router.plandir.mdlines import BOM

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Where the user's own settings are: ``$CLAUDE_CONFIG_DIR/settings.json``, else ``~/.claude/``.
CONFIG_DIR_ENV = "CLAUDE_CONFIG_DIR"


def load_settings(path: Path) -> tuple[str | None, dict[str, Any]]:
    """The file's text exactly as it is (None when there is none) and the settings in it."""
    try:
        text = path.read_bytes().decode("utf-8")
        data = json.loads(text.removeprefix(BOM))
    except FileNotFoundError:
        return None, {}
    except (ValueError, UnicodeDecodeError):
        raise RouterError(
            ErrorCode.SETUP_FAILED,
            f"{path} is not valid JSON; fix it, then rerun (nothing was written)",
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("permissions", {}), dict):
        raise RouterError(
            ErrorCode.SETUP_FAILED, f"{path} is not a settings object; fix it, then rerun"
        )
    return text, data


def user_settings_path(environ: dict[str, str] | None = None) -> Path:
    """The user's Claude Code settings: ``$CLAUDE_CONFIG_DIR/settings.json``, else ``~/.claude/``."""
    env = os.environ if environ is None else environ
    base = env.get(CONFIG_DIR_ENV) or os.path.join(os.path.expanduser("~"), ".claude")
    return Path(base) / "settings.json"
