"""Progress lines for long multi-repo work: on stderr, and only when it is a terminal.

stdout stays reserved for the result (one JSON object under ``--json``), and a
pipe or a log file gets no progress noise at all.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable

# Where a command's line-by-line output goes (a local-state line's output, a hook's notes).
Echo = Callable[[str], None]


class Progress:
    """``[3/8] api: created`` as each item finishes, in completion order."""

    def __init__(self, total: int, *, label: str) -> None:
        self.total = total
        self.label = label
        self.done = 0
        self._lock = threading.Lock()
        self.enabled = total > 1 and _interactive()

    def step(self, name: str, outcome: str) -> None:
        if not self.enabled:
            return
        with self._lock:
            self.done += 1
            line = f"[{self.done}/{self.total}] {self.label} {name}: {outcome}"
            print(_dim(line), file=sys.stderr, flush=True)


def _interactive() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _dim(text: str) -> str:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return text
    return f"\033[2m{text}\033[0m"
