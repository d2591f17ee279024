"""Shared fixture builders for the benchmarks (not tests): real repos in a temp dir."""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


def sh(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        args, cwd=cwd, env=env or ENV, check=True, capture_output=True, text=True
    ).stdout.strip()


def team_router() -> list[str]:
    """The installed entry point next to this interpreter, as a user runs it.

    The package's bytecode is written first (:func:`compile_package`).
    """
    compile_package()
    exe = Path(sys.executable).with_name("team-router")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "router.entry"]


def compile_package() -> None:
    """Bytecode for the package, as an installed wheel has it.

    With PYTHONDONTWRITEBYTECODE set (common in sandboxes), an editable
    checkout would otherwise recompile every changed module on every run,
    and the benchmark would time that.
    """
    import router

    sh(sys.executable, "-m", "compileall", "-q", str(Path(router.__file__).parent))


def sides(baseline: str | None) -> dict[str, dict[str, str]]:
    """The code each timed run runs, by name: this tree, and with ``--baseline DIR`` the
    ``router/`` of another checkout (a ``git worktree add --detach DIR main``) through
    ``PYTHONPATH``, with the same entry point, fixture and interpreter, run side by side."""
    found = {"this tree": ENV}
    if baseline:
        base = Path(baseline).resolve()
        if not (base / "router" / "__init__.py").is_file():
            raise SystemExit(f"--baseline {baseline}: no router/ package there")
        sh(sys.executable, "-m", "compileall", "-q", str(base / "router"))
        found[f"baseline {base}"] = {**ENV, "PYTHONPATH": str(base)}
    return found


def make_repo(parent: Path, name: str, files: int, size: int = 8192) -> Path:
    """``parent/name`` with ``files`` files of ``size`` bytes in 40 folders, pushed to a bare origin."""
    repo = parent / name
    repo.mkdir(parents=True)
    sh("git", "init", "-q", "-b", "main", cwd=repo)
    line = "x" * 63 + "\n"
    for i in range(files):
        folder = repo / f"pkg{i % 40}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{i}.py").write_text(f"# {i}\n" + line * (size // 64))
    sh("git", "add", "-A", cwd=repo)
    sh("git", "commit", "-q", "-m", "initial", cwd=repo)
    bare = parent.parent / "origins" / f"{name}.git"
    bare.parent.mkdir(parents=True, exist_ok=True)
    sh("git", "init", "-q", "--bare", "-b", "main", str(bare))
    sh("git", "remote", "add", "origin", str(bare), cwd=repo)
    sh("git", "push", "-q", "-u", "origin", "main", cwd=repo)
    sh("git", "remote", "set-head", "origin", "main", cwd=repo)
    return repo


class Timing(NamedTuple):
    """One timed run: wall seconds, and the CPU seconds (user + system) of the processes it ran.

    On a shared machine the wall time depends on what else runs; the CPU time
    of the run's own processes (``RUSAGE_CHILDREN``: every child waited for,
    with the descendants they waited for) is the steadier figure.
    """

    wall: float
    cpu: float

    def __str__(self) -> str:
        return f"{self.wall * 1000:.0f} ms wall, {self.cpu * 1000:.0f} ms CPU"


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(fn: Callable[..., object], *args: object, **kwargs: object) -> Timing:
    # Flush what earlier (untimed) steps wrote or deleted, so neither side pays
    # for the other's disk writeback or discards.
    os.sync()
    cpu = children_cpu()
    start = time.perf_counter()
    fn(*args, **kwargs)
    return Timing(time.perf_counter() - start, children_cpu() - cpu)


def median(values: list[float]) -> float:
    return statistics.median(values)


def paired(ours: list[Timing], base: list[Timing]) -> tuple[float, float]:
    """The medians of the run-by-run ratios, ours over the baseline's (wall, CPU): each pair
    ran back to back, so a load that changes between pairs cancels out."""
    return (
        median([o.wall / b.wall for o, b in zip(ours, base, strict=True)]),
        median([o.cpu / b.cpu for o, b in zip(ours, base, strict=True)]),
    )


def median_timing(values: list[Timing]) -> Timing:
    """Wall and CPU medians, each taken on its own."""
    return Timing(median([v.wall for v in values]), median([v.cpu for v in values]))


def load() -> str:
    """The machine's load, printed with every figure (the lead re-measures on another)."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


TMPFS = Path("/dev/shm")


def workdir(*, tmpfs: bool = False) -> Path:
    """A fresh directory for one benchmark's fixture: the system's temp dir, or memory.

    On tmpfs no disk is written: what is measured is the processes' own work.
    A virtual disk's speed can drift several times over as files come and go
    (on one ext4 with ``discard`` the same 7 sequential ``git worktree add``
    went from 2 s to 12 s of CPU over five rounds), which swamps the
    difference between the two sides.
    """
    if tmpfs and not TMPFS.is_dir():
        raise SystemExit(f"--tmpfs: {TMPFS} is not there on this machine")
    return Path(tempfile.mkdtemp(prefix="team-router-bench-", dir=TMPFS if tmpfs else None))


class Hogs:
    """``n`` processes spinning on a core while the figures are taken: a machine with other work.

    The load a shared machine happens to have comes and goes; these are the
    same in every run, on both sides.
    """

    def __init__(self, n: int) -> None:
        spin = "while True: pass"
        self.procs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(n)]

    def __enter__(self) -> Hogs:
        time.sleep(0.2 if self.procs else 0)  # let them get going
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()


def cleanup(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def verdict(label: str, ratio: float, target: float) -> int:
    """Print the figure as the last line; non-zero exit on a miss."""
    ok = ratio <= target
    print(load())
    print(f"{label}: {ratio:.2f}x (target <= {target}x) {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1
