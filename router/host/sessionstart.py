"""The SessionStart recovery hook (DESIGN §14): tell a new session where a run stands.

It runs at the start of every agent session, so it must be fast and must never
get in the way: it imports only the standard library's ``json``/``os``/``sys``/
``select`` and the light modules of the phase area (typer, jinja2 and yaml stay
out; git's module only when the answer depends on commits, or when a worktree's
submodule moved onto commits its pins do not keep yet), prints one JSON
object or nothing, and always exits 0.
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

    from router.phase.infer import Resume
    from router.topic.discovery import Found
    from router.topic.runs import PlanDir, Records

# The notice for each kind of topic a session starts in (DESIGN §8): an interrupted run, a
# run that shipped, and a worktree the host asked for (no /team run: nothing to resume).
NOTICE_TEMPLATE = "recovery_notice.txt"
SHIPPED_TEMPLATE = "shipped_notice.txt"
HOST_TEMPLATE = "host_notice.txt"
STDIN_LIMIT = 1 << 20  # the host sends a few hundred bytes; never buffer more than this
STDIN_IDLE = 0.25  # seconds without data before a stdin that stays open is given up on


def session_start(cwd: str | None = None) -> int:
    """``team-router hook session-start``: the recovery notice on stdout, or nothing; exit 0.

    ``cwd`` (``-C``) stands in for the process's directory when the host sends none.
    """
    try:
        _session_start(cwd)
    except BaseException:
        # Whatever went wrong, a session start must not fail or print a
        # traceback into the host: the hook is advice, never a gate.
        return 0
    return 0


def _session_start(default_cwd: str | None) -> None:
    payload = read_payload(sys.stdin)
    cwd = _cwd_of(payload, default_cwd)
    if cwd is None or not _git_on_path():
        return
    from router.topic.discovery import locate
    from router.topic.runs import RUN

    found = locate(cwd)
    if found is None:
        return
    # What the repository's worktrees' submodules moved onto since the last run is pinned
    # in the primary before the session works there; from files alone when nothing moved.
    try:
        from router.git.keep import keep_borrowed_objects

        keep_borrowed_objects([found.home.common_dir])
    except Exception:
        pass
    if found.plan is None:
        return
    home, plan = found.home, found.plan
    resume = resume_point(home.primary, plan, found.records) if plan.kind == RUN else None
    # As `phase` warns: the run answered, or another, whose worktree was deleted by hand.
    notes = _missing_notes(found, plan) if plan.kind == RUN else []
    # A holder that cannot be written must not cost the session its notice (no
    # contextlib.suppress: contextlib stays off the hook's path).
    try:  # noqa: SIM105
        register_session(home.common_dir, plan.id, _session_id(payload))
    except Exception:
        pass
    context = notice(plan, resume, notes)
    out = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


# -- input ----------------------------------------------------------------------


def read_payload(stream: IO[str] | None) -> dict[str, Any]:
    """The host's JSON object from stdin; {} for anything missing, empty or unparseable."""
    raw = _read_stream(stream)
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _read_stream(stream: IO[str] | None) -> str:
    if stream is None:
        return ""
    try:
        if stream.isatty():
            return ""  # a person at a terminal sends nothing: never wait for them
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        # No file descriptor (an in-memory stream): it cannot block.
        try:
            return stream.read(STDIN_LIMIT)
        except (AttributeError, OSError, ValueError):
            return ""
    return _read_fd(fd).decode("utf-8", errors="replace")


def _read_fd(fd: int) -> bytes:
    """Read until EOF, a complete JSON document, the size limit, or STDIN_IDLE of silence.

    A host that writes its JSON and keeps stdin open must not stall the session.
    """
    import select  # a C module: costs nothing measurable

    data = b""
    while len(data) < STDIN_LIMIT:
        try:
            ready, _, _ = select.select([fd], [], [], STDIN_IDLE)
        except (OSError, ValueError):
            ready = [fd]  # select cannot watch this kind of file: plain reads end at EOF
        if not ready:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
        if _complete_json(data):
            break
    return data


def _complete_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def _cwd_of(payload: dict[str, Any], default: str | None = None) -> str | None:
    """The session's directory: the host's ``cwd``, else ``-C``, else ``CLAUDE_PROJECT_DIR``, else ours.

    None when it does not exist.
    """
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        if default is not None:
            return default
        # The host sets it for every hook it runs: the project the session is
        # in, whatever directory the hook process was started in.
        project = os.environ.get("CLAUDE_PROJECT_DIR", "")
        if project and "\0" not in project and os.path.isabs(project) and os.path.isdir(project):
            return project
        try:
            return os.getcwd()
        except OSError:
            return None
    if "\0" in cwd or not os.path.isabs(cwd) or not os.path.isdir(cwd):
        return None
    return cwd


def _session_id(payload: dict[str, Any]) -> str | None:
    value = payload.get("session_id")
    return value if isinstance(value, str) and value else None


def _git_on_path() -> bool:
    """Is there a git to ask? (No git: no repo as far as the pipeline can tell; stay silent.)"""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", "git")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return True
    return False


# -- inference ------------------------------------------------------------------------


def resume_point(primary: str, plan: PlanDir, records: Records) -> Resume:
    """``resume_at`` and ``halted`` by the phase table; git only when commits decide.

    ``records``: the home's, as discovery read them (a teardown under way is read there).
    """
    from router.phase.infer import infer, worktree_exists
    from router.plandir.artifacts import inventory

    inv = inventory(plan.dir, plan.id)
    return infer(
        inv,
        has_commits=lambda: _has_commits(primary, plan),
        missing_worktrees=tuple,
        # As `phase` asks it: a worktree deleted by hand resumes at WORKTREE, not QUESTION.
        worktree_exists=worktree_exists(os.path.realpath(primary), plan),
        tearing=records.tearing(plan.id),
        with_step=False,
    )


def _missing_notes(found: Found, plan: PlanDir) -> list[str]:
    from router.phase.infer import missing_notes

    return missing_notes(found.records, found.home.primary, plan, found.missing)


def _has_commits(primary: str, plan: PlanDir) -> bool:
    from pathlib import Path

    from router.phase.infer import any_commits, topic_repos
    from router.topic.workspace import open_repo

    return any_commits(topic_repos(open_repo(Path(primary)), plan, []))


# -- output ---------------------------------------------------------------------------


def register_session(common_dir: str, topic_id: str, session_id: str | None) -> None:
    """The one place where the host's session becomes a holder of the topic (DESIGN §10).

    The holder is the host process (our parent, past the ``sh -c`` that runs
    the hook), so teardown keeps the topic while that session lives.
    """
    from router.processes import session_pid
    from router.topic import holders

    pid = session_pid()
    if pid <= 1:
        return  # orphaned (the host is already gone): nothing to hold for
    session = session_id if session_id and holders.valid_session(session_id) else None
    holders.register(common_dir, topic_id, holders.make_holder(pid, session))


def templates_dir() -> str:
    """The templates directory, without importing pathlib or typing along with it."""
    from router.share import share_path

    return share_path("templates")


def notice(plan: PlanDir, resume: Resume | None, missing: list[str] | None = None) -> str:
    """The session's notice (a template of ``templates/``, filled with str.format): where the
    interrupted run resumes, that it shipped, or (``resume`` None) whose worktree this is;
    then ``missing``, a line for each run whose worktree was deleted by hand
    (:func:`router.phase.infer.missing_notes`)."""
    from router.phase.infer import ROUND_CAP, SHIPPED

    if resume is None:
        text = _filled(HOST_TEMPLATE, id=plan.id, worktree=plan.checkout)
    elif resume.resume_at == SHIPPED:
        text = _filled(SHIPPED_TEMPLATE, id=plan.id, plan_dir=plan.dir)
    else:
        halted = (
            f"The review loop halted after {ROUND_CAP} rounds without a passing verdict: "
            "ask the user how to proceed before resuming.\n"
            if resume.halted
            else ""
        )
        text = _filled(
            NOTICE_TEMPLATE,
            resume_at=resume.resume_at,
            id=plan.id,
            plan_dir=plan.dir,
            halted_note=halted,
        )
    return "\n".join([text, *(f"{line}." for line in missing or ())])


def _filled(name: str, **fields: str) -> str:
    with open(os.path.join(templates_dir(), name), encoding="utf-8") as fh:
        return fh.read().format(**fields).rstrip("\n")
