"""Command modules: each registers its commands on ``router.cli.app``.

They import the core lazily inside each command so that building the app
(for ``--help`` or any one command) stays cheap.
"""

from __future__ import annotations

MODULES = ("create", "phase", "teardown", "cleanup", "durability", "demo")
