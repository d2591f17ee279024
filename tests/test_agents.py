"""The plugin's agents: their frontmatter, the tools each role gets, and that every agent
and every error code a skill or brief names exists."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest
import yaml

from router.errors import ErrorCode, ExitCode

# Every error code a command can report, as the user reads it.
CODES = frozenset(str(code) for code in ErrorCode)

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
    "design-author": ("design.md", "repos.md"),
    "structure-planner": ("structure.md",),
    "planner": ("plan.md",),
}
READ_ONLY = frozenset(
    {"researcher", "design-reviewer", "code-reviewer", "security-reviewer", "verifier"}
)
# The phase briefs and the agents each must name (the orchestrator dispatches by them).
BRIEF_AGENTS = {
    "question": {"questioner"},
    "research": {"researcher"},
    "design": {"design-author", "design-reviewer"},
    "structure": {"structure-planner"},
    "plan": {"planner"},
    "implement": {
        "test-architect",
        "implementer",
        "verifier",
        "code-reviewer",
        "security-reviewer",
    },
    "shipped": {"implementer"},
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
    "Failed": 0,
    "_fallback": 0,
    "_refused": 1,
    "refused": 1,
    "failed": 2,
    "Containment": 1,
    "CreateReport": 5,
    "refused_report": 2,
    "error_json": 0,
    "_failed": 1,
}
_CODE_KEYWORDS = frozenset({"code", "reason", "expect_code"})


def _code_arguments(node: ast.AST) -> list[ast.expr]:
    """The expressions ``node`` passes, returns or compares as an error code."""
    if isinstance(node, ast.FunctionDef) and node.name == "code":
        # GitError.code: the code a refusal built from a git failure carries
        return [n.value for n in ast.walk(node) if isinstance(n, ast.Return) and n.value]
    if isinstance(node, ast.Compare):
        # `exc.code != ErrorCode.NO_PLAN_DIR`, `verdict.reason != ...`
        left = node.left
        if isinstance(left, ast.Attribute) and left.attr in {"code", "reason"}:
            return list(node.comparators)
        return []
    if not isinstance(node, ast.Call):
        return []
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    args: list[ast.expr] = [k.value for k in node.keywords if k.arg in _CODE_KEYWORDS]
    if name == "__init__" and isinstance(func, ast.Attribute):
        # super().__init__(ErrorCode.SNAPSHOT_FAILED, ...) in a RouterError subclass
        args += node.args[:1] if isinstance(func.value, ast.Call) else []
    elif name in _CODE_ARGUMENT and len(node.args) > _CODE_ARGUMENT[name]:
        args.append(node.args[_CODE_ARGUMENT[name]])
    return args


def _branches(expr: ast.expr) -> list[ast.expr]:
    """What a code argument can be: itself, or either side of ``x or y`` / ``a if c else b``."""
    if isinstance(expr, ast.BoolOp):
        return [b for v in expr.values for b in _branches(v)]
    if isinstance(expr, ast.IfExp):
        return _branches(expr.body) + _branches(expr.orelse)
    return [expr]


def _code_of(node: ast.AST) -> list[str]:
    """The codes ``node`` names (``ErrorCode.LOCKED`` is ``locked``)."""
    return [
        ErrorCode[b.attr].value
        for a in _code_arguments(node)
        for b in _branches(a)
        if isinstance(b, ast.Attribute) and ast.unparse(b.value) == "ErrorCode"
    ]


def _sources() -> list[tuple[Path, ast.Module]]:
    return [
        (path, ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted((ROOT / "router").rglob("*.py"))
    ]


def _codes_in_source() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path, tree in _sources():
        for node in ast.walk(tree):
            for code in _code_of(node):
                found.setdefault(code, set()).add(path.name)
    return found


def _spelt_codes(tree: ast.AST) -> list[str]:
    """Codes spelt as strings where a code goes, not as ErrorCode members: where and what."""
    return [
        f"line {b.lineno}: {b.value!r}"
        for node in ast.walk(tree)
        for a in _code_arguments(node)
        for b in _branches(a)
        if isinstance(b, ast.Constant) and isinstance(b.value, str) and b.value
    ]


def test_every_code_is_named_by_its_member_never_spelt_as_a_string() -> None:
    spelt = {str(p.relative_to(ROOT)): s for p, t in _sources() if (s := _spelt_codes(t))}
    assert not spelt, "name each code by its ErrorCode member (router/errors.py)"


def test_the_spelt_code_check_catches_a_string_where_a_code_goes() -> None:
    tree = ast.parse(
        'raise RouterError("locked", "x")\nrefused("remove", "helt", "x")\n'
        'failed("x", "y", ErrorCode.IO_ERROR)\nif exc.code != "no-plan-dir": pass\n'
    )
    assert _spelt_codes(tree) == ["line 1: 'locked'", "line 2: 'helt'", "line 4: 'no-plan-dir'"]


def test_errors_codes_is_the_one_list_of_what_the_cli_reports() -> None:
    found = _codes_in_source()
    assert CODES - set(found) == set(), "ErrorCode lists codes nothing reports"


# The codes DESIGN §13 names: each is one the CLI reports.
DESIGN_CODES = frozenset(
    [
        "invalid-id",
        "invalid-branch",
        "repos-md",
        "no-plan-dir",
        "no-topic",
        "not-a-repo",
        "no-root-commit",
        "default-branch-worktree",
        "path-taken",
        "branch-checked-out",
        "strict-failed",
        "dirty-worktree",
        "unintegrated-commits",
        "conflict",
        "primary-busy",
        "protected-branch",
        "not-merged",
        "locked",
        "no-default-branch",
    ]
)


def test_every_code_the_design_names_is_an_error_code() -> None:
    assert set() == DESIGN_CODES - CODES


def test_each_code_carries_the_exit_code_of_its_class() -> None:
    bad_input = {str(c) for c in ErrorCode if c.exit_code == ExitCode.BAD_INPUT}
    assert bad_input == {
        "usage",
        "invalid-id",
        "invalid-branch",
        "invalid-target",
        "invalid-value",
        "invalid-session",
        "repos-md",
        "no-plan-dir",
        "no-topic",
        "no-repo",
        "no-such-process",
        "demo-dir",
    }
    assert ErrorCode.INTERRUPTED.exit_code == ExitCode.for_signal(2) == 130
    assert ErrorCode.UNEXPECTED.exit_code == ExitCode.UNEXPECTED == 3
    special = bad_input | {"interrupted", "unexpected"}
    assert {c.exit_code for c in ErrorCode if c not in special} == {ExitCode.REFUSED}


# -- the error table of docs/json-and-errors.md ---------------------------------------

ERRORS_PAGE = ROOT / "docs" / "json-and-errors.md"
# The calls that make a code a repo's `reason` (a creation step's failure, a containment
# refusal, a home that stays in place): the command still exits 0. Everywhere else a
# code ends the command with its own exit code (ErrorCode.exit_code).
_REASON_CALLS = frozenset({"Failed", "_fallback", "Containment", "CreateReport"})
# Not one number: a signal is 128 + its number (Ctrl-C 130, SIGTERM 143, SIGHUP 129).
_EXIT_OF_CODE = {"interrupted": {"130", "143", "129"}}


def _troubleshooting_rows() -> dict[str, str]:
    """Each code of the docs' error table and its exit column."""
    text = ERRORS_PAGE.read_text(encoding="utf-8")
    section = text.split("\n## Error codes\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| `") or len(cells) < 2:
            continue
        for code in re.findall(r"`([^`]+)`", cells[0]):
            rows[code] = cells[1]
    return rows


def _exits_in_source() -> dict[str, set[str]]:
    """Per code, the exit codes its raising calls give (see _REASON_CALLS)."""
    exits: dict[str, set[str]] = {}
    for _path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                continue  # reads a code, does not end a command with it
            func = getattr(node, "func", None)
            name = getattr(func, "id", None) or getattr(func, "attr", "")
            for code in _code_of(node):
                exits.setdefault(code, set()).update(
                    _EXIT_OF_CODE.get(code) or {_exit_of(name, code)}
                )
    return exits


def _exit_of(call: str, code: str) -> str:
    return "0" if call in _REASON_CALLS else str(int(ErrorCode(code).exit_code))


def test_the_troubleshooting_table_lists_exactly_the_codes_the_cli_reports() -> None:
    listed = set(_troubleshooting_rows())
    assert listed - CODES == set(), "the error table names codes nothing reports"
    assert CODES - listed == set(), "add these codes to the error table"


def test_the_troubleshooting_table_gives_each_code_its_exit_code() -> None:
    rows, exits = _troubleshooting_rows(), _exits_in_source()
    wrong = {}
    for code, column in rows.items():
        # A code raised as a refusal somewhere exits 1 there, even if it is also a reason.
        raised = exits[code] - {"0"} or exits[code]
        if set(re.findall(r"\d+", column)) != raised:
            wrong[code] = (column, sorted(raised))
    assert not wrong, "error table's exit column vs the code: {code: (docs, code)}"


def test_the_table_checks_catch_a_missing_code_and_a_wrong_exit(monkeypatch) -> None:
    rows = dict(_troubleshooting_rows())
    assert (
        rows["invalid-id"] == "2"
        and rows["locked"] == "1"
        and rows["interrupted"] == "130, 143, 129"
    )
    del rows["no-snapshot"]
    rows["invalid-value"] = "1"
    monkeypatch.setattr(sys.modules[__name__], "_troubleshooting_rows", lambda: rows)
    with pytest.raises(AssertionError, match="add these codes"):
        test_the_troubleshooting_table_lists_exactly_the_codes_the_cli_reports()
    with pytest.raises(AssertionError, match="invalid-value"):
        test_the_troubleshooting_table_gives_each_code_its_exit_code()


# -- the method's pieces agree with each other -----------------------------------------

CODE_SPAN_RE = re.compile(r"`([^`\n]+)`")
FENCED_RE = re.compile(r"^(`{3,}|~{3,})[^\n]*\n(.*?)^\1", re.M | re.S)
INDENTED_LINE_RE = re.compile(r"^ {4,}(\S.*)$", re.M)
BARE_GIT_RE = re.compile(r"(?<![\w./-])git\s+(?!-C\s)([a-z][\w-]*)")
GH_RE = re.compile(r"(?<![\w./-])gh\s+(pr|issue|api)\b")


def _prompt(name: str) -> str:
    return (AGENTS / f"{name}.md").read_text(encoding="utf-8").split("\n---\n", 1)[1]


def _section(text: str, heading: str) -> str:
    """The body of the ``## <heading>`` section (up to the next ``## ``)."""
    start = text.index(f"\n## {heading}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def _code(text: str) -> list[str]:
    """What a document gives to run: code spans, fenced blocks' lines, indented lines."""
    found = CODE_SPAN_RE.findall(text)
    for _fence, body in FENCED_RE.findall(text):
        found += body.splitlines()
    found += INDENTED_LINE_RE.findall(FENCED_RE.sub("", text))
    return found


def _unanchored(commands: list[str]) -> list[str]:
    """Commands that run git or gh in whatever directory the shell happens to be in."""
    bad = [c for c in commands if BARE_GIT_RE.search(c)]
    bad += [c for c in commands if GH_RE.search(c) and not re.search(r"\bcd \S+ &&|--repo", c)]
    return bad


def test_every_git_or_gh_command_an_agent_or_brief_gives_names_its_checkout() -> None:
    # A helper's Bash working directory resets between calls: a bare `git commit` can
    # land in the user's primary clone.
    docs = [*sorted(AGENTS.glob("*.md")), *sorted(BRIEFS.glob("*.j2"))]
    problems = {str(d.relative_to(ROOT)): _unanchored(_code(d.read_text())) for d in docs}
    assert not {k: v for k, v in problems.items() if v}
    for path in SKILLS.glob("*/SKILL.md"):
        fenced = [
            ln for _f, body in FENCED_RE.findall(path.read_text()) for ln in body.splitlines()
        ]
        assert not _unanchored(fenced), path


def test_the_anchor_check_catches_a_bare_git_or_gh() -> None:
    assert _unanchored(["git add <files>", "git -C <c> add -- x", "run `git log -L`"]) == [
        "git add <files>",
        "run `git log -L`",
    ]
    assert _unanchored(
        ["gh pr create --head b", "cd <c> && gh pr create", "gh pr view 1 --repo o/r"]
    ) == ["gh pr create --head b"]


def test_who_commits_checks_the_branch_first() -> None:
    for doc in [*AGENTS.glob("*.md"), *BRIEFS.glob("*.j2")]:
        commands = _code(doc.read_text())
        if any(re.search(r"git -C \S+ commit\b", c) for c in commands):
            assert any(re.search(r"git -C \S+ branch --show-current", c) for c in commands), doc


def test_the_test_architect_commits_nothing_so_every_slice_commit_can_be_green() -> None:
    # The tests of every slice are written first: committed on their own, the branch would
    # hold red commits, and the implementer's "whole suite green" could never hold.
    architect = _prompt("test-architect")
    assert not [c for c in _code(architect) if re.search(r"\bcommit\b", c)]
    assert "Commit nothing" in architect
    tests_step = (BRIEFS / "implement.md.j2").read_text().split('{% if step == "tests" %}')[1]
    tests_step = tests_step.split("{% elif")[0]
    assert "commits nothing" in tests_step and "commits them" not in tests_step
    implementer = _prompt("implementer")
    suite = next(p for p in implementer.split("\n\n") if "whole suite" in p)
    assert "except the tests of slices not landed yet" in " ".join(suite.split())


# The inputs an agent's prompt says it is given: each must be in the brief that dispatches it.
INPUT_WORDS = ("slice numbers", "step numbers", "topic branch", "range")


@pytest.mark.parametrize(("brief", "agents"), sorted(BRIEF_AGENTS.items()))
def test_each_agent_is_given_the_inputs_its_prompt_expects(brief: str, agents: set[str]) -> None:
    paragraphs = (BRIEFS / f"{brief}.md.j2").read_text().split("\n\n")
    for name in agents:
        # What the brief says where it names the agent (its dispatch, and what it gets).
        text = " ".join(" ".join(p for p in paragraphs if f"team-router:{name}" in p).split())
        inputs = " ".join(_section(_prompt(name), "Inputs").split())
        expected = [w for w in INPUT_WORDS if w in inputs]
        # An implementer sent to fix findings (a failed review, review threads) gets those
        # instead of slice numbers: every slice has landed.
        given = {"topic branch": ("branch",), "slice numbers": ("slice numbers", "finding")}
        missing = [w for w in expected if not any(g in text for g in given.get(w, (w,)))]
        assert not missing, f"{name} expects {missing}, which {brief}.md.j2 never gives it"


def _commit_unit_words(text: str) -> list[str]:
    flat = " ".join(text.split())
    patterns = (
        r"one commit (?:per|each|for each) (\w+)",
        r"\bone (\w+), one commit",
        r"\b(step|slice|task)s? numbers\b",
        r"\bplan (step|slice)s?\b",
    )
    return [w.lower() for p in patterns for w in re.findall(p, flat, re.I)]


def test_the_unit_of_commit_has_one_name_everywhere() -> None:
    docs = [
        *AGENTS.glob("*.md"),
        *BRIEFS.glob("*.j2"),
        SKILLS / "team" / "SKILL.md",
        SKILLS / "qrspi-workflow" / "SKILL.md",
        *(ROOT / "templates" / "artifacts").glob("*.j2"),
    ]
    words = {str(d.relative_to(ROOT)): set(_commit_unit_words(d.read_text())) for d in docs}
    allowed = {"slice", "slices"}
    assert not {k: v - allowed for k, v in words.items() if v - allowed}
    assert _commit_unit_words("One step, one commit. Your step numbers.") == ["step", "step"]


def _home_name_in(text: str) -> str:
    return re.search(r"## Home repo\s*\n- \*\*name:\*\* (\S+)", text).group(1)


def test_the_home_repo_has_one_name_in_every_piece() -> None:
    from router.plandir.artifacts import HOME

    assert _home_name_in(_prompt("questioner")) == HOME
    assert _home_name_in(_prompt("design-author") + (AGENTS / "questioner.md").read_text()) == HOME
    for name in ("structure-planner", "planner"):
        assert f"`[repo: {HOME}]`" in _prompt(name), name
    for brief in ("plan", "structure"):
        assert f"`{HOME}` for" in " ".join((BRIEFS / f"{brief}.md.j2").read_text().split()), brief


def _writes_only(description: str) -> set[str]:
    """The files a description says the agent writes (``Writes [only] a, b and c.``)."""
    match = re.search(r"\bWrites only (.+?)(?:;|\.\s|\.$)", description) or re.search(
        r"\bWrites (.+?)(?:;|\.\s|\.$)", description
    )
    assert match, description
    return set(re.findall(r"[\w-]+\.md", match.group(1)))


@pytest.mark.parametrize("name", sorted(ARTIFACT_AUTHORS))
def test_what_an_author_says_it_writes_is_what_its_prompt_has_it_write(name: str) -> None:
    described = _writes_only(_agents()[name]["description"])
    prompt = _prompt(name)
    told = {
        f
        for line in prompt.splitlines()
        if re.search(r"\b(write|Write)\b", line)
        for f in re.findall(r"(?:<plan_dir>/)?`?([\w-]+\.md)`?", line)
        if not f.startswith("design-review")
    }
    assert told <= described, f"{name} is told to write {told - described} beyond its description"
    assert set(ARTIFACT_AUTHORS[name]) <= described


def test_reviewers_own_their_verdict_rule_and_no_brief_restates_it() -> None:
    # A rule stated twice drifts: the design brief once dropped two of the reviewer's checks.
    rule = re.compile(r"\*\*(REQUEST CHANGES|FAIL|COMMENT)\*\*\s+(when|if)\b|Verdict rule")
    for brief in BRIEFS.glob("*.j2"):
        assert not rule.search(brief.read_text()), brief
    for name in ("design-reviewer", "code-reviewer", "security-reviewer"):
        assert "## Verdict" in _prompt(name), name
    checks = re.findall(r"^(\d)\. ", _section(_prompt("design-reviewer"), "Check"), re.M)
    blocking = re.findall(
        r"\d", _section(_prompt("design-reviewer"), "Verdict").split("\n- **COMMENT")[0]
    )
    assert set(blocking) <= set(checks) and len(checks) == 8


# -- the prompt evals (bench/evals, run against a real model by hand) ------------------


def _evals():
    import importlib.util

    spec = importlib.util.spec_from_file_location("evals_run", ROOT / "bench" / "evals" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_the_prompt_evals_cover_every_phase_and_each_check_can_fail() -> None:
    evals = _evals()
    fixtures = evals.load_fixtures()  # raises on a fixture that cannot run
    phases = {f.name.split("/")[0] for f in fixtures}
    assert phases == {"question", "research", "design", "structure", "plan", "implement"}
    assert {"security-reviewer", "verifier", "code-reviewer"} <= {f.agent for f in fixtures}
    questions = next(f for f in fixtures if f.name == "question/neutral-questions")
    assert evals.failures(questions, "") == [f"missing /{p}/" for p in questions.must_match]
    leaked = "=== questions.md\n1. Where should the rate limiter go?\n"
    assert any(w.startswith("has /") for w in evals.failures(questions, leaked))
