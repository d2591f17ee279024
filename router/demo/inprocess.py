"""Running team-router in-process, as the demo does for each command (exactly the code a user runs)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator


def invoke(argv: list[str]) -> tuple[int, str, str]:
    """Run team-router in-process on ``argv``; exit code, stdout, stderr.

    stdin is empty (not a terminal), so no command can wait for an answer.
    """
    from router.entry import main as run

    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        _stdin(io.StringIO("")),
    ):
        code = run(argv)
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def _stdin(stream: io.StringIO) -> Iterator[None]:
    import sys

    saved = sys.stdin
    sys.stdin = stream
    try:
        yield
    finally:
        sys.stdin = saved
