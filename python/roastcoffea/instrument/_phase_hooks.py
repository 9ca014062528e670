"""The places in coffea and uproot that tell the phase clock where a task is.

Each hook wraps one function or method in the worker process; it measures
only while the calling thread runs a measured task (see
:func:`roastcoffea.instrument.phases.run_task`), and otherwise costs one
thread-local lookup. The hooks that run many times per chunk are native
:class:`~roastcoffea._native.PhaseHook` s (no Python frame, few memory lines
touched: they run between the analysis's array work, with the caches cold):
those that charge a call to a phase, total a codec's bytes, time the building
of a virtual array, time uproot's waits for bytes from the source or log the
baskets uproot parses. ``events()`` and the output's
compression are Python around the same clock; the task and the work function,
on the task's stack throughout, are :class:`~roastcoffea._native.Around` s:
no frame of theirs for Dask's profiler to walk every 10 ms.
:func:`install` and :func:`uninstall` are reference counted, so several worker
plugins in one process share one set of hooks.

==================================================  ===========================
hooked                                              phase
==================================================  ===========================
coffea ``_compression_wrapper.__call__``,           the task (owns the clock)
``Runner._work_function``
``uproot.open``, a directory's ``__getitem__``,     ``open`` (opaque: its reads
``NanoEventsFactory.from_root``                     and decompression included)
uproot ``Chunk.wait`` (first wait of a chunk),      ``read``
a get from uproot's array reader's queue while
nothing has arrived (ended by a chunk), a
source's single-range ``chunk`` (an RNTuple's
pages)
uproot codecs' ``decompress`` (per codec), a get    ``decompress``
from the reader's queue ended by a basket an
executor decompressed
a get from the reader's queue ended by an array     ``interpret``
an executor built
``NanoEventsFactory.events``, awkward's             ``interpret``
``VirtualNDArray.materialize`` of an array not
built yet (a NanoEvents column's generator),
uproot ``TBranch.array`` and ``HasBranches.arrays``
coffea ``_compress`` of the task's output           ``output`` (opaque)
the rest of the work function after ``events()``    ``user``
uproot ``TBasket.read_members``                     none: it logs the basket's
                                                    TKey sizes in the task
uproot RNTuple ``read_page``                        none: it logs the page's
                                                    sizes in the chunk
uproot's reader ``_ranges_or_baskets_to_arrays``    none: with executor pools,
                                                    their calls are measured on
                                                    the helper threads
                                                    (:mod:`._helpers`)
==================================================  ===========================
"""

from __future__ import annotations

import functools
import queue
import threading
import time
import types
from collections.abc import Callable
from typing import Any

from roastcoffea._native import CODECS, Around, PhaseHook, set_current_task
from roastcoffea.instrument import phases
from roastcoffea.instrument._chunk import ACTIVE, Chunk
from roastcoffea.instrument._counters import COUNTERS
from roastcoffea.instrument._helpers import reader as helper_reader
from roastcoffea.instrument._pages import page_sizes

Wrapper = Callable[[Any], Any]  # the original attribute -> its replacement
_current = phases.current


def _quietly(bookkeeping: Callable[..., Any], *args: Any) -> Any:
    """Run the hooks' own bookkeeping; a failure is counted, never raised into the analysis."""
    try:
        return bookkeeping(*args)
    except Exception as exc:
        COUNTERS.add("instrument_errors", exc)
        return None


def _open(func: Callable[..., Any]) -> PhaseHook:
    return PhaseHook(func, "open", opaque=True)


def _interpret(func: Callable[..., Any]) -> PhaseHook:
    return PhaseHook(func, "interpret")


def _events(func: Callable[..., Any]) -> Callable[..., Any]:
    """``NanoEventsFactory.events``: interpret; in the work function, the user's code follows."""
    timed = _interpret(func)

    @functools.wraps(func)
    def events(*args: Any, **kwargs: Any) -> Any:
        result = timed(*args, **kwargs)
        task = _current()
        if task is not None and task.in_work:
            task.rebase("user")
            if task.item is None:  # a task of its own (track_phases): no coffea WorkItem
                task.item = _quietly(_item_of_events, result)
        return result

    return events


def _item_of_events(events: Any) -> types.SimpleNamespace:
    """The work item a task of its own read, as coffea's WorkItem names it, from the
    events' metadata (what ``from_root`` was given)."""
    meta = getattr(events, "metadata", None)
    meta = meta if isinstance(meta, dict) else {}
    names = ("dataset", "filename", "entrystart", "entrystop")
    return types.SimpleNamespace(**{name: meta.get(name) for name in names})


def _materialize(func: Callable[..., Any]) -> PhaseHook:
    """awkward's ``VirtualNDArray.materialize``: a virtual array built when first used.

    A NanoEvents column is built in the user's code, the first time an array needs
    its buffer: its generator (coffea's column lookup, uproot's reads) and the
    conversion to the array. Every later call returns the array already built
    and is only passed on; a call whose array cannot say (no ``_array``
    attribute) is timed. One hook on one method, whatever the number of
    columns a chunk looks up.
    """
    from awkward._nplikes.virtual import UNMATERIALIZED

    return PhaseHook(func, "interpret", unmaterialized=UNMATERIALIZED)


def _wait(func: Callable[..., Any]) -> PhaseHook:
    """uproot ``Chunk.wait``: the first wait of a chunk of the file is the wait for its bytes.

    Most waits are of bytes already in memory (``_raw_data`` set), and chunks that wrap
    bytes already in memory (a decompressed basket, a copy of a memory-mapped chunk) have a
    ``TrivialFuture`` and are not reads either; chunks of a memory-mapped file have one too,
    but are. The native chunk-wait hook tells them apart and counts a read's bytes.
    """
    from uproot.source.futures import TrivialFuture

    return PhaseHook(func, "read", chunk=TrivialFuture)


def _reader_queue(module: types.ModuleType) -> types.ModuleType:
    """The ``queue`` module as uproot's TBranch reader sees it, its ``Queue`` a read queue."""
    from uproot.models.TBasket import Model_TBasket

    class ReadQueue(queue.Queue):
        """uproot's reader's queue: its reader blocks in ``get`` until the next thing arrives.

        What arrives is a chunk of bytes from the source, a basket decompressed by the
        ``decompression_executor`` or None from the ``interpretation_executor`` (an array
        built). uproot's default executors run in the reading thread, so then the reader
        only ever waits for the source. A get from an empty queue is a wait, charged when
        it ends to what ended it: a chunk ``read``, a basket ``decompress``, None
        ``interpret``. The clock reads the thread's CPU clock as it starts (and, if it
        lasted, as it ends), so the wait has a window of its own. A get of something
        already there waits for nothing and is passed on, its microsecond left to the
        phase around it.
        """

        get = PhaseHook(
            queue.Queue.get,
            "read",
            queue=True,
            ended_by=((Model_TBasket, "decompress"), (type(None), "interpret")),
        )

    shim = types.ModuleType(module.__name__, module.__doc__)
    shim.__dict__.update(vars(module))
    shim.Queue = ReadQueue  # type: ignore[attr-defined]
    return shim


def _single_read(func: Callable[..., Any]) -> PhaseHook:
    """A source's ``chunk(start, stop)``: one range, fetched before it returns.

    uproot reads an RNTuple's pages this way, one request each (and a file's header
    and metadata, inside ``open``): the call is the thread's wait for the bytes.
    """
    return PhaseHook(func, "read")


def _page(func: Callable[..., Any]) -> Callable[..., Any]:
    """uproot's RNTuple ``read_page``: the page is logged in the chunk and its bytes are read.

    A chunk record's byte fields on an RNTuple are the pages its ``process()`` read
    (:mod:`roastcoffea.instrument._pages`); the stored bytes add to the task's
    ``read_bytes``, as a basket's do when its wait ends.
    """

    @functools.wraps(func)
    def read_page(
        self: Any, destination: Any, cluster: int, column: int, page: int, metadata: Any
    ) -> Any:
        result = func(self, destination, cluster, column, page, metadata)
        task, chunk = _current(), ACTIVE.get()
        if task is not None or chunk is not None:
            _quietly(_log_page, self, cluster, column, page, task, chunk)
        return result

    return read_page


def _log_page(
    ntuple: Any, cluster: int, column: int, page: int, task: Any, chunk: Chunk | None
) -> None:
    offset, stored, uncompressed = page_sizes(ntuple, cluster, column, page)
    if chunk is not None:
        chunk.pages[ntuple.file, offset] = (stored, uncompressed, cluster)
    if task is not None:
        task.read_bytes += stored


def _codec(name: str) -> Wrapper:
    """A codec's ``decompress(data, uncompressed_bytes)``: decompress, totalled per codec."""
    return lambda func: PhaseHook(func, "decompress", codec=name)


def _basket(func: Callable[..., Any]) -> PhaseHook:
    """uproot ``Model_TBasket.read_members``: the sizes in the TKey of each basket the task parses.

    The chunk's byte accounting needs each basket's fObjlen + fKeylen; uproot has just
    parsed them from the bytes it read, so the native basket hook keeps them in the task
    (:meth:`TaskPhases.take_baskets`) and no header is read again.
    """
    return PhaseHook(func, None, basket=True)


def _compress(func: Callable[..., Any]) -> Callable[..., Any]:
    """coffea ``_compress(item, compression)``: the output, compressed in the task."""
    timed = PhaseHook(func, "output", opaque=True)

    @functools.wraps(func)
    def compress(item: Any, compression: Any) -> Any:
        task = _current()
        if task is None or item is None or compression is None:
            return func(item, compression)
        task.output_measured = True
        return timed(item, compression)

    return compress


def _task(func: Callable[..., Any]) -> Around:
    """The outermost call of a processor task: it owns the clock."""
    return _around(func, phases.enter_task, phases.leave_task)


def _work_function(func: Callable[..., Any]) -> Around:
    """coffea ``Runner._work_function``: the work item; ``user`` runs from ``events()`` on."""
    return _around(func, _enter_work, _leave_work)


def _around(
    func: Callable[..., Any], enter: Callable[..., Any], leave: Callable[..., Any]
) -> Around:
    around = Around(func, enter, leave)
    functools.update_wrapper(around, func)
    return around


def _enter_work(*args: Any, **kwargs: Any) -> tuple[phases.TaskPhases, bool] | None:
    """The work function's start: (the task's clock, whether this call started it), the
    clock told that the work item runs; None when nothing measures."""
    task = _current()
    owned = task is None
    if task is None and (task := phases.enter_task()) is None:
        return None
    task.item = _quietly(_work_item, args, kwargs)
    task.in_work = True
    return task, owned


def _leave_work(state: tuple[phases.TaskPhases, bool], error: BaseException | None) -> None:
    """The work function's end: what follows it is ``other`` (or the clock ends with it)."""
    task, owned = state
    try:
        task.in_work = False
        task.rebase("other")
    except Exception as exc:
        COUNTERS.add("instrument_errors", exc)
    if owned:
        phases.leave_task(task, error)


def _work_item(args: tuple, kwargs: dict) -> Any:
    """The WorkItem argument of ``_work_function`` (an (item, processor) pair when heavy)."""
    item = kwargs.get("item", args[5] if len(args) > 5 else None)
    return item[0] if isinstance(item, tuple) else item


def _targets() -> list[tuple[Any, str, Wrapper]]:
    """(owner, attribute, wrapper) of every hook; imports coffea and uproot."""
    import uproot
    import uproot.behaviors.TBranch as tbranch
    import uproot.compression as compression
    import uproot.models.RNTuple as rntuple
    import uproot.models.TBasket as tbasket
    import uproot.reading
    import uproot.source.chunk as chunk
    from coffea.nanoevents import NanoEventsFactory
    from coffea.processor import executor

    codecs = {name: type(getattr(compression, f"_decompress_{name}")) for name in PHASE_CODECS}
    return [
        (executor._compression_wrapper, "__call__", _task),
        (executor.Runner, "_work_function", _work_function),
        (executor, "_compress", _compress),
        (uproot, "open", _open),
        (uproot.reading.ReadOnlyDirectory, "__getitem__", _open),
        (NanoEventsFactory, "from_root", _open),
        (NanoEventsFactory, "events", _events),
        (_virtual_array(), "materialize", _materialize),
        (tbranch.TBranch, "array", _interpret),
        (tbranch.HasBranches, "arrays", _interpret),
        (chunk.Chunk, "wait", _wait),
        (tbasket.Model_TBasket, "read_members", _basket),
        (tbranch, "queue", _reader_queue),
        (tbranch, "_ranges_or_baskets_to_arrays", helper_reader),
        (rntuple.Model_ROOT_3a3a_RNTuple, "read_page", _page),
        *((source, "chunk", _single_read) for source in _single_read_sources()),
        *((codec, "decompress", _codec(name)) for name, codec in codecs.items()),
    ]


def _single_read_sources() -> list[type]:
    """uproot's sources whose ``chunk`` waits for the bytes (a memory map's does not)."""
    import uproot.source.chunk
    import uproot.source.fsspec
    import uproot.source.http
    import uproot.source.xrootd

    return [
        uproot.source.fsspec.FSSpecSource,
        uproot.source.http.HTTPSource,
        uproot.source.xrootd.XRootDSource,
        uproot.source.chunk.MultithreadedSource,
    ]


def _virtual_array() -> type:
    """awkward's virtual array class (``VirtualArray`` in the first awkward 2.8 releases)."""
    from awkward._nplikes import virtual

    return getattr(virtual, "VirtualNDArray", None) or virtual.VirtualArray


#: The codecs of ROOT files uproot decompresses, by their name in uproot.compression.
PHASE_CODECS = CODECS

_lock = threading.Lock()
_installed: list[tuple[Any, str, Any]] = []  # (owner, attribute, original descriptor)
_users = 0


def _wrap_descriptor(original: Any, wrapper: Wrapper) -> Any:
    """``wrapper`` applied to a plain function, staticmethod or classmethod, kept of its kind."""
    if isinstance(original, (staticmethod, classmethod)):
        return type(original)(wrapper(original.__func__))
    return wrapper(original)


def calibrate(calls: int = 200, repeats: int = 25) -> tuple[float, float, float, float]:
    """Time each kind of hooked call, once per process; returns the costs in seconds.

    A hooked no-op that switches phase (the CPU clock left unread), one nested in
    its own phase and one passing inside an opaque phase, each against the bare
    no-op, and a read of the thread's CPU clock (a switching call that reads it on
    entry and exit, against one that does not); the clock multiplies them by its
    calls and reads (:func:`phases.clock_seconds`). Each kind is timed ``repeats``
    times, interleaved with the others, and its fastest round kept: a loaded machine
    only ever slows a round down, so the minimum is the call's own cost.
    """
    costs = phases.call_costs()
    if costs is not None:
        return costs

    def noop() -> None:
        pass

    hooked, saved = PhaseHook(noop, "interpret"), _current()
    # interpret: a phase the thread does not wait in, so `unread` never reads the CPU clock
    unread = phases.TaskPhases(cpu_interval=float("inf"))
    read = phases.TaskPhases(cpu_interval=0.0)

    def per_call(func: Callable[[], None], task: phases.TaskPhases | None, phase: tuple) -> float:
        if task is not None and phase:
            task.enter(*phase)
        set_current_task(task)
        try:
            t0 = time.perf_counter()
            for _ in range(calls):
                func()
            return (time.perf_counter() - t0) / calls
        finally:
            set_current_task(saved)
            if task is not None and phase:
                task.leave()

    kinds: dict[str, tuple[Callable[[], None], phases.TaskPhases | None, tuple]] = {
        "bare": (noop, None, ()),
        "switch": (hooked, unread, ()),
        "nested": (hooked, unread, ("interpret",)),
        "passed": (hooked, unread, ("open", True)),
        "read": (hooked, read, ()),
    }
    best = dict.fromkeys(kinds, float("inf"))
    for _ in range(repeats):
        for kind, how in kinds.items():
            best[kind] = min(best[kind], per_call(*how))
    bare = best["bare"]
    measured = (
        best["switch"] - bare,
        best["nested"] - bare,
        best["passed"] - bare,
        (best["read"] - best["switch"]) / 2,
    )
    switch, nested, passed, cpu_read = (max(cost, 0.0) for cost in measured)
    phases.set_call_costs(switch, nested, passed, cpu_read)
    return switch, nested, passed, cpu_read


def install() -> None:
    """Hook coffea and uproot in this process (once, however many callers)."""
    global _users
    with _lock:
        _users += 1
        if _users > 1:
            return
        try:
            calibrate()
            for owner, name, wrapper in _targets():
                original = vars(owner)[name]
                setattr(owner, name, _wrap_descriptor(original, wrapper))
                _installed.append((owner, name, original))
        except BaseException:
            _restore()
            _users -= 1
            raise


def uninstall() -> None:
    """Undo :func:`install` when its last caller leaves."""
    global _users
    with _lock:
        if _users == 0:
            return
        _users -= 1
        if _users == 0:
            _restore()


def installed() -> bool:
    return bool(_installed)


def _restore() -> None:
    while _installed:
        owner, name, original = _installed.pop()
        setattr(owner, name, original)
