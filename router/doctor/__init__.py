"""``doctor [--repair]``: find what crashes and hand edits left inconsistent (DESIGN §10).

Every check reports a finding. ``--repair`` fixes only what is safe
and only what this tool owns: our own worktree registrations whose directory
is gone (one explicit path at a time, never a bare ``git worktree prune``,
which also drops other tools' entries), empty leftover directories under
``.claude/worktrees/``, branches we created that hold no commit found nowhere
else, stale holder and lock-owner files, and records that describe nothing
any more. Everything else is reported with what to run.

The checks live by what they look at (``worktrees``, ``records``, ``sections``;
``keeps``: what a gone worktree still holds), the repairs by what they do
(``repairs``) apart from how they are run (``repairing``), and the command
joins them (``command``).
"""

from router.doctor.command import DoctorResult, doctor

__all__ = ["DoctorResult", "doctor"]
