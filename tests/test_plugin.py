"""The Claude Code plugin files: structure, versions, and a hook that fails open."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
from pathlib import Path

import router

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / ".claude-plugin" / "plugin.json"
MARKETPLACE = ROOT / ".claude-plugin" / "marketplace.json"
HOOKS = ROOT / "hooks" / "hooks.json"
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
SEMVER_RE = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$")


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _pyproject_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "version"
    ]


def _session_start_command() -> str:
    (entry,) = _load(HOOKS)["hooks"]["SessionStart"]
    (hook,) = entry["hooks"]
    assert hook["type"] == "command"
    return hook["command"]


def test_plugin_manifest_names_the_plugin_and_carries_the_package_version() -> None:
    manifest = _load(PLUGIN)
    assert manifest["name"] == "team-router"
    assert NAME_RE.match(manifest["name"])
    assert SEMVER_RE.match(manifest["version"])
    assert manifest["version"] == router.__version__ == _pyproject_version()
    assert manifest["description"].strip()
    assert manifest["author"]["name"].strip()


def test_plugin_relies_on_the_default_component_locations_that_exist() -> None:
    # skills/ and hooks/hooks.json are discovered by default; naming the default
    # hooks file again in the manifest would register it twice.
    manifest = _load(PLUGIN)
    assert "hooks" not in manifest
    assert (ROOT / "skills").is_dir() and any((ROOT / "skills").glob("*/SKILL.md"))
    assert (ROOT / "agents").is_dir() and any((ROOT / "agents").glob("*.md"))
    assert HOOKS.is_file()
    for key in ("commands", "agents", "skills"):
        for path in _as_list(manifest.get(key)):
            assert path.startswith("./") and ".." not in path, path
            assert (ROOT / path).exists(), path


def _as_list(value: object) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)  # type: ignore[arg-type]


def test_marketplace_lists_this_checkout_as_the_plugin() -> None:
    market = _load(MARKETPLACE)
    assert NAME_RE.match(market["name"])
    assert market["owner"]["name"].strip()
    (entry,) = market["plugins"]
    manifest = _load(PLUGIN)
    assert entry["name"] == manifest["name"]
    assert entry["source"] == "./"
    assert entry.get("version", manifest["version"]) == manifest["version"]
    assert (ROOT / entry["source"] / ".claude-plugin" / "plugin.json").is_file()


def test_init_from_a_checkout_loads_the_plugin_in_place_never_copies_the_checkout(
    home_repo: Path,
) -> None:
    # A marketplace add of the checkout would copy it whole (.venv included); the
    # installed copy's lines are checked in tests/test_install.py.
    from helpers.repos import run_cli

    result = run_cli("init", "--json", cwd=home_repo)
    assert result.code == 0, result.err
    assert result.json["plugin_commands"] == [f"claude --plugin-dir {ROOT}"]
    text = run_cli("init", cwd=home_repo).out
    assert f"\n  claude --plugin-dir {ROOT}\n" in text
    assert "marketplace add" not in text


def test_hooks_register_session_start_on_the_recovery_hook() -> None:
    hooks = _load(HOOKS)["hooks"]
    # The worktree hooks: tests/test_host_worktrees.py checks their commands.
    assert list(hooks) == ["SessionStart", "WorktreeCreate", "WorktreeRemove"]
    assert "team-router hook session-start" in _session_start_command()


def _run_hook(path_dirs: list[Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PATH"}
    env["PATH"] = os.pathsep.join(str(p) for p in path_dirs)
    return subprocess.run(
        ["/bin/sh", "-c", _session_start_command()],
        cwd=cwd,
        env=env,
        input='{"cwd": "/", "session_id": "s1"}',
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )


def test_hook_fails_open_without_team_router_on_path(tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    proc = _run_hook([empty], tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_hook_runs_the_installed_cli_and_survives_its_failure(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "argv.txt"
    fake = bin_dir / "team-router"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{log}"\necho "{{}}"\nexit 3\n')
    fake.chmod(0o755)
    proc = _run_hook([bin_dir, Path("/bin"), Path("/usr/bin")], tmp_path)
    assert proc.returncode == 0
    assert proc.stdout == "{}\n"
    assert log.read_text().splitlines() == ["hook", "session-start"]
