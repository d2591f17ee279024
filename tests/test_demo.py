"""``team-router demo``: the narrated multi-repo run a newcomer starts with."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from helpers.repos import git, run_cli

IDENTITY = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")


@pytest.fixture
def newcomer(hermetic: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine with nothing set up: empty HOME, no system config, no git identity."""
    for name in (*IDENTITY, "EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.delenv(name, raising=False)
    home = Path(os.environ["HOME"])
    assert not any(home.iterdir())
    return home


def _titles(payload: dict) -> list[str]:
    return [step["title"] for step in payload["steps"]]


def test_demo_runs_end_to_end_on_a_fresh_machine_and_cleans_up(newcomer: Path) -> None:
    result = run_cli("demo", "--json")
    assert result.code == 0, result.out + result.err
    payload = result.json
    assert payload["ok"] is True and payload["command"] == "demo"
    assert payload["kept"] is False
    assert not Path(payload["dir"]).exists()
    # The user's configuration was neither written nor needed.
    assert not any(newcomer.iterdir())
    for name in (*IDENTITY, "GIT_CONFIG_GLOBAL"):
        assert name not in os.environ
    commands = [s["command"].split()[1] for s in payload["steps"] if s["command"]]
    for needed in ("new", "next", "phase", "record", "worktrees", "status", "teardown"):
        assert needed in commands
    phases = [
        s["result"]["resume_at"]
        for s in payload["steps"]
        if s["command"] and s["command"].split()[1] in {"phase", "next"}
    ]
    assert phases[0] == "QUESTION" and phases[-1] == "IMPLEMENT"
    assert {"RESEARCH", "DESIGN", "STRUCTURE"} <= set(phases)


def test_demo_shows_a_refused_teardown_that_removed_nothing(newcomer: Path) -> None:
    payload = run_cli("demo", "--json").json
    refused = [s for s in payload["steps"] if s["exit"] == 1]
    (step,) = refused
    assert step["result"]["error"]["code"] == "dirty-worktree"
    teardowns = [s for s in payload["steps"] if s["command"] and "teardown" in s["command"]]
    assert [s["exit"] for s in teardowns] == [1, 0]


def test_demo_keep_leaves_the_repos_with_the_work_integrated(
    newcomer: Path, tmp_path: Path
) -> None:
    base = tmp_path / "demo-here"
    result = run_cli("demo", "--dir", str(base), "--keep", "--json")
    assert result.code == 0, result.out + result.err
    root = Path(result.json["dir"])
    assert root.parent == base.resolve() and result.json["kept"] is True
    workspace = root / "workspace"
    assert sorted(p.name for p in workspace.iterdir()) == ["api", "shared-types", "web"]
    topic = result.json["id"]
    for name in ("web", "api", "shared-types"):
        repo = workspace / name
        assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
        assert topic not in git(repo, "branch", "--list", "--format=%(refname:short)")
        assert not (repo / ".claude" / "worktrees" / topic).exists()
    assert "plan" in git(workspace / "web", "show", "main:src/billing.js")
    assert '"plan"' in git(workspace / "api", "show", "main:app/customers.py")


def test_demo_narrates_each_step_in_text_mode(newcomer: Path) -> None:
    result = run_cli("demo")
    assert result.code == 0, result.err
    out = result.out
    assert out.startswith("Demo: one topic across three repos")
    assert "1. Three sibling repos" in out
    assert "web$ team-router new " in out
    assert "[dirty-worktree]" in out
    assert "nothing removed" in out
    assert "\nDone: " in out
    numbered = [ln for ln in out.splitlines() if ln[:1].isdigit() and ". " in ln]
    assert len(numbered) >= 15


def test_demo_dir_that_is_a_file_is_bad_input(tmp_path: Path) -> None:
    target = tmp_path / "a-file"
    target.write_text("keep me\n")
    result = run_cli("demo", "--dir", str(target), "--json")
    assert result.code == 2
    assert result.json["error"]["code"] == "demo-dir"
    assert target.read_text() == "keep me\n"


def _comparable(text: str) -> list[str]:
    """Demo output with what differs from run to run (directories, dates, shas) made equal."""
    text = re.sub(r"\S*/team-router-demo-(scratch-)?[A-Za-z0-9_]+", r"/tmp/demo-\1dir", text)
    text = re.sub(r"\b\d{4}-\d{2}-\d{2}\b", "YYYY-MM-DD", text)
    text = re.sub(r"\b[0-9a-f]{8}\b", "<sha>", text)
    return text.rstrip("\n").splitlines()


def test_the_demo_page_shows_what_the_demo_prints(newcomer: Path) -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "demo.md").read_text(encoding="utf-8")
    shown = page.split("```text\n$ team-router demo\n", 1)[1].split("\n```", 1)[0]
    result = run_cli("demo")
    assert result.code == 0, result.out + result.err
    assert _comparable(result.out) == _comparable(shown)
