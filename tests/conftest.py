"""Hermetic git for every test: own HOME, no system config, fixed identity and dates."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from gitutil import make_repo

_LEAKY = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_COUNT",
    "TEAM_ROUTER_CRASH_AT",
)


@pytest.fixture(autouse=True)
def hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    template = tmp_path / "git-template"
    template.mkdir()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    for name in _LEAKY:
        monkeypatch.delenv(name, raising=False)
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Test Author",
        "GIT_AUTHOR_EMAIL": "author@example.com",
        "GIT_COMMITTER_NAME": "Test Committer",
        "GIT_COMMITTER_EMAIL": "committer@example.com",
        "GIT_AUTHOR_DATE": "2026-05-01T12:00:00+00:00",
        "GIT_COMMITTER_DATE": "2026-05-01T12:00:00+00:00",
        "GIT_TEMPLATE_DIR": str(template),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_EDITOR": "false",
        "TMPDIR": str(tmp),
        "NO_COLOR": "1",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return tmp_path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The parent directory in which sibling repos live (origins live beside it)."""
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def home_repo(workspace: Path) -> Path:
    return make_repo(workspace, "web")
