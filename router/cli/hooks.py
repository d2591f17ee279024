"""``hook session-start``, ``hook worktree-create`` and ``hook worktree-remove``: the host's hooks.

They speak the host's protocol, not ``--json``: session-start prints one JSON
object or nothing, worktree-create the worktree's path alone, worktree-remove
nothing on stdout; each says what went wrong on stderr.
"""

from __future__ import annotations

import os
import sys

# The session-start hook's one module, and the payload reader of all three. The
# error types are imported by the worktree hooks alone: session-start never needs them.
from router.host.sessionstart import read_payload, session_start

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def hook_session_start_cmd(directory: Path | None, *, as_json: bool) -> int:
    # The payload's cwd first, then -C, then CLAUDE_PROJECT_DIR, then this process's.
    return session_start(None if directory is None else os.path.abspath(directory))


def hook_worktree_create_cmd(cwd: Path, *, wait: float) -> int:
    from router.cli.output import emit_result
    from router.create.hostsettings import answered_by_settings
    from router.errors import ExitCode
    from router.host.worktrees import worktree_create

    settings = answered_by_settings("WorktreeCreate", dict(os.environ))
    if settings is not None:
        # Exit 0 and no path: the client takes the path the settings' hook prints.
        print(f"team-router: the WorktreeCreate hook in {settings} makes it", file=sys.stderr)
        return ExitCode.OK

    def work():
        environ = {"CLAUDE_PROJECT_DIR": str(cwd), **os.environ}
        return worktree_create(read_payload(sys.stdin), environ, wait=wait)

    # Hook protocol, not --json: stdout carries the path alone; warnings and
    # failures go to stderr (emit_result's text mode does exactly that).
    return emit_result("hook", False, work, lambda result: str(result.home.worktree))


def hook_worktree_remove_cmd(cwd: Path, *, wait: float) -> int:
    from router.create.hostsettings import answered_by_settings
    from router.errors import ExitCode, RouterError, ToolFailed
    from router.host.worktrees import worktree_remove

    # The exit that tells the host the worktree stays (DESIGN §14).
    kept = ExitCode.REFUSED

    def echo(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    # Only what the host says locates the repo (never this process's directory):
    # a removal must not act on whatever repository the hook happened to start in.
    environ = dict(os.environ)
    settings = answered_by_settings("WorktreeRemove", environ)
    if settings is not None:
        # Not 0: the client reports "removed" when any of its remove hooks exits 0,
        # so only the settings' hook, which acted, may say so.
        echo(f"team-router: the WorktreeRemove hook in {settings} answers for this removal")
        return kept
    try:
        result = worktree_remove(read_payload(sys.stdin), environ, wait=wait, echo=echo)
    except RouterError as exc:
        echo(f"team-router: {exc.message} [{exc.code}]")
        return kept
    except (OSError, ToolFailed) as exc:
        # Whatever went wrong, nothing was removed past a step that proved it safe.
        echo(f"team-router: worktree-remove stopped ({exc}); what is left was kept")
        return kept
    for message in result.warnings:
        echo(f"warning: {message}")
    echo(result.line())
    # The pinned client (2.1.332) answers a non-zero exit with "Exited worktree but
    # could not remove it. It is kept at ...", and exit 0 with "Exited and removed".
    return kept if result.stays else ExitCode.OK
