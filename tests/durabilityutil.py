"""Running the installed ``team-router`` as real processes (locks, crashes, parallel runs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXE = Path(sys.executable).with_name("team-router")
CRASHED = 137


@dataclass
class Proc:
    code: int
    out: str
    err: str

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.out)


def argv(*args: str, cwd: Path) -> list[str]:
    exe = [str(EXE)] if EXE.exists() else [sys.executable, "-m", "router.entry"]
    return [*exe, "-C", str(cwd), *args]


def spawn(
    *args: str, cwd: Path, crash_at: str | None = None, new_session: bool = False
) -> subprocess.Popen[str]:
    """Start ``team-router -C cwd args`` (the test's hermetic environment is inherited).

    ``new_session``: in a process group of its own, as a shell job is, so a signal
    can reach the command and every git it started.
    """
    env = dict(os.environ)
    env.pop("TEAM_ROUTER_CRASH_AT", None)
    if crash_at is not None:
        env["TEAM_ROUTER_CRASH_AT"] = crash_at
    return subprocess.Popen(
        argv(*args, cwd=cwd),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=new_session,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> Proc:
    out, err = proc.communicate(timeout=timeout)
    return Proc(proc.returncode, out, err)


def run(*args: str, cwd: Path, crash_at: str | None = None) -> Proc:
    return finish(spawn(*args, cwd=cwd, crash_at=crash_at))


def run_all(commands: list[tuple[str, ...]], *, cwd: Path) -> list[Proc]:
    """Start every command at once, then collect them in order."""
    procs = [spawn(*c, cwd=cwd) for c in commands]
    return [finish(p) for p in procs]


def tree(root: Path) -> set[str]:
    """Every path under ``root`` (relative), symlinks not followed."""
    found: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            found.add(os.path.relpath(os.path.join(dirpath, name), root))
    return found
