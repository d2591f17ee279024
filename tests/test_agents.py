"""The plugin's agents: their frontmatter, the tools each role gets, and that every agent
and every error code a skill or brief names exists."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest
import yaml

from router.errors import CODES

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ROOT / "agents"
SKILLS = ROOT / "skills"
BRIEFS = ROOT / "templates" / "briefs"

# Claude Code's tool names (client 2.x); an unknown name in `tools` is silently dropped.
KNOWN_TOOLS = frozenset(
    [
        "Agent",
        "Task",
        "Bash",
        "BashOutput",
        "KillShell",
        "Edit",
        "MultiEdit",
        "Write",
        "NotebookEdit",
        "Read",
        "Glob",
        "Grep",
        "TodoWrite",
        "WebFetch",
        "WebSearch",
        "Skill",
        "SlashCommand",
        "ExitPlanMode",
        "AskUserQuestion",
    ]
)
EDITING_TOOLS = frozenset({"Edit", "MultiEdit", "NotebookEdit"})
MODELS = frozenset({"opus", "sonnet", "haiku", "inherit"})
# Only these change code; the artifact authors write their one file in the plan dir.
CODE_WRITERS = frozenset({"implementer", "test-architect"})
ARTIFACT_AUTHORS = {
    "questioner": ("task.md", "questions.md"),
    "design-author": ("design.md",),
    "structure-planner": ("structure.md",),
    "planner": ("plan.md",),
}
READ_ONLY = frozenset({"researcher", "design-reviewer", "code-reviewer"})
# The phase briefs and the agents each must name (the orchestrator dispatches by them).
BRIEF_AGENTS = {
    "question": {"questioner"},
    "research": {"researcher"},
    "design": {"design-author", "design-reviewer"},
    "structure": {"structure-planner"},
    "plan": {"planner"},
    "implement": {"test-architect", "implementer", "code-reviewer"},
}
QUALIFIED_RE = re.compile(r"team-router:([a-z0-9-]+)")
KEBAB_RE = re.compile(r"`([a-z][a-z0-9]*(?:-[a-z0-9]+)+)`")


def _frontmatter(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{path}: no frontmatter"
    raw, sep, body = text[4:].partition("\n---\n")
    assert sep and body.strip(), f"{path}: frontmatter not closed, or no prompt"
    data = yaml.safe_load(raw)
    assert isinstance(data, dict), f"{path}: frontmatter is not a mapping"
    return data


def _agents() -> dict[str, dict]:
    return {p.stem: _frontmatter(p) for p in sorted(AGENTS.glob("*.md"))}


def _tools(data: dict) -> set[str]:
    return {t.strip() for t in str(data.get("tools", "")).split(",") if t.strip()}


def _documents() -> list[Path]:
    return [*SKILLS.glob("*/SKILL.md"), *BRIEFS.glob("*.j2"), *AGENTS.glob("*.md")]


def test_the_roles_the_pipeline_dispatches_have_agents() -> None:
    expected = CODE_WRITERS | set(ARTIFACT_AUTHORS) | READ_ONLY
    assert set(_agents()) == expected


@pytest.mark.parametrize("name", sorted(p.stem for p in AGENTS.glob("*.md")))
def test_agent_frontmatter_is_what_the_client_reads(name: str) -> None:
    data = _agents()[name]
    assert set(data) <= {"name", "description", "tools", "model", "color"}
    assert data["name"] == name
    assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name)
    assert isinstance(data["description"], str) and 0 < len(data["description"]) <= 1024
    tools = _tools(data)
    assert tools and tools <= KNOWN_TOOLS, tools - KNOWN_TOOLS
    assert data.get("model", "inherit") in MODELS


def test_only_implementers_and_the_test_architect_change_code() -> None:
    for name, data in _agents().items():
        tools = _tools(data)
        if name in CODE_WRITERS:
            assert {"Edit", "Write", "Bash"} <= tools, name
            continue
        assert not tools & EDITING_TOOLS, f"{name} may edit files: {tools & EDITING_TOOLS}"
        if name in READ_ONLY:
            assert "Write" not in tools, f"{name} reads and returns; it writes nothing"
        else:
            # An artifact author writes its file in the plan dir, and has no shell that
            # could change code behind the tools' back.
            assert "Bash" not in tools, name
        # Helpers do not nest other helpers or stop the run to ask the user.
        assert not tools & {"Agent", "Task", "AskUserQuestion"}, name


@pytest.mark.parametrize(("name", "files"), sorted(ARTIFACT_AUTHORS.items()))
def test_each_artifact_author_names_the_files_it_writes(name: str, files: tuple[str, ...]) -> None:
    prompt = (AGENTS / f"{name}.md").read_text(encoding="utf-8")
    for file in files:
        assert f"`{file}`" in prompt or f"<plan_dir>/{file}" in prompt, (name, file)
    assert "phase:" in prompt, f"{name} must show the frontmatter it writes"


def test_the_researcher_is_kept_away_from_the_intent() -> None:
    prompt = (AGENTS / "researcher.md").read_text(encoding="utf-8")
    assert "Never open `task.md`" in prompt
    for name in set(_agents()) - {"questioner"}:
        text = (AGENTS / f"{name}.md").read_text(encoding="utf-8")
        assert "request, verbatim" not in text, f"only the questioner is given the request: {name}"


def test_every_agent_a_skill_or_brief_names_exists_by_its_qualified_name() -> None:
    agents = set(_agents())
    named: dict[str, set[str]] = {}
    for doc in _documents():
        text = doc.read_text(encoding="utf-8")
        for found in QUALIFIED_RE.findall(text):
            named.setdefault(found, set()).add(doc.name)
        # The client resolves a plugin's agent only by `team-router:<name>`.
        bare = {w for w in re.findall(r"`([a-z-]+)`", text) if w in agents}
        assert not bare, f"{doc}: name agents as `team-router:<name>`, not {sorted(bare)}"
    assert set(named) <= agents, {k: v for k, v in named.items() if k not in agents}
    assert agents <= set(named), f"agents no skill or brief dispatches: {agents - set(named)}"


@pytest.mark.parametrize(("brief", "agents"), sorted(BRIEF_AGENTS.items()))
def test_each_phase_brief_names_the_agents_of_its_phase(brief: str, agents: set[str]) -> None:
    text = (BRIEFS / f"{brief}.md.j2").read_text(encoding="utf-8")
    assert set(QUALIFIED_RE.findall(text)) == agents


# -- error codes -------------------------------------------------------------------


def _vocabulary() -> set[str]:
    """The backticked kebab-case words a document may show that are not error codes."""
    skills = {p.parent.name for p in SKILLS.glob("*/SKILL.md")}
    return skills | set(_agents()) | {"team-router", "temp-paths"}


def _unknown_words(text: str) -> set[str]:
    return set(KEBAB_RE.findall(text)) - CODES - _vocabulary()


def test_every_code_a_skill_brief_or_agent_names_is_one_the_cli_reports() -> None:
    problems = {str(d.relative_to(ROOT)): _unknown_words(d.read_text()) for d in _documents()}
    assert not {k: v for k, v in problems.items() if v}


def test_the_code_check_catches_a_misspelt_or_invented_code() -> None:
    assert _unknown_words("refuses `confirmation-required`, see `team-worktree`") == set()
    assert _unknown_words("refuses `not-confimed` or `no-such-code`") == {
        "not-confimed",
        "no-such-code",
    }


# Where each raising call carries its code: (positional index, keyword).
_CODE_ARGUMENT = {
    "RouterError": 0,
    "Refusal": 0,
    "BadInput": 0,
    "DemoFailed": 0,
    "_Failed": 0,
    "_fallback": 0,
    "_refused": 1,
    "refused": 1,
    "failed": 2,
    "Containment": 1,
    "error_json": 0,
}
_KEBAB_WORD = re.compile(r"^[a-z]+(-[a-z]+)*$")


def _codes_in_source() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "router").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for code in _code_of(node):
                found.setdefault(code, set()).add(path.name)
    return found


def _code_of(node: ast.AST) -> list[str]:
    if isinstance(node, ast.FunctionDef) and node.name == "code":
        # GitError.code: the code a refusal built from a git failure carries
        returns = [n.value for n in ast.walk(node) if isinstance(n, ast.Return) and n.value]
        return [word for r in returns for word in _words(r)]
    if not isinstance(node, ast.Call):
        return []
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    args: list[ast.expr] = [k.value for k in node.keywords if k.arg == "code"]
    if name == "__init__" and isinstance(func, ast.Attribute):
        # super().__init__("snapshot-failed", ...) in a RouterError subclass
        args += node.args[:1] if isinstance(func.value, ast.Call) else []
    elif name in _CODE_ARGUMENT and len(node.args) > _CODE_ARGUMENT[name]:
        args.append(node.args[_CODE_ARGUMENT[name]])
    return [word for a in args for word in _words(a)]


def _words(expr: ast.expr) -> list[str]:
    """The code words an argument can be: a constant, or either side of ``x or y`` / ``a if c else b``."""
    if isinstance(expr, ast.Constant):
        ok = isinstance(expr.value, str) and _KEBAB_WORD.match(expr.value)
        return [expr.value] if ok else []
    if isinstance(expr, ast.BoolOp):
        return [w for v in expr.values for w in _words(v)]
    if isinstance(expr, ast.IfExp):
        return _words(expr.body) + _words(expr.orelse)
    return []


def test_errors_codes_is_the_one_list_of_what_the_cli_reports() -> None:
    found = _codes_in_source()
    assert set(found) - CODES == set(), "add these codes to router/errors.py CODES"
    assert CODES - set(found) == set(), "CODES lists codes nothing reports"


# -- the README's Troubleshooting table ------------------------------------------------

README = ROOT / "README.md"
# Codes the README names outside the table: a secondary's containment `reason`, listed
# in the `worktrees` section.
NAMED_ELSEWHERE = frozenset({"containment", "missing", "duplicate"})
# How each raising call ends the command: BadInput is exit 2; a creation step's failure
# (`_Failed`, `_fallback`) or a containment refusal is a repo's `reason`, the command
# still exiting 0; everything else (refusals, failed or refused steps) is exit 1.
_EXIT_OF_CALL = {"BadInput": "2", "_Failed": "0", "_fallback": "0", "Containment": "0"}
# Not visible at the raising call: typer's usage errors keep click's exit 2, Ctrl-C is 130.
_EXIT_OF_CODE = {"usage": "2", "interrupted": "130"}


def _troubleshooting_rows() -> dict[str, str]:
    """Each code of the README's Troubleshooting table and its exit column."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Troubleshooting\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| `") or len(cells) < 2:
            continue
        for code in re.findall(r"`([^`]+)`", cells[0]):
            rows[code] = cells[1]
    return rows


def _exits_in_source() -> dict[str, set[str]]:
    """Per code, the exit codes its raising calls give (see _EXIT_OF_CALL)."""
    exits: dict[str, set[str]] = {}
    for path in sorted((ROOT / "router").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            func = getattr(node, "func", None)
            name = getattr(func, "id", None) or getattr(func, "attr", "")
            for code in _code_of(node):
                exits.setdefault(code, set()).add(_EXIT_OF_CODE.get(code) or _exit_of(name))
    return exits


def _exit_of(call: str) -> str:
    return _EXIT_OF_CALL.get(call, "1")


def test_the_troubleshooting_table_lists_exactly_the_codes_the_cli_reports() -> None:
    listed = set(_troubleshooting_rows())
    assert listed - CODES == set(), "the README names codes nothing reports"
    assert CODES - NAMED_ELSEWHERE - listed == set(), "add these codes to the README's table"
    readme = README.read_text(encoding="utf-8")
    assert all(f"`{code}`" in readme for code in NAMED_ELSEWHERE)


def test_the_troubleshooting_table_gives_each_code_its_exit_code() -> None:
    rows, exits = _troubleshooting_rows(), _exits_in_source()
    wrong = {}
    for code, column in rows.items():
        # A code raised as a refusal somewhere exits 1 there, even if it is also a reason.
        raised = exits[code] - {"0"} or exits[code]
        if set(re.findall(r"\d+", column)) != raised:
            wrong[code] = (column, sorted(raised))
    assert not wrong, "README exit column vs the code: {code: (README, code)}"


def test_the_table_checks_catch_a_missing_code_and_a_wrong_exit(monkeypatch) -> None:
    rows = dict(_troubleshooting_rows())
    assert rows["invalid-id"] == "2" and rows["locked"] == "1" and rows["interrupted"] == "130"
    del rows["no-snapshot"]
    rows["invalid-value"] = "1"
    monkeypatch.setattr(sys.modules[__name__], "_troubleshooting_rows", lambda: rows)
    with pytest.raises(AssertionError, match="add these codes"):
        test_the_troubleshooting_table_lists_exactly_the_codes_the_cli_reports()
    with pytest.raises(AssertionError, match="invalid-value"):
        test_the_troubleshooting_table_gives_each_code_its_exit_code()
