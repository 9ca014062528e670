"""Type stubs of the native extension roastcoffea._native (built from plugin/ and native/)."""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from roastcoffea.errors import DecodeError as DecodeError

#: Versions of the msgpack wire formats: a worker payload, a snapshot.
PAYLOAD_VERSION: Final[int]
SNAPSHOT_VERSION: Final[int]
#: The series columns, in the order of ``roast_column`` (native/include/roast/series.h).
SERIES_COLUMNS: Final[tuple[str, ...]]

def key_split(key: object) -> str:
    """The task prefix of a Dask key; equals ``dask.utils.key_split(key)``."""

def decode_snapshot(data: bytes) -> dict[str, Any]:
    """A snapshot as Python data; DecodeError when malformed."""

def decode_payload(data: bytes) -> dict[str, Any]:
    """A worker payload as Python data; DecodeError when malformed."""

def state_from_json(text: str | bytes) -> dict[str, Any]:
    """A native state file as snapshot data; DecodeError when malformed."""

def decode_exit_snapshot(data: bytes) -> tuple[dict[str, Any], str]:
    """A collector's snapshot decoded once: its data, and the native state file text
    without the records; DecodeError when malformed."""

class Aggregator:
    """The scheduler side of the engine: transition hook, ring, tables and series."""

    def __init__(
        self,
        *,
        ring_capacity: int = ...,
        series_cap_bytes: int = ...,
        record_cap_bytes: int = ...,
        started: float | None = ...,
        auto_drain: bool = ...,
    ) -> None: ...
    @property
    def counters(self) -> dict[str, Any]: ...
    @property
    def hook_calls(self) -> int: ...
    @property
    def hook_errors(self) -> int: ...
    def transition(
        self, key: object, start: str, finish: str, *args: Any, **kwargs: Any
    ) -> None: ...
    def drain(self) -> int: ...
    def set_span_lookup(
        self,
        tasks: Mapping[Any, Any] | None,
        task_groups: Mapping[Any, Any] | None = None,
        runs: dict[Any, str] | None = None,
    ) -> None: ...
    def worker_seen(self, address: str, name: str, now: float) -> None: ...
    def worker_removed(self, address: str, now: float) -> None: ...
    def sample(self, address: str, now: float, values: tuple[float | None, ...]) -> None: ...
    def add_record(
        self, address: str, data: bytes, now: float, span: str | None = None
    ) -> bool: ...
    def release_records(self, spans: list[str]) -> int: ...
    def add_digests(
        self,
        address: str,
        context: str,
        span: str | None,
        prefix: str,
        labels: Sequence[tuple[str, str]],
        values: Sequence[float],
    ) -> None: ...
    def ingest(self, address: str, payload: bytes, now: float) -> bool: ...
    def set_span(self, span_id: str, parent: str | None, name: tuple[str, ...]) -> None: ...
    def count_error(self, where: str, n: int = 1) -> None: ...
    def snapshot(
        self,
        spans: Iterable[str] | None = None,
        t_from: float = 0.0,
        t_to: float = 0.0,
        now: float | None = None,
    ) -> bytes: ...
    def to_dict(
        self, spans: Iterable[str] | None = None, t_from: float = 0.0, t_to: float = 0.0
    ) -> dict[str, Any]: ...
    def hook_profile(self) -> dict[str, dict[str, Any]]:
        """{"from->to": {"calls", "timed", "ns_per_call"}, "drains": ...}: the hook's own cost."""
    def digest_totals(self, context: str, by: str) -> dict[tuple[str, str, str], float]:
        """{(worker or prefix, activity, unit): value} of one context, summed over spans."""
    def to_json(self) -> str: ...

class DigestTracker:
    """The worker side: Dask's fine metrics as msgpack payloads for the scheduler."""

    def __init__(
        self,
        incarnation: str,
        window: int = 4,
        *,
        followed: Iterable[str] = (),
        sent_apart: Iterable[str] = (),
    ) -> None: ...
    @property
    def incarnation(self) -> str: ...
    @property
    def seq(self) -> int: ...
    @property
    def window(self) -> int: ...
    @property
    def followed(self) -> tuple[str, ...]: ...
    @property
    def sent_apart(self) -> tuple[str, ...]: ...
    def payload(
        self, digests_total: dict[Any, float], changed: dict[Any, float] | None = None
    ) -> bytes: ...
    def full_payload(self, digests_total: dict[Any, float]) -> bytes: ...

#: The phases of a task's clock, in display order; ``other`` closes the sum.
PHASES: Final[tuple[str, ...]]
#: The codecs a task's decompression is totalled by (uproot.compression's names).
CODECS: Final[tuple[str, ...]]

class TaskPhases:
    """One task's phase clock: wall and CPU seconds per phase, bytes, codecs."""

    def __init__(self, *, cpu_interval: float = 0.001, base: str = "other") -> None: ...
    @property
    def wall(self) -> dict[str, float]: ...
    @property
    def cpu(self) -> dict[str, float]: ...
    @property
    def switches(self) -> int: ...
    @property
    def nested(self) -> int: ...
    @property
    def opaque(self) -> int: ...
    @property
    def cpu_interval(self) -> float: ...
    @property
    def cpu_reads(self) -> int: ...
    @property
    def cpu_split_bound(self) -> float: ...
    @property
    def started(self) -> float: ...
    @property
    def errors(self) -> int: ...
    @property
    def codecs(self) -> dict[str, list[float]]: ...
    @property
    def baskets(self) -> list[tuple[Any, int, int, int]]: ...
    @property
    def helper_wall(self) -> dict[str, float]: ...
    @property
    def helper_cpu(self) -> dict[str, float]: ...
    @property
    def helper_runs(self) -> int: ...
    read_bytes: int
    passed: int
    item: Any
    output_measured: bool
    in_work: bool
    def enter(self, phase: str, opaque: bool = False) -> None: ...
    def leave(self) -> float: ...
    def rebase(self, phase: str) -> None: ...
    def close(self) -> float: ...
    def take_baskets(self, file: Any) -> dict[int, tuple[int, int]]:
        """``{seek: (fNbytes, fObjlen + fKeylen)}`` of the logged baskets of ``file`` (by
        identity); empties the log."""
    def add_helper(self, helper: TaskPhases) -> None:
        """Add a helper thread's closed clock: its phases to ``helper_wall`` and
        ``helper_cpu`` (beside the task's own), its codecs, ``read_bytes``, baskets (moved)
        and errors to the task's; counts a helper run."""

class Around:
    """``func`` called between ``enter`` and ``leave``, with no Python frame of its own.

    A call runs ``state = enter(*args, **kwargs)``; if ``state`` is None, ``func`` alone;
    else ``func(*args, **kwargs)``, then ``leave(state, error)``, ``error`` the exception
    ``func`` raised or None. ``func``'s result or exception is returned or raised
    unchanged; an exception of ``enter`` (``func`` then runs unmeasured) or of ``leave`` is
    dropped. Bound like a function; its ``__dict__`` takes ``functools.update_wrapper``.
    """

    func: Any
    enter: Any
    leave: Any
    __dict__: dict[str, Any]
    def __init__(self, func: Any, enter: Any, leave: Any) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, obj: Any, owner: Any = None) -> Any: ...

class PhaseHook:
    """``func``, its time charged to ``phase`` when the calling thread runs a measured task.

    With ``codec``, ``func`` is a codec's ``decompress(data, ...)`` whose calls add to the
    task's ``codecs``; with ``unmaterialized`` (awkward's ``UNMATERIALIZED``), ``func`` is
    awkward's ``VirtualNDArray.materialize``: only the building of an array whose ``_array``
    is that sentinel is timed; with ``chunk`` (uproot's ``TrivialFuture``),
    ``func`` is uproot's ``Chunk.wait``: only a wait for bytes from the source is timed, and
    its bytes are added to the task's ``read_bytes``; with ``basket`` (``phase`` None),
    ``func`` is uproot's ``TBasket.read_members``: the call is passed on and the basket's
    (file, seek, fNbytes, fObjlen + fKeylen) logged in the task (``baskets``,
    ``take_baskets``); with ``queue``, ``func`` is ``queue.Queue.get``: only a get from an
    empty queue, a wait, is timed, and the thread's CPU clock is read as it starts; the
    wait is charged to the phase of the first ``(type, phase)`` of ``ended_by`` whose type
    what it got is an instance of, else to ``phase``.
    """

    def __init__(
        self,
        func: Any,
        phase: str | None,
        opaque: bool = False,
        codec: str | None = None,
        unmaterialized: Any = None,
        chunk: type | None = None,
        basket: bool = False,
        queue: bool = False,
        ended_by: tuple[tuple[type, str], ...] = (),
    ) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, obj: Any, owner: Any = None) -> Any: ...
    @property
    def __wrapped__(self) -> Any: ...
    @property
    def phase(self) -> str | None: ...
    @property
    def opaque(self) -> bool: ...
    @property
    def codec(self) -> str | None: ...
    @property
    def unmaterialized(self) -> Any: ...
    @property
    def chunk(self) -> type | None: ...
    @property
    def queue(self) -> bool: ...
    @property
    def ended_by(self) -> tuple[tuple[type, str], ...]: ...
    @property
    def basket(self) -> bool: ...

def current_task() -> TaskPhases | None:
    """The clock of the task this thread runs."""

def set_current_task(task: TaskPhases | None) -> None:
    """Make ``task`` the clock of this thread's task (None: no task is measured)."""
