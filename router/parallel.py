"""Bounded parallelism over repos: one map for every command that asks many repos at once.

git processes for different repos do not share locks, so they run side by side;
the bound keeps a topic with many repos from starting a process per repo at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

TYPE_CHECKING = False
if TYPE_CHECKING:
    # Annotations only (they are strings at run time): importing typing costs ~3 ms.
    from typing import TypeVar

    T = TypeVar("T")
    R = TypeVar("R")

MAX_PARALLEL = 8  # repos worked on at once


def parallel_map(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``[fn(i) for i in items]``, in order, at most ``MAX_PARALLEL`` at a time.

    One item (or none) runs inline: no thread for the common single-repo topic.
    """
    items = list(items)
    if len(items) <= 1:
        return [fn(i) for i in items]
    from concurrent.futures import ThreadPoolExecutor  # lazy: only when there is work to share

    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(items))) as pool:
        return list(pool.map(fn, items))
