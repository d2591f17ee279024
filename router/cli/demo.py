"""``demo``: a narrated multi-repo run on throw-away repositories."""

from __future__ import annotations

from router.cli.output import emit_result

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def demo_cmd(cwd: Path, *, directory: Path | None, keep: bool, as_json: bool) -> int:
    from router.demo import run_demo

    base = None if directory is None else cwd / directory
    say = _quiet if as_json else _say
    return emit_result("demo", as_json, lambda: run_demo(base=base, keep=keep, say=say), _demo_text)


def _say(line: str) -> None:
    from router.cli.output import write_out

    write_out(line)


def _quiet(line: str) -> None:
    return None


def _demo_text(result) -> str:
    where = f"kept in {result.root}" if result.kept else "the demo's repos were removed"
    return f"\nDone: {len(result.steps)} steps, exit 0; {where}."
