"""A frontmatter block YAML must read: the full parser behind the one reader.

router.plandir.artifacts.parse_frontmatter owns the reading of every artifact's
frontmatter; it hands a block here only when the flat scanner is not sure of it
(lists, mappings, multi-line values, anything YAML reads its own way), or when a
caller asks for YAML's typed mapping.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any  # annotations only: importing typing costs ~3 ms


def load_yaml(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """The block's mapping, or why it is not one; YAML's exceptions are data here."""
    import yaml  # lazy: only files with frontmatter pay for it

    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 2}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return None, f"{where}frontmatter is not valid YAML ({problem})"
    except Exception as exc:  # yaml raises a few non-YAMLError types on hostile input
        return None, f"frontmatter is not valid YAML ({type(exc).__name__})"
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        return None, "frontmatter is not a mapping of keys to values"
    return {str(k): v for k, v in data.items()}, None


def as_text(value: object) -> str | None:
    """YAML's typed scalar as the scanner would give it (text; None for null).

    A list or mapping is kept as YAML's flow text (``[1]``), not dropped: dropped,
    ``revision: [1]`` read as no revision at all (the first draft), silently. That
    text (``[1]``, ``{a: 1}``) never passes for a revision, a verdict or a topic.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict, set, tuple)):
        return _flow(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()  # type: ignore[attr-defined]
    return str(value)


_FLOW_MAX = 60  # a warning quotes the text: a long list is cut, its brackets show what it was


def _flow(value: object) -> str:
    import yaml  # already imported: only the YAML reader gives lists and mappings

    text = " ".join(yaml.safe_dump(value, default_flow_style=True, width=1 << 30).split())
    return text if len(text) <= _FLOW_MAX else text[: _FLOW_MAX - 1] + "…"
