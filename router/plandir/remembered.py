"""What was worked out from files, remembered from one ``status`` to the next by file identity.

``status`` reads the frontmatter of every artifact of every topic (it warns
about any it cannot read): 2,000 files for 500 topics, every time. What it
worked out is kept in a file, each entry under a :class:`Stamp` of every file it
came from: each file's device, inode, size and both kernel stamps
(modification and change time). An entry is used only while every one of those
files has that identity still. The kernel restamps a file's change time on
every write, rename, ``chmod`` or ``utime`` and no call can set it back (as
:mod:`router.topic.removal` reasons), so an unchanged identity is the same
untouched file; a file edited to the same size with its modification time put
back has a new change time and is read again. A stamp names each file, so a
file added or taken away is a different stamp too.

One case escapes the stamps, the one git calls "racily clean": a write within
the same tick of the file system's clock as the stamps a command saw leaves
them equal. An entry is therefore remembered only when the change time of every
file it came from is older than the moment the command began by more than any
file system's tick (:data:`SETTLED_NS`): any later write stamps a later change
time. What was worked out from a file written moments ago is worked out again
by every command until that file has settled.

The file is advisory: one that is missing, unreadable, of another version or
malformed is an empty memory, and one that cannot be written is left as it was.
It is read only when an entry is first asked for.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections import namedtuple

from router.git import SETTLED_NS  # the one rule of when a file's stamps settle

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

FORMAT = 2

Stamp = namedtuple("Stamp", "text changed")
Stamp.__doc__ = """The identities of the files something was worked out from: ``text`` (each
file's name, device, inode, size, modification and change time, in ns) and ``changed``,
the newest change time among them (what decides whether they have settled)."""


def stamp(files: Iterable[tuple[str, os.stat_result]], facts: Iterable[str] = ()) -> Stamp:
    """The :class:`Stamp` of ``(name, stat taken before the file was read)`` pairs, in order;
    ``facts``: what else the value was worked out from, as text."""
    parts = list(facts)
    changed = 0
    for name, info in files:
        ctime = info.st_ctime_ns
        parts.append(
            f"{name}:{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{ctime}"
        )
        if ctime > changed:
            changed = ctime
    # NUL, which no path or file name holds, between the parts: two different lists of
    # files and facts never join into one text.
    return Stamp("\0".join(parts), changed)


class Remembered:
    """What was worked out from files, remembered in the file at ``path`` (JSON values) by key:
    :meth:`get` and :meth:`put` while a command reads, :meth:`save` at its end (what it did
    not ask for again, nor :meth:`keep`, is forgotten)."""

    __slots__ = ("_carried", "_changed", "_kept", "_known", "_since", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        # Before any file is looked at: a write from now on stamps a later change time.
        self._since = time.time_ns() - SETTLED_NS
        self._known: dict[str, list[Any]] | None = None  # read when first asked
        self._kept: dict[str, list[Any]] = {}
        self._carried: list[str] = []
        self._changed = False

    def get(self, key: str, stamp: Stamp) -> Any:
        """What was put under ``key`` from files that had the identities ``stamp`` gives; None
        when it was not (or is not remembered)."""
        entry = self._memory().get(key)
        if entry is None or entry[0] != stamp.text:
            return None
        self._kept[key] = entry
        return entry[1]

    def put(self, key: str, stamp: Stamp, value: Any) -> None:
        """Remember ``value``, worked out from files whose identities ``stamp`` took before
        they were read."""
        if stamp.changed >= self._since:
            return  # not settled: a write in the same tick would leave the stamps equal
        self._memory()  # what else the file holds is kept or forgotten by save()
        self._kept[key] = [stamp.text, value]
        self._changed = True

    def _memory(self) -> dict[str, list[Any]]:
        if self._known is None:
            self._known = _load(self.path)
        return self._known

    def keep(self, keys: Iterable[str]) -> None:
        """Keep the entries under ``keys`` as they are, unasked: what another memory
        answered from them (the frontmatter of a topic whose whole answer was remembered)
        is needed again the day one of its files changes."""
        self._carried.extend(keys)

    def save(self) -> None:
        """Write what this command read or kept (atomically); nothing when unchanged."""
        known = self._known
        if known is None:
            return  # never read: nothing asked, nothing put, nothing to forget
        kept = self._kept
        for key in self._carried:
            if key not in kept and key in known:
                kept[key] = known[key]
        if not self._changed and kept.keys() == known.keys():
            return
        temporary = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(temporary, "w", encoding="utf-8") as fh:
                json.dump({"version": FORMAT, "entries": kept}, fh, separators=(",", ":"))
            os.replace(temporary, self.path)
        except OSError:
            # A read-only repository, a full disk: the next command reads the files again.
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _load(path: str) -> dict[str, list[Any]]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict) or data.get("version") != FORMAT:
        return {}
    entries = data.get("entries")
    if not isinstance(entries, dict):
        return {}
    return {
        k: v
        for k, v in entries.items()
        if isinstance(v, list) and len(v) == 2 and isinstance(v[0], str)
    }
