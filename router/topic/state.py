"""Durable per-repo record files, cross-process locks and the crash seam (DESIGN §10).

The record itself (its fields, JSON and checks) is router.topic.record's.

Everything lives in the repo's *common* git dir under ``team-router/``: it is
never tracked, and every worktree of the repo sees the same state.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from router.errors import ErrorCode, RouterError
from router.ioerror import io_operation
from router.records import record, replace
from router.topic.holders import RECORDS_DIR, STATE_DIR, record_file

# The record's fields and JSON are router.topic.record's; callers read them through this
# module (state.TopicRecord) too, as the record's file and its lock are here.
from router.topic.record import (  # noqa: F401
    SCHEMA,
    HostRemoval,
    Judged,
    LastRun,
    Picking,
    RanStep,
    Removal,
    RepoEntry,
    Restored,
    TeardownMark,
    TopicRecord,
    marks_of,
    parse_record,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.topic.runs import Records

DEFAULT_WAIT = 30.0
CRASH_ENV = "TEAM_ROUTER_CRASH_AT"


def state_root(common_dir: Path) -> Path:
    return common_dir / STATE_DIR


def crash_point(step: str) -> None:
    """Exit at once before ``step`` when the test seam asks for it."""
    if os.environ.get(CRASH_ENV) == step:
        os._exit(137)


# -- atomic files -------------------------------------------------------------


def write_atomic(path: Path, text: str, *, errors: str = "strict", mode: int | None = None) -> None:
    """Write ``text`` so a reader sees the old file or the new one, never half of one.

    ``errors="surrogateescape"`` writes a path that is not UTF-8 as its own bytes.
    ``mode``: the new file's permission bits (default 0600). A failure names
    the write and ``path`` (a full disk fails the write or the fsync, whose
    error names no file).
    """
    with io_operation("writing", path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _new_temp(path)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors=errors, newline="") as fh:
                fh.write(text)
                fh.flush()
                if mode is not None:
                    os.fchmod(fh.fileno(), mode)
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


def _new_temp(path: Path) -> tuple[int, str]:
    """A new file beside ``path`` (``.<name>.<random>.tmp``), open for writing, made by us alone.

    ``tempfile.mkstemp`` does the same, but importing it (``shutil``,
    ``random``) costs more than the write.
    """
    while True:
        tmp = str(path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp"))
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600), tmp
        except FileExistsError:
            continue


class RecordCorrupt(Exception):
    """A record exists but does not parse: report it, never trust or delete it."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def record_path(common_dir: Path, topic_id: str) -> Path:
    return Path(record_file(common_dir, topic_id))


def read_record(common_dir: Path, topic_id: str) -> TopicRecord | None:
    """The topic's record in this repo; None when absent; RecordCorrupt when unreadable."""
    path = record_path(common_dir, topic_id)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordCorrupt(path, f"cannot be read ({exc})") from exc
    try:
        record = parse_record(text)
    except (ValueError, TypeError) as exc:
        raise RecordCorrupt(path, f"does not parse ({exc})") from exc
    if record.id != topic_id:
        raise RecordCorrupt(path, f"names topic {record.id!r}, not {topic_id!r}")
    return record


def read_record_or_none(
    common_dir: Path, topic_id: str, warnings: list[str] | None = None
) -> TopicRecord | None:
    """The record, or None when absent or corrupt: the one policy for a corrupt record.

    A corrupt record is never trusted, rewritten or deleted here; the caller
    gets a warning naming it (doctor reports it as record-corrupt).
    """
    try:
        return read_record(common_dir, topic_id)
    except RecordCorrupt as exc:
        if warnings is not None:
            warnings.append(f"{exc.path}: {exc.reason}; it is left as it is and not trusted")
        return None


def record_in(
    records: Records, topic_id: str, warnings: list[str] | None = None
) -> TopicRecord | None:
    """:func:`read_record_or_none` from the JSON ``records`` read already: a command that
    reads many topics (``status``) reads and parses each record file once.

    A record that is not a good one is read again by :func:`read_record_or_none`, so the
    warning names why exactly as it always has.
    """
    data = records.data(topic_id)
    if data is not None:
        try:
            record = TopicRecord.from_json(data)
        except (ValueError, TypeError):
            record = None
        if record is not None and record.id == topic_id:
            return record
    elif topic_id not in records.ids():
        return None
    return read_record_or_none(Path(records.common_dir), topic_id, warnings)


class MarkOutsideJournal(RuntimeError):
    """A record write that would change an operation's mark without the journal (a bug)."""

    def __init__(self, topic_id: str) -> None:
        super().__init__(
            f"the record of {topic_id}: an operation's mark is written by router.topic.journal only"
        )


def update_record(
    common_dir: Path,
    topic_id: str,
    change: Callable[[TopicRecord], TopicRecord | None],
    *,
    new: Callable[[], TopicRecord] | None = None,
    replace_corrupt: bool = False,
    wait: float = DEFAULT_WAIT,
    journal: bool = False,
) -> TopicRecord | None:
    """The one writer of a record: read it, apply ``change``, write the result, under its lock.

    The marks of operations under way (:data:`~router.topic.record.MARK_FIELDS`) are
    the journal's: a ``change`` that alters one is a bug unless ``journal`` (passed
    by router.topic.journal alone), and raises :class:`MarkOutsideJournal` before
    anything is written.

    An absent record starts from ``new()`` (none: nothing is written). A corrupt
    one is left alone unless ``replace_corrupt`` (then it is set aside as
    ``<id>.json.corrupt-<n>``, never lost). ``change`` returning None deletes the
    record. Returns the record as written (None: not written, or deleted).
    """
    with _record_lock(common_dir, topic_id, wait):
        corrupt = False
        try:
            record = read_record(common_dir, topic_id)
        except RecordCorrupt:
            if not replace_corrupt:
                return None
            record, corrupt = None, True
        read = record
        if record is None:
            if new is None:
                return None
            record = new()
        changed = change(record)
        if changed is None:
            delete_record(common_dir, topic_id)
            return None
        if not journal and marks_of(changed) != marks_of(record):
            raise MarkOutsideJournal(topic_id)
        if changed.schema != SCHEMA:
            changed = replace(changed, schema=SCHEMA)
        if changed == read:
            # The file holds this record already, as durable as its own write made
            # it: writing it again (a rerun finding every step done, a command
            # recording what was recorded) would cost an fsync and change nothing.
            return changed
        if corrupt:
            write_record(common_dir, changed)
        else:
            # Read whole (or found absent) a moment ago under this lock, which every
            # writer takes: nothing corrupt to set aside, and no second parse of a
            # record that may hold a removal's journal of thousands of files.
            _write(common_dir, changed)
        return changed


def _record_lock(
    common_dir: Path, topic_id: str, wait: float
) -> contextlib.AbstractContextManager[None]:
    # Two processes (or a repo's worker threads) updating one record must not
    # lose each other's change between the read and the atomic replace. No
    # owner file: the lock is held for milliseconds and never across git; one
    # left by a kill would be a stale-lock finding whose repair (doctor holds
    # that lock) then waits on itself when it writes the record.
    path = lock_path(common_dir, f"record-{topic_id}")
    return take_lock(path, f"the record of {topic_id} in {common_dir}", wait=wait, owner=False)


class LockBusy(Exception):
    """Another process (or thread) still held the lock when the wait ran out."""


LOCK_POLL = 0.05  # seconds between attempts while another holder has the lock


def acquire(path: Path, wait: float) -> int:
    """An exclusive ``flock`` on ``path`` (created if missing); its descriptor, closed to release.

    Waits up to ``wait`` seconds, then raises :class:`LockBusy`. The kernel
    drops the lock when its holder exits, however it exits: a killed command
    never leaves a lock behind. Each call opens its own file description, so
    two threads of one process exclude each other too. Our own few lines
    instead of a locking library: importing one cost ~20 ms on every command
    that writes a record.
    """
    import fcntl
    import time

    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    # ``wait > 0`` is False for NaN too, which would otherwise never be reached.
    deadline = time.monotonic() + (wait if wait > 0 else 0.0)
    waited = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if waited:
                # The holder we waited for may have changed any repository.
                from router.git.answers import forget

                forget()
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise LockBusy(str(path)) from None
            time.sleep(LOCK_POLL)
            waited = True
        except BaseException:
            os.close(fd)
            raise


def secondary_homes(common_dir: str | os.PathLike[str]) -> dict[str, tuple[str, str | None]]:
    """Topic id -> (home primary clone, this repo's worktree) for each topic this repo is a
    secondary of (its record names the home).

    Read straight from the files, without the lock: the session-start hook asks
    this from a secondary repo. Unreadable records are skipped (doctor reports them).
    """
    folder = os.path.join(common_dir, STATE_DIR, RECORDS_DIR)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return {}
    names = [n for n in names if n.endswith(".json")]
    found: dict[str, tuple[str, str | None]] = {}
    for name in names:
        topic_id = name[: -len(".json")]
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as fh:
                text = fh.read()
            # Written with sorted keys and indent 2: a home record is skipped unparsed
            # (a home repo with 500 topics reads them all on every `phase`).
            if '"repo": "home"' in text or '"home": ' not in text:
                continue
            data = json.loads(text)
        except (OSError, ValueError, RecursionError):
            continue
        if not isinstance(data, dict) or data.get("id") != topic_id:
            continue
        home, worktree = data.get("home"), data.get("worktree")
        if data.get("repo") != "home" and isinstance(home, str) and home:
            found[topic_id] = (home, worktree if isinstance(worktree, str) else None)
    return found


def write_record(common_dir: Path, record: TopicRecord) -> Path | None:
    """Write ``record`` atomically; a corrupt file in its place is first set aside, never lost.

    Returns where a corrupt predecessor was kept (``<id>.json.corrupt-<n>``), or None.
    """
    kept = _set_aside_if_corrupt(record_path(common_dir, record.id))
    _write(common_dir, record)
    return kept


def _write(common_dir: Path, record: TopicRecord) -> None:
    path = record_path(common_dir, record.id)
    write_atomic(path, json.dumps(record.to_json(), indent=2, sort_keys=True) + "\n")


CORRUPT_MARK = ".corrupt-"


def _set_aside_if_corrupt(path: Path) -> Path | None:
    try:
        if parse_record(path.read_text(encoding="utf-8")).id == path.stem:
            return None
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError):
        pass
    for n in range(1, 1000):
        aside = path.with_name(f"{path.name}{CORRUPT_MARK}{n}")
        if not os.path.lexists(aside):
            # A rename, not a copy: the bytes the user may need stay exactly as they were.
            os.replace(path, aside)
            return aside
    raise RecordCorrupt(path, "does not parse, and 999 earlier corrupt copies are in the way")


def corrupt_records(common_dir: Path) -> list[Path]:
    """Corrupt records set aside by :func:`write_record` (kept for the user to inspect)."""
    folder = state_root(common_dir) / RECORDS_DIR
    if not folder.is_dir():
        return []
    return sorted(folder.glob(f"*.json{CORRUPT_MARK}*"))


def delete_record(common_dir: Path, topic_id: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        record_path(common_dir, topic_id).unlink()


def topic_of_branch(common_dir: Path, branch: str) -> str | None:
    """The topic whose record in this repo names ``branch`` as its branch (one not torn
    down first), or None. A topic's branch is its id unless ``new`` reused a checkout on
    the user's own branch; unreadable records are skipped (doctor reports them)."""
    found = [
        record
        for topic_id in list_records(common_dir)
        if (record := read_record_or_none(common_dir, topic_id)) is not None
        and record.branch == branch
    ]
    found.sort(key=lambda r: (r.torn_down, r.id))
    return found[0].id if found else None


def list_records(common_dir: Path) -> list[str]:
    """Ids that have a record file in this repo."""
    folder = state_root(common_dir) / RECORDS_DIR
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.json"))


# -- locks --------------------------------------------------------------------


def lock_path(common_dir: Path, name: str) -> Path:
    return state_root(common_dir) / "locks" / f"{name}.lock"


def _owner_path(lock: Path) -> Path:
    return lock.with_suffix(".pid")


def held_lock(
    common_dir: Path, name: str, *, wait: float = DEFAULT_WAIT
) -> contextlib.AbstractContextManager[None]:
    """Hold ``locks/<name>.lock``; after ``wait`` seconds refuse ``locked`` naming the holder."""
    return take_lock(lock_path(common_dir, name), name, wait=wait, owner=True)


@contextlib.contextmanager
def take_lock(path: Path, label: str, *, wait: float, owner: bool) -> Iterator[None]:
    """Hold the lock at ``path``, or after ``wait`` seconds refuse ``locked`` naming its holder.

    The one "take this lock or refuse" of every lock here. ``owner``: write the
    owner file (pid and start time) that a refusal and doctor read.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = acquire(path, wait)
    except LockBusy:
        raise RouterError(
            ErrorCode.LOCKED,
            f"{label} is locked by {_holder_named(path)}; wait for it to finish or pass a "
            "longer --wait",
        ) from None
    try:
        if owner:
            with contextlib.suppress(OSError):
                _owner_path(path).write_text(_owner_text(), encoding="utf-8")
        yield
    finally:
        if owner:
            with contextlib.suppress(OSError):
                _owner_path(path).unlink()
        os.close(fd)


def _owner_text() -> str:
    # pid and start time: a crash leaves this file behind (the kernel drops the
    # lock itself), and doctor tells a stale owner from a live one by both.
    from router.processes import process_start_time

    return f"{os.getpid()} {process_start_time(os.getpid()) or '-'}\n"


def _holder_named(lock: Path) -> str:
    """Who holds ``lock``, as a refusal names it: a pid only while that process lives.

    A killed run leaves its owner file behind, and the run holding the lock now
    writes its own only after it has the lock: until then the file names a
    dead process, which is nobody to wait for.
    """
    owner = read_owner(lock)
    if owner is None or owner.stale:
        return "another team-router run"
    return f"process {owner.pid}"


@record
class LockOwner:
    """What a lock's owner file says: who held (or holds) ``locks/<name>.lock``."""

    name: str
    path: Path  # the owner file, ``locks/<name>.pid``
    pid: int
    start_time: str | None

    @property
    def stale(self) -> bool:
        """True when the process that wrote the file is gone (or its pid was reused)."""
        from router.topic.holders import Holder, is_live

        return not is_live(Holder(self.pid, self.start_time))


def read_owner(lock: Path) -> LockOwner | None:
    path = _owner_path(lock)
    try:
        words = path.read_text(encoding="utf-8").split()
    except (OSError, UnicodeDecodeError):
        return None
    if not words or not words[0].isdigit():
        return None
    start = words[1] if len(words) > 1 and words[1] != "-" else None
    return LockOwner(lock.stem, path, int(words[0]), start)


def lock_owners(common_dir: Path) -> list[LockOwner]:
    """Every owner file under ``locks/`` (held locks and ones a crash left behind)."""
    folder = state_root(common_dir) / "locks"
    if not folder.is_dir():
        return []
    found = []
    for pid_file in sorted(folder.glob("*.pid")):
        owner = read_owner(pid_file.with_suffix(".lock"))
        if owner is not None:
            found.append(owner)
    return found
