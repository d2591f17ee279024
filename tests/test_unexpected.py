"""A bug (an exception no code path expects) ends a command with exit 3 and one line naming
the log file that holds its traceback, never a traceback (DESIGN §13).

The bug provoked here is a real one: a git answering ``rev-list --count`` with
something that is not a number, which ``status`` reads as one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.faults import git_wrapper, run
from helpers.repos import commit
from helpers.topics import Topic

from router import __version__

NOT_A_NUMBER = 'case " $* " in *" --count "*) echo many; exit 0 ;; esac\nexec "$REAL_GIT" "$@"'
WHAT = "ValueError: invalid literal for int() with base 10: 'many'"


@pytest.fixture
def topic(topic: Topic) -> Topic:
    """A topic one commit ahead of the default branch: ``status`` counts it with rev-list."""
    commit(topic.worktrees["home"], "limits.py", "LIMIT = 10\n", "first slice")
    return topic


def _bug_env(tmp_path: Path, cache: str) -> dict[str, str]:
    return {**git_wrapper(tmp_path / "bin", "rev-list", NOT_A_NUMBER), "XDG_CACHE_HOME": cache}


def _the_one_log(folder: Path) -> Path:
    logs = list(folder.iterdir())
    assert len(logs) == 1, logs
    assert re.fullmatch(r"\d{8}T\d{6}Z-\d+\.log", logs[0].name), logs[0].name
    return logs[0]


# Every command reports through router.cli.output.guarded: as text, and as the JSON envelope.
@pytest.mark.parametrize("args", [("status",), ("status", "--json")], ids=["text", "json"])
def test_a_bug_exits_3_with_one_line_naming_the_log_that_holds_the_traceback(
    topic: Topic, tmp_path: Path, args: tuple[str, ...]
) -> None:
    cache = tmp_path / "cache"
    res = run(*args, cwd=topic.home, env=_bug_env(tmp_path, str(cache)))
    assert res.code == 3, res.out + res.err
    log = _the_one_log(cache / "team-router" / "errors")
    message = f"unexpected error: {WHAT}; the traceback is in {log}; please report it"
    if "--json" in args:
        assert res.err == ""
        assert json.loads(res.out) == {
            "ok": False,
            "command": args[0],
            "warnings": [],
            "error": {"code": "unexpected", "message": message},
        }
    else:
        assert (res.out, res.err) == ("", f"team-router: {message}\n")
    text = log.read_text(encoding="utf-8")
    head, trace = text.split("\n\n", 1)
    lines = head.splitlines()
    keys = ["team-router", "version", "time", "argv", "cwd", "python"]
    assert [ln.split(": ")[0] for ln in lines] == keys
    assert lines[:2] == ["team-router: unexpected error", f"version: {__version__}"]
    assert lines[3].endswith(repr(["-C", str(topic.home), *args])[1:])  # after the program
    assert lines[4] == f"cwd: {Path.cwd()}"
    assert trace.startswith("Traceback (most recent call last):\n")
    assert "in _commits_ahead\n" in trace  # the frame the bug is in
    assert trace.endswith(f"\n{WHAT}\n")


@pytest.mark.parametrize("cache", ["", "relative/cache"], ids=["unset", "relative"])
def test_without_an_absolute_xdg_cache_home_the_log_is_under_the_homes_cache(
    topic: Topic, tmp_path: Path, cache: str
) -> None:
    res = run("status", cwd=topic.home, env=_bug_env(tmp_path, cache))
    assert res.code == 3, res.out + res.err
    log = _the_one_log(Path.home() / ".cache" / "team-router" / "errors")
    assert (
        res.err
        == f"team-router: unexpected error: {WHAT}; the traceback is in {log}; please report it\n"
    )
    assert log.read_text(encoding="utf-8").endswith(f"\n{WHAT}\n")


def test_a_log_that_cannot_be_written_is_named_with_why_and_the_traceback_follows(
    topic: Topic, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    cache.write_text("a file where the cache directory goes\n")
    res = run("status", cwd=topic.home, env=_bug_env(tmp_path, str(cache)))
    assert res.code == 3, res.out + res.err
    first, rest = res.err.split("\n", 1)
    assert first == (
        f"team-router: unexpected error: {WHAT}; the traceback could not be written (creating "
        f"{cache / 'team-router' / 'errors'}: Not a directory), so it follows on stderr; please report it"
    )
    assert rest.startswith("team-router: unexpected error\nversion: ")
    assert "\n\nTraceback (most recent call last):\n" in rest
    assert rest.endswith(f"\n{WHAT}\n")
    assert res.out == ""
    assert cache.read_text() == "a file where the cache directory goes\n"
