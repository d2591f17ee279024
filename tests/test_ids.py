from __future__ import annotations

import datetime as dt
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from router.errors import BadInput
from router.names import derive_id, parse_id, portable_name_problem, slugify, with_suffix


@pytest.mark.parametrize(
    ("description", "slug"),
    [
        (
            "Add rate limiting middleware to all API endpoints",
            "add-rate-limiting-middleware-to-all",
        ),
        ("Fix the bug in the", "fix-the-bug"),
        ("Crème brûlée façade", "creme-brulee-facade"),
        ("", "topic"),
        ("!!! ???", "topic"),
        ("the of and", "the"),
        ("a" * 60, "a" * 40),
        (
            "Supercalifragilisticexpialidocious words overflow boundary here",
            "supercalifragilisticexpialidocious-words",
        ),
        ("Refactor   the\tlogin/flow for SSO", "refactor-the-login-flow-for-sso"),
    ],
)
def test_slugify_follows_the_design_rules(description, slug):
    assert slugify(description) == slug


@pytest.mark.parametrize(
    ("request_text", "topic_id"),
    [
        ("ENG-1234 add rate limit", "ENG-1234-add-rate-limit"),
        ("ENG-1234: add rate limit", "ENG-1234-add-rate-limit"),
        ("[ENG-1234] add rate limit", "ENG-1234-add-rate-limit"),
        ("ENG-1234", "ENG-1234-topic"),
        ("https://github.com/org/api/issues/123 add rate limit", "api-123-add-rate-limit"),
        ("https://github.com/org/team-router/pull/7 fix the hook", "team_router-7-fix-the-hook"),
        ("<https://github.com/org/api/issues/123>", "api-123-topic"),
        ("https://github.com/org/9lives/issues/3 x", "issue-3-x"),
        ("https://gitlab.com/grp/sub/web/-/issues/12 add x", "web-12-add-x"),
        ("https://acme.atlassian.net/browse/ENG-12 add x", "ENG-12-add-x"),
        ("https://linear.app/acme/issue/ENG-123/add-x", "ENG-123-topic"),
        # An unknown URL is no ticket, and never the slug.
        ("https://example.com/notes add x", "2026-12-02-add-x"),
        # Lowercase words with a number are a description, not a ticket.
        ("covid-19 dashboard", "2026-12-02-covid-19-dashboard"),
        ("Add ENG-1234 support", "2026-12-02-add-eng-1234-support"),
    ],
)
def test_a_ticket_key_or_issue_url_leading_the_request_becomes_the_prefix(request_text, topic_id):
    assert derive_id(request_text, today=dt.date(2026, 12, 2)) == topic_id
    assert parse_id(topic_id).id == topic_id


def test_an_explicit_ticket_or_date_wins_over_the_request():
    assert derive_id("ENG-1 add x", ticket="ENG-1") == "ENG-1-add-x"
    assert derive_id("ENG-1 add x", ticket="OPS-2") == "OPS-2-eng-1-add-x"
    assert derive_id("ENG-1 add x", date="2026-05-01") == "2026-05-01-eng-1-add-x"


def test_an_issue_url_with_another_prefix_chosen_stays_in_the_slug_as_its_key():
    url = "https://github.com/acme/web/issues/12 fix the retry"
    assert derive_id(url, date="2026-05-01") == "2026-05-01-web-12-fix-the-retry"
    assert derive_id(url, ticket="OPS-2") == "OPS-2-web-12-fix-the-retry"
    assert derive_id(url) == "web-12-fix-the-retry"


def test_derive_id_uses_ticket_date_or_today():
    assert derive_id("Add X", ticket="ENG-1234") == "ENG-1234-add-x"
    assert derive_id("Add X", date="2026-05-01") == "2026-05-01-add-x"
    assert derive_id("Add X", today=dt.date(2026, 12, 2)) == "2026-12-02-add-x"


@pytest.mark.parametrize(
    "value",
    [
        "add-rate-limiting",  # no prefix
        "2026-05-01-Add-Caps",  # uppercase slug
        "2026-13-01-month-thirteen",  # not a date
        "2026-02-30-no-such-day",
        "ENG-12-",  # empty slug
        "ENG-12--lead-dash",
        "-ENG-12-x",
        "ENG-12-a b",
        "ENG-12-a/b",
        "ENG-12-" + "x" * 100,  # too long for a portable name
        "ENG-12-x\n",
    ],
)
def test_parse_id_refuses_invalid_ids(value):
    with pytest.raises(BadInput) as info:
        parse_id(value)
    assert info.value.code == "invalid-id"


def test_parse_id_splits_prefix_and_topic():
    topic = parse_id("ENG-1234-add-rate-limiting")
    assert (topic.id, topic.topic, topic.branch) == (
        "ENG-1234-add-rate-limiting",
        "add-rate-limiting",
        "ENG-1234-add-rate-limiting",
    )
    assert parse_id("2026-05-01-x").topic == "x"


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "empty"),
        ("..", "relative"),
        ("a:b", "contains"),
        ("trailing.", "ends with"),
        ("trailing ", "ends with"),
        ("CON", "reserved"),
        ("com3.txt", "reserved"),
        ("x\x01", "control"),
        ("y" * 101, "longer"),
    ],
)
def test_portable_name_rules(name, problem):
    assert problem in (portable_name_problem(name) or "")


def test_portable_name_accepts_ordinary_names():
    assert portable_name_problem("2026-05-01-add-x") is None


def test_bad_ticket_and_date_are_invalid_ids():
    for kwargs in ({"ticket": "1234"}, {"ticket": "ENG_12"}, {"date": "05/01/2026"}):
        with pytest.raises(BadInput):
            derive_id("x", **kwargs)


def test_a_collision_suffix_counts_in_the_slugs_40_characters():
    base = derive_id("Add rate limiting middleware everywhere now", date="2026-05-01")
    assert base == "2026-05-01-add-rate-limiting-middleware-everywhere"  # slug: 39 characters
    assert with_suffix(base, 2) == "2026-05-01-add-rate-limiting-middleware-2"
    short = "2026-05-01-add-rate-limiting-middleware-to-all"  # 35: room for the suffix
    assert with_suffix(short, 2) == short + "-2"
    long = "2026-05-01-" + "a" * 40
    assert with_suffix(long, 100) == "2026-05-01-" + "a" * 36 + "-100"  # one word: hard-cut
    for n in (2, 10, 100):
        slug = parse_id(with_suffix(derive_id("x " * 3 + "y" * 30, date="2026-05-01"), n)).topic
        assert len(slug) <= 40


def test_with_suffix_counts_from_two():
    assert with_suffix("2026-05-01-x", 1) == "2026-05-01-x"
    assert with_suffix("2026-05-01-x", 2) == "2026-05-01-x-2"


@settings(max_examples=150, deadline=None)
@given(
    prefix=st.one_of(
        st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,6}-[0-9]{1,5}", fullmatch=True),
        st.dates().map(lambda d: d.isoformat()),
    ),
    slug=st.from_regex(r"[a-z0-9][a-z0-9-]{0,30}", fullmatch=True),
)
def test_every_id_parse_id_accepts_is_a_branch_name_git_accepts(prefix, slug):
    # `new` relies on this instead of running `git check-ref-format` per id.
    value = f"{prefix}-{slug}"
    try:
        topic = parse_id(value)
    except BadInput:
        return  # too long, or otherwise refused: never a branch
    proc = subprocess.run(
        ["git", "check-ref-format", "--branch", topic.branch], capture_output=True, check=False
    )
    assert proc.returncode == 0, (topic.branch, proc.stderr)
