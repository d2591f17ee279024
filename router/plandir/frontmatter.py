"""YAML frontmatter of artifact files: read it, never crash on it."""

from __future__ import annotations

from router.plandir.flatfields import flat_fields  # the scanner that knows what YAML accepts
from router.plandir.mdlines import BOM, is_fence, split_lines
from router.records import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any  # annotations only: importing typing costs ~3 ms


@record
class Frontmatter:
    """A markdown file split into its YAML frontmatter (parsed) and its body."""

    data: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    body_line: int = 1  # 1-based line of the body's first line in the file
    error: str | None = None  # why the frontmatter could not be read
    present: bool = False


def split(text: str, *, need_data: bool = True) -> Frontmatter:
    """Split ``text`` into its frontmatter mapping and body; errors are data, not exceptions.

    Without ``need_data`` (a caller that wants the body and whether the block
    is valid), ``data`` is empty and a block of flat ``key: scalar`` lines is
    judged without importing YAML (~25 ms).
    """
    # Cut as markdown-it cuts: ``body_line`` offsets its line numbers into this file.
    lines = split_lines(text)
    if not lines or not is_fence(lines[0].removeprefix(BOM)):
        return Frontmatter(body=text)
    for i in range(1, len(lines)):
        if is_fence(lines[i]):
            raw = "".join(lines[1:i])
            body = "".join(lines[i + 1 :])
            if not need_data and _flat(raw):
                return Frontmatter({}, body, i + 2, None, present=True)
            data, error = _load_yaml(raw)
            return Frontmatter(data or {}, body, i + 2, error, present=True)
    return Frontmatter(
        body=text, error="line 1: frontmatter opened with --- is never closed", present=True
    )


def _flat(raw: str) -> bool:
    return flat_fields(split_lines(raw, keepends=False)) is not None


def _load_yaml(raw: str) -> tuple[dict[str, Any] | None, str | None]:
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


def read_file(path: Any) -> Frontmatter:
    """Frontmatter of a file on disk; an unreadable file is an error, not an exception."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return Frontmatter(error=f"cannot be read ({exc.strerror})")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Frontmatter(error="is not UTF-8 text")
    return split(text)
