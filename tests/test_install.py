"""The built wheel carries what an installed team-router needs, and runs the demo from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from test_client_e2e import claude, home  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parent.parent
SKILLS = sorted(p.parent.name for p in (ROOT / "skills").glob("*/SKILL.md"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # No build isolation: the build backend (hatchling) is already installed,
    # and a test must not need the network.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    (built,) = out.glob("team_router-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed into its own directory (the dependencies come from this venv)."""
    target = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-compile",
            "--target",
            str(target),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return target


def test_wheel_carries_skills_agents_templates_plugin_and_teardown_example(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for skill in SKILLS:
        assert f"router/_share/skills/{skill}/SKILL.md" in names
    for agent in ROOT.joinpath("agents").glob("*.md"):
        assert f"router/_share/agents/{agent.name}" in names
    for template in ROOT.joinpath("templates").rglob("*.j2"):
        assert f"router/_share/templates/{template.relative_to(ROOT / 'templates')}" in names
    assert "router/_share/.teamteardown.example" in names
    assert "router/_share/.worktreesetup.example" in names
    assert "router/_share/.claude-plugin/plugin.json" in names
    assert "router/_share/.claude-plugin/marketplace.json" in names
    assert "router/_share/hooks/hooks.json" in names
    assert "router/demo/walk.py" in names


def _run_installed(installed: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    # The installed copy comes first on the path, so the checkout is not what runs.
    env["PYTHONPATH"] = str(installed)
    code = "import sys; from router.entry import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def test_installed_team_router_runs_the_demo_end_to_end(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    ):
        monkeypatch.delenv(name, raising=False)
    proc = _run_installed(installed, "demo", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["ok"] is True and payload["command"] == "demo"
    assert len(payload["steps"]) >= 15
    assert not Path(payload["dir"]).exists()


def test_installed_copy_finds_its_templates_inside_the_package(
    installed: Path, tmp_path: Path
) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(installed)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import router.share as r, router.create.initrepo as s; print(r.share_path('templates')); "
            "print(s.plugin_commands()[0])",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    templates, add = proc.stdout.splitlines()
    assert Path(templates) == installed / "router" / "_share" / "templates"
    assert add == f"claude plugin marketplace add {installed / 'router' / '_share'}"
    share = installed / "router" / "_share"
    assert (
        json.loads((share / ".claude-plugin" / "marketplace.json").read_text())["plugins"][0][
            "source"
        ]
        == "./"
    )


def test_the_readme_install_path_on_an_empty_home_installs_the_plugin_alone(
    installed: Path,
    claude: Path,  # noqa: F811
    home: Path,  # noqa: F811
    home_repo: Path,
) -> None:
    """README: install the CLI (a wheel), `init --allow-agent`, then the two lines it prints,
    with the pinned client and nothing in HOME; a session then gets the plugin's notice."""
    from helpers.client import StandIn, run_client, run_plain, text
    from helpers.repos import run_cli
    from test_client_e2e import assert_clean_run, scripted

    assert not any(home.iterdir())
    proc = _run_installed(installed, "init", "--allow-agent", "--json", cwd=home_repo)
    assert proc.returncode == 0, proc.stderr
    share = installed / "router" / "_share"
    commands = json.loads(proc.stdout)["plugin_commands"]
    assert commands == [
        f"claude plugin marketplace add {share}",
        "claude plugin install team-router@team-router",
    ]
    for line in commands:
        done = run_plain(claude, *line.split()[1:], cwd=home_repo, home=home)
        assert done.returncode == 0, done.stdout + done.stderr
    (copy,) = (home / ".claude" / "plugins" / "cache").glob("*/team-router/*")
    files = [p for p in copy.rglob("*") if p.is_file()]
    # The plugin alone: skills, agents, hooks, templates; no .venv, no tests, no caches.
    assert {p.relative_to(copy).parts[0] for p in files} <= {
        ".claude-plugin",
        "skills",
        "agents",
        "hooks",
        "templates",
        ".teamteardown.example",
        ".worktreesetup.example",
    }
    assert sum(p.stat().st_size for p in files) < 2_000_000
    made = run_cli("new", "add rate limiting", "--date", "2026-05-01", "--json", cwd=home_repo)
    assert made.code == 0, made.out
    with StandIn(scripted([text("noted")])) as standin:
        run = run_client(claude, standin, "hello", cwd=home_repo, home=home, plugin_dir=None)
    assert_clean_run(run, standin)
    assert f"Phase: QUESTION | Id: {made.json['id']}" in standin.conversation()[0].messages_text
