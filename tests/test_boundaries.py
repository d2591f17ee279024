"""The one-boundary rule: only router/git/run.py starts git, only router/github.py starts gh."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_no_module_but_the_git_chokepoint_imports_gitpython_or_starts_git():
    for path in _modules():
        text = path.read_text(encoding="utf-8")
        assert "import git\n" not in text and "from git " not in text, path
        if path != ROUTER / "git" / "run.py":
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
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("router.git")
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


# -- one meaning per name, and no import cycle ----------------------------------------

# ``TYPE_CHECKING = False`` is Python's own idiom (mypy and ruff read it by name) for the
# hook's light modules, which must not import ``typing``: one meaning, not a project name.
SHARED_IDIOMS = {"TYPE_CHECKING"}


def _top_level_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("__")}


def names_defined_twice(root: Path) -> dict[str, list[str]]:
    owners: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for name in _top_level_names(path):
            owners.setdefault(name, []).append(str(path.relative_to(root.parent)))
    return {n: o for n, o in sorted(owners.items()) if len(o) > 1 and n not in SHARED_IDIOMS}


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[str]:
    """Every module an import in ``path`` names, at any depth, except under ``if TYPE_CHECKING``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            node.body = []  # never runs
    named: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            named += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            named += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    return named


def import_cycles(root: Path) -> list[list[str]]:
    """Groups of router modules that import each other (directly or round a loop)."""
    modules = {_module_name(p, root): p for p in root.rglob("*.py")}

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {m: set() for m in modules}
    for m, path in modules.items():
        for name in _imports(path):
            target = owner(name)
            if target and target != m and not m.startswith(target + "."):  # a package's __init__
                graph[m].add(target)

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    reachable = {m: reach(m) for m in graph}
    cycles = {frozenset({m} | {o for o in reachable[m] if m in reachable[o]}) for m in graph}
    return sorted(sorted(c) for c in cycles if len(c) > 1)


def test_every_top_level_name_has_one_owner():
    # A name defined in two modules either means two things (rename one) or is a
    # copy (import it from its owner); test-guarded copies carry their own names.
    assert names_defined_twice(ROUTER) == {}


def test_no_two_router_modules_import_each_other():
    # Function-local imports count: a loop of lazy imports is still a tangle to read.
    assert import_cycles(ROUTER) == []


def _private_members(module: Path, classes: set[str]) -> set[str]:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    return {
        n.name
        for cls in tree.body
        if isinstance(cls, ast.ClassDef) and cls.name in classes
        for n in cls.body
        if isinstance(n, ast.FunctionDef) and n.name.startswith("_") and not n.name.endswith("__")
    }


def _git_classes() -> set[str]:
    # The classes whose methods make up Git: Runner, and one group per git concept.
    return {
        node.name
        for path in (ROUTER / "git").glob("*.py")
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.ClassDef)
    }


@pytest.mark.parametrize(
    ("modules", "class_names"),
    [(sorted((ROUTER / "git").glob("*.py")), _git_classes()), ([ROUTER / "github.py"], {"GitHub"})],
    ids=["git", "github"],
)
def test_nothing_outside_a_boundary_class_reaches_into_its_private_members(modules, class_names):
    # Git's and GitHub's public methods are the boundaries' surface: a caller needing
    # what a private one gives (say, the argv of a failed command) gets a public way.
    private = set().union(*(_private_members(m, class_names) for m in modules))
    assert private  # the check has something to look for
    reached = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in private
                and not (isinstance(node.value, ast.Name) and node.value.id == "self")
            ):
                reached.append(f"{path.relative_to(ROUTER)}:{node.lineno} {ast.unparse(node)}")
    assert reached == []


def test_the_git_package_names_each_export_once_and_imports_no_module_of_its_own():
    # mypy reads the names from the TYPE_CHECKING imports, Python from _HOME: the two agree.
    import router.git as package

    tree = ast.parse((ROUTER / "git" / "__init__.py").read_text(encoding="utf-8"))
    typed = {
        (alias.name, node.module.removeprefix("router.git."))
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("router.git.")
        for alias in node.names
    }
    assert typed == set(package._HOME.items())
    for name in package._HOME:
        assert getattr(package, name) is not None
    # The hook's fast path reads git's files through the package: importing it loads nothing.
    code = "import sys, router.git; print(sorted(m for m in sys.modules if m.startswith('router.git')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['router.git']"


def test_git_s_files_are_read_only_inside_the_git_package():
    # Callers ask router.git for a fact; how it is read (files or git) is the package's choice.
    readers = [
        str(path.relative_to(ROUTER))
        for path in _modules()
        if path.parent != ROUTER / "git" and "router.git.files" in _imports(path)
    ]
    assert readers == []
    assert "router.git.files" in _imports(ROUTER / "git" / "layout.py")  # the check sees one
