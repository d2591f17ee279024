"""Command modules: each registers its commands on ``router.cli.app.app`` (the typer app).

They import the core lazily inside each command so that building the app
(for ``--help`` or any one command) stays cheap. ``OWNER`` maps a command to
the one module that registers it, so running a command imports only that
module (typer evaluates every annotation of every command it registers);
a test keeps the map equal to what the modules register.
"""

from __future__ import annotations

MODULES = ("create", "teardown", "cleanup", "durability", "demo")

OWNER = {
    "new": "create",
    "worktrees": "create",
    "init": "create",
    "install-hooks": "create",
    "teardown": "teardown",
    "sweep": "teardown",
    "local-state": "teardown",
    "restore": "teardown",
    "pr-cleanup": "cleanup",
    "hold": "durability",
    "release": "durability",
    "doctor": "durability",
    "demo": "demo",
}


def modules_for(command: str) -> tuple[str, ...]:
    """The modules to import to run ``command``: its owner, or all (help, typos)."""
    owner = OWNER.get(command)
    return (owner,) if owner else MODULES
