"""``hold``, ``release`` and ``doctor``: holders and consistency checks (DESIGN §10)."""

from __future__ import annotations

import contextlib

from router import interrupt
from router.cli.output import emit_result

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def hold_cmd(
    cwd: Path, *, target: str | None, pid: int | None, session: str | None, as_json: bool
) -> int:
    from router.topic.hold import hold

    return emit_result(
        "hold", as_json, lambda: hold(cwd, target, pid=pid, session=session), _hold_text
    )


def release_cmd(
    cwd: Path, *, target: str | None, pid: int | None, session: str | None, as_json: bool
) -> int:
    from router.topic.hold import release_topic

    return emit_result(
        "release", as_json, lambda: release_topic(cwd, target, pid=pid, session=session), _hold_text
    )


def _hold_text(result) -> str:
    from router.topic.holders import describe

    done = ", ".join(describe(h) for h in result.holders) or "nobody"
    live = ", ".join(describe(h) for h in result.live) or "none"
    return f"{result.id}: {result.action} {done}\nlive holders: {live}"


def doctor_cmd(cwd: Path, *, repair: bool, wait: float, as_json: bool) -> int:
    from router.doctor import doctor

    # Repairs stop at the next one on a signal, and the findings say which were made.
    with interrupt.deferred() if repair else contextlib.nullcontext():
        return emit_result(
            "doctor", as_json, lambda: doctor(cwd, repair=repair, wait=wait), _doctor_text
        )


def _doctor_text(result) -> str:
    where = ", ".join(str(r) for r in result.repos)
    if not result.findings:
        return f"No problems found in {where}."
    lines = [f"Checked {where}:"]
    for finding in result.findings:
        mark = " [repaired]" if finding.repaired else ""
        lines.append(f"  {finding.kind}: {finding.path}{mark}")
        lines.append(f"      {finding.detail}")
    if result.repairable:
        lines.append("Run `team-router doctor --repair` to fix what is safe to fix.")
    if result.interrupted:
        lines.append(f"{result.error['message']} [interrupted]")
    return "\n".join(lines)
