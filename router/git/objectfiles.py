"""git's objects read from its object store without running git: loose objects and packs.

Private to :mod:`router.git`, beside :mod:`router.git.files`: the package
reads a commit's tree or one file of a commit here where a git process would
cost more than the read. Every object read is hashed again as git hashes it
and compared with its id, so an answer from here is byte for byte the object
git would give; anything this reader does not know (alternates, replace refs,
an index version or object type it does not read, an object in no pack it
can see, a corrupt one) is :class:`Unsure`, and git is asked instead.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import zlib

from router.git.files import RepoFormat, Unsure

_TYPES = {1: "commit", 2: "tree", 3: "blob", 4: "tag"}
_OFS_DELTA, _REF_DELTA = 6, 7
_IDX_MAGIC = b"\xfftOc\x00\x00\x00\x02"  # a version 2 pack index
_MAX_CHAIN = 64  # deltas on deltas followed (git's default depth is 50)
_MAX_PACKS = 64  # more packs than this: a repository git should look through itself
_LOWER_HEX = b"0123456789abcdef"


class ObjectStore:
    """The objects of the repository whose common git dir is ``common``."""

    def __init__(self, common: str, fmt: RepoFormat) -> None:
        self._objects = os.path.join(common, "objects")
        self._algorithm = "sha1" if fmt.id_width == 40 else "sha256"
        self._width = fmt.id_width // 2
        self._packs: list[_Pack] | None = None
        self._parents: dict[str, list[str]] = {}  # each commit's parents, read once
        if os.path.exists(os.path.join(self._objects, "info", "alternates")):
            raise Unsure("objects in an alternate store are git's to find")
        if "GIT_REPLACE_REF_BASE" in os.environ or _has_replace_refs(common):
            raise Unsure("replace refs change what an id names: git's to apply")

    def read(self, oid: str) -> tuple[str, bytes]:
        """(type, content) of object ``oid``, checked against its id."""
        if len(oid) != self._width * 2:
            raise Unsure(f"{oid} is not a full object id")
        found = self._loose(oid)
        if found is None:
            found = self._packed(bytes.fromhex(oid))
        kind, data = found
        header = f"{kind} {len(data)}\0".encode()
        if hashlib.new(self._algorithm, header + data).hexdigest() != oid:
            raise Unsure(f"object {oid} does not hash to its id")
        return kind, data

    def commit_tree(self, oid: str) -> str | None:
        """The tree of commit ``oid``; None when ``oid`` is another kind of object."""
        kind, data = self.read(oid)
        if kind != "commit":
            return None
        first = data.split(b"\n", 1)[0].decode("ascii", "replace")
        if not first.startswith("tree ") or len(first) != 5 + self._width * 2:
            raise Unsure(f"commit {oid} does not start with its tree")
        return first[5:]

    def parents(self, oid: str) -> list[str]:
        """The parents commit ``oid`` names, in order; Unsure for another kind of object, or
        a commit git would not parse (its tree or a parent not a full lowercase id)."""
        found = self._parents.get(oid)
        if found is None:
            found = self._parents[oid] = self._read_parents(oid)
        return found

    def _read_parents(self, oid: str) -> list[str]:
        kind, data = self.read(oid)
        if kind != "commit":
            raise Unsure(f"{oid} is not a commit")
        lines = data.split(b"\n")
        ids = [lines[0].removeprefix(b"tree ")] if lines[0].startswith(b"tree ") else [b""]
        for line in lines[1:]:
            if not line.startswith(b"parent "):
                break  # the parents follow the tree, before the author
            ids.append(line[7:])
        # git rejects the commit ("bad tree pointer", "bad parents") and finds no ancestor
        # through it, whatever its other parents name.
        if any(len(i) != self._width * 2 or i.strip(_LOWER_HEX) for i in ids):
            raise Unsure(f"commit {oid} is not one git parses")
        return [i.decode("ascii") for i in ids[1:]]

    def file_at(self, commit: str, path: str) -> bytes | None:
        """The bytes of the blob at ``path`` in ``commit``; None when no blob is there."""
        parts = path.split("/")
        if any(p in {"", ".", ".."} for p in parts):
            raise Unsure(f"{path} is not a plain path")
        tree = self.commit_tree(commit)
        if tree is None:
            raise Unsure(f"{commit} is not a commit")
        for i, part in enumerate(parts):
            entry = self._entry(tree, part.encode("utf-8", "surrogateescape"))
            if entry is None:
                return None
            mode, oid = entry
            if i < len(parts) - 1:
                if mode != b"40000":
                    return None
                tree = oid
            elif mode in {b"100644", b"100755", b"120000"}:
                kind, data = self.read(oid)
                return data if kind == "blob" else None
        return None

    def _entry(self, tree: str, name: bytes) -> tuple[bytes, str] | None:
        kind, data = self.read(tree)
        if kind != "tree":
            raise Unsure(f"{tree} is not a tree")
        pos = 0
        while pos < len(data):
            space = data.index(b" ", pos)
            nul = data.index(b"\0", space)
            end = nul + 1 + self._width
            if data[space + 1 : nul] == name:
                return data[pos:space], data[nul + 1 : end].hex()
            pos = end
        return None

    # -- where an object is --------------------------------------------------------

    def _loose(self, oid: str) -> tuple[str, bytes] | None:
        try:
            with open(os.path.join(self._objects, oid[:2], oid[2:]), "rb") as fh:
                raw = zlib.decompress(fh.read())
        except FileNotFoundError:
            return None
        except (OSError, zlib.error):
            raise Unsure(f"loose object {oid} cannot be read") from None
        header, _, data = raw.partition(b"\0")
        kind, _, size = header.decode("ascii", "replace").partition(" ")
        if kind not in _TYPES.values() or not size.isdigit() or int(size) != len(data):
            raise Unsure(f"loose object {oid} has a header not read here")
        return kind, data

    def _packed(self, oid: bytes) -> tuple[str, bytes]:
        for pack in self._all_packs():
            offset = pack.offset_of(oid)
            if offset is not None:
                return pack.object_at(offset, self, 0)
        raise Unsure(f"object {oid.hex()} is in no pack read here")

    def _all_packs(self) -> list[_Pack]:
        if self._packs is None:
            folder = os.path.join(self._objects, "pack")
            try:
                names = sorted(n for n in os.listdir(folder) if n.endswith(".idx"))
            except FileNotFoundError:
                names = []
            except OSError:
                raise Unsure(f"{folder} cannot be listed") from None
            if len(names) > _MAX_PACKS:
                raise Unsure(f"{folder} holds more packs than are read here")
            self._packs = [_Pack(os.path.join(folder, n), self._width) for n in names]
        return self._packs


class _Pack:
    """One ``pack-*.pack`` and its version 2 ``.idx``, mapped into memory when first asked."""

    def __init__(self, idx: str, width: int) -> None:
        self._idx_path = idx
        self._width = width
        self._idx: mmap.mmap | None = None
        self._pack: mmap.mmap | None = None

    def _maps(self) -> tuple[mmap.mmap, mmap.mmap]:
        if self._idx is None or self._pack is None:
            try:
                self._idx = _map(self._idx_path)
                self._pack = _map(self._idx_path.removesuffix(".idx") + ".pack")
            except (OSError, ValueError):
                raise Unsure(f"{self._idx_path} or its pack cannot be read") from None
            if self._idx[:8] != _IDX_MAGIC or self._pack[:4] != b"PACK":
                raise Unsure(f"{self._idx_path} is not a version 2 pack index")
        return self._idx, self._pack

    def offset_of(self, oid: bytes) -> int | None:
        idx, _ = self._maps()
        count = int.from_bytes(idx[8 + 255 * 4 : 8 + 256 * 4], "big")
        first = oid[0]
        lo = int.from_bytes(idx[8 + (first - 1) * 4 : 8 + first * 4], "big") if first else 0
        hi = int.from_bytes(idx[8 + first * 4 : 8 + (first + 1) * 4], "big")
        names = 8 + 256 * 4
        w = self._width
        while lo < hi:
            mid = (lo + hi) // 2
            here = idx[names + mid * w : names + (mid + 1) * w]
            if here == oid:
                return self._offset(idx, count, mid)
            if here < oid:
                lo = mid + 1
            else:
                hi = mid
        return None

    def _offset(self, idx: mmap.mmap, count: int, n: int) -> int:
        offsets = 8 + 256 * 4 + count * (self._width + 4)
        small = int.from_bytes(idx[offsets + n * 4 : offsets + (n + 1) * 4], "big")
        if not small & 0x80000000:
            return small
        large = offsets + count * 4 + (small & 0x7FFFFFFF) * 8
        return int.from_bytes(idx[large : large + 8], "big")

    def object_at(self, offset: int, store: ObjectStore, depth: int) -> tuple[str, bytes]:
        """The object stored at ``offset``, its deltas applied (bases found in ``store``)."""
        if depth > _MAX_CHAIN:
            raise Unsure("a delta chain longer than is followed here")
        _, pack = self._maps()
        try:
            byte = pack[offset]
            kind, size, pos = (byte >> 4) & 7, byte & 15, offset + 1
            shift = 4
            while byte & 0x80:
                byte = pack[pos]
                size |= (byte & 0x7F) << shift
                shift, pos = shift + 7, pos + 1
            if kind in _TYPES:
                return _TYPES[kind], _inflate(pack, pos, size)
            if kind == _OFS_DELTA:
                byte = pack[pos]
                back, pos = byte & 0x7F, pos + 1
                while byte & 0x80:
                    byte = pack[pos]
                    back, pos = ((back + 1) << 7) | (byte & 0x7F), pos + 1
                base_kind, base = self.object_at(offset - back, store, depth + 1)
            elif kind == _REF_DELTA:
                base_oid = pack[pos : pos + self._width]
                pos += self._width
                at = self.offset_of(base_oid)
                base_kind, base = (
                    self.object_at(at, store, depth + 1)
                    if at is not None
                    else store.read(base_oid.hex())
                )
            else:
                raise Unsure(f"a pack entry of type {kind} is not read here")
            return base_kind, _apply_delta(base, _inflate(pack, pos, size))
        except IndexError:
            raise Unsure(f"{self._idx_path}: an entry runs past the end of its pack") from None


def _map(path: str) -> mmap.mmap:
    with open(path, "rb") as fh:
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def _inflate(pack: mmap.mmap, pos: int, size: int) -> bytes:
    """The ``size`` bytes of the zlib stream that starts at ``pos``."""
    inflater = zlib.decompressobj()
    out = b""
    chunk = max(size, 4096)
    try:
        while not inflater.eof and pos < len(pack):
            out += inflater.decompress(pack[pos : pos + chunk])
            pos += chunk
    except zlib.error:
        raise Unsure("a pack entry does not inflate") from None
    if not inflater.eof or len(out) != size:
        raise Unsure("a pack entry is not the size its header says")
    return out


def _apply_delta(base: bytes, delta: bytes) -> bytes:
    """git's delta format: the source and result sizes, then copies from ``base`` and inserts."""
    source, pos = _varint(delta, 0)
    result, pos = _varint(delta, pos)
    if source != len(base):
        raise Unsure("a delta made against another base")
    out = bytearray()
    while pos < len(delta):
        op = delta[pos]
        pos += 1
        if op & 0x80:
            start = size = 0
            for i in range(4):
                if op & (1 << i):
                    start |= delta[pos] << (8 * i)
                    pos += 1
            for i in range(3):
                if op & (0x10 << i):
                    size |= delta[pos] << (8 * i)
                    pos += 1
            size = size or 0x10000
            if start + size > len(base):
                raise Unsure("a delta copies past its base")
            out += base[start : start + size]
        elif op:
            out += delta[pos : pos + op]
            pos += op
        else:
            raise Unsure("a delta holds git's reserved instruction 0")
    if len(out) != result:
        raise Unsure("a delta's result is not the size it says")
    return bytes(out)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def reaches(store: ObjectStore, start: str, target: str, *, limit: int) -> bool | None:
    """Whether commit ``target`` is ``start`` or one of its ancestors, walking ``start``'s
    parents; None when ``limit`` commits were read without finding it or running out.

    Each commit walked has every parent read (Unsure unless each is a commit that hashes to
    its id) before the walk goes on: git's walk, in date order, stops on a parent it cannot
    read, however another parent leads to ``target``. Raw parents only: the caller makes
    sure no graft or shallow file rewrites them.
    """
    seen, pending = {start}, [start]
    while pending:
        if len(seen) > limit:
            return None
        commit = pending.pop()
        if commit == target:
            return True
        for parent in store.parents(commit):
            store.parents(parent)
            if parent not in seen:
                seen.add(parent)
                pending.append(parent)
    return False


def _has_replace_refs(common: str) -> bool:
    if any(files for _, _, files in os.walk(os.path.join(common, "refs", "replace"))):
        return True
    try:
        with open(os.path.join(common, "packed-refs"), "rb") as fh:
            return b" refs/replace/" in fh.read()
    except FileNotFoundError:
        return False
    except OSError:
        raise Unsure(f"{common}/packed-refs cannot be read") from None
