"""Claude Code settings files: edit one safely, and the host's worktree hooks in the user's.

``init --allow-agent`` edits a project's ``.claude/settings.local.json`` (or, with
``--allow-agent-everywhere``, the user's settings) and ``install-hooks`` the user's settings
through :func:`router.create.settingsfile.load_settings` (the reading, on its own),
:func:`edited_settings` and :func:`write_settings`: only the changed members are
rewritten, atomically, keeping the file's mode. ``install-hooks`` merges the
WorktreeCreate/WorktreeRemove hooks in and takes exactly them out again.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from router.create.settingsfile import CONFIG_DIR_ENV, load_settings, user_settings_path
from router.errors import ErrorCode, RouterError
from router.plandir.mdlines import BOM
from router.records import field, record


def edited_settings(text: str | None, before: dict[str, Any], after: dict[str, Any]) -> str:
    """``text`` (holding ``before``) changed to hold ``after``, every other byte kept.

    Only the members whose value changed are rewritten, in the file's own
    indentation and line endings; the rest (key order, spacing, unicode, number
    spellings, a byte order mark) stays as the user wrote it.
    """
    if text is None:
        return json.dumps(after, indent=2, ensure_ascii=False) + "\n"
    bom = BOM if text.startswith(BOM) else ""
    body = text.removeprefix(bom)
    start = len(body) - len(body.lstrip())
    end = json.JSONDecoder().raw_decode(body, start)[1]
    style = _Style.of(body)
    edited = _edit_object(body[start:end], before, after, "", style)
    result = bom + body[:start] + edited + body[end:]
    try:
        same = json.loads(result.removeprefix(bom)) == after
    except ValueError:
        same = False
    if same:
        return result
    return bom + json.dumps(after, indent=style.unit or 2, ensure_ascii=False) + style.newline


@record
class _Style:
    unit: str | None  # one level of indentation; None: the file is on one line
    newline: str

    @classmethod
    def of(cls, text: str) -> _Style:
        newline = "\r\n" if "\r\n" in text else "\n"
        for line in text.splitlines():
            stripped = line.lstrip(" \t")
            if stripped.startswith('"') and stripped != line:
                return cls(line[: len(line) - len(stripped)], newline)
        return cls(None, newline)

    def dump(self, value: Any, indent: str | None) -> str:
        """``value`` as JSON for a member whose line starts with ``indent`` (None: inline)."""
        if self.unit is None or indent is None:
            return json.dumps(value, ensure_ascii=False)
        return json.dumps(value, indent=self.unit, ensure_ascii=False).replace(
            "\n", self.newline + indent
        )


def _edit_object(
    text: str, old: dict[str, Any], new: dict[str, Any], indent: str, style: _Style
) -> str:
    """The object ``text`` (JSON for ``old``) with the members that differ in ``new`` rewritten."""
    members = _members(text)
    kept = [key for key in members if key in new]
    if not kept:  # nothing of the old object stays: write the new one whole
        return style.dump(new, indent)
    order = list(members)
    first = members[kept[0]][0]
    edits: list[tuple[int, int, str]] = []
    if members[order[0]][0] < first:  # those before the first kept member, up to it
        edits.append((members[order[0]][0], first, ""))
    for n, key in enumerate(order):
        if key not in new and members[key][0] > first:  # with the comma before it
            edits.append((members[order[n - 1]][2], members[key][2], ""))
    for key in kept:
        if old[key] == new[key]:
            continue
        key_start, value_start, value_end = members[key]
        own = _line_indent(text, key_start)
        if isinstance(old[key], dict) and isinstance(new[key], dict):
            inner = own if own is not None else indent
            value = _edit_object(text[value_start:value_end], old[key], new[key], inner, style)
        else:  # a value the user kept on one line stays on one line
            value = style.dump(new[key], own if "\n" in text[value_start:value_end] else None)
        edits.append((value_start, value_end, value))
    added = [key for key in new if key not in members]
    if added:
        last_end = members[kept[-1]][2]
        own = _line_indent(text, members[kept[-1]][0])
        sep = "," + (style.newline + own if own is not None and style.unit is not None else " ")
        inserted = "".join(
            f"{sep}{json.dumps(key, ensure_ascii=False)}: {style.dump(new[key], own)}"
            for key in added
        )
        edits.append((last_end, last_end, inserted))
    out, pos = [], 0
    for begin, stop, replacement in sorted(edits, key=lambda e: (e[0], e[1])):
        out += [text[pos:begin], replacement]
        pos = stop
    return "".join(out) + text[pos:]


def _members(text: str) -> dict[str, tuple[int, int, int]]:
    """Each member of the JSON object ``text``: key -> (key start, value start, value end).

    A key given twice maps to its last occurrence, the one a JSON reader keeps.
    """
    decoder = json.JSONDecoder()
    found: dict[str, tuple[int, int, int]] = {}
    i = _skip_space(text, 1)
    while text[i] != "}":
        key_start = i
        key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        value_start = _skip_space(text, _skip_space(text, i) + 1)  # past the colon
        i = decoder.raw_decode(text, value_start)[1]
        found.pop(key, None)
        found[key] = (key_start, value_start, i)
        i = _skip_space(text, i)
        if text[i] == ",":
            i = _skip_space(text, i + 1)
    return found


def _skip_space(text: str, i: int) -> int:
    while text[i] in " \t\r\n":
        i += 1
    return i


def _line_indent(text: str, at: int) -> str | None:
    """The whitespace before ``at`` on its line, when nothing else is; else None (inline)."""
    line_start = text.rfind("\n", 0, at) + 1
    lead = text[line_start:at]
    return lead if line_start > 0 and not lead.strip(" \t") else None


# -- the host's worktree hooks in the user's Claude Code settings ----------------------

# Where they must live: a plugin's WorktreeCreate hook loads too late for `claude
# --worktree` (the worktree is made before plugin hooks load), and a project's
# settings are read again from the new worktree, so only the user's settings
# (settingsfile.user_settings_path) serve both the creation at start-up and the
# removal later (DESIGN §14).
# WorktreeCreate fails closed: the host cannot fall back by itself, and a session
# that asked for isolation must not silently run unisolated. WorktreeRemove passes
# team-router's own exit on (non-zero exactly when the worktree is kept, so the host
# never says "removed" while it stays) and fails open only when team-router is not
# installed: a worktree left in place loses nothing.
WORKTREE_HOOKS: dict[str, tuple[str, int]] = {
    "WorktreeCreate": (
        "command -v team-router >/dev/null 2>&1 || { echo 'team-router is not on PATH, so no "
        "worktree was made: install team-router, or take its WorktreeCreate hook out of the "
        "Claude Code settings' >&2; exit 1; }; team-router hook worktree-create",
        120,
    ),
    "WorktreeRemove": (
        "command -v team-router >/dev/null 2>&1 || { echo 'team-router is not on PATH, so the "
        "worktree was left as it is' >&2; exit 0; }; team-router hook worktree-remove",
        300,
    ),
}


# What earlier versions wrote: WorktreeRemove's `|| true` swallowed the exit that says
# the worktree is kept, and the host then told its session "removed".
EARLIER_COMMANDS = {
    "WorktreeRemove": (
        "command -v team-router >/dev/null 2>&1 && team-router hook worktree-remove || true",
    )
}


HOOK_SUBCOMMANDS = {
    "WorktreeCreate": "team-router hook worktree-create",
    "WorktreeRemove": "team-router hook worktree-remove",
}


@record
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


# Set by the client for a plugin's hook commands, not for those of the settings files.
PLUGIN_ROOT_ENV = "CLAUDE_PLUGIN_ROOT"


def answered_by_settings(event: str, environ: dict[str, str]) -> Path | None:
    """The user's settings file, when this is the plugin's hook for ``event`` and those
    settings run team-router's own hook for it too (``install-hooks``): the plugin's stands
    aside, so the event is handled once.

    The client runs every hook registered for an event, the settings' and the plugin's
    alike (client 2.1.332 ran ``hook worktree-create`` twice for one worktree). The
    settings' hook is the one that also fires where the plugin's does not (a client
    older than 2.1.332 at a ``--worktree`` start), so it is the one that stays.
    """
    if not environ.get(PLUGIN_ROOT_ENV):
        return None
    path = user_settings_path(environ)
    try:
        _text, settings = load_settings(path)
    except RouterError:
        return None  # unreadable settings run no hook of ours either
    hooks = settings.get("hooks", {})
    groups = hooks.get(event, []) if isinstance(hooks, dict) else []
    for group in groups if isinstance(groups, list) else []:
        if isinstance(group, dict) and any(_is_ours(h, event) for h in _hooks_of(group)):
            return path
    return None


def install_hooks(*, uninstall: bool = False, dry_run: bool = False) -> HooksResult:
    """Merge the two worktree hooks into the user's settings (or take exactly them out).

    Every other key, and every other hook, stays as it was; a second run changes
    nothing. The file is written atomically (through a symlink to its target).
    """
    path = user_settings_path()
    target = Path(os.path.realpath(path))
    refuse_if_tracked(
        path, target, "add the hooks yourself (`team-router install-hooks --dry-run` shows them)"
    )
    refuse_unsafe_replace(path, target)  # a dry run says so too: the real run would refuse
    old_text, before = load_settings(target)
    if not isinstance(before.get("hooks", {}), dict):
        raise RouterError(
            ErrorCode.SETUP_FAILED, f"{path}: `hooks` is not an object; fix it, then rerun"
        )
    after = json.loads(json.dumps(before))  # a deep copy, compared with the original below
    actions = (_remove_hooks if uninstall else _add_hooks)(after)
    warnings = [] if uninstall else _other_create_hooks(after)
    changed = after != before
    new_text = edited_settings(old_text, before, after) if changed else old_text or ""
    diff = _diff(path, old_text or "", new_text) if changed else ""
    if changed and not dry_run:
        write_settings(target, new_text, shown=path)
    return HooksResult(path, not uninstall, changed, dry_run, diff, actions, warnings)


def _other_create_hooks(settings: dict[str, Any]) -> list[str]:
    """Another tool's WorktreeCreate hook beside ours: two would each make the worktree."""
    groups = settings.get("hooks", {}).get("WorktreeCreate", [])
    others = [
        hook.get("command") if isinstance(hook, dict) else hook
        for group in groups
        if isinstance(group, dict)
        for hook in _hooks_of(group)
        if not _is_ours(hook, "WorktreeCreate")
    ]
    return [
        f"hooks.WorktreeCreate also runs {other!r}: the host takes one path from its create "
        "hooks, so keep only one of them (take the other out of the settings)"
        for other in others
    ]


def write_settings(target: Path, text: str, *, shown: Path | None = None) -> None:
    """Replace the settings file ``target`` atomically, keeping its mode; never a read-only one."""
    from router.topic.state import write_atomic

    shown = shown or target
    refuse_unsafe_replace(shown, target)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = None
    if mode is not None and not mode & 0o222:
        raise RouterError(
            ErrorCode.SETUP_FAILED,
            f"{shown} is read-only; make it writable (chmod u+w), then rerun (nothing was written)",
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, text, mode=mode)
    except OSError as exc:
        raise RouterError(
            ErrorCode.SETUP_FAILED,
            f"cannot write {shown} ({exc.strerror or exc}); fix its permissions, then rerun "
            "(nothing was written)",
        ) from None


def refuse_unsafe_replace(path: Path, target: Path) -> None:
    """Refuse when replacing ``target`` (``path`` with its symlinks followed) would misplace settings.

    A hard-linked file would lose its link: the atomic replace gives ``path`` a
    new inode and every other name keeps the old settings. A symlink whose
    target is missing is written through only into a directory that exists:
    creating the directories it names would put the settings wherever a stale
    link points.
    """
    try:
        links = target.stat().st_nlink
    except FileNotFoundError:
        links = 0
    if links > 1:
        raise RouterError(
            ErrorCode.SETUP_FAILED,
            f"{path} has {links} hard links, and writing it would cut this name off from the "
            "others (they would keep the old settings); keep one name and make the others "
            "symlinks to it (ln -sf), then rerun (nothing was written)",
        )
    link = _dangling_link(path)
    if links == 0 and link is not None and not target.parent.is_dir():
        raise RouterError(
            ErrorCode.SETUP_FAILED,
            f"{link} is a symlink to {os.path.realpath(link)}, which does not exist, and "
            f"{target.parent} is no directory to write {target.name} in; create it "
            "(mkdir -p) or remove the symlink, then rerun (nothing was written)",
        )


def _dangling_link(path: Path) -> Path | None:
    """The symlink on the way to ``path`` that leads nowhere, if the way ends at one.

    The nearest of ``path`` and its parents that is there at all decides: a
    missing ``~/.claude`` under a symlinked home is an ordinary first install.
    """
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate):
            return candidate if not candidate.exists() else None
    return None


def refuse_if_tracked(path: Path, target: Path, fix: str) -> None:
    """A settings file some repository tracks is that repository's to change, not ours."""
    from router.git import Git, GitMissing

    if not target.parent.is_dir():
        return
    try:
        tracked = Git(target.parent).ls_files(target.name)
    except GitMissing:
        return
    if tracked:
        raise RouterError(
            ErrorCode.SETUP_FAILED,
            f"{path} is tracked by the git repository at {target.parent}; {fix} or point "
            f"{CONFIG_DIR_ENV} elsewhere",
        )


def _add_hooks(settings: dict[str, Any]) -> list[str]:
    hooks = settings.setdefault("hooks", {})
    actions = []
    for event, (command, timeout) in WORKTREE_HOOKS.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise RouterError(
                ErrorCode.SETUP_FAILED,
                f"hooks.{event} in the settings is not a list; fix it, then rerun",
            )
        ours = [
            h for g in groups if isinstance(g, dict) for h in _hooks_of(g) if _is_ours(h, event)
        ]
        if ours:
            # A command an earlier version wrote, word for word, is brought up to date
            # in place; one the user edited is theirs and stays as it is.
            stale = [h for h in ours if h.get("command") in EARLIER_COMMANDS.get(event, ())]
            for hook in stale:
                hook["command"] = command
            what = "updated the team-router hook" if stale else "already runs team-router"
            actions.append(f"{event}: {what}")
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


def _diff(path: Path, old: str, new: str) -> str:
    import difflib

    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), str(path), str(path)
    )
    return "".join(lines)
