"""Hermetic git for every test: own HOME, no system config, fixed identity and dates."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from helpers.repos import LEAKY_ENV, hermetic_env, make_repo


@pytest.fixture(autouse=True)
def hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in LEAKY_ENV:
        monkeypatch.delenv(name, raising=False)
    for key, value in hermetic_env(tmp_path).items():
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
