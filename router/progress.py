"""Progress lines for long multi-repo work: on stderr, and only when it is a terminal.

stdout stays reserved for the result (one JSON object under ``--json``), and a
pipe or a log file gets no progress noise at all.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

# Where a command's line-by-line output goes (a local-state line's output, a hook's notes).
Echo = Callable[[str], None]

# One line at a time on the terminal. Parallel repos' echo lines, the output of
# their `.teamteardown` lines and the progress lines all end up there (stdout and
# stderr are the same terminal): `print` writes a text and then its newline, and
# a command's output may stop mid-line, so without this another thread's line
# landed in between and two shared one line.
_TERMINAL = threading.Lock()
_LONGEST = 65536  # a partial line longer than this is relayed without waiting for its end


def write_line(stream: TextIO, text: str) -> None:
    """``text`` and its newline in one write, never split by another thread's line.

    A terminal that was closed (SIGHUP) fails every write: nobody can read the
    line, and the command goes on to stop as the signal asks.
    """
    import contextlib

    with _TERMINAL, contextlib.suppress(OSError, ValueError):
        stream.write(text + "\n")
        stream.flush()


class LineRelay:
    """A child's output relayed to our stderr whole lines at a time, each with ``prefix``.

    What arrives without a newline waits for the rest of its line; :meth:`end`
    completes it, so the next line on the terminal starts on a line of its own.
    A closed stderr never stops the child.
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix.encode()
        self.pending = b""

    def feed(self, data: bytes) -> None:
        *lines, self.pending = (self.pending + data).split(b"\n")
        if len(self.pending) > _LONGEST:
            lines.append(self.pending)
            self.pending = b""
        if lines:
            _write_bytes(b"".join(self.prefix + line + b"\n" for line in lines))

    def end(self) -> None:
        if self.pending:
            _write_bytes(self.prefix + self.pending + b"\n")
            self.pending = b""


def _write_bytes(data: bytes) -> None:
    import contextlib

    with _TERMINAL, contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
        buffer = getattr(sys.stderr, "buffer", None)
        if buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:
            sys.stderr.write(data.decode("utf-8", "replace"))


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
            write_line(sys.stderr, _dim(line))


def _interactive() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _dim(text: str) -> str:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return text
    return f"\033[2m{text}\033[0m"


class Ticker:
    """``api: copying .worktreeinclude files: 5000/20000 (48 MiB)`` for long work, once a second.

    Nothing for work done within the first second (most of it), nor when
    stderr is no terminal; ``now`` is the clock (a test passes its own).
    """

    def __init__(
        self, label: str, total: int, *, every: float = 1.0, now: Callable[[], float] | None = None
    ) -> None:
        import time

        self.label = label
        self.total = total
        self.every = every
        self._now = now or time.monotonic
        self._next = self._now() + every
        self.enabled = total > 0 and _interactive()

    def tick(self, done: int, size: int) -> None:
        if not self.enabled or done >= self.total or self._now() < self._next:
            return
        self._next = self._now() + self.every
        line = f"{self.label}: {done}/{self.total} ({size / 1048576:.0f} MiB)"
        write_line(sys.stderr, _dim(line))
