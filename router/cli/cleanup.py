"""``pr-cleanup``: after a merge (or an explicit abandon), take one branch apart."""

from __future__ import annotations

import sys

from router import interrupt
from router.cli.output import emit_result, line_echo
from router.cli.teardown import step_lines
from router.errors import RouterError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def _confirm(target: str | None, abandon: bool, yes: bool, dry_run: bool) -> bool | None:
    """True (--yes or a yes at the prompt), False (declined), None (no terminal to ask on)."""
    if not abandon or yes or dry_run:
        return True
    if not sys.stdin.isatty():
        return None  # never prompt when stdin is not a terminal
    what = target or "the checked-out branch"
    return _ask(
        f"Abandon {what}: close its PR(s), force-remove its worktree (after a snapshot) and delete "
        "the branch here and on origin?"
    )


def _ask(question: str) -> bool:
    """A yes or no on the terminal (stderr); no answer (Enter, end of input) is no."""
    while True:
        sys.stderr.write(f"{question} [y/N]: ")
        sys.stderr.flush()
        answer = sys.stdin.readline()
        word = answer.strip().lower()
        if word in ("y", "yes"):
            return True
        if not answer or word in ("", "n", "no"):
            return False
        sys.stderr.write("Error: invalid input\n")


def pr_cleanup_cmd(
    cwd: Path,
    *,
    target: str | None,
    abandon: bool,
    delete_remote: bool,
    reclaim: bool,
    yes: bool,
    dry_run: bool,
    remove_reused: bool,
    line_timeout: float,
    wait: float,
    as_json: bool,
) -> int:
    from router.teardown.prcleanup import CleanupResult, pr_cleanup

    def run() -> CleanupResult:
        try:
            return pr_cleanup(
                cwd,
                target,
                abandon=abandon,
                delete_remote=delete_remote,
                reclaim=reclaim,
                confirmed=_confirm(target, abandon, yes, dry_run),
                yes=yes,
                dry_run=dry_run,
                wait=wait,
                line_timeout=line_timeout,
                echo=line_echo(as_json),
                remove_reused=remove_reused,
            )
        except RouterError as exc:
            # A refusal raised before the plan exists (a dirty primary, a protected
            # branch) still tells a caller it answered a dry run, as the plan's do.
            if dry_run:
                exc.details.setdefault("dry_run", True)
            raise

    with interrupt.deferred():  # a signal stops it at a step boundary, and it reports
        return emit_result("pr-cleanup", as_json, run, _text)


def _text(result) -> str:
    head = "Plan (dry run, nothing changed)" if result.dry_run else "pr-cleanup"
    # The mode names which cleanup runs (after a merge, or abandoning), not what was
    # proven: "(merged)" alone read as a claim the proof below may refuse.
    lines = [f"{head} of {result.branch} (mode: {result.mode})"]
    if result.evidence is not None:
        # The detail says what the content proof found and what gh said, each once.
        ev = result.evidence
        lines.append(f"proof ({ev.content.kind if ev.content else 'none'}): {ev.detail}")
    lines += step_lines(result.steps, width=14, dry_run=result.dry_run)
    if result.blockers:
        # A refused plan: every blocker, as the step it keeps from running; nothing past them.
        lines += step_lines(result.blockers, width=14, dry_run=result.dry_run)
        lines.append(
            f"pr-cleanup of {result.branch} would be refused: {len(result.blockers)} "
            "blocker(s) above; fix each, then run it again"
        )
    if result.interrupted:
        lines.append(f"{result.error['message']} [interrupted]")
    return "\n".join(lines)
