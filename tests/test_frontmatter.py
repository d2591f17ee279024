"""One reader of an artifact's frontmatter: every caller's view of the same text agrees.

``parse_frontmatter`` answers every caller: the inventory (the session-start hook,
``phase``, ``status`` and its cache), the gates, ``record pr``'s typed reading of
pr.md (``typed=True``) and repos.md's reader (the body after the block). Its flat
scanner must read a block exactly as YAML does, and hand YAML any block it cannot.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from router.plandir import artifacts
from router.plandir.frontmatter import as_text

# Texts from the tests of both former readers, and the edge cases of each: quoted
# strings, lists, mappings, multi-line values, comments, malformed blocks, a BOM,
# CRLF, a lone CR, fences with trailing blanks, line separators markdown-it keeps.
BLOCKS = [
    "topic: x\ndate: 2026-05-01\nphase: repos\n",
    "",
    "# a comment\n",
    "topic: 'quoted'\n",
    'topic: "quoted # not a comment"\n',
    "topic: value # comment\n",
    "date: 2026-02-30\n",
    "topic: [a, b]\n",
    "prs:\n  - repo: home\n    url: https://x.test/a/pull/3\n",
    "topic: a: b\n",
    "no: 1\n",
    'topic: "open\n',
    "- a list\n",
    "topic:\n  nested: 1\n",
    "note: |\n  two\n  lines\ntopic: x\n",
    "note: folded\n  on two lines\n",
    "topic: x\r\ndate: 2026-05-01\r\n",
    "\ttopic: x\n",
    "revision: 007\n",
    "revision: 1\nrevision: 2\n",
    "verdict: FAIL\ntags: [a]\nverdict: 'PASS'  # fixed\n",
    "topic: *alias\n",
    "revision: [1]\n",
    "local: yes\nurl: null\n",
    "topic: t\nnote: 'a\u2028b'\n",
    "topic: t\nnote: 'a\x0bb'\n",
    # Each read differently before one reader: the scanner kept the character, YAML
    # refuses it (a control character) or ends the line there (NEL, LS, PS).
    "topic: a\x07b\n",
    "topic: a\x85b\n",
    "topic: a\u2028b\n",
    "topic: x\n# a comment \x0c\n",
]
TEXTS = [
    *(f"---\n{block}---\n\n## Home repo\n" for block in BLOCKS),
    "\ufeff---\r\ntopic: add-rate-limiting\r\nrevision: 1\r\n---\r\n# D\r\n",
    "\ufeff---\ntopic: t\nnotes: [a, b]\n---\n",
    "\ufeffno frontmatter\n",
    "---\rtopic: t\r---\rbody\r",
    "---\ntopic: t\n---\u2028\nbody\n",
    "--- \ntopic: t\nrevision: 1\n--- \n# D\n",
    "---\t\r\ntopic: t\r\n--- \t\r\nbody\r\n",
    "---\ntopic: t\n",
    "---\n---\n",
    "---\ntopic: t\n---",
    "no frontmatter at all\n---\ntopic: t\n---\n",
    "",
]


def _views(text: str) -> dict[str, object]:
    """What each caller reads from ``text``."""
    hot = artifacts.parse_frontmatter(text)  # inventory: hook, phase, status, the gates
    typed = artifacts.parse_frontmatter(text, typed=True)  # record pr: prs, repos
    remembered = artifacts._from_json(json.loads(json.dumps(list(hot[:4]))))  # status's cache
    return {
        "hot": hot[:4],
        "typed": typed[:4],
        "typed data as text": (
            {k: as_text(v) for k, v in typed.data.items()} if typed.error is None else {}
        ),
        "remembered": tuple(remembered or ())[:4],
        "body": (typed.body, typed.body_line),
        "hot body": (hot.body, hot.body_line),
        "by lines": artifacts.parse_by_lines(text)[:6],
    }


@pytest.mark.parametrize("text", TEXTS)
def test_every_caller_reads_a_frontmatter_as_the_one_reader_does(text, tmp_path):
    views = _views(text)
    hot = views["hot"]
    assert views["typed"] == hot
    assert views["remembered"] == hot
    assert views["hot body"] == views["body"]
    assert views["by lines"] == (*hot, *views["body"])
    if hot[1] is None:
        assert views["typed data as text"] == hot[0]
    path = tmp_path / "a.md"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    assert artifacts.read_frontmatter(str(path))[:4] == hot
    assert artifacts.read_frontmatter(path, typed=True)[:4] == hot


_SPECIAL = "special characters are not allowed"
REFUSED = {
    "topic: a\x07b\n": f"frontmatter is not valid YAML (unacceptable character #x0007: {_SPECIAL})",
    "topic: x\n\x0c\n": f"frontmatter is not valid YAML (unacceptable character #x000c: {_SPECIAL})",
    "topic: a\x85b\n": "line 4: frontmatter is not valid YAML (could not find expected ':')",
    "topic: a\u2028b\n": "line 4: frontmatter is not valid YAML (could not find expected ':')",
}


@pytest.mark.parametrize("block", list(REFUSED))
def test_a_character_yaml_refuses_makes_the_block_unreadable_for_every_caller(block, tmp_path):
    # The flat scanner read these as text while YAML refused them: `phase` and
    # `record pr` read one file two ways. YAML's answer is the one (the file is YAML):
    # the inventory warns and ignores the block, as it does any invalid frontmatter.
    text = f"---\n{block}---\n# D\n"
    fm = artifacts.parse_frontmatter(text)
    assert fm[:4] == ({}, REFUSED[block], True, None)
    assert artifacts.parse_frontmatter(text, typed=True)[:4] == fm[:4]
    plan = tmp_path / "docs" / "plans" / "2026-05-01-x"
    plan.mkdir(parents=True)
    (plan / "design.md").write_text(text, encoding="utf-8")
    inv = artifacts.inventory(str(plan), "2026-05-01-x")
    design = plan / "design.md"
    assert inv.warnings == (f"{design}: {REFUSED[block]}; its frontmatter is ignored",)


def test_a_frontmatter_with_a_list_is_read_by_yaml_and_typed_on_request():
    text = "---\nphase: pr\nprs:\n  - repo: home\n    url: https://x.test/p/1\n---\n"
    assert artifacts.parse_frontmatter(text).fields == {
        "phase": "pr",
        "prs": "[{repo: home, url: 'https://x.test/p/1'}]",
    }
    data = artifacts.parse_frontmatter(text, typed=True).data
    assert data == {"phase": "pr", "prs": [{"repo": "home", "url": "https://x.test/p/1"}]}
    assert artifacts.parse_frontmatter(text).data is None  # the hot path asks no YAML


_scalars = st.one_of(
    st.from_regex(r"[a-z][a-z0-9 -]{0,20}[a-z0-9]", fullmatch=True),
    st.from_regex(r"[0-9]{1,4}", fullmatch=True),
    st.from_regex(r"20[0-9]{2}-[01][0-9]-[0-3][0-9]", fullmatch=True),
    st.sampled_from(
        [
            "null",
            "~",
            "",
            "yes",
            "Off",
            "REQUEST CHANGES",
            "https://x.test/a/pull/3",
            '"quoted # not a comment"',
            "'single'",
            "[a, b]",
            "a: b",
            "-1",
            "1.5",
            "value # comment",
            "*alias",
            "{x: 1}",
            ">",
            "0x1f",
        ]
    ),
)


_keys = st.one_of(
    st.from_regex(r"[a-z][a-zA-Z_]{0,8}", fullmatch=True), st.sampled_from(["no", "On", "null"])
)


@settings(deadline=None)
@given(st.dictionaries(_keys, _scalars, max_size=6))
def test_the_flat_scanner_reads_exactly_what_yaml_reads(fields):
    # The scanner answers a flat block in place of YAML: it must give YAML's answer.
    text = (
        "---\n" + "".join(f"{k}: {v}\n".replace(": \n", ":\n") for k, v in fields.items()) + "---\n"
    )
    fast = artifacts.parse_frontmatter(text)
    slow = artifacts.parse_frontmatter(text, typed=True)
    if slow.error:
        assert fast.error
        return
    assert fast.error is None
    assert fast.fields == {k: as_text(v) for k, v in slow.data.items()}


def test_a_fence_line_ended_by_a_separator_is_not_a_fence_for_any_caller():
    # markdown-it keeps U+2028 inside the line: "---\u2028" closes nothing.
    text = "---\ntopic: t\n---\u2028\nbody\n"
    assert artifacts.parse_frontmatter(text, typed=True).error is not None
    assert artifacts.parse_frontmatter(text).error is not None


def test_every_caller_takes_a_lone_carriage_return_as_a_line_break():
    text = "---\rtopic: t\r---\rbody\r"
    assert artifacts.parse_frontmatter(text, typed=True).data == {"topic": "t"}
    assert artifacts.parse_frontmatter(text).fields == {"topic": "t"}


def test_the_characters_yaml_decides_are_exactly_those_outside_its_printable_set():
    # YAML 1.1's printable set (tab, LF, CR, x20-x7E, NEL's neighbours xA0 onwards, all
    # but the surrogates, xFFFE/xFFFF) less the line breaks markdown-it does not break
    # on (NEL is outside x20-x7E and below xA0; LS and PS are taken out here).
    from router.plandir.flatfields import yaml_decides

    def printable(c: int) -> bool:
        return (
            c in (0x09, 0x0A, 0x0D)
            or 0x20 <= c <= 0x7E
            or (0xA0 <= c <= 0xD7FF and c not in (0x2028, 0x2029))
            or 0xE000 <= c <= 0xFFFD
            or 0x10000 <= c <= 0x10FFFF
        )

    odd = [c for c in range(0x110000) if yaml_decides(chr(c), 1) != (not printable(c))]
    assert odd == []
