"""router.parallel: every item runs, results in order, errors kept until all are done."""

from __future__ import annotations

import threading

import pytest

from router.parallel import MAX_PARALLEL, fed, meanwhile, parallel_map, parallel_outcomes, raised


def test_results_come_in_the_items_order_whatever_finishes_first():
    gates = [threading.Event() for _ in range(4)]

    def work(n: int) -> int:
        if n < 3:
            gates[n + 1].wait(10)  # each waits for the next one to start
        gates[n].set()
        return n * 10

    assert parallel_map(work, range(4)) == [0, 10, 20, 30]


def test_an_item_that_raises_lets_the_others_run_and_the_first_error_in_order_is_raised():
    ran: list[int] = []

    def work(n: int) -> int:
        ran.append(n)
        if n in (1, 3):
            raise ValueError(f"item {n}")
        return n

    with pytest.raises(ValueError, match="item 1"):
        parallel_map(work, range(5))
    assert sorted(ran) == [0, 1, 2, 3, 4]
    outcomes = parallel_outcomes(work, range(5))
    assert [raised(o) is not None for o in outcomes] == [False, True, False, True, False]
    assert [o for o in outcomes if raised(o) is None] == [0, 2, 4]


def test_no_more_than_max_parallel_run_at_once_and_one_item_runs_inline():
    running = 0
    most = 0
    lock = threading.Lock()

    def work(_: int) -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        threading.Event().wait(0.02)
        with lock:
            running -= 1

    parallel_map(work, range(MAX_PARALLEL * 2))
    assert 1 < most <= MAX_PARALLEL
    assert parallel_map(lambda _: threading.current_thread(), [0]) == [threading.main_thread()]


def test_meanwhile_runs_the_items_while_the_block_runs_and_waits_for_them_on_the_way_out():
    started = threading.Event()
    done: list[int] = []

    def work(n: int) -> int:
        if n == 0:
            started.set()
        threading.Event().wait(0.05)
        done.append(n)
        return n * 10

    with meanwhile(work, range(3)) as running:
        assert started.wait(10)  # under way while the block runs
        assert len(done) < 3
    assert sorted(done) == [0, 1, 2]
    assert running.results == [0, 10, 20]


def test_meanwhile_waits_for_its_items_when_the_block_fails_and_keeps_their_errors():
    done: list[int] = []

    def work(n: int) -> int:
        threading.Event().wait(0.05)
        done.append(n)
        if n == 1:
            raise ValueError("item 1")
        return n

    with pytest.raises(KeyError), meanwhile(work, range(3)):
        raise KeyError("the block's own")
    assert sorted(done) == [0, 1, 2]  # no thread outlives the block
    with meanwhile(work, range(3)) as running:
        pass
    with pytest.raises(ValueError, match="item 1"):
        _ = running.results


def test_ctrl_c_starts_no_more_items_and_waits_for_those_under_way(tmp_path):
    # A real SIGINT to a process mapping 20 half-second items, 8 at a time, sent
    # once the eighth has started (a timer could fire after the map on a loaded
    # machine, and then nothing is interrupted).
    import subprocess
    import sys

    log = tmp_path / "started"
    code = (
        "import os, signal, threading, time\n"
        # Ctrl-C's own handler, whatever was inherited: a job started with `&`
        # by a non-interactive shell (a CI runner's) has SIGINT ignored.
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from router.parallel import parallel_map\n"
        f"log = open({str(log)!r}, 'a', buffering=1)\n"
        "def item(n):\n"
        "    log.write(f'{n}\\n')\n"
        "    if n == 7:  # the eighth item taken: every thread has one under way\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(0.5)\n"
        "    log.write(f'done {n}\\n')\n"
        "try:\n"
        "    parallel_map(item, range(20))\n"
        "except KeyboardInterrupt:\n"
        "    raise SystemExit(130)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 130, proc.stderr
    lines = log.read_text().splitlines()
    started = [line for line in lines if not line.startswith("done")]
    assert len(started) == MAX_PARALLEL  # the first eight, and no more
    assert len(lines) == 2 * MAX_PARALLEL  # each of them finished


def _map_signalled(tmp_path, *, deferred: bool) -> tuple[int, list[str], str]:
    """A process mapping 20 items under router.interrupt's handlers, SIGTERMed by its
    eighth item; its exit code, the items' log and its stderr."""
    import subprocess
    import sys

    log = tmp_path / "started"
    within = "interrupt.deferred()" if deferred else "contextlib.nullcontext()"
    code = (
        "import contextlib, os, signal, threading, time\n"
        "from router import interrupt\n"
        "from router.parallel import parallel_map\n"
        f"log = open({str(log)!r}, 'a', buffering=1)\n"
        "def item(n):\n"
        "    log.write(f'{n}\\n')\n"
        "    if n == 7:  # every thread has one under way, and the main thread waits\n"
        "        time.sleep(0.1)\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(1.0 if n == 0 else 0.4)  # the main thread waits for the first\n"
        "    log.write(f'done {n}\\n')\n"
        "with interrupt.handled():\n"
        "    try:\n"
        f"        with {within}:\n"
        "            parallel_map(item, range(20))\n"
        "    except interrupt.Stopped as exc:\n"
        "        log.write(f'stopped {exc.signum}, threads {threading.active_count()}\\n')\n"
        "        raise SystemExit(128 + exc.signum)\n"
        "    log.write(f'received {interrupt.received()}\\n')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    return proc.returncode, log.read_text().splitlines(), proc.stderr


def test_a_signal_stops_the_map_only_once_the_items_under_way_finish_never_inside_a_wait(tmp_path):
    code, lines, err = _map_signalled(tmp_path, deferred=False)
    assert code == 143, err
    assert err == ""  # no traceback: the signal never raised inside threading's code
    started = [line for line in lines if line.isdigit()]
    assert len(started) == MAX_PARALLEL  # the first eight, and no more
    assert len([line for line in lines if line.startswith("done")]) == MAX_PARALLEL
    assert lines[-1] == "stopped 15, threads 1"  # raised once every worker was done


def test_a_deferred_signal_lets_the_map_run_every_item(tmp_path):
    # Deferred (a command that stops at its next step and reports): the items
    # decide, each at its own git call; the map itself neither stops nor raises.
    code, lines, err = _map_signalled(tmp_path, deferred=True)
    assert code == 0, err
    assert len([line for line in lines if line.startswith("done")]) == 20
    assert lines[-1] == "received 15"


def test_fed_items_start_while_the_block_still_finds_more_and_come_back_in_order():
    first_done = threading.Event()
    running: list[int] = []
    most = 0

    def work(n: int) -> int:
        nonlocal most
        running.append(n)
        most = max(most, len(running))
        threading.Event().wait(0.02)
        running.remove(n)
        if n == 0:
            first_done.set()
        if n == 5:
            raise ValueError("item 5")
        return n * 10

    with fed(work, limit=3) as removing:
        removing.put(0)
        assert first_done.wait(10)  # done before the block gave the next
        for n in range(1, 12):
            removing.put(n)
    assert most <= 3
    with pytest.raises(ValueError, match="item 5"):
        _ = removing.results
    with fed(work, limit=3) as removing:
        for n in (3, 1, 2):
            removing.put(n)
    assert removing.results == [30, 10, 20]
    with fed(work) as removing:  # nothing given: no thread
        assert threading.active_count() == 1
    assert removing.results == []


def test_a_signal_while_items_are_fed_stops_the_block_and_starts_none_given_after(tmp_path):
    """SIGTERM while the block gives items: it stops the block (Stopped, no traceback), the
    items under way finish, and the ones given but not yet started never start."""
    import subprocess
    import sys

    log = tmp_path / "log"
    code = (
        "import os, signal, threading, time\n"
        "from router import interrupt\n"
        "from router.parallel import fed\n"
        f"log = open({str(log)!r}, 'a', buffering=1)\n"
        "def item(n):\n"
        "    log.write(f'{n}\\n')\n"
        "    time.sleep(0.4)\n"
        "    log.write(f'done {n}\\n')\n"
        "with interrupt.handled():\n"
        "    try:\n"
        "        with fed(item, limit=2) as items:\n"
        "            for n in range(6):\n"
        "                items.put(n)\n"
        "            time.sleep(0.1)\n"
        "            os.kill(os.getpid(), signal.SIGTERM)\n"
        "            for n in range(6, 100):\n"
        "                items.put(n)\n"
        "                time.sleep(0.01)\n"
        "    except interrupt.Stopped as exc:\n"
        "        log.write(f'stopped {exc.signum}, threads {threading.active_count()}\\n')\n"
        "        raise SystemExit(128 + exc.signum)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 143, proc.stderr
    assert proc.stderr == ""
    lines = log.read_text().splitlines()
    assert sorted(line for line in lines if line.isdigit()) == ["0", "1"]
    assert sorted(line for line in lines if line.startswith("done")) == ["done 0", "done 1"]
    assert lines[-1] == "stopped 15, threads 1"
