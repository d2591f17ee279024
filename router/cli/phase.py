"""``phase``, ``next``, ``status`` and ``record ...``: where a run stands, and its gate records."""

from __future__ import annotations

import functools

from router.cli.output import emit_result

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any  # annotations only: importing typing costs ~3 ms


def phase_cmd(cwd: Path, *, target: str | None, as_json: bool) -> int:
    from router.phase.infer import phase_report

    return emit_result("phase", as_json, lambda: phase_report(cwd, target), phase_text)


def next_cmd(cwd: Path, *, target: str | None, until: str | None, as_json: bool) -> int:
    from router.phase.brief import next_report

    return emit_result("next", as_json, lambda: next_report(cwd, target, until=until), next_text)


def status_cmd(cwd: Path, *, as_json: bool) -> int:
    import gc

    # status builds ~100,000 small objects (every topic's answer, then its JSON), all kept
    # until the answer is printed and none in a reference cycle: the collector's passes
    # over them freed nothing and cost ~5% of the command over 500 topics.
    gc.disable()
    try:
        from router.phase.status import render_table, topics_status

        return emit_result("status", as_json, lambda: topics_status(cwd), render_table)
    finally:
        gc.enable()


def phase_text(report: Any) -> str:
    resume = report.resume
    step = f", step {resume.step}" if resume.step else ""
    lines = [
        f"Topic {report.id}",
        f"Resume at: {resume.resume_at}{step}"
        + ("  (HALTED: a person must decide)" if resume.halted else ""),
        f"Done: {', '.join(resume.completed) or 'nothing yet'}",
        f"Artifact directory: {report.plan_dir}",
    ]
    return "\n".join(lines)


def next_text(report: Any) -> str:
    expects = "".join(f"\n  {p}" for p in report.expects) or " (nothing: see the brief)"
    request = f"\nRequest: {report.request}" if report.request is not None else ""
    return f"{phase_text(report)}{request}\nExpects:{expects}\n\n{report.brief.rstrip()}"


# -- record -------------------------------------------------------------------------


def record_round_cmd(
    kind: str,
    cwd: Path,
    *,
    target: str,
    value: str,
    body_file: Path | None,
    wait: float,
    as_json: bool,
) -> int:
    """``record verdict|review|tests|verify``: the numbered gate records, one writer."""
    from router.phase.gates import record_round

    return _emit_record(
        as_json, lambda: record_round(kind, cwd, target, value, body_file=body_file, wait=wait)
    )


record_verdict_cmd = functools.partial(record_round_cmd, "verdict")
record_review_cmd = functools.partial(record_round_cmd, "review")
record_tests_cmd = functools.partial(record_round_cmd, "tests")
record_verify_cmd = functools.partial(record_round_cmd, "verify")


def record_pr_cmd(
    cwd: Path,
    *,
    target: str,
    url: str | None,
    local: bool,
    repo_name: str | None,
    wait: float,
    as_json: bool,
) -> int:
    from router.phase.gates import record_pr

    return _emit_record(
        as_json, lambda: record_pr(cwd, target, url, local=local, repo_name=repo_name, wait=wait)
    )


def record_temp_cmd(cwd: Path, *, target: str, path: str, wait: float, as_json: bool) -> int:
    from router.phase.gates import record_temp

    return _emit_record(as_json, lambda: record_temp(cwd, target, path, wait=wait))


def _emit_record(as_json: bool, work: Any) -> int:
    return emit_result("record", as_json, work, _record_text)


def _record_text(result: Any) -> str:
    if result.existing:
        return f"{result.path} already lists {result.value}"
    lines = [f"Recorded {result.kind} {result.value}: {result.path}"]
    for tip in result.tips:
        state = "pushed" if tip.pushed else "not pushed"
        at = tip.tip[:12] if tip.tip else "no branch"
        lines.append(f"  {tip.name}: {tip.branch} at {at}, {tip.ahead} commit(s), {state}")
    return "\n".join(lines)
