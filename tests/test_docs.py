"""The user's docs agree with the CLI: commands, options, error codes, links, length.

The user's docs are README.md and the pages docs/*.md (docs/plans/ is the plan-dir
format a repository keeps, not a page). Each command family has one page; what a
command's ``--help`` shows must be findable on it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.repos import run_cli

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_MAX_LINES = 300

# The page of each command family; a command missing here fails the family test.
FAMILY = {
    "new": "create.md",
    "worktrees": "create.md",
    "init": "create.md",
    "phase": "phases.md",
    "next": "phases.md",
    "status": "phases.md",
    "record": "phases.md",
    "hold": "phases.md",
    "release": "phases.md",
    "teardown": "teardown.md",
    "pr-cleanup": "teardown.md",
    "restore": "teardown.md",
    "local-state": "teardown.md",
    "sweep": "teardown.md",
    "hook": "plugin.md",
    "install-hooks": "plugin.md",
    "doctor": "doctor.md",
    "demo": "demo.md",
}
# team-router's own options (before the command) are command-line conventions.
TOP_LEVEL_PAGE = "json-and-errors.md"
ERRORS_PAGE = "json-and-errors.md"
HELP_OPTIONS = frozenset({"-h", "--help"})


def reported_codes() -> set[str]:
    """Every error code a command can report, as router/errors.py declares them."""
    from router.errors import ErrorCode

    return {str(code) for code in ErrorCode}


def exit_codes() -> set[int]:
    """Every exit code a command can end with, as router/errors.py declares them."""
    import signal

    from router.errors import ExitCode

    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    return {int(code) for code in ExitCode} | {ExitCode.for_signal(s) for s in stops}


def user_docs() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


# -- what --help shows ------------------------------------------------------------


def _help(path: tuple[str, ...]) -> str:
    result = run_cli(*path, "--help")
    assert result.code == 0, result.out + result.err
    return result.out


def _section(text: str, title: str) -> list[str]:
    """The lines of one ``Title:`` section of a help text (up to the next blank line)."""
    lines = text.splitlines()
    if f"{title}:" not in lines:
        return []
    start = lines.index(f"{title}:") + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def help_options(text: str) -> set[str]:
    """The options a help text declares: the flags of each entry's first column."""
    options: set[str] = set()
    for line in _section(text, "Options"):
        if line.startswith("  -"):
            flags = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
            options.update(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", flags))
    return options - HELP_OPTIONS


def help_commands(text: str) -> list[str]:
    """The subcommands a help text lists under ``Commands:``."""
    return [line.split()[0] for line in _section(text, "Commands") if line.startswith("  ")]


def command_tree() -> dict[tuple[str, ...], set[str]]:
    """Every command path team-router's --help shows (the root is ``()``), with its options."""
    tree: dict[tuple[str, ...], set[str]] = {}
    todo: list[tuple[str, ...]] = [()]
    while todo:
        path = todo.pop()
        text = _help(path)
        tree[path] = help_options(text)
        todo.extend((*path, sub) for sub in help_commands(text))
    return tree


def page_of(path: tuple[str, ...]) -> str:
    return FAMILY.get(path[0], f"<no page: add {path[0]!r} to FAMILY>") if path else TOP_LEVEL_PAGE


def missing_on_page(path: tuple[str, ...], options: set[str], page: str) -> list[str]:
    """What of one command the page does not name: its words, and each option."""
    missing = []
    if path and not re.search(r"\b" + re.escape(" ".join(path)) + r"\b", page):
        missing.append(" ".join(path))
    for option in sorted(options):
        if not re.search(r"(?<![\w-])" + re.escape(option) + r"(?![\w-])", page):
            missing.append(f"{' '.join(path) or 'team-router'} {option}")
    return missing


def test_every_command_and_option_the_help_shows_is_on_its_familys_page() -> None:
    tree = command_tree()
    assert {p[0] for p in tree if p} == set(FAMILY), "commands --help lists vs FAMILY"
    missing = {}
    for path, options in sorted(tree.items()):
        page = DOCS / page_of(path)
        text = page.read_text(encoding="utf-8") if page.exists() else ""
        gaps = missing_on_page(path, options, text)
        if gaps:
            missing.setdefault(page.name, []).extend(gaps)
    assert missing == {}


def test_the_help_reader_finds_options_and_subcommands_and_a_page_without_them_fails() -> None:
    tree = command_tree()
    assert {"--integrate", "--force", "--dry-run", "--line-timeout", "--json"} <= tree[
        ("teardown",)
    ]
    assert {"-C", "--version"} <= tree[()]
    assert ("record", "pr") in tree and "--local" in tree[("record", "pr")]
    assert ("hook", "worktree-remove") in tree
    page = "Run `team-router teardown TARGET [--force] [--dry-run-all]`."
    assert missing_on_page(("teardown",), {"--force", "--dry-run"}, page) == ["teardown --dry-run"]
    assert missing_on_page(("record", "pr"), set(), page) == ["record pr"]


# -- error codes ----------------------------------------------------------------------


def test_every_error_code_the_cli_reports_is_in_the_errors_page() -> None:
    page = (DOCS / ERRORS_PAGE).read_text(encoding="utf-8")
    codes = reported_codes()
    assert {"usage", "dirty-worktree", "interrupted"} <= codes
    assert {code for code in codes if f"`{code}`" not in page} == set()


def test_every_reason_a_step_reports_is_in_the_errors_page() -> None:
    from router.reasons import Reason

    page = (DOCS / ERRORS_PAGE).read_text(encoding="utf-8")
    words = {str(r) for r in Reason}
    assert {"merged", "removed", "already-gone"} <= words
    assert {w for w in words if f"`{w}`" not in page} == set()


def documented_exits(page: str) -> set[int]:
    """The exit codes in the first column of the page's ``## Exit codes`` table."""
    section = page.split("\n## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    return {int(m) for m in re.findall(r"^\| `(\d+)` \|", section, re.M)}


def test_every_exit_code_is_in_the_errors_page() -> None:
    documented = documented_exits((DOCS / ERRORS_PAGE).read_text(encoding="utf-8"))
    assert {0, 1, 2, 130} <= exit_codes()
    assert exit_codes() - documented == set()
    assert documented_exits("intro\n## Exit codes\n\n| `0` | done |\n| `2` | bad |\n") == {0, 2}


# -- links ----------------------------------------------------------------------------

_LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    return {_anchor(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*$", text, re.M)}


def broken_links(path: Path) -> list[str]:
    """The relative links of a markdown file whose file or heading does not exist."""
    broken = []
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    for target in _LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # https:, mailto:
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists() or (
            anchor and linked.suffix == ".md" and anchor not in anchors(linked)
        ):
            broken.append(target)
    return broken


def test_every_relative_link_of_the_docs_resolves() -> None:
    links = {str(p.relative_to(ROOT)): broken_links(p) for p in user_docs()}
    assert {name: bad for name, bad in links.items() if bad} == {}
    assert sum(len(_LINK.findall(p.read_text(encoding="utf-8"))) for p in user_docs()) > 20


def test_the_readme_links_every_page_of_docs() -> None:
    linked = {t.partition("#")[0] for t in _LINK.findall(README.read_text(encoding="utf-8"))}
    pages = {f"docs/{p.name}" for p in DOCS.glob("*.md")}
    assert pages - linked == set()


def test_the_link_check_catches_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Title\n\n## Exit codes\n", encoding="utf-8")
    doc = tmp_path / "b.md"
    doc.write_text(
        "[ok](a.md#exit-codes) [gone](c.md#x) [no heading](a.md#nothing) [web](https://x.y/z)\n"
        "```\n[in a fence](nowhere.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(doc) == ["c.md#x", "a.md#nothing"]


# -- the README's size, and no test names in the user's docs ------------------------


def test_the_readme_is_at_most_300_lines() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines"


_TEST_NAME = re.compile(r"\btests?/[\w./-]+|\btest_\w+")


def test_no_user_doc_names_a_test() -> None:
    named = {
        str(p.relative_to(ROOT)): sorted(set(_TEST_NAME.findall(p.read_text(encoding="utf-8"))))
        for p in user_docs()
    }
    assert {name: found for name, found in named.items() if found} == {}


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("see `tests/test_teardown.py`", ["tests/test_teardown.py"]),
        ("`test_a_dirty_worktree_refuses` proves it", ["test_a_dirty_worktree_refuses"]),
        ("run the tests: `.venv/bin/python -m pytest -n 2`", []),
    ],
)
def test_the_test_name_check_reads_paths_and_names(text: str, found: list[str]) -> None:
    assert _TEST_NAME.findall(text) == found
