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


def test_a_ticker_says_how_far_a_long_copy_got_once_a_second_and_nothing_at_first(monkeypatch):
    from router.progress import Ticker

    fake = _Tty()
    monkeypatch.setattr(sys, "stderr", fake)
    monkeypatch.setenv("NO_COLOR", "1")
    clock = [100.0]
    ticker = Ticker("api: copying .worktreeinclude files", 20000, now=lambda: clock[0])
    ticker.tick(500, 5 << 20)  # within the first second: nothing
    clock[0] = 101.5
    ticker.tick(9000, 90 << 20)
    clock[0] = 101.9
    ticker.tick(12000, 120 << 20)  # less than a second since the last line
    clock[0] = 102.6
    ticker.tick(20000, 200 << 20)  # done: the report says the rest
    assert fake.getvalue() == "api: copying .worktreeinclude files: 9000/20000 (90 MiB)\n"


def test_no_ticker_lines_when_stderr_is_not_a_terminal(monkeypatch):
    from router.progress import Ticker

    fake = io.StringIO()
    monkeypatch.setattr(sys, "stderr", fake)
    clock = [0.0]
    ticker = Ticker("copying", 10, now=lambda: clock[0])
    clock[0] = 5.0
    ticker.tick(3, 30)
    assert fake.getvalue() == ""
