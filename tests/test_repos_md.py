"""repos.md write-back and frontmatter: lines are cut where markdown-it cuts them, no elsewhere.

``str.splitlines`` also breaks on VT, FF, FS, GS, RS, NEL, U+2028 and U+2029;
markdown-it (CommonMark) breaks only on ``\\r\\n``, ``\\r`` and ``\\n``. Every
line number markdown-it gives must index the same line of the file, or the
``## Worktrees`` write-back replaces the wrong lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from router.errors import BadInput
from router.plandir.artifacts import parse_frontmatter
from router.plandir.reposmd import (
    WorktreeLine,
    parse_repos_md,
    with_worktrees_section,
    worktree_lines,
)

SETTINGS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)
# Line breaks to str.splitlines but not to CommonMark, and CommonMark's own.
BREAKERS = "\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e\r\n"
MARKDOWN = "#-*+>= \t:/`~<[]!1a"
TEXT = st.text(
    alphabet=st.one_of(st.sampled_from(BREAKERS + MARKDOWN), st.characters()), max_size=120
)

HEAD = (
    "---\ntopic: t\ndate: 2026-05-01\nphase: repos\n---\n\n# Repos: t\n\n"
    "## Home repo\n- **name:** web\n- **path:** /ws/web\n\n## Notes\n"
)
OLD_SECTION = "## Worktrees\n- home: /old/web\n- gone: /old/gone\n"
ENTRIES = [WorktreeLine("home", "/ws/web/.claude/worktrees/b"), WorktreeLine("api", "/ws/api/w")]
NEW_SECTION = "## Worktrees\n- home: /ws/web/.claude/worktrees/b\n- api: /ws/api/w\n"


def _inert(text: str) -> str:
    """``text`` with nothing that could swallow the blocks after it (fences, HTML blocks)."""
    return "".join(c for c in text if c not in "`~<")


def _ours(text: str) -> bool:
    """Would ``text`` itself hold a section the test places elsewhere?"""
    folded = text.lower()
    return any(word in folded for word in ("orktrees", "ome repo", "dditional"))


@SETTINGS
@given(before=TEXT, after=TEXT)
def test_the_write_back_keeps_every_byte_outside_the_section_and_a_rerun_changes_nothing(
    before, after
):
    before = _inert(before)
    assume(not _ours(before) and not _ours(after))
    prefix = HEAD + before + "\n\n"
    suffix = "\n## After\n" + after
    out = with_worktrees_section(parse_repos_md(prefix + OLD_SECTION + suffix), ENTRIES)
    assert out.startswith(prefix)
    assert out.endswith(suffix)
    section = out[len(prefix) : len(out) - len(suffix)]
    assert section.replace("\r\n", "\n") == NEW_SECTION
    assert with_worktrees_section(parse_repos_md(out), ENTRIES) == out
    _every_reader_finds(out, ENTRIES)


def _every_reader_finds(text: str, entries: list[WorktreeLine]) -> None:
    # One reader: from the text (phase inference) or the parsed file (teardown, doctor).
    assert worktree_lines(text) == entries
    assert worktree_lines(parse_repos_md(text)) == entries


@SETTINGS
@given(before=TEXT)
def test_an_appended_section_keeps_the_file_as_its_prefix_and_a_rerun_changes_nothing(before):
    assume(not _ours(before))
    text = HEAD + before
    try:
        out = with_worktrees_section(parse_repos_md(text), ENTRIES)
    except BadInput as exc:
        # The file ends inside a block (a code fence, an HTML block) that would
        # swallow any heading appended after it: refused, never appended twice.
        assert exc.code == "repos-md" and "## Worktrees" in exc.message
        return
    assert out.startswith(text)
    assert with_worktrees_section(parse_repos_md(out), ENTRIES) == out
    _every_reader_finds(out, ENTRIES)


@pytest.mark.parametrize("char", list("\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e"))
def test_a_line_holding_a_unicode_line_separator_keeps_the_lines_after_the_section(char):
    text = HEAD + f"a note{char}with a separator\n\n" + OLD_SECTION + "\n## After\nkeep me\n"
    out = with_worktrees_section(parse_repos_md(text), ENTRIES)
    assert out == HEAD + f"a note{char}with a separator\n\n" + NEW_SECTION + "\n## After\nkeep me\n"


def test_a_lone_carriage_return_is_a_line_break_as_markdown_it_sees_it():
    text = HEAD + "old mac line\rnext\n\n" + OLD_SECTION + "\n## After\nkeep me\n"
    out = with_worktrees_section(parse_repos_md(text), ENTRIES)
    assert out == HEAD + "old mac line\rnext\n\n" + NEW_SECTION + "\n## After\nkeep me\n"


@pytest.mark.parametrize("char", list("\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e"))
def test_the_frontmatter_ends_on_the_line_markdown_it_counts(char):
    text = f"---\ntopic: t\nnote: 'a{char}b'\n---\nbody\n"
    parsed = parse_frontmatter(text, typed=True)
    assert (parsed.body, parsed.body_line) == ("body\n", 5)


def test_the_section_readers_find_its_lines_after_many_separators():
    separators = "\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e" * 2
    text = HEAD + f"note{separators}end\n\n" + NEW_SECTION + "\n## After\n"
    _every_reader_finds(text, ENTRIES)


@pytest.mark.parametrize("tail", ["```\ncode\n", "<!-- a comment never closed\n", "~~~"])
def test_a_file_ending_inside_a_block_is_refused_rather_than_appended_on_every_run(tail):
    text = HEAD + tail
    with pytest.raises(BadInput) as info:
        with_worktrees_section(parse_repos_md(text), ENTRIES)
    assert info.value.code == "repos-md"
    assert "close that block" in info.value.message


FIVE_LINES = """## Worktrees
- api: /ws/api/.claude/worktrees/t
- Billing: /ws/billing/.claude/worktrees/t
- web :/ws/web/.claude/worktrees/t
- docs: `/ws/docs/.claude/worktrees/t`
- cli: relative/path
"""


def test_every_command_reads_the_same_entries_from_one_worktrees_section(tmp_path):
    # Three parsers used to find 2, 1 and 5 entries here (phase inference, teardown, doctor).
    from router.doctor import sections as doctor
    from router.phase import infer as phases
    from router.topic.discovery import PlanDir

    text = HEAD + "\n" + FIVE_LINES
    expected = [
        WorktreeLine("api", "/ws/api/.claude/worktrees/t"),
        WorktreeLine("Billing", "/ws/billing/.claude/worktrees/t"),
        WorktreeLine("web", "/ws/web/.claude/worktrees/t"),
        WorktreeLine("docs", "/ws/docs/.claude/worktrees/t"),
        WorktreeLine("cli", "relative/path"),
    ]
    _every_reader_finds(text, expected)
    assert doctor._section_lines(parse_repos_md(text)) == {e.name: e.path for e in expected}
    plan = tmp_path / "docs" / "plans" / "2026-05-01-t"
    plan.mkdir(parents=True)
    (plan / "repos.md").write_text(text)
    repo = _opened(tmp_path)
    found = phases.topic_repos(repo, PlanDir(plan.name, str(plan), str(tmp_path)), [])
    assert {r.name: r.worktree for r in found if r.name != "home"} == {
        e.name: e.path for e in expected if e.placed is not None
    }


def _opened(root: Path):
    from helpers.repos import git

    from router.topic.workspace import open_repo

    git(root, "init", "-q", "-b", "main")
    return open_repo(root)


def test_a_heading_inside_a_list_item_starts_no_section_and_its_repo_is_refused_not_dropped():
    # It switched the section mid-item (an IndexError, the command's internal error);
    # then the item stayed in the home section, where its repo was skipped silently.
    text = (
        "## Home repo\n- **name:** web\n  **path:** /w/web\n"
        "- note\n  ## Additional repos\n  **name:** api\n  **path:** /w/api\n"
    )
    with pytest.raises(BadInput) as info:
        parse_repos_md(text)
    assert info.value.code == "repos-md"
    assert info.value.message.startswith("repos.md line 6: a second **name:** under '## Home repo'")
    assert "'## Additional repos'" in info.value.message


@pytest.mark.parametrize(
    "nested",
    [
        # Repos grouped under a bullet: only the first was read, the rest skipped silently.
        "- Backend:\n  - **name:** api\n    **path:** /w/api\n"
        "  - **name:** worker\n    **path:** /w/worker\n",
        "- **name:** api\n  **path:** /w/api\n  - **name:** worker\n    **path:** /w/worker\n",
    ],
)
def test_a_repo_nested_in_another_item_is_an_error_not_skipped(nested):
    text = "## Home repo\n- **name:** web\n- **path:** /w/web\n\n## Additional repos\n" + nested
    with pytest.raises(BadInput) as info:
        parse_repos_md(text)
    assert info.value.code == "repos-md"
    assert "second **name:**" in info.value.message and "line 6" in info.value.message


@pytest.mark.parametrize(
    "heading",
    ["## Additional repos:", "## Additional repositories", "## **Additional repos**", "# Repos"],
)
def test_a_repo_listed_under_a_section_that_is_not_read_is_an_error_not_skipped(heading):
    text = (
        "## Home repo\n- **name:** web\n- **path:** /w/web\n\n"
        f"{heading}\n- **name:** api\n  **path:** /w/api\n"
    )
    with pytest.raises(BadInput) as info:
        parse_repos_md(text)
    assert info.value.code == "repos-md"
    assert "line 6:" in info.value.message and "not read" in info.value.message


def test_a_byte_order_mark_before_the_home_heading_is_skipped_as_before_frontmatter():
    # Without frontmatter the BOM stayed on the first heading, which then was no heading:
    # "no '## Home repo' section" for a file that has one.
    text = (
        "\ufeff## Home repo\n- **name:** web\n- **path:** /w/web\n\n"
        "## Additional repos\n- **name:** api\n  **path:** /w/api\n"
    )
    parsed = parse_repos_md(text)
    assert (parsed.home.name, [s.name for s in parsed.secondaries]) == ("web", ["api"])
    out = with_worktrees_section(parsed, ENTRIES)
    assert out == text + "\n" + NEW_SECTION
    assert with_worktrees_section(parse_repos_md(out), ENTRIES) == out


@pytest.mark.parametrize(
    ("heading", "fix"),
    [
        ("### Additional repos", "## Additional repos"),
        ("# Additional repos", "## Additional repos"),
        ("Additional Repos\n================", "## Additional Repos"),  # a setext level 1
        ("#### Worktrees", "## Worktrees"),
        ("### home repo", "## home repo"),
    ],
)
def test_a_section_heading_at_another_level_is_refused_naming_the_level_2_heading(heading, fix):
    # "### Additional repos" under "## Home repo" merged its repos into the home
    # section, where only the home repo's fields are read: the repo was dropped.
    text = (
        "## Home repo\n- **name:** web\n- **path:** /w/web\n\n"
        f"{heading}\n- **name:** api\n  **path:** /w/api\n"
    )
    with pytest.raises(BadInput) as info:
        parse_repos_md(text)
    assert info.value.code == "repos-md"
    assert info.value.message.startswith("repos.md line 5:")
    assert f"make it a level-2 heading '{fix}'" in info.value.message


@pytest.mark.parametrize(
    ("section", "line"),
    [
        ("## Home repo\nweb /w/web\n", 2),  # the home repo as a plain line
        ("## Home repo\n- **name:** web\n- **path:** /w/web\n\napi /w/api\n", 5),
        ("## Home repo\n- **name:** web\n- **path:** /w/web\n\n## Additional repos\napi\n", 6),
        (
            "## Home repo\n- **name:** web\n- **path:** /w/web\n## Additional repos\n```\napi\n```\n",
            5,
        ),
        (
            "## Home repo\n- **name:** web\n- **path:** /w/web\n## Additional repos\n> api /w/api\n",
            5,
        ),
    ],
)
def test_text_in_a_repo_section_that_is_not_a_list_item_is_refused_naming_its_line(section, line):
    with pytest.raises(BadInput) as info:
        parse_repos_md(section)
    assert info.value.code == "repos-md"
    assert info.value.message.startswith(f"repos.md line {line}: text under '## ")
    assert "not a list item" in info.value.message and "**name:**" in info.value.message


def test_a_second_repo_in_the_home_section_is_refused_not_skipped():
    text = (
        "## Home repo\n- **name:** web\n  **path:** /w/web\n- **name:** api\n  **path:** /w/api\n"
    )
    with pytest.raises(BadInput) as info:
        parse_repos_md(text)
    assert info.value.message.startswith("repos.md line 4: a second **name:** under '## Home repo'")


def test_comments_breaks_and_notes_elsewhere_are_not_repos_and_are_read_past():
    text = (
        "---\ntopic: t\n---\n\n# Repos: t\n\nSome prose.\n\n## Home repo\n<!-- the UI -->\n"
        "- **name:** web\n- **path:** /w/web\n\n## Additional repos\n<!-- none yet -->\n\n***\n\n"
        "## Notes\nA note with /a/path.\n\n| a | b |\n"
    )
    parsed = parse_repos_md(text)
    assert (parsed.home.name, parsed.secondaries) == ("web", ())
