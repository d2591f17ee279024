"""What was read from artifacts, remembered from one ``status`` to the next by file identity.

``status`` reads the frontmatter of every artifact of every topic (it warns
about any it cannot read): 2,000 files for 500 topics, every time. What it
read is kept in a file, each entry under the identity of the file it was read
from: device, inode, size and both kernel stamps (modification and change
time). An entry is used only while the file has that identity still. The
kernel restamps a file's change time on every write, rename, ``chmod`` or
``utime`` and no call can set it back (as :mod:`router.topic.removal` reasons),
so an unchanged identity is the same untouched file; a file edited to the same
size with its modification time put back has a new change time and is read
again.

One case escapes the stamps, the one git calls "racily clean": a write within
the same tick of the file system's clock as the stamps a command saw leaves
them equal. A file is therefore remembered only when its change time is older
than the moment the command began by more than any file system's tick
(:data:`SETTLED_NS`): any later write stamps a later change time. A file
written moments ago is read every time until it has settled.

The file is advisory: one that is missing, unreadable, of another version or
malformed is an empty memory, and one that cannot be written is left as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Longer than the coarsest change-time tick of the file systems a checkout lives on
# (1 s for some network file systems and ext3; ns-stamped ext4, xfs, btrfs and tmpfs
# tick with the kernel's coarse clock, a few ms).
SETTLED_NS = 2_000_000_000
FORMAT = 1

Identity = tuple[int, int, int, int, int]


def identity(info: os.stat_result) -> Identity:
    """Device, inode, size, modification and change time (ns)."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class Remembered:
    """What was read from files, remembered in the file at ``path`` (JSON values): :meth:`get`
    and :meth:`put` while a command reads, :meth:`save` at its end (what it did not read
    or use again is forgotten)."""

    __slots__ = ("_changed", "_kept", "_known", "_since", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        # Before any file is looked at: a write from now on stamps a later change time.
        self._since = time.time_ns() - SETTLED_NS
        self._known = _load(path)
        self._kept: dict[str, list[Any]] = {}
        self._changed = False

    def get(self, path: str, info: os.stat_result) -> Any:
        """What was read from ``path`` when it had the identity ``info`` gives; None when it
        was not read so (or is not remembered)."""
        entry = self._known.get(path)
        if entry is None or entry[0] != list(identity(info)):
            return None
        self._kept[path] = entry
        return entry[1]

    def put(self, path: str, info: os.stat_result, value: Any) -> None:
        """Remember ``value``, read from ``path`` whose identity ``info`` was taken before the read."""
        if info.st_ctime_ns >= self._since:
            return  # not settled: a write in the same tick would leave the stamps equal
        self._kept[path] = [list(identity(info)), value]
        self._changed = True

    def save(self) -> None:
        """Write what this command read or used again (atomically); nothing when unchanged."""
        if not self._changed and self._kept.keys() == self._known.keys():
            return
        temporary = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(temporary, "w", encoding="utf-8") as fh:
                json.dump({"version": FORMAT, "files": self._kept}, fh, separators=(",", ":"))
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
    files = data.get("files")
    if not isinstance(files, dict):
        return {}
    return {
        k: v
        for k, v in files.items()
        if isinstance(v, list) and len(v) == 2 and isinstance(v[0], list)
    }
