"""The JSON envelope's text: exactly what ``json.dumps(value, indent=2, default=str)`` writes."""

from __future__ import annotations

import enum
import json
import math
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from router.cli.jsontext import dumps


class Word(enum.StrEnum):
    OK = "ok"


class Number(enum.IntEnum):
    ONE = 1


LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
    | st.sampled_from([Word.OK, Number.ONE, Path("/a/b"), math.inf, -math.inf, 10**40])
)
KEYS = st.text() | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
VALUES = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(KEYS, inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)  # a loaded machine is no failure
@given(VALUES)
def test_the_text_is_json_dumps_with_an_indent_of_two(value):
    assert dumps(value) == json.dumps(value, indent=2, default=str)


def test_a_circular_value_is_refused_as_json_refuses_it():
    value: list[object] = []
    value.append(value)
    try:
        json.dumps(value, indent=2, default=str)
    except ValueError as exc:
        expected = str(exc)
    try:
        dumps(value)
    except ValueError as exc:
        assert str(exc) == expected
    else:
        raise AssertionError("a circular value was written")
