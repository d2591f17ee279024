"""The early path: ``new``, ``worktrees`` and ``teardown`` answered without typer.

Each answer is compared byte for byte (stdout, stderr, exit code) with the
typer app's answer to the same arguments, for successes and for errors.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.repos import make_repo
from helpers.topics import Topic, new_topic, ship, write_repos_md

from router.cli.early import early_command

HEAVY = {"typer", "click", "jinja2", "rich", "filelock"}


def _run(args: list[str], cwd: Path, *, via: str, importtime: bool = False):
    """``team-router args`` in a fresh interpreter: the entry point, or straight into typer."""
    call = (
        "from router.entry import main as go"
        if via == "entry"
        else "from router.cli.app import run_app as go"
    )
    code = f"{call}; raise SystemExit(go({args!r}))"
    flags = ["-X", "importtime"] if importtime else []
    return subprocess.run(
        [sys.executable, *flags, "-c", code],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _imported(stderr: str) -> set[str]:
    return {
        line.split("|")[-1].strip().split(".")[0]
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def _same_answer(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    assert early_command(args) is not None, args
    early = _run(args, cwd, via="entry")
    typer_path = _run(args, cwd, via="typer")
    assert (early.returncode, early.stdout, early.stderr) == (
        typer_path.returncode,
        typer_path.stdout,
        typer_path.stderr,
    )
    return early


def test_worktrees_with_c_is_answered_exactly_as_typer_answers_it(
    home_repo, questioned_topic, tmp_path
):
    args = ["-C", str(home_repo), "worktrees", questioned_topic.id, "--strict", "--json"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = _same_answer(args, elsewhere)  # -C, not the cwd, names the repo
    assert proc.returncode == 0
    assert questioned_topic.id in proc.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["worktrees"],
        ["-C", ".", "worktrees", "--strict"],
        ["new", "Another thing", "--json"],
    ],
)
def test_the_early_path_imports_no_typer(home_repo, questioned_topic, args):
    proc = _run(args, home_repo, via="entry", importtime=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    imported = _imported(proc.stderr)
    assert "router" in imported  # the measurement itself works
    assert not imported & HEAVY


@pytest.mark.parametrize(
    "args",
    [
        ["phase", "--help"],
        ["phase", "-h"],
        ["-C", "/no/such/dir", "phase"],
        ["-C", "--json", "phase"],
        ["-C"],
        ["phase", "-C", "."],
        ["phase", "a", "b"],
        ["phase", "--json", "--json"],
        ["next"],
        ["next", "--verbose", "--json"],
        ["status"],
        ["status", "x", "--json"],
        ["record", "--json"],
        ["--version"],
        ["phase", "--strict"],
        ["worktrees", "--strict", "--strict"],
        ["worktrees", "--wait", "5"],
        ["worktrees", "a", "b"],
        ["new"],
        ["new", "x", "--id"],
        ["new", "x", "--id", "-y"],
        ["new", "x", "--id=a"],
        ["new", "x", "--id", "a", "--id", "b"],
        ["new", "x", "--wait", "3"],
        ["new", "x", "y"],
        ["teardown"],
        [],
    ],
)
def test_anything_else_goes_to_typer(args):
    assert early_command(args) is None


def _two_repo_topic(ws: Path) -> tuple[Path, Topic]:
    home = make_repo(ws, "web")
    topic = new_topic(home)
    write_repos_md(topic, {"api": make_repo(ws, "api")})
    return home, topic


def _answer(proc: subprocess.CompletedProcess[str], root: Path) -> tuple[int, str, list[str]]:
    """Exit code, stdout and stderr's lines with ``root`` masked (progress lines come
    in the order the repos finish)."""
    mask = str(root)
    return (
        proc.returncode,
        proc.stdout.replace(mask, "ROOT"),
        sorted(proc.stderr.replace(mask, "ROOT").splitlines()),
    )


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
def test_worktrees_creates_exactly_as_typer_creates(tmp_path, as_json):
    # It creates: each path answers on its own copy of the same two-repo topic.
    answers = []
    for via in ("entry", "typer"):
        home, topic = _two_repo_topic(tmp_path / via / "ws")
        args = ["worktrees", topic.id] + (["--json"] if as_json else [])
        proc = _run(args, home, via=via)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        answers.append(_answer(proc, tmp_path / via))
    assert answers[0] == answers[1]
    assert "created" in answers[0][1]


@pytest.mark.parametrize(
    "args",
    [
        ["teardown", "TOPIC", "--dry-run", "--json"],
        ["teardown", "TOPIC", "--dry-run", "--integrate"],
        ["teardown", "2026-01-01-nothing", "--json"],
        ["teardown", "not an id"],
        ["-C", "HOME", "teardown", "2026-01-01-nothing"],
    ],
)
def test_a_teardown_that_changes_nothing_is_answered_exactly_as_typer_answers_it(
    home_repo, questioned_topic, args
):
    ship(questioned_topic)  # its dry run plans a teardown that goes ahead
    args = [{"TOPIC": questioned_topic.id, "HOME": str(home_repo)}.get(a, a) for a in args]
    proc = _same_answer(args, home_repo)
    assert (proc.returncode == 0) == ("--dry-run" in args), proc.stdout + proc.stderr
    imported = _imported(_run(args, home_repo, via="entry", importtime=True).stderr)
    assert "router" in imported and not imported & HEAVY


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
def test_teardown_tears_down_exactly_as_typer_does(tmp_path, as_json):
    # It removes: each path answers on its own copy of the same two-repo topic.
    answers = []
    for via in ("entry", "typer"):
        home, topic = _two_repo_topic(tmp_path / via / "ws")
        made = _run(["worktrees", topic.id, "--json"], home, via="entry")
        assert made.returncode == 0, made.stdout + made.stderr
        ship(topic)  # a finished run: its artifacts are not kept
        args = ["-C", str(home), "teardown", topic.id, "--remove-reused"]
        proc = _run(args + (["--json"] if as_json else []), tmp_path, via=via)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert not topic.worktrees["home"].exists()
        answers.append(_answer(proc, tmp_path / via))
    assert answers[0] == answers[1]


@pytest.mark.parametrize(
    ("extra", "ok"),
    [
        (["--json"], True),
        ([], True),
        (["--ticket", "ENG-12", "--json"], True),
        (["--id", "2026-05-01-add-thing", "--json"], True),
        (["--date", "2026-05-01"], True),
        (["--id", "not an id", "--json"], False),
        (["--id", "2026-05-01-x", "--ticket", "ENG-1", "--json"], False),
        (["--date", "2026-02-30", "--json"], False),
    ],
)
def test_new_answers_exactly_as_typer_does(tmp_path, extra, ok):
    # It creates: each path answers on its own copy of the same repo.
    answers = []
    for via in ("entry", "typer"):
        home = make_repo(tmp_path / via / "ws", "web")
        args = ["-C", str(home), "new", "Add thing", *extra]
        assert early_command(args) is not None
        answers.append(_answer(_run(args, tmp_path, via=via), tmp_path / via))
    assert answers[0] == answers[1]
    assert (answers[0][0] == 0) == ok, answers[0]
