"""The phase clock and its hooks in one process: exclusive phases, exact sums, no leaks."""

from __future__ import annotations

import math
import pickle
import queue
import re
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy
import pytest
import uproot

from roastcoffea import _native
from roastcoffea.instrument import _phase_hooks, instrumentation_counters, phases
from roastcoffea.instrument.phases import TaskPhases
from roastcoffea.phase_vocabulary import PHASES


@pytest.fixture
def finished() -> Iterator[list[TaskPhases]]:
    """The clocks handed to the sink while the test runs, with the hooks installed."""
    got: list[TaskPhases] = []
    phases.set_sink(got.append)
    _phase_hooks.install()
    try:
        yield got
    finally:
        _phase_hooks.uninstall()
        phases.set_sink(None)


def burn(seconds: float) -> None:
    """Spend ``seconds`` of this thread's CPU time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_phases_are_exclusive_and_add_up_to_the_clock() -> None:
    task = TaskPhases(cpu_interval=0.0)  # the CPU clock read at every switch
    task.enter("interpret")
    burn(0.02)
    task.enter("decompress")
    burn(0.03)
    inner_wall = task.leave()
    task.leave()
    ran = task.close()
    assert task.wall["decompress"] == inner_wall
    assert task.cpu["decompress"] >= 0.03 and task.cpu["interpret"] >= 0.02
    # the nested stretch is not charged twice
    assert task.cpu["interpret"] < 0.02 + task.cpu["decompress"]
    assert sum(task.wall.values()) == pytest.approx(ran, rel=1e-12, abs=1e-12)
    assert task.switches == 2


def test_a_call_nested_in_its_own_phase_charges_nothing_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    task = TaskPhases()
    task.enter("interpret")
    burn(0.01)
    task.enter("interpret")
    burn(0.01)
    assert task.leave() == 0.0
    assert (task.switches, task.nested) == (1, 1)
    task.leave()
    ran = task.close()
    # Both stretches, charged once. The 1 ms interval splits a window's CPU by wall
    # (the thread may be preempted anywhere): exact within the split's bound.
    assert task.cpu["interpret"] + task.cpu_split_bound >= 0.02
    assert sum(task.cpu.values()) >= 0.02
    assert sum(task.wall.values()) == pytest.approx(ran, rel=1e-12, abs=1e-12)
    monkeypatch.setattr(phases, "_call_seconds", (1.0, 10.0, 100.0, 1000.0))
    assert phases.clock_seconds(task) == 1.0 + 10.0 + task.cpu_reads * 1000.0


def test_the_clocks_are_perf_counter_and_thread_time() -> None:
    t0, c0 = time.perf_counter(), time.thread_time()
    task = TaskPhases()
    burn(0.01)
    task.enter("read")
    task.leave()
    t1 = time.perf_counter()
    ran = task.close()
    t2, c2 = time.perf_counter(), time.thread_time()
    assert t0 <= task.started <= t1 <= task.started + ran <= t2
    assert c2 - c0 >= sum(task.cpu.values()) >= 0.01


def test_the_cpu_clock_is_read_at_most_once_per_interval() -> None:
    hooked = _native.PhaseHook(lambda: None, "interpret")  # CPU-bound: no wait to isolate
    c0 = time.thread_time()
    task = TaskPhases()  # the worker's clock: one CPU read per millisecond at most
    _native.set_current_task(task)
    try:
        for _ in range(5000):
            hooked()
    finally:
        _native.set_current_task(None)
    ran = task.close()
    c1 = time.thread_time()
    assert task.switches == 5000 and task.cpu_interval == 0.001
    # the first read, at most one per interval, and the close
    assert task.cpu_reads <= 2 + ran / task.cpu_interval
    assert c1 - c0 >= sum(task.cpu.values()) > 0  # every CPU second is charged once
    assert 0.0 <= task.cpu_split_bound <= ran


def test_stretches_longer_than_the_interval_are_exact() -> None:
    task = TaskPhases(cpu_interval=0.004)
    burn(0.005)  # each switch comes at least an interval after the last CPU read
    task.enter("decompress")
    burn(0.005)
    task.leave()
    burn(0.005)
    task.close()
    assert task.cpu_reads == 4 and task.cpu_split_bound == 0.0
    assert task.cpu["decompress"] >= 0.005 and task.cpu["other"] >= 0.01


def test_a_short_read_reads_no_cpu_clock_and_a_wait_is_charged_to_the_read() -> None:
    read = _native.PhaseHook(lambda seconds: seconds and time.sleep(seconds), "read")
    task = TaskPhases(cpu_interval=60.0)
    slow = 0  # read(0) calls that lasted the wait interval: preempted inside
    _native.set_current_task(task)
    try:
        for _ in range(1000):
            burn(60e-6)  # past the wait interval: the clock used to read its CPU on entering
            t0 = time.perf_counter()
            read(0)  # returns at once: no wait to isolate
            slow += time.perf_counter() - t0 >= 50e-6
        reads = task.cpu_reads
        task.enter("interpret")
        burn(0.005)
        read(0.02)  # a wait: the CPU clock is read as it ends
    finally:
        _native.set_current_task(None)
    task.leave()
    task.close()
    # the start, and one per read(0) whose stretch lasted the wait interval
    assert reads <= 1 + slow
    assert task.cpu_reads - reads == 2  # the wait's end, the close
    # The window of the wait held 5 ms of interpret: the 20 ms off CPU went to the
    # read, exactly unless the thread was also preempted (the split's bound).
    assert task.cpu["read"] <= task.wall["read"] - 0.02 + task.cpu_split_bound
    assert task.cpu["interpret"] + task.cpu_split_bound >= 0.005


def test_only_a_get_from_an_empty_queue_is_a_read_with_a_window_of_its_own() -> None:
    get = _native.PhaseHook(queue.Queue.get, "read", queue=True)
    full, empty = queue.Queue(), queue.Queue()
    task = TaskPhases(cpu_interval=60.0)
    waited: list[float] = []

    def put_once_the_get_waits() -> None:
        # The get is blocked once it waits on the queue's condition; from then on
        # at least 20 ms pass before the put, whatever the schedule.
        while not empty.not_empty._waiters:  # type: ignore[attr-defined]
            time.sleep(0.001)
        seen = time.perf_counter()
        time.sleep(0.02)
        waited.append(time.perf_counter() - seen)
        empty.put(-1)

    _native.set_current_task(task)
    try:
        for i in range(100):
            full.put(i)
            burn(60e-6)
            assert get(full) == i  # something queued: no wait, passed on
        counts = (task.switches, task.passed, task.cpu_reads)
        putter = threading.Thread(target=put_once_the_get_waits)
        putter.start()
        burn(60e-6)
        assert get(empty) == -1
    finally:
        _native.set_current_task(None)
        putter.join()
    task.close()
    assert counts == (0, 100, 1)  # the clock's start only
    assert (task.switches, task.cpu_reads) == (1, 1 + 3)  # the get's start and end, the close
    # The read's stretch covers the whole time the get was seen blocked, off CPU but
    # for the few instructions between registering as a waiter and blocking (1 ms is
    # thousands of times what they take).
    assert task.wall["read"] >= waited[0] >= 0.02
    assert task.cpu["read"] <= task.wall["read"] - waited[0] + task.cpu_split_bound + 0.001
    assert "queue" in repr(get)


class Basket:
    """What uproot's decompression executor puts in the reader's queue."""


def test_a_queue_wait_is_charged_to_what_ended_it() -> None:
    ended_by = ((Basket, "decompress"), (type(None), "interpret"))
    get = _native.PhaseHook(queue.Queue.get, "read", queue=True, ended_by=ended_by)
    assert get.ended_by == ended_by
    task = TaskPhases(cpu_interval=60.0)
    items = queue.Queue()
    waits: list[tuple[str, float]] = []

    def put_once_the_get_waits(item: object, phase: str) -> None:
        while not items.not_empty._waiters:  # type: ignore[attr-defined]
            time.sleep(0.001)
        seen = time.perf_counter()
        time.sleep(0.02)
        waits.append((phase, time.perf_counter() - seen))
        items.put(item)

    _native.set_current_task(task)
    task.enter("interpret")
    try:
        for item, phase in ((b"chunk", "read"), (Basket(), "decompress"), (None, "interpret")):
            putter = threading.Thread(target=put_once_the_get_waits, args=(item, phase))
            putter.start()
            assert get(items) is item
            putter.join()
    finally:
        task.leave()
        _native.set_current_task(None)
    task.close()
    assert task.switches == 1 + 3 and task.errors == 0
    waited = dict(waits)
    assert task.wall["read"] >= waited["read"] >= 0.02
    assert task.wall["decompress"] >= waited["decompress"] >= 0.02
    # interpret: the wait ended by None, and the calls around the gets
    assert task.wall["interpret"] >= waited["interpret"] >= 0.02
    assert (task.cpu["read"] + task.cpu["decompress"]) <= (
        task.wall["read"] + task.wall["decompress"] - 0.04 + task.cpu_split_bound + 0.002
    )


def test_a_helper_clock_adds_its_work_beside_the_task_s_and_its_bytes_to_them() -> None:
    task, helper = TaskPhases(), TaskPhases(cpu_interval=0.0, base="interpret")
    codec = _native.PhaseHook(lambda self, data: data * 2, "decompress", codec="LZMA")
    _native.set_current_task(helper)
    try:
        codec(None, b"1234")
        burn(0.002)
    finally:
        _native.set_current_task(None)
    helper.read_bytes = 40
    helper.close()
    task.read_bytes = 2
    task.add_helper(helper)
    ran = task.close()
    assert task.helper_runs == 1
    assert task.helper_wall == helper.wall and task.helper_cpu == helper.cpu
    assert task.helper_cpu["interpret"] >= 0.002 - 1e-4  # a busy loop: on CPU, exactly
    assert task.helper_wall["other"] == 0.0  # based at interpret
    assert task.codecs["LZMA"][2:] == [4, 8]
    assert task.read_bytes == 42
    # beside the task's phases, not in them
    assert math.fsum(task.wall.values()) == pytest.approx(ran, abs=1e-9)
    with pytest.raises(TypeError, match="another TaskPhases"):
        task.add_helper(task)
    with pytest.raises(TypeError):
        task.add_helper(object())  # type: ignore[arg-type]


def test_helper_runs_wait_for_every_call_and_run_inline_calls_plainly() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from roastcoffea.instrument._helpers import HelperRuns

    task = TaskPhases()
    runs = HelperRuns(task)
    seen: list[object] = []

    def work(n: int) -> None:
        burn(0.001)
        seen.append(_native.current_task())

    with ThreadPoolExecutor(2) as pool:
        measured = runs.executor(pool)
        for n in range(6):
            measured.submit(work, n)
        runs.wait()  # every call added before it returns
        assert task.helper_runs == 6 and len(seen) == 6
        assert all(isinstance(t, TaskPhases) and t is not task for t in seen)
        assert math.fsum(task.helper_cpu.values()) >= 6 * 0.001 - 1e-3

    class Inline:  # an executor that runs the call in the submitting thread
        def submit(self, fn: Any, *args: Any) -> None:
            fn(*args)

    _native.set_current_task(task)
    try:
        runs.executor(Inline()).submit(work, 0)  # a measuring thread: its own task's
    finally:
        _native.set_current_task(None)
    runs.wait()
    assert seen[-1] is task and task.helper_runs == 6

    class Shut:
        def submit(self, fn: Any, *args: Any) -> None:
            raise RuntimeError("cannot schedule new futures after shutdown")

    with pytest.raises(RuntimeError, match="shutdown"):
        runs.executor(Shut()).submit(work, 0)
    runs.wait()  # the refused call is not waited for


def test_the_cpu_interval_is_checked() -> None:
    assert TaskPhases(cpu_interval=0.0).cpu_interval == 0.0
    for bad in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="cpu_interval"):
            TaskPhases(cpu_interval=bad)
    with pytest.raises(TypeError):
        TaskPhases(0.001)  # keyword only


def test_a_leave_without_an_enter_is_counted_not_raised() -> None:
    task = TaskPhases()
    assert task.leave() == 0.0
    assert task.errors == 1 and task.switches == 0


def test_calls_past_the_deepest_stack_are_counted_and_stay_paired(
    finished: list[TaskPhases],
) -> None:
    depth, beyond = 65_535, 3  # the base phase is the stack's first level

    def deep() -> None:
        task = phases.current()
        assert task is not None
        for i in range(depth + beyond):
            task.enter("read" if i % 2 else "interpret")
        for _ in range(depth + beyond):
            task.leave()
        task.enter("user")
        burn(0.005)
        task.leave()

    before = instrumentation_counters()["instrument_errors"]
    phases.run_task(deep, (), {})
    (task,) = finished
    assert task.errors == beyond and task.switches == depth + 1
    # the stack under the lost calls unwound in order (within the 1 ms interval's bound)
    assert task.cpu["user"] + task.cpu_split_bound >= 0.005
    assert instrumentation_counters()["instrument_errors"] == before + 1


def test_phase_names_are_checked() -> None:
    task = TaskPhases()
    with pytest.raises(ValueError, match="not a phase: 'reading'"):
        task.enter("reading")
    with pytest.raises(ValueError, match="not a phase"):
        _native.PhaseHook(print, 3)
    with pytest.raises(TypeError, match="callable"):
        _native.PhaseHook(3, "read")
    assert task.switches == 0 and task.errors == 0


def test_a_hook_binds_like_the_method_it_replaces_and_pickles() -> None:
    class Branch:
        def array(self, scale: int, *, offset: int = 0) -> tuple[object, int]:
            """Read it."""
            return self, scale + offset

    original = Branch.array
    Branch.array = _native.PhaseHook(original, "interpret")  # type: ignore[method-assign]
    branch = Branch()
    assert branch.array(2, offset=1) == (branch, 3)
    assert Branch.array(branch, 2) == (branch, 2)
    assert Branch.array.__wrapped__ is original and Branch.array.__name__ == "array"
    copy = pickle.loads(pickle.dumps(_native.PhaseHook(len, "read", opaque=True)))
    assert (copy.__wrapped__, copy.phase, copy.opaque) == (len, "read", True)
    task = TaskPhases()
    _native.set_current_task(task)
    try:
        assert branch.array(5) == (branch, 5)
        with pytest.raises(ZeroDivisionError):
            _native.PhaseHook(lambda: 1 / 0, "user")()
    finally:
        _native.set_current_task(None)
    assert (task.switches, task.nested, task.errors) == (2, 0, 0)
    task.close()
    assert task.wall["interpret"] > 0 and task.wall["user"] > 0


def test_opaque_phase_keeps_nested_hooks_out() -> None:
    task = TaskPhases()
    hooked = _native.PhaseHook(lambda: None, "read")
    _native.set_current_task(task)
    try:
        task.enter("open", opaque=True)
        assert task.opaque
        hooked()
        task.leave()
    finally:
        _native.set_current_task(None)
    assert not task.opaque
    assert (task.switches, task.nested, task.passed) == (1, 0, 1)


def test_rebase_charges_the_time_outside_hooks() -> None:
    task = TaskPhases()
    burn(0.01)
    task.rebase("user")
    burn(0.02)
    task.close()
    bound = task.cpu_split_bound  # the 1 ms interval splits a window's CPU by wall
    assert task.cpu["other"] + bound >= 0.01 and task.cpu["user"] + bound >= 0.02
    assert sum(task.cpu.values()) >= 0.03


def test_run_task_hands_the_clock_to_the_sink_once(finished: list[TaskPhases]) -> None:
    def outer() -> int:
        return phases.run_task(lambda: 7, (), {})  # nested: the outer call owns the clock

    assert phases.run_task(outer, (), {}) == 7
    assert len(finished) == 1 and phases.current() is None


def test_a_failing_task_still_reports_and_raises(finished: list[TaskPhases]) -> None:
    def fails() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        phases.run_task(fails, (), {})
    assert len(finished) == 1


def test_a_failing_sink_is_counted_not_raised() -> None:
    def broken(task: TaskPhases) -> None:
        raise RuntimeError("sink bug")

    before = instrumentation_counters()["instrument_errors"]
    phases.set_sink(broken)
    try:
        assert phases.run_task(lambda: "ok", (), {}) == "ok"
    finally:
        phases.set_sink(None)
    assert instrumentation_counters()["instrument_errors"] == before + 1


def test_without_a_sink_nothing_is_measured() -> None:
    assert phases.run_task(phases.current, (), {}) is None


def test_uproot_reads_split_into_open_decompress_and_interpret(
    finished: list[TaskPhases], cms_data: Path
) -> None:
    def read() -> int:
        with uproot.open(cms_data / "nano_dy.root") as file:
            return len(file["Events"]["Muon_pt"].array())

    assert phases.run_task(read, (), {}) > 0
    (task,) = finished
    assert task.wall["open"] > 0 and task.wall["interpret"] > 0
    assert set(task.codecs) == {"ZLIB"}
    wall, _, size_in, size_out = task.codecs["ZLIB"]
    assert wall == task.wall["decompress"] and size_out > size_in > 0
    assert task.read_bytes > 0


@pytest.mark.filterwarnings("ignore::RuntimeWarning:coffea.nanoevents.schemas")  # CMS files
def test_a_nanoevents_column_is_built_in_interpret_where_the_user_first_uses_it(
    finished: list[TaskPhases], cms_data: Path
) -> None:
    from coffea.nanoevents import NanoAODSchema, NanoEventsFactory

    factory = NanoEventsFactory.from_root(
        {str(cms_data / "nano_dy.root"): "Events"}, schemaclass=NanoAODSchema, mode="virtual"
    )
    events = factory.events()  # outside the task: its columns are still to be built

    def use() -> tuple[int, int]:
        task = phases.current()
        assert task is not None
        task.rebase("user")  # from here on the task is the user's code, as in a work item
        total = len(numpy.asarray(events.Muon.pt.layout.content.data))
        return total, int(numpy.count_nonzero(events.Muon.pt.layout.content.data > -1))

    total, again = phases.run_task(use, (), {})
    assert total == again > 0
    (task,) = finished
    # the column was read and decompressed in the task, where the user's code used it
    assert task.wall["interpret"] > 0 and task.wall["decompress"] > 0 and task.read_bytes > 0
    # uproot's TBranch.array (interpret) ran nested in an interpret stretch: from the user's
    # phase, only the array's building could have opened one
    assert task.nested >= 1


def test_a_task_logs_the_tkey_sizes_of_the_baskets_it_parses(
    finished: list[TaskPhases], cms_data: Path
) -> None:
    with uproot.open(cms_data / "nano_dy.root", array_cache=None) as file:
        branch = file["Events"]["Muon_pt"]
        branch.array()  # outside a task: nothing logged
        phases.run_task(branch.array, (), {})
        expected = [
            (
                file.file,
                int(branch.member("fBasketSeek")[number]),
                branch.basket_compressed_bytes(number),
                branch.basket_uncompressed_bytes(number),
            )
            for number in range(branch.num_baskets)
        ]
    (task,) = finished
    assert task.baskets == expected and len(expected) > 0
    assert task.take_baskets(object()) == {} and task.baskets == []  # taking empties the log
    assert TaskPhases().baskets == []


def test_the_basket_log_is_taken_per_file(cms_data: Path, finished: list[TaskPhases]) -> None:
    with uproot.open(cms_data / "nano_dy.root", array_cache=None) as file:
        branches = file["Events"]["Muon_pt"], file["Events"]["Muon_eta"]
        phases.run_task(lambda: [branch.array() for branch in branches], (), {})
        (task,) = finished
        taken = task.take_baskets(file.file)
        expected = {
            int(branch.member("fBasketSeek")[number]): (
                branch.basket_compressed_bytes(number),
                branch.basket_uncompressed_bytes(number),
            )
            for branch in branches
            for number in range(branch.num_baskets)
        }
    assert taken == expected and task.baskets == [] and task.take_baskets(file.file) == {}


def test_a_basket_that_cannot_be_logged_is_counted_and_parsed(
    finished: list[TaskPhases],
) -> None:
    class Basket:  # an uproot that keeps its TKey elsewhere
        def read_members(self) -> str:
            return "parsed"

    hooked = _native.PhaseHook(Basket.read_members, None, basket=True)
    assert phases.run_task(hooked, (Basket(),), {}) == "parsed"
    (task,) = finished
    assert (task.baskets, task.errors) == ([], 1)


def test_the_cost_of_a_hooked_call_is_measured_once() -> None:
    first = _phase_hooks.calibrate()
    assert all(0 <= cost < 1e-3 for cost in first)
    assert _phase_hooks.calibrate() == first == phases.call_costs()


def test_install_is_counted_and_uninstall_restores_the_originals() -> None:
    original = vars(uproot.source.chunk.Chunk)["wait"]
    _phase_hooks.install()
    _phase_hooks.install()
    assert vars(uproot.source.chunk.Chunk)["wait"] is not original
    _phase_hooks.uninstall()
    assert _phase_hooks.installed()
    _phase_hooks.uninstall()
    assert vars(uproot.source.chunk.Chunk)["wait"] is original
    assert not _phase_hooks.installed()


def test_phase_names_are_the_documented_ones() -> None:
    docs = Path(__file__).resolve().parents[1] / "docs" / "metrics.md"
    section = docs.read_text(encoding="utf-8").split("## Processor phases", 1)[1]
    documented = re.findall(r"^\| (\w+) \| ", section.split("\n\n| key |", 1)[0], re.M)
    assert tuple(documented[1:]) == PHASES  # after the table's heading row
    assert PHASES[-1] == "other"
    assert _native.PHASES == PHASES  # the clock's own list


def test_a_failing_hook_is_counted_and_the_read_goes_on(finished: list[TaskPhases]) -> None:
    class Unknowable:
        def __bool__(self) -> bool:
            raise RuntimeError("an uproot this hook does not know")

    data = numpy.frombuffer(b"abc", dtype=numpy.uint8)
    chunk = uproot.source.chunk.Chunk(None, 0, 3, uproot.source.futures.TrivialFuture(data))
    chunk._is_memmap = Unknowable()
    before = instrumentation_counters()["instrument_errors"]
    assert phases.run_task(lambda: bytes(chunk.raw_data), (), {}) == b"abc"
    assert instrumentation_counters()["instrument_errors"] == before + 1
    assert finished[0].read_bytes == 0


def test_a_wait_for_bytes_already_in_memory_only_passes(finished: list[TaskPhases]) -> None:
    data = numpy.frombuffer(b"abcd", dtype=numpy.uint8)
    chunk = uproot.source.chunk.Chunk(None, 0, 4, uproot.source.futures.TrivialFuture(data))
    chunk.wait()  # the bytes are in memory from now on

    def waits() -> None:
        for _ in range(3):
            chunk.wait()

    phases.run_task(waits, (), {})
    task = finished[0]
    assert (task.switches, task.nested, task.passed) == (0, 0, 3)
    assert task.read_bytes == 0


class Codec:
    """An uproot-like codec: ``decompress(data, uncompressed_bytes)``."""

    def decompress(self, data: bytes, uncompressed_bytes: int | None = None) -> object:
        if data == b"bad":
            raise ValueError("corrupt basket")
        return b"x" * (uncompressed_bytes or 0) if data != b"odd" else object()


def test_a_codec_hook_totals_its_decompressions(finished: list[TaskPhases]) -> None:
    hooked = _native.PhaseHook(Codec.decompress, "decompress", codec="LZ4")
    assert (hooked.codec, hooked.unmaterialized) == ("LZ4", None)
    codec = Codec()

    def decompress() -> None:
        assert len(hooked(codec, b"abc", 10)) == 10
        assert len(hooked(codec, data=b"abcd", uncompressed_bytes=20)) == 20
        with pytest.raises(ValueError, match="corrupt"):
            hooked(codec, b"bad", 5)  # its input counts, no output
        hooked(codec, b"odd")  # an output without a length: counted, not raised

    phases.run_task(decompress, (), {})
    (task,) = finished
    assert set(task.codecs) == {"LZ4"}
    wall, cpu, size_in, size_out = task.codecs["LZ4"]
    assert (size_in, size_out) == (3 + 4 + 3 + 3, 10 + 20)
    assert wall == task.wall["decompress"] > 0 and cpu == task.cpu["decompress"]
    assert (task.switches, task.errors) == (4, 1)
    assert hooked(codec, b"ab", 2) == b"xx"  # outside a task: only the call


def virtual_array(length: int, seconds: float) -> object:
    """An awkward virtual array whose generator spends ``seconds`` of CPU, as a
    NanoEvents column's reads and conversion do."""
    from awkward._nplikes.numpy import Numpy

    def generator() -> numpy.ndarray:
        burn(seconds)
        return numpy.arange(length, dtype=numpy.float64)

    return _phase_hooks._virtual_array()(Numpy.instance(), (length,), numpy.float64, generator)


def test_a_materializing_hook_times_only_an_array_being_built(
    finished: list[TaskPhases],
) -> None:
    hooked = vars(_phase_hooks._virtual_array())["materialize"]  # installed by the fixture
    assert isinstance(hooked, _native.PhaseHook) and hooked.phase == "interpret"
    column, outside = virtual_array(10, 0.01), virtual_array(3, 0.0)

    def use() -> float:
        return float(column.materialize().sum() + column.materialize().sum())

    assert phases.run_task(use, (), {}) == 90.0
    (task,) = finished
    # the first call built the array; the second returned it, passed on
    assert (task.switches, task.passed, task.errors) == (1, 1, 0)
    # the CPU split by wall can give a moment preempted before the call to "other": bounded
    assert task.cpu["interpret"] + task.cpu_split_bound >= 0.01
    assert len(outside.materialize()) == 3  # outside a task: only the call


def test_a_materializing_hook_times_what_cannot_say_it_is_built(
    finished: list[TaskPhases],
) -> None:
    hooked = _native.PhaseHook(lambda array: len(array), "interpret", unmaterialized=object())
    assert phases.run_task(hooked, ("not an awkward array",), {}) == 20
    (task,) = finished
    assert (task.switches, task.passed, task.errors) == (1, 0, 0)


def test_a_chunk_wait_hook_times_only_waits_for_the_source(
    finished: list[TaskPhases],
) -> None:
    from concurrent.futures import Future

    from uproot.source.chunk import Chunk
    from uproot.source.futures import TrivialFuture

    def arriving(data: bytes) -> Future:
        future: Future = Future()
        future.set_result(data)
        return future

    hooked = vars(Chunk)["wait"]  # installed by the fixture
    assert isinstance(hooked, _native.PhaseHook) and hooked.chunk is TrivialFuture
    sourced = Chunk(None, 100, 130, arriving(bytes(30)))  # bytes from the source: a read
    mapped = Chunk(None, 0, 7, TrivialFuture(bytes(7)), is_memmap=True)  # page faults: a read
    in_memory = Chunk(None, 0, 5, TrivialFuture(bytes(5)))  # a decompressed basket: none
    source = types.SimpleNamespace(file_path="short.root")
    broken = Chunk(source, 0, 4, arriving(b"ab"))  # too short: uproot raises, nothing counted
    outside = Chunk(None, 0, 3, arriving(bytes(3)))
    outside.wait()  # outside a task: only the call
    assert len(outside.raw_data) == 3

    def waits() -> None:
        for chunk in (sourced, mapped, in_memory, sourced):  # the second wait: loaded
            chunk.wait()
        with pytest.raises(OSError, match="expected Chunk of length 4"):
            broken.wait()

    phases.run_task(waits, (), {})
    (task,) = finished
    assert task.read_bytes == 30 + 7
    assert (task.switches, task.passed, task.errors) == (3, 2, 0)
    assert len(sourced.raw_data) == 30 and len(in_memory.raw_data) == 5


def test_a_read_whose_size_cannot_be_told_is_counted_and_the_wait_goes_on(
    finished: list[TaskPhases],
) -> None:
    class Chunk:  # an uproot whose chunks keep their offsets otherwise
        _raw_data, _future, _start, _stop = None, object(), "0", 5

        def wait(self) -> str:
            return "waited"

    hooked = _native.PhaseHook(Chunk.wait, "read", chunk=int)
    assert phases.run_task(hooked, (Chunk(),), {}) == "waited"
    (task,) = finished
    assert (task.switches, task.read_bytes, task.errors) == (1, 0, 1)


def test_hook_kinds_are_checked_and_pickle() -> None:
    with pytest.raises(ValueError, match="not a codec: 'GZIP'"):
        _native.PhaseHook(len, "decompress", codec="GZIP")
    with pytest.raises(TypeError, match="one of codec, unmaterialized, chunk, basket and queue"):
        _native.PhaseHook(len, "interpret", codec="ZLIB", unmaterialized=object())
    with pytest.raises(TypeError, match="one of codec, unmaterialized, chunk, basket and queue"):
        _native.PhaseHook(len, "read", chunk=int, queue=True)
    with pytest.raises(TypeError, match="only it, has no phase"):
        _native.PhaseHook(len, "interpret", basket=True)
    with pytest.raises(TypeError, match="only it, has no phase"):
        _native.PhaseHook(len, None)
    with pytest.raises(TypeError, match="chunk must be a type"):
        _native.PhaseHook(len, "read", chunk="TrivialFuture")
    with pytest.raises(TypeError, match="must be callable"):
        _native.PhaseHook(3, "read")
    with pytest.raises(TypeError, match="ended_by is a queue hook's"):
        _native.PhaseHook(len, "read", ended_by=((int, "decompress"),))
    with pytest.raises(TypeError, match="pairs"):
        _native.PhaseHook(len, "read", queue=True, ended_by=(("int", "decompress"),))
    with pytest.raises(ValueError, match="not a phase"):
        _native.PhaseHook(len, "read", queue=True, ended_by=((int, "unzip"),))
    with pytest.raises(ValueError, match="4 pairs at most"):
        _native.PhaseHook(len, "read", queue=True, ended_by=((int, "read"),) * 5)
    for hook in (
        _native.PhaseHook(len, "decompress", codec="ZSTD"),
        _native.PhaseHook(len, "interpret", unmaterialized="unbuilt"),
        _native.PhaseHook(len, "read", chunk=int),
        _native.PhaseHook(len, None, basket=True),
        _native.PhaseHook(len, "read", queue=True),
        _native.PhaseHook(len, "read", queue=True, ended_by=((int, "interpret"),)),
    ):
        copy = pickle.loads(pickle.dumps(hook))
        kind = ("phase", "codec", "unmaterialized", "chunk", "basket", "queue", "ended_by")
        assert [getattr(copy, k) for k in kind] == [getattr(hook, k) for k in kind]


def test_the_codecs_are_uproots() -> None:
    for name in _native.CODECS:
        assert getattr(uproot.compression, f"_decompress_{name}").name == name
