"""Claude Code settings files: read one safely, and the host's worktree hooks in the user's.

``init --allow-agent`` writes a project's ``.claude/settings.local.json`` through
:func:`read_settings`; ``install-hooks`` merges the WorktreeCreate/WorktreeRemove
hooks into the user's settings and takes exactly them out again.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from router.errors import Refusal


def read_settings(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (ValueError, UnicodeDecodeError):
        raise Refusal(
            "setup-failed", f"{path} is not valid JSON; fix it, then rerun (nothing was written)"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("permissions", {}), dict):
        raise Refusal("setup-failed", f"{path} is not a settings object; fix it, then rerun")
    return data


# -- the host's worktree hooks in the user's Claude Code settings ----------------------

# Where they must live: a plugin's WorktreeCreate hook loads too late for `claude
# --worktree` (the worktree is made before plugin hooks load), and a project's
# settings are read again from the new worktree, so only the user's settings serve
# both the creation at start-up and the removal later (DESIGN §14).
CONFIG_DIR_ENV = "CLAUDE_CONFIG_DIR"
# WorktreeCreate fails closed: the host cannot fall back by itself, and a session
# that asked for isolation must not silently run unisolated. WorktreeRemove fails
# open: exit 0 there means "removed", and a worktree left in place loses nothing.
WORKTREE_HOOKS: dict[str, tuple[str, int]] = {
    "WorktreeCreate": (
        "command -v team-router >/dev/null 2>&1 || { echo 'team-router is not on PATH, so no "
        "worktree was made: install team-router, or take its WorktreeCreate hook out of the "
        "Claude Code settings' >&2; exit 1; }; team-router hook worktree-create",
        120,
    ),
    "WorktreeRemove": (
        "command -v team-router >/dev/null 2>&1 && team-router hook worktree-remove || true",
        300,
    ),
}


HOOK_SUBCOMMANDS = {
    "WorktreeCreate": "team-router hook worktree-create",
    "WorktreeRemove": "team-router hook worktree-remove",
}


@dataclass(frozen=True, slots=True)
class HooksResult:
    settings_file: Path
    installed: bool  # the hooks are in the file after this run (or would be, dry run)
    changed: bool
    dry_run: bool
    diff: str
    actions: list[str]
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "settings_file": str(self.settings_file),
            "installed": self.installed,
            "changed": self.changed,
            "dry_run": self.dry_run,
            "diff": self.diff,
            "actions": self.actions,
        }


def user_settings_path(environ: dict[str, str] | None = None) -> Path:
    """The user's Claude Code settings: ``$CLAUDE_CONFIG_DIR/settings.json``, else ``~/.claude/``."""
    env = os.environ if environ is None else environ
    base = env.get(CONFIG_DIR_ENV) or os.path.join(os.path.expanduser("~"), ".claude")
    return Path(base) / "settings.json"


def install_hooks(*, uninstall: bool = False, dry_run: bool = False) -> HooksResult:
    """Merge the two worktree hooks into the user's settings (or take exactly them out).

    Every other key, and every other hook, stays as it was; a second run changes
    nothing. The file is written atomically (through a symlink to its target).
    """
    path = user_settings_path()
    target = Path(os.path.realpath(path))
    _refuse_if_tracked(path, target)
    before = read_settings(target)
    if not isinstance(before.get("hooks", {}), dict):
        raise Refusal("setup-failed", f"{path}: `hooks` is not an object; fix it, then rerun")
    after = json.loads(json.dumps(before))  # a deep copy, compared with the original below
    actions = (_remove_hooks if uninstall else _add_hooks)(after)
    changed = after != before
    old_text = _settings_text(before) if target.exists() else ""
    new_text = _settings_text(after)
    diff = _diff(path, old_text, new_text) if changed else ""
    if changed and not dry_run:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            from router.topic.state import write_atomic

            write_atomic(target, new_text)
        except OSError as exc:
            raise Refusal(
                "setup-failed",
                f"cannot write {path} ({exc.strerror or exc}); fix its permissions, then rerun "
                "(nothing was written)",
            ) from None
    return HooksResult(path, not uninstall, changed, dry_run, diff, actions)


def _refuse_if_tracked(path: Path, target: Path) -> None:
    """A settings file some repository tracks is that repository's to change, not ours."""
    from router.git import Git, GitMissing

    if not target.parent.is_dir():
        return
    try:
        tracked = Git(target.parent).ls_files(target.name)
    except GitMissing:
        return
    if tracked:
        raise Refusal(
            "setup-failed",
            f"{path} is tracked by the git repository at {target.parent}; add the hooks "
            f"yourself (`team-router install-hooks --dry-run` shows them) or point "
            f"{CONFIG_DIR_ENV} elsewhere",
        )


def _add_hooks(settings: dict[str, Any]) -> list[str]:
    hooks = settings.setdefault("hooks", {})
    actions = []
    for event, (command, timeout) in WORKTREE_HOOKS.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise Refusal(
                "setup-failed", f"hooks.{event} in the settings is not a list; fix it, then rerun"
            )
        if any(_is_ours(h, event) for g in groups if isinstance(g, dict) for h in _hooks_of(g)):
            actions.append(f"{event}: already runs team-router")
            continue
        groups.append({"hooks": [{"type": "command", "command": command, "timeout": timeout}]})
        actions.append(f"{event}: added team-router hook {event.removeprefix('Worktree').lower()}")
    return actions


def _remove_hooks(settings: dict[str, Any]) -> list[str]:
    hooks = settings.get("hooks")
    actions = []
    for event in WORKTREE_HOOKS:
        groups = hooks.get(event) if isinstance(hooks, dict) else None
        if not isinstance(groups, list):
            actions.append(f"{event}: no team-router hook")
            continue
        kept = []
        removed = False
        for group in groups:
            if not isinstance(group, dict) or not any(_is_ours(h, event) for h in _hooks_of(group)):
                kept.append(group)
                continue
            removed = True
            rest = [h for h in _hooks_of(group) if not _is_ours(h, event)]
            if rest:
                kept.append({**group, "hooks": rest})
        actions.append(
            f"{event}: removed the team-router hook" if removed else f"{event}: no team-router hook"
        )
        if kept:
            hooks[event] = kept  # type: ignore[index]
        elif removed:
            del hooks[event]  # type: ignore[union-attr]
    if (
        isinstance(hooks, dict)
        and not hooks
        and any(a.endswith("removed the team-router hook") for a in actions)
    ):
        del settings["hooks"]  # it held nothing but ours
    return actions


def _hooks_of(group: dict[str, Any]) -> list[Any]:
    found = group.get("hooks")
    return found if isinstance(found, list) else []


def _is_ours(hook: Any, event: str) -> bool:
    """One of ours, whatever version wrote it: its command runs our hook for ``event``."""
    command = hook.get("command") if isinstance(hook, dict) else None
    return isinstance(command, str) and HOOK_SUBCOMMANDS[event] in command


def _settings_text(settings: dict[str, Any]) -> str:
    return json.dumps(settings, indent=2) + "\n"


def _diff(path: Path, old: str, new: str) -> str:
    import difflib

    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), str(path), str(path)
    )
    return "".join(lines)
