from __future__ import annotations

import io
import sys

from router.progress import Progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_lines_go_to_a_terminal_stderr_without_color_under_no_color(monkeypatch):
    fake = _Tty()
    monkeypatch.setattr(sys, "stderr", fake)
    progress = Progress(2, label="worktree")
    progress.step("api", "created")
    progress.step("types", "fallback")
    assert fake.getvalue() == "[1/2] worktree api: created\n[2/2] worktree types: fallback\n"


def test_no_progress_when_stderr_is_not_a_terminal(monkeypatch):
    fake = io.StringIO()
    monkeypatch.setattr(sys, "stderr", fake)
    progress = Progress(3, label="worktree")
    progress.step("api", "created")
    assert fake.getvalue() == ""
