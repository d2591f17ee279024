"""Skills: frontmatter rules, and every `team-router` line they (and the user docs) show runs as written."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from router.cli import spec

ROOT = Path(__file__).resolve().parent.parent
SKILLS = ROOT / "skills"
EXPECTED = {
    "team": True,
    "team-worktree": True,
    "pr-cleanup": True,
    "worktree-isolation": False,
    "sweeping-local-state": False,
    "qrspi-workflow": False,
}
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
FENCE_RE = re.compile(r"^(\s*)(`{3,}|~{3,})")
# A command line, optionally behind a prompt such as "$ " or "web$ ".
COMMAND_RE = re.compile(r"^\s*(?:\S*\$\s+)?(team-router(?:\s.*)?)$")
PLACEHOLDER_RE = re.compile(r"<[A-Za-z][^<>\s]*>")
SHELL_OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "(", ")"}


def _frontmatter(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{path}: no frontmatter"
    raw, _, _ = text[4:].partition("\n---\n")
    data = yaml.safe_load(raw)
    assert isinstance(data, dict), f"{path}: frontmatter is not a mapping"
    return data


def test_the_six_skills_exist_and_nothing_else() -> None:
    assert sorted(p.name for p in SKILLS.iterdir() if p.is_dir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_skill_frontmatter_follows_the_rules(name: str) -> None:
    data = _frontmatter(SKILLS / name / "SKILL.md")
    assert data["name"] == name
    assert NAME_RE.match(data["name"]) and len(data["name"]) <= 64
    description = data["description"]
    assert isinstance(description, str) and 0 < len(description) <= 1024
    assert re.search(r"\bUse\b|\bLoad it\b", description), "the description must say when to use it"
    assert data["user-invocable"] is EXPECTED[name]
    assert set(data) <= {"name", "description", "user-invocable", "argument-hint"}
    # The client shows the hint after the slash command: every command the user types has one.
    if EXPECTED[name]:
        assert isinstance(data.get("argument-hint"), str) and data["argument-hint"].strip()
    else:
        assert "argument-hint" not in data


# -- every team-router line in a code block is a real command ----------------------


@dataclass(frozen=True)
class Shown:
    source: str
    line: int
    text: str


def _fenced_command_lines(path: Path) -> list[Shown]:
    found: list[Shown] = []
    fence: str | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = FENCE_RE.match(line)
        if match and fence is None:
            fence = match.group(2)[0] * 3
            continue
        if match and fence is not None and match.group(2).startswith(fence):
            fence = None
            continue
        if fence is not None:
            command = COMMAND_RE.match(line)
            if command:
                found.append(Shown(str(path.relative_to(ROOT)), number, command.group(1)))
    return found


def _user_docs() -> list[Path]:
    """The user's manual: the README and the pages of docs/ (docs/plans/ is a format, not a page)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _documents() -> list[Path]:
    return [*sorted(SKILLS.glob("*/SKILL.md")), *_user_docs()]


def _all_shown() -> list[Shown]:
    return [shown for doc in _documents() for shown in _fenced_command_lines(doc)]


def _tokens(text: str) -> list[str]:
    """The command's words up to the first shell operator; placeholders become plain words."""
    lexer = shlex.shlex(PLACEHOLDER_RE.sub("PLACEHOLDER", text), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words: list[str] = []
    for token in lexer:
        if token in SHELL_OPERATORS or set(token) <= set("|&;<>()"):
            break
        words.append(token)
    return words


# The commands as the CLI declares them (router/cli/spec.py), which its parser reads.
Command = spec.Command | spec.Group


def _app() -> Command:
    return spec.ROOT


def _is_group(command: Command) -> bool:
    return isinstance(command, spec.Group)


def _option_names(command: Command) -> dict[str, bool]:
    """Every option name the command accepts, and whether it takes a value."""
    names = {"-h": False, "--help": False}
    names.update({option.flag: option.takes_value for option in command.opts})
    return names


def _check(words: list[str], root: Command) -> str | None:
    """Why ``words`` would not run as written, or None when they would."""
    assert words[0] == "team-router"
    command, path = root, ["team-router"]
    rest = words[1:]
    while True:
        rest, problem = _consume_options(command, rest)
        if problem:
            return f"{' '.join(path)}: {problem}"
        if _is_group(command):
            if not rest:
                return None if path == ["team-router"] else f"{' '.join(path)} needs a subcommand"
            assert isinstance(command, spec.Group)
            sub = command.find(rest[0])
            if sub is None:
                return f"{' '.join(path)} has no subcommand {rest[0]!r}"
            command, path, rest = sub, [*path, rest[0]], rest[1:]
            continue
        break
    positional: list[str] = []
    while rest:
        rest, problem = _consume_options(command, rest)
        if problem:
            return f"{' '.join(path)}: {problem}"
        if rest:
            positional.append(rest[0])
            rest = rest[1:]
    return _check_arguments(command, path, positional)


def _consume_options(command: Command, rest: list[str]) -> tuple[list[str], str | None]:
    options = _option_names(command)
    while rest and rest[0].startswith("-") and rest[0] != "-":
        word = rest[0]
        if word == "--":
            return rest[1:], None
        name, eq, _ = word.partition("=")
        if name not in options:
            return rest, f"unknown option {name}"
        if options[name] and not eq:
            if len(rest) < 2:
                return rest, f"option {name} needs a value"
            rest = rest[2:]
        else:
            rest = rest[1:]
    return rest, None


def _check_arguments(command: Command, path: list[str], positional: list[str]) -> str | None:
    arguments = command.args if isinstance(command, spec.Command) else ()
    allowed = len(arguments)
    required = sum(1 for a in arguments if a.required)
    if len(positional) > allowed:
        return f"{' '.join(path)} takes {allowed} argument(s), got {positional}"
    if len(positional) < required:
        return f"{' '.join(path)} needs {required} argument(s), got {positional}"
    return None


def test_skills_and_readme_show_command_lines() -> None:
    shown = _all_shown()
    sources = {s.source for s in shown}
    assert "README.md" in sources
    assert len({p.parent.name for p in SKILLS.glob("*/SKILL.md")}) == len(EXPECTED)
    assert len(shown) > 40


def test_every_shown_team_router_line_is_a_real_command() -> None:
    root = _app()
    problems = []
    for shown in _all_shown():
        # A synopsis (`team-router teardown TARGET [--force]`) is read as one command line.
        words = _synopsis_words(shown.text) if " [" in shown.text else _tokens(shown.text)
        problem = _check(words, root)
        if problem:
            problems.append(f"{shown.source}:{shown.line}: `{shown.text}`: {problem}")
    assert not problems, "\n".join(problems)


def test_the_checker_rejects_unknown_commands_options_and_arguments() -> None:
    # The consistency test is only worth something if it can fail.
    root = _app()
    assert _check(_tokens('team-router new "x" --json'), root) is None
    assert _check(_tokens("team-router -C <dir> worktrees <id> --strict"), root) is None
    assert "no subcommand" in _check(_tokens("team-router frobnicate"), root)
    assert "unknown option --bogus" in _check(_tokens("team-router new x --bogus"), root)
    assert "needs 1 argument" in _check(_tokens("team-router new --json"), root)
    assert "takes 1 argument" in _check(_tokens("team-router worktrees a b"), root)
    assert _tokens("team-router new x --json | jq .id  # comment") == [
        "team-router",
        "new",
        "x",
        "--json",
    ]


# -- the briefs `next` prints and the plugin's hooks run the same CLI ----------------

BRIEFS = ROOT / "templates" / "briefs"
JINJA_RE = re.compile(r"\{\{.*?\}\}|\{[a-z_]+\}")  # {{ id }} in a brief, {id} in the notice
INDENTED_RE = re.compile(r"^ {4,}(team-router\s.*)$")
INLINE_RE = re.compile(r"`(team-router\s[^`]*)`")


def _brief_and_hook_lines() -> list[Shown]:
    """Every command line a brief (indented block or inline code), a session-start notice or a
    hook command runs; template fields become placeholders."""
    found: list[Shown] = []
    notices = sorted((ROOT / "templates").glob("*_notice.txt"))  # recovery, shipped, host
    for path in [*sorted(BRIEFS.glob("*.j2")), *notices]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            texts = [m.group(1) for m in (INDENTED_RE.match(line),) if m]
            texts += INLINE_RE.findall(line)
            for text in texts:
                found.append(
                    Shown(str(path.relative_to(ROOT)), number, JINJA_RE.sub("<field>", text))
                )
    hooks = json.loads((ROOT / "hooks" / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    for event, entries in hooks.items():
        for entry in entries:
            for hook in entry["hooks"]:
                for part in re.split(r"&&|\|\||;", hook["command"]):
                    if part.strip().startswith("team-router "):
                        found.append(Shown(f"hooks.json {event}", 0, part.strip()))
    return found


def test_every_team_router_line_of_a_brief_or_hook_is_a_real_command() -> None:
    root = _app()
    shown = _brief_and_hook_lines()
    assert len(shown) > 20
    problems = [
        f"{s.source}:{s.line}: `{s.text}`: {problem}"
        for s in shown
        if (problem := _check(_tokens(s.text), root))
    ]
    assert not problems, "\n".join(problems)


def test_the_worktree_brief_carries_the_request_new_kept(home_repo: Path) -> None:
    # A session resuming at WORKTREE has no copy of the request but the topic record, and
    # the brief's first command (`doctor --repair`) deletes that record.
    import shutil

    from helpers.repos import run_cli
    from helpers.topics import new_topic

    request = "Add rate limiting: 100 req/min per key"
    made = new_topic(home_repo, request)
    shutil.rmtree(made.worktrees["home"])
    res = run_cli("next", made.id, "--json", cwd=home_repo)
    assert res.code == 0, res.err + res.out
    assert (res.json["resume_at"], res.json["request"]) == ("WORKTREE", request)
    assert f"> {request}" in res.json["brief"]


# -- the docs' prose: inline commands, and the tests and files they cite -------------

README = ROOT / "README.md"
# Where the tests each guarantee of docs/safety.md rests on are named.
TESTS_README = ROOT / "tests" / "README.md"
# The json-and-errors page shows these as wrong (an option on the wrong side of the command).
SHOWN_WRONG = frozenset({"team-router --json status", "team-router status -C ../web"})
CITED_PATH_RE = re.compile(
    r"`((?:tests|bench|router|templates|skills|hooks|agents|\.ci)/[^`<>*\s]*)`"
)


def _inline_commands() -> list[Shown]:
    """Every `team-router ...` in the docs' running text (a line break inside counts as a space)."""
    shown = []
    for doc in _user_docs():
        text = doc.read_text(encoding="utf-8")
        name = str(doc.relative_to(ROOT))
        shown += [
            Shown(name, text.count("\n", 0, m.start()) + 1, " ".join(m.group(1).split()))
            for m in re.finditer(r"`(team-router(?:\s[^`]*)?)`", text)
        ]
    return shown


def _synopsis_words(text: str) -> list[str]:
    """A synopsis as one command line: every optional part, the first of each a|b."""
    plain = re.sub(r"(\S+?)\|\S+", r"\1", text.replace("[", " ").replace("]", " "))
    return _tokens(plain)


def _about_arguments(problem: str) -> bool:
    # Running text names a command without its arguments (`team-router teardown`) or with a
    # placeholder for the subcommand (`team-router record <kind> --help`): options and
    # command names are what it can get wrong.
    return any(word in problem for word in (" needs ", " takes ", "'PLACEHOLDER'"))


def test_every_inline_team_router_command_of_the_docs_has_real_commands_and_options() -> None:
    root = _app()
    shown = _inline_commands()
    assert len(shown) > 30
    problems = []
    for s in shown:
        problem = _check(_synopsis_words(s.text), root)
        if s.text in SHOWN_WRONG and problem is None:
            problems.append(f"{s.source}:{s.line}: `{s.text}` is shown as wrong but runs")
        elif s.text not in SHOWN_WRONG and problem and not _about_arguments(problem):
            problems.append(f"{s.source}:{s.line}: `{s.text}`: {problem}")
    assert not problems, "\n".join(problems)


def test_the_inline_check_reads_synopses_and_still_catches_a_wrong_option() -> None:
    root = _app()
    synopsis = "team-router record verdict|review TARGET VALUE [--body-file F] [--wait N]"
    assert _check(_synopsis_words(synopsis), root) is None
    assert "unknown option --bogus" in _check(_synopsis_words("team-router sweep [--bogus]"), root)
    assert not _about_arguments(_check(_synopsis_words("team-router frobnicate"), root))


def test_every_test_and_file_the_docs_cite_exists() -> None:
    cited = set(re.findall(r"`(test_[a-z0-9_]+)`", TESTS_README.read_text(encoding="utf-8")))
    assert len(cited) > 50
    defined = {
        name
        for path in (ROOT / "tests").glob("test_*.py")
        for name in re.findall(r"^def (test_\w+)", path.read_text(encoding="utf-8"), re.M)
    }
    assert cited - defined == set(), "tests/README.md cites tests that do not exist"
    docs = [*_user_docs(), TESTS_README, ROOT / "bench" / "README.md", ROOT / "CONTRIBUTING.md"]
    text = "\n".join(doc.read_text(encoding="utf-8") for doc in docs)
    paths = set(CITED_PATH_RE.findall(text))
    assert len(paths) > 10
    # router/_share is made when the wheel is built (pyproject.toml's force-include).
    assert {p for p in paths if not (ROOT / p).exists()} == {"router/_share"}


def test_ci_runs_the_two_commands_the_readme_gives_a_fresh_machine() -> None:
    # README "Two commands on a fresh machine": the install and test command, which
    # .ci/run runs as written (its other lines are the format, lint and type checks).
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Two commands on a fresh machine\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)\n```", section, re.S)
    assert len(blocks) == 2
    venv, install, tests = blocks[1].split(" && ")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert venv in ci and install in ci
    assert ci[-1] == tests == ".venv/bin/python -m pytest -n 2"


# -- the method's skills agree with the CLI and the agents ---------------------------------


def _steps_the_cli_emits() -> set[str]:
    """Every ``step`` the phase inference can answer (the second item of what it returns)."""
    import ast

    source = (ROOT / "router" / "phase" / "infer.py").read_text(encoding="utf-8")
    steps: set[str] = set()

    def words(node: ast.expr) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.IfExp):
            return words(node.body) + words(node.orelse)
        if isinstance(node, ast.BoolOp):
            return [w for v in node.values for w in words(v)]
        return []

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
            elts = node.value.elts
            if len(elts) == 3 and isinstance(elts[0], ast.Name) and elts[0].id.isupper():
                steps.update(words(elts[1]))
    # `next --until` replaces the step where the run stops.
    brief = (ROOT / "router" / "phase" / "brief.py").read_text(encoding="utf-8")
    steps.update(re.findall(r"_replace\(step=\"([a-z-]+)\"\)", brief))
    return steps


def _exit_codes() -> set[str]:
    from router.errors import ExitCode

    return {str(int(c)) for c in ExitCode} | {str(ExitCode.for_signal(2))}  # Ctrl-C


def test_the_team_skill_names_only_steps_the_cli_emits_and_every_exit_code() -> None:
    text = (SKILLS / "team" / "SKILL.md").read_text(encoding="utf-8")
    emitted = _steps_the_cli_emits()
    assert {"tests", "slices", "review", "draft", "redraft", "worktrees", "teardown"} <= emitted
    rows = [ln for ln in text.splitlines() if re.match(r"^\| (`[A-Z]+`|any) ", ln)]
    assert len(rows) > 8
    for row in rows:
        named = re.findall(r"\(([^)]*)\)", row.split("|")[1])
        for group in named:
            assert set(re.findall(r"`([a-z-]+)`", group)) <= emitted and "`" in group, row
    said = re.search(r"Exit codes: (.*?)\.\n\n", text, re.S).group(1)
    assert set(re.findall(r"\b(\d+) ", said)) == _exit_codes(), said


def test_the_qrspi_table_names_the_agent_that_writes_each_artifact() -> None:
    from test_agents import ARTIFACT_AUTHORS

    text = (SKILLS / "qrspi-workflow" / "SKILL.md").read_text(encoding="utf-8")
    writers = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`") and cells[0].endswith(".md`"):
            writers[cells[0].strip("`")] = cells[2]
    for agent, files in ARTIFACT_AUTHORS.items():
        for file in files:
            spoken = agent.replace("-", " ")
            assert spoken in writers[file], f"{file}: written by {writers[file]!r}, not {spoken}"


def test_pr_cleanup_says_it_acts_on_one_repo_and_walks_every_repos_pr() -> None:
    text = (SKILLS / "pr-cleanup" / "SKILL.md").read_text(encoding="utf-8")
    flat = " ".join(text.split())
    assert "It acts on **one repo**" in flat and "`prs:`" in flat
    shown = [s.text for s in _fenced_command_lines(SKILLS / "pr-cleanup" / "SKILL.md")]
    assert any(re.match(r"team-router -C <[^>]+> pr-cleanup <[^>]+> --json$", s) for s in shown)


def test_every_repos_pr_is_recorded_under_its_name() -> None:
    pr_brief = (BRIEFS / "pr.md.j2").read_text(encoding="utf-8")
    assert re.search(
        r"team-router record pr \{\{ id \}\} <pr-url> --repo <repo-name> --json", pr_brief
    )
    shown = [s.text for s in _fenced_command_lines(SKILLS / "team" / "SKILL.md")]
    assert "team-router record pr <id> <pr-url> --repo <repo-name> --json" in shown
