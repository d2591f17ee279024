"""The one-boundary rule: only router/git.py starts git, only router/github.py starts gh."""

from __future__ import annotations

import ast
from pathlib import Path

ROUTER = Path(__file__).resolve().parent.parent / "router"
PROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output", "execvp", "spawnlp"}


def _modules() -> list[Path]:
    return sorted(ROUTER.rglob("*.py"))


def _literal_first_arg(call: ast.Call) -> str | None:
    if not call.args:
        return None
    first = call.args[0]
    if isinstance(first, ast.List | ast.Tuple) and first.elts:
        first = first.elts[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def _programs_started(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    started = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in PROCESS_CALLS
        ):
            program = _literal_first_arg(node)
            if program:
                started.add(program)
    return started


def test_no_module_but_git_py_imports_gitpython_or_starts_git():
    for path in _modules():
        text = path.read_text(encoding="utf-8")
        assert "import git\n" not in text and "from git " not in text, path
        if path.name != "git.py":
            assert "git" not in _programs_started(path), f"{path} starts git"


def test_only_github_py_starts_gh():
    for path in _modules():
        if path.name != "github.py":
            assert "gh" not in _programs_started(path), f"{path} starts gh"


def test_the_cli_layer_runs_no_git():
    for path in (ROUTER / "cli").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "router.git"
            for alias in node.names
        }
        assert not imported, f"{path} imports the git boundary directly: {imported}"


def test_the_command_owner_map_matches_what_the_modules_register():
    import typer

    from router.cli import app as cli
    from router.cli.commands import MODULES, OWNER

    cli._register()
    group = typer.main.get_command(cli.app)
    assert sorted(group.commands) == sorted(OWNER)
    assert set(OWNER.values()) == set(MODULES)
    import importlib

    for name, module in OWNER.items():
        mod = importlib.import_module(f"router.cli.{module}")
        source = Path(mod.__file__).read_text(encoding="utf-8")
        assert f'"{name}"' in source, f"{name} is not registered by router/cli/{module}.py"
