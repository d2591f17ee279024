"""team-router: safe multi-repository worktrees for coding-agent pipelines."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"


class _PathlibFinder:
    """Loads ``pathlib`` without ``urllib.parse``, which it imports for ``Path.as_uri`` alone.

    ``urllib.parse`` (with ``ipaddress`` and the named tuples it makes at import)
    costs ~12 million instructions to import: more than any module of ours, 6% of
    ``new``'s whole process, and as much again in ``phase``. None of our commands
    calls ``as_uri`` on its way; one that does gets the real function on that call.
    Asked about ``pathlib`` alone, once: it leaves the import system's list at once.
    """

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "pathlib":
            return None
        forget_pathlib_finder()
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                spec.loader = _PathlibLoader(spec.loader)
                return spec
        return None


class _PathlibLoader:
    """The standard loader of ``pathlib``, run while ``urllib.parse`` is a stand-in."""

    def __init__(self, loader: object) -> None:
        self.loader = loader

    def __getattr__(self, name: str) -> object:
        return getattr(self.loader, name)  # get_source, get_code, is_package...

    def create_module(self, spec: object) -> object:
        return self.loader.create_module(spec)  # type: ignore[attr-defined]

    def exec_module(self, module: object) -> None:
        if "urllib.parse" in sys.modules:
            self.loader.exec_module(module)  # type: ignore[attr-defined]
            return
        stand_in = type(sys)("urllib.parse")
        stand_in.quote_from_bytes = _quote_from_bytes  # type: ignore[attr-defined]
        # Another Python's pathlib may take other names at its import: they load the
        # real module then (PEP 562), as if no stand-in were there; never an ImportError.
        stand_in.__getattr__ = _real_parser_attribute  # type: ignore[method-assign]
        sys.modules["urllib.parse"] = stand_in
        try:
            self.loader.exec_module(module)  # type: ignore[attr-defined]
        finally:
            # Only for pathlib's own import: a later `import urllib.parse` loads the real one.
            if sys.modules.get("urllib.parse") is stand_in:
                del sys.modules["urllib.parse"]


def _real_parser_attribute(name: str) -> object:
    """``urllib.parse.<name>`` from the real module, put in place of the stand-in.

    The import system's own questions (``__path__``, ``__spec__``...) are not names taken:
    they find nothing, as on any plain module."""
    if name.startswith("__"):
        raise AttributeError(name)
    sys.modules.pop("urllib.parse", None)
    import urllib.parse

    return getattr(urllib.parse, name)


def _quote_from_bytes(bs: bytes, safe: str = "/") -> str:
    from urllib.parse import quote_from_bytes

    return quote_from_bytes(bs, safe)


def forget_pathlib_finder() -> None:
    """Out of the import system's list: a finder of ours left there changes the order in
    which the interpreter's exit frees the objects of a process that never loaded pathlib."""
    if _PathlibFinder in sys.meta_path:
        sys.meta_path.remove(_PathlibFinder)


if "pathlib" not in sys.modules:
    sys.meta_path.insert(0, _PathlibFinder)  # type: ignore[arg-type]
