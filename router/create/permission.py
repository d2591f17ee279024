"""The agent's permission to run team-router: the Claude Code rule, where it is read, where
``init`` writes it, and every repo a topic reaches getting it.

Claude Code reads a session's project settings from the repo it starts in, the main
working tree for a session in one of its worktrees (checked with client 2.1.332), and
the user's own settings. A session the recovery notice resumed in a secondary repo's
worktree therefore reads that repo's settings, not the home's: a rule only in the
home's ``.claude/settings.local.json`` leaves it asking ("This command requires
approval", fatal in ``claude -p``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from router.create.settingsfile import load_settings, user_settings_path
from router.errors import ErrorCode, Refusal, RouterError
from router.topic.workspace import Repo, ensure_excludes

# The rule that lets the agent run every team-router command without a prompt (the
# CLI never deletes work without a flag the skills do not pass).
PERMISSION_RULE = "Bash(team-router:*)"
LOCAL_SETTINGS = Path(".claude") / "settings.local.json"  # personal, kept out of git status
PROJECT_SETTINGS = Path(".claude") / "settings.json"  # the project's, usually tracked


def allowed_in(primary: Path) -> Path | None:
    """The settings file that lets sessions in this repo (and its worktrees) run team-router."""
    for path in (primary / LOCAL_SETTINGS, primary / PROJECT_SETTINGS, user_settings_path()):
        if _allows(path):
            return path
    return None


def _allows(path: Path) -> bool:
    try:
        _text, settings = load_settings(path)
    except RouterError:
        return False  # unreadable settings allow nothing
    allow = settings.get("permissions", {}).get("allow", [])
    return isinstance(allow, list) and PERMISSION_RULE in allow


def allow_in_repo(repo: Repo) -> str:
    """Add the rule to the repo's personal settings (info/exclude keeps them out of git status)."""
    from router.create.hostsettings import refuse_unsafe_replace, write_settings  # a write

    path = repo.primary / LOCAL_SETTINGS
    if repo.git.ls_files(str(LOCAL_SETTINGS)):
        raise RouterError(
            ErrorCode.SETUP_FAILED,
            f"{path} is tracked by git; add {PERMISSION_RULE!r} to its permissions.allow "
            "yourself (init leaves tracked files alone)",
        )
    if os.path.islink(path) or os.path.islink(path.parent):
        raise RouterError(
            ErrorCode.SETUP_FAILED,
            f"{path} is reached through a symlink; add the rule there yourself",
        )
    refuse_unsafe_replace(path, path)
    # Read and checked before info/exclude changes: a refusal writes nothing.
    edit = _with_rule(path, path)
    ensure_excludes(
        repo.common_dir, (f"/{LOCAL_SETTINGS}",), why="personal agent settings stay local"
    )
    if edit is None:
        return f"{path}: already allows {PERMISSION_RULE}"
    write_settings(path, edit)
    return f"{path}: allows {PERMISSION_RULE} (personal; info/exclude keeps it out of git status)"


def allow_for_user() -> str:
    """Add the rule to the user's own settings: every repo, now and later, on this machine."""
    from router.create.hostsettings import refuse_if_tracked, refuse_unsafe_replace, write_settings

    path = user_settings_path()
    target = Path(os.path.realpath(path))
    refuse_if_tracked(path, target, f"add {PERMISSION_RULE!r} to its permissions.allow yourself")
    refuse_unsafe_replace(path, target)
    edit = _with_rule(path, target)
    if edit is None:
        return f"{path}: already allows {PERMISSION_RULE} in every repo"
    write_settings(target, edit, shown=path)
    return f"{path}: allows {PERMISSION_RULE} in every repo (your user settings)"


def _with_rule(path: Path, target: Path) -> str | None:
    """The settings text with the rule appended to ``permissions.allow``, every other byte
    kept; None when the rule is there already."""
    from router.create.hostsettings import edited_settings

    text, before = load_settings(target)
    settings = json.loads(json.dumps(before))  # a deep copy, for the edit to compare with
    allow = settings.setdefault("permissions", {}).setdefault("allow", [])
    if not isinstance(allow, list):
        raise RouterError(
            ErrorCode.SETUP_FAILED, f"{path}: permissions.allow is not a list; fix it, then rerun"
        )
    if PERMISSION_RULE in allow:
        return None
    allow.append(PERMISSION_RULE)
    return edited_settings(text, before, settings)


def extend_to(home: Repo, others: list[tuple[str, Repo]]) -> list[str]:
    """Give each repo of a topic the rule the home has, so a session resumed there runs
    team-router as one in the home does; one line each for what was written or is missing.

    The home's own rule is the user's consent (``init --allow-agent``); without it
    nothing is written and nothing is said (sessions everywhere ask, as the user chose).
    """
    if allowed_in(home.primary) is None:
        return []
    notes = []
    for name, repo in others:
        if allowed_in(repo.primary) is not None:
            continue
        try:
            notes.append(f"{name}: {allow_in_repo(repo)}, as the home repo's settings do")
        except (Refusal, OSError) as exc:
            why = exc.message if isinstance(exc, Refusal) else str(exc)
            notes.append(
                f"{name}: sessions there will ask before running team-router ({why}); "
                "`team-router init --allow-agent-everywhere` allows it in every repo"
            )
    return notes
