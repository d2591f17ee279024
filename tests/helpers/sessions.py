"""A client session that asked for a worktree (``hook worktree-create``), as the host runs it.

A *session* is a process that runs the hook as the client does (the hook's parent), and lives
until the test ends it: the worktree is held while it lives.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TEAM_ROUTER = Path(sys.executable).with_name("team-router")
# A session of the client: it runs the hook with the payload on its stdin's first line,
# prints what the hook printed, and lives until its stdin closes.
SESSION = """
import subprocess, sys
hook = subprocess.run(sys.argv[1:], input=sys.stdin.readline(), capture_output=True, text=True)
print(hook.stdout, end="", flush=True)
sys.stderr.write(hook.stderr)
sys.stdin.read()
"""


class Session:
    """A live client session that asked for worktree ``name`` in ``repo``."""

    def __init__(self, repo: Path, name: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SESSION, str(TEAM_ROUTER), "hook", "worktree-create"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        payload = {"session_id": f"s-{name}", "cwd": str(repo), "name": name}
        self.proc.stdin.write(json.dumps(payload) + "\n")
        self.proc.stdin.flush()
        self.worktree = Path(self.proc.stdout.readline().rstrip("\n"))
        assert self.worktree.is_dir(), self.worktree
        self.id = self.worktree.name

    def end(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0
        self.proc.stdout.close()  # read to its path already; left open, the GC warns of it


def asked_for(repo: Path, name: str) -> Session:
    """A worktree the host asked for in a session that has ended since."""
    session = Session(repo, name)
    session.end()
    return session
