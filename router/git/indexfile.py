"""A checkout's index read without git: its tracked files, each with the stat git verified it by.

Private to :mod:`router.git`, beside :mod:`router.git.files`. git keeps, for
every tracked file, the ``stat`` data it saw when it last found the file's
content to be the blob the entry names (32 bits of each field; see
gitformat-index(5)). A file whose ``lstat`` still gives exactly that data,
and whose entry's two stamps are both older than the index itself (git's
racy-clean rule, with the change time too), is the file git verified; any
other is compared by content, hashed as git hashes a blob. Only the plain formats are read (versions 2-4, no split or
sparse index, no unmerged entry); anything else is None and the caller
does without.
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct
import time
from collections import namedtuple

from router.git.files import SETTLED_NS, common_dir, read_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import (
        Any,
        NamedTuple,
    )  # a tuple with typed fields; at run time namedtuple's (below)

_MASK = 0xFFFFFFFF  # the index keeps 32 bits of every stat field
_HEADER = struct.Struct(">4sII")
_STATS = struct.Struct(">10I")  # ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size
_EXTENDED = 0x4000  # flags: an extended-flags word follows (version 3 and later)
_STAGE = 0x3000  # flags: unmerged
_ASSUME_VALID = 0x8000  # flags: `git update-index --assume-unchanged`: git does not look
_NAME_LENGTH = 0x0FFF
_SKIP_WORKTREE = 0x4000  # extended flags: not checked out (sparse)
# The flags' high byte: assume-unchanged, an extended-flags word (skip-worktree lives
# there), or a stage. None set: git looks at the entry's file.
_UNPLAIN_HIGH = (_ASSUME_VALID | _EXTENDED | _STAGE) >> 8
# Extensions whose index this reader would misread: the entries live in a shared
# index file (split index), or a directory stands for the files under it (sparse).
_NOT_READ = (b"link", b"sdir")


if TYPE_CHECKING:

    class IndexEntry(NamedTuple):
        """One tracked file as the index has it: the stat git verified it by, its mode and
        blob."""

        ctime: tuple[int, int]  # (seconds & 0xFFFFFFFF, nanoseconds)
        mtime: tuple[int, int]
        dev: int
        ino: int
        mode: int  # git's: 0o100644, 0o100755, 0o120000 (0o160000: a gitlink)
        size: int
        oid: bytes
        # git keeps the file checked out and looks at it: False for skip-worktree (a sparse
        # checkout leaves it out) and assume-unchanged (git trusts the entry, never the file).
        watched: bool

    class IndexCopy(NamedTuple):
        """An index file's bytes, its modification time and its repository's hash, as read
        at once."""

        data: bytes
        mtime_ns: int
        algorithm: str  # "sha1" or "sha256"

else:
    # The same tuples without importing typing (~4 ms on status's path, which reads the
    # index of every worktree it shows).
    IndexEntry = namedtuple("IndexEntry", "ctime mtime dev ino mode size oid watched")
    IndexCopy = namedtuple("IndexCopy", "data mtime_ns algorithm")


def read_index_copy(index: str, algorithm: str) -> IndexCopy | None:
    """The index file at ``index`` as it is now (git replaces it whole: never half-written)."""
    try:
        with open(index, "rb") as fh:
            return IndexCopy(fh.read(), os.fstat(fh.fileno()).st_mtime_ns, algorithm)
    except OSError:
        return None


def index_entries(copy: IndexCopy) -> dict[str, IndexEntry] | None:
    """Every entry of the index, by path; None when it is not one this reader reads whole."""
    found = _index_records(copy)
    return None if found is None else _indexed(copy, found)


def unwatched_entries(copy: IndexCopy) -> dict[str, IndexEntry] | None:
    """The entries git does not look at (assume-unchanged, skip-worktree), by path; None when
    the index is not one this reader reads whole.

    A status asks once per checkout: an index of every entry watched (the
    usual one) is told by its flags alone (~0.5 ms for 2,000 entries), where
    listing every entry takes ~2.5 ms and making each one ~10 ms.
    """
    if _all_watched(copy):
        return {}
    found = _index_records(copy)
    return None if found is None else _indexed(copy, [r for r in found if not r[2]])


def _all_watched(copy: IndexCopy) -> bool:
    """True when the index surely has every entry watched: a plain version 2 or 3 index
    whose checksum holds, read to its end, with no entry flagged assume-unchanged,
    skip-worktree or unmerged. Each entry's flags and name length are all that is read;
    False for anything else (:func:`_index_records` then reads it whole, or refuses it)."""
    data, width = copy.data, 20 if copy.algorithm == "sha1" else 32
    if len(data) < _HEADER.size + width:
        return False
    signature, version, count = _HEADER.unpack_from(data)
    if signature != b"DIRC" or version not in (2, 3) or not _checksum_holds(copy, width):
        return False
    flags_at, fixed = _STATS.size + width, _STATS.size + width + 2 + 8
    pos, end = _HEADER.size, len(data) - width
    try:
        for _ in range(count):
            high = data[pos + flags_at]
            if high & _UNPLAIN_HIGH:
                return False
            # The flags' low 12 bits are the name's length (none of the others is set).
            length = high << 8 | data[pos + flags_at + 1]
            if length == _NAME_LENGTH:
                return False  # a name this long is found by its end: the whole reading does it
            pos += (fixed + length) & ~7
    except IndexError:
        return False
    return pos <= end and _extensions_read(data, pos, end)


def _indexed(copy: IndexCopy, found: list[tuple[bytes, int, bool]]) -> dict[str, IndexEntry] | None:
    """The entries at the records ``found`` of ``copy``, by path; None for a sparse index's
    directory among them."""
    width = 20 if copy.algorithm == "sha1" else 32
    data, entries = copy.data, {}
    for name, start, watched in found:
        ct, ctn, mt, mtn, dev, ino, mode, _uid, _gid, size = _STATS.unpack_from(data, start)
        if stat.S_ISDIR(mode):
            return None  # a sparse index's directory
        oid = data[start + _STATS.size : start + _STATS.size + width]
        entries[name.decode("utf-8", "surrogateescape")] = IndexEntry(
            (ct, ctn), (mt, mtn), dev, ino, mode, size, oid, watched
        )
    return entries


def index_paths(copy: IndexCopy) -> set[str] | None:
    """The paths the index tracks; None when it is not one this reader reads whole.

    What a removal's journal asks of every index: each entry's name, and no
    more (a checkout of 2,000 files in ~1 ms).
    """
    found = _index_records(copy)
    if found is None:
        return None
    return {name.decode("utf-8", "surrogateescape") for name, _start, _watched in found}


def _index_records(copy: IndexCopy) -> list[tuple[bytes, int, bool]] | None:
    """(name, offset, watched) of every entry, in order (watched: git looks at its file, see
    :class:`IndexEntry`); None for an index not read here:
    another version or signature, a checksum that does not hold, an unmerged entry, an
    extension that moves entries elsewhere, or a length that does not add up."""
    data, width = copy.data, 20 if copy.algorithm == "sha1" else 32
    if len(data) < _HEADER.size + width:
        return None
    signature, version, count = _HEADER.unpack_from(data)
    if signature != b"DIRC" or version not in (2, 3, 4) or not _checksum_holds(copy, width):
        return None
    flags_at = _STATS.size + width
    found: list[tuple[bytes, int, bool]] = []
    pos, previous, end = _HEADER.size, b"", len(data) - width
    try:
        for _ in range(count):
            start = pos
            flags = data[pos + flags_at] << 8 | data[pos + flags_at + 1]
            if flags & _STAGE:
                return None  # unmerged
            name_at = pos + flags_at + 2
            extra = 0
            if flags & _EXTENDED:
                extra = data[name_at] << 8 | data[name_at + 1]
                name_at += 2
            if version == 4:
                strip, name_at = _offset_varint(data, name_at)
                stop = data.index(b"\0", name_at)
                kept = len(previous) - strip
                if kept < 0:
                    return None
                name = previous[:kept] + data[name_at:stop]
                pos = after = stop + 1
                previous = name
            else:
                length = flags & _NAME_LENGTH
                stop = (
                    name_at + length
                    if length < _NAME_LENGTH
                    else data.index(b"\0", name_at + _NAME_LENGTH)
                )
                if data[stop] != 0:
                    return None  # the length does not end the name
                name = data[name_at:stop]
                pos += (stop - start + 8) & ~7
                after = pos
            if after > end:
                return None
            found.append((name, start, not (flags & _ASSUME_VALID or extra & _SKIP_WORKTREE)))
    except (IndexError, ValueError):
        return None
    return found if _extensions_read(data, pos, end) else None


def _offset_varint(data: bytes, pos: int) -> tuple[int, int]:
    """git's offset varint (``decode_varint``): the value and the position after it."""
    byte = data[pos]
    value = byte & 0x7F
    while byte & 0x80:
        pos += 1
        byte = data[pos]
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, pos + 1


def _checksum_holds(copy: IndexCopy, width: int) -> bool:
    trailer = copy.data[-width:]
    if trailer == bytes(width):
        return True  # index.skipHash: git wrote no checksum
    return _hash_of(copy.algorithm, copy.data[:-width]) == trailer


def _extensions_read(data: bytes, pos: int, end: int) -> bool:
    """The extensions after the entries end where the checksum begins, none of them one that
    moves entries elsewhere."""
    while pos + 8 <= end:
        signature = data[pos : pos + 4]
        if signature in _NOT_READ:
            return False
        pos += 8 + int.from_bytes(data[pos + 4 : pos + 8], "big")
    return pos == end


def is_indexed_file(path: str, entry: IndexEntry, copy: IndexCopy) -> bool:
    """True while the file at ``path`` is what ``entry`` names: the very file git verified
    (the same stat, written before the index was), or one with the blob's content and mode."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if not _same_kind(info.st_mode, entry.mode):
        return False
    seen = (
        (info.st_ctime_ns // 1_000_000_000 & _MASK, info.st_ctime_ns % 1_000_000_000),
        (info.st_mtime_ns // 1_000_000_000 & _MASK, info.st_mtime_ns % 1_000_000_000),
        info.st_dev & _MASK,
        info.st_ino & _MASK,
        info.st_size & _MASK,
    )
    if seen == (entry.ctime, entry.mtime, entry.dev, entry.ino, entry.size) and not _racy(
        entry, copy
    ):
        return True
    return _blob_id(path, info, copy.algorithm) == entry.oid


def _same_kind(mode: int, indexed: int) -> bool:
    if stat.S_ISLNK(mode):
        return indexed == 0o120000
    if stat.S_ISREG(mode):
        return indexed == (0o100755 if mode & 0o100 else 0o100644)
    return False


def _racy(entry: IndexEntry, copy: IndexCopy) -> bool:
    """git's racy-clean rule: a file stamped no earlier than the index itself may have changed
    after git looked, with the same stamps; only its content can say.

    Both stamps, where git looks at the mtime alone: an mtime can be put back (``touch -d``,
    ``cp -p``, ``tar x``), so an edit in the tick git verified the file in keeps every stat
    field the entry holds and an mtime older than the index; its change time cannot be."""
    written = (copy.mtime_ns // 1_000_000_000 & _MASK, copy.mtime_ns % 1_000_000_000)
    return entry.mtime >= written or entry.ctime >= written


def _blob_id(path: str, info: os.stat_result, algorithm: str) -> bytes | None:
    """The id git gives the file's content as a blob (a symlink's: its target); None unreadable."""
    try:
        if stat.S_ISLNK(info.st_mode):
            content = os.fsencode(os.readlink(path))
        else:
            with open(path, "rb") as fh:
                content = fh.read()
    except OSError:
        return None
    return _hash_of(algorithm, b"blob %d\0" % len(content) + content)


# Up to this size CPython's own hash modules take less time than loading hashlib's OpenSSL
# (~4 ms; they hash ~100 MB/s, it ~1 GB/s): an index of a few thousand entries.
_OWN_HASH_UP_TO = 256 * 1024


def _hash_of(algorithm: str, data: bytes) -> bytes:
    """``hashlib.new(algorithm, data).digest()``, the same bytes for "sha1" and "sha256"."""
    own = _own_hash(algorithm) if len(data) <= _OWN_HASH_UP_TO else None
    if own is not None:
        return own(data).digest()  # type: ignore[no-any-return]
    import hashlib

    return hashlib.new(algorithm, data).digest()


def _own_hash(algorithm: str) -> Callable[[bytes], Any] | None:
    """CPython's own module's constructor for ``algorithm``; None where it is not built."""
    for module in ("_sha1",) if algorithm == "sha1" else ("_sha2", "_sha256"):
        try:
            return getattr(__import__(module), algorithm)  # type: ignore[no-any-return]
        except (ImportError, AttributeError):
            continue
    return None


def unlooked_changes(top: str, git_dir: str) -> list[str] | None:
    """Tracked files git was told not to look at (assume-unchanged, skip-worktree) that are on
    disk and no longer the blob their entry names; None when the index is not read here.

    ``git status`` trusts such an entry and never reads the file, so an edit to it is
    invisible to every answer git gives, and ``git worktree remove`` deletes it.
    """
    settled = _settled_identity(os.path.join(git_dir, "index"))
    if settled is not None and read_line(os.path.join(git_dir, WATCHED_STAMP)) == settled:
        return []  # this very index was read before: every entry watched
    copy = checkout_index(git_dir)
    entries = unwatched_entries(copy) if copy is not None else None
    if copy is None or entries is None:
        return None if os.path.exists(os.path.join(git_dir, "index")) else []
    if not entries and settled is not None:
        _remember_watched(git_dir, settled)
    return [
        path
        for path, entry in entries.items()
        if os.path.lexists(full := os.path.join(top, path))
        and not is_indexed_file(full, entry, copy)
    ]


# In a checkout's git dir: the identity of its index as last read with every entry watched
# (the usual index), so the next status of that same file reads none of it (a 100,000-file
# index takes ~40 ms to walk, and status asks once per checkout).
WATCHED_STAMP = "team-router-watched"


def _settled_identity(index: str) -> str | None:
    """The index file's identity (device, inode, size, both stamps); None when there is
    none or it changed too recently to be told from a rewrite in the same tick."""
    try:
        st = os.stat(index)
    except OSError:
        return None
    if max(st.st_mtime_ns, st.st_ctime_ns) >= time.time_ns() - SETTLED_NS:
        return None
    return f"{st.st_dev} {st.st_ino} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns}"


def _remember_watched(git_dir: str, identity: str) -> None:
    """Keep ``identity`` as an index read with every entry watched, while it still names the
    index (one replaced during the reading is not remembered); best effort."""
    if _settled_identity(os.path.join(git_dir, "index")) != identity:
        return
    stamp = os.path.join(git_dir, WATCHED_STAMP)
    scratch = f"{stamp}.{os.getpid()}.new"
    try:
        with open(scratch, "w", encoding="utf-8") as fh:
            fh.write(identity + "\n")
        os.replace(scratch, stamp)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(scratch)


def differs_from_blob(path: str, mode: int, oid: str, algorithm: str) -> bool:
    """True when the file at ``path`` (there) is not the blob ``oid`` with ``mode`` (git's)."""
    entry = IndexEntry((0, 0), (0, 0), 0, 0, mode, 0, bytes.fromhex(oid), False)
    return not is_indexed_file(path, entry, IndexCopy(b"", 0, algorithm))


def checkout_index(git_dir: str) -> IndexCopy | None:
    """The index of the checkout whose git dir is ``git_dir``, with its repository's hash;
    None when there is none or its repository's format is not one read here."""
    from router.git.files import Unsure, common_dir, repo_format

    try:
        width = repo_format(common_dir(git_dir)).id_width
    except Unsure:
        return None
    return read_index_copy(os.path.join(git_dir, "index"), "sha1" if width == 40 else "sha256")


# A gitlink's mode (0o160000) as an index entry stores it: 32 bits, big-endian.
_GITLINK_MODE = (0o160000).to_bytes(4, "big")


def may_hold_gitlinks(git_dir: str) -> bool:
    """Whether the index of the checkout whose git dir is ``git_dir`` may hold a gitlink.

    False only when it surely holds none: no index, or a plain one (``DIRC``,
    no split index) in which a gitlink entry's mode bytes occur nowhere.
    Those bytes occurring elsewhere (a timestamp, an object id) only send
    the caller to git, which lists the gitlinks exactly.
    """
    index = os.path.join(git_dir, "index")
    try:
        with open(index, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return False  # no index yet: no entries at all
    except OSError:
        return True
    if not data.startswith(b"DIRC") or _split_index(git_dir):
        return True  # entries may live in a shared index file, or a format not read here
    return _GITLINK_MODE in data


def _split_index(git_dir: str) -> bool:
    for where in {git_dir, common_dir(git_dir)}:
        try:
            if any(n.startswith("sharedindex.") for n in os.listdir(where)):
                return True
        except OSError:
            return True
    return False
