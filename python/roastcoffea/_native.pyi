"""Type stubs of the native extension roastcoffea._native (built from plugin/ and native/).

Checked against the built module by ``python -m mypy.stubtest roastcoffea._native``
(``make test``); the C functions carry the same signatures as ``__text_signature__``.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, final

from typing_extensions import Self

from roastcoffea.errors import DecodeError as DecodeError

#: Versions of the msgpack wire formats: a worker payload, a snapshot.
PAYLOAD_VERSION: Final[int]
SNAPSHOT_VERSION: Final[int]
#: The series columns, in the order of ``roast_column`` (native/include/roast/series.h).
SERIES_COLUMNS: Final[tuple[str, ...]]
#: The phases of a task's clock, in display order; ``other`` closes the sum.
PHASES: Final[tuple[str, ...]]
#: The codecs a task's decompression is totalled by (uproot.compression's names).
CODECS: Final[tuple[str, ...]]

def key_split(key: object, /) -> str:
    """The task prefix of a Dask key: ``dask.utils.key_split(key)`` for every key,
    exceptions included (UnicodeDecodeError for invalid UTF-8 bytes, IndexError for ())."""

def decode_snapshot(data: bytes, /) -> dict[str, Any]:
    """A snapshot as Python data (docs/architecture.md, "The snapshot as Python data");
    DecodeError, naming the place, when malformed."""

def decode_payload(data: bytes, /) -> dict[str, Any]:
    """A worker payload as Python data: ``{"version", "incarnation", "seq", "since",
    "full", "digests": {(context, span, prefix, activity, unit): float}, "records"}``;
    DecodeError when malformed."""

def state_from_json(text: str | bytes, /) -> dict[str, Any]:
    """A native state file as snapshot data; DecodeError when malformed."""

def decode_exit_snapshot(data: bytes, /) -> tuple[dict[str, Any], str]:
    """A collector's snapshot decoded once: its data, and the native state file text
    without the records (a measurement keeps them decoded); DecodeError when malformed."""

def current_task() -> TaskPhases | None:
    """The clock of the task this thread runs."""

def set_current_task(task: TaskPhases | None, /) -> None:
    """Make ``task`` the clock of this thread's task (None: no task is measured)."""

@final
class Aggregator:
    """The scheduler side of the engine: transition hook, ring, tables and series.

    ``auto_drain``: the hook drains the ring into the tables when it is more than 3/4
    full, so drops stay at zero under any real load (tests turn it off to see drops).
    """

    def __new__(
        cls,
        *,
        ring_capacity: int = 131072,
        series_cap_bytes: int = 67108864,
        record_cap_bytes: int = 67108864,
        started: float | None = None,
        auto_drain: bool = True,
    ) -> Self: ...
    @property
    def counters(self) -> dict[str, Any]:
        """The self-report (a snapshot's ``"counters"``), and ``ring_pushed``,
        ``ring_pending``, ``ring_capacity``."""
    @property
    def record_bytes(self) -> int:
        """Bytes of records held, as counted against ``record_cap_bytes``."""
    @property
    def hook_calls(self) -> int: ...
    @property
    def hook_errors(self) -> int: ...
    def transition(self, key: object, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        """Dask's ``SchedulerPlugin.transition`` call shape; never raises (failures are
        counted). On processing->memory it reads ``worker``, ``startstops``, ``nbytes``; on
        ->erred, ``worker``. The span comes from the dicts of :meth:`set_span_lookup`."""
    def set_span_lookup(
        self,
        tasks: Mapping[Any, Any] | None,
        task_groups: Mapping[Any, Any] | None = None,
        runs: dict[Any, str] | None = None,
        /,
    ) -> None:
        """The scheduler's ``tasks`` and ``task_groups``: a finished task's span is
        ``tasks[key].group.span_id``, the group found in ``task_groups`` under its name
        when the key gives it (a dict of one entry per collection, warm in the cache),
        unless ``runs`` maps the key to a span (a forgotten task leaves ``runs``)."""
    def drain(self) -> int:
        """Ring -> tables; returns the records applied."""
    def worker_seen(self, address: str, name: object, now: float, /) -> None: ...
    def worker_removed(self, address: str, now: float, /) -> None: ...
    def sample(self, address: str, now: float, values: Sequence[float | None], /) -> None:
        """14 values in ``roast_column`` order (series.h); None is not reported (NaN)."""
    def add_record(
        self,
        address: str,
        data: bytes,
        now: float,
        span: str | None = None,
        collected: bool = True,
        /,
    ) -> bool:
        """Keep a record a worker sent once on its event stream, made in ``span``; at
        ``record_cap_bytes`` the oldest uncollected go first, then the oldest collected
        (``records_dropped``); an uncollected record is held in a quarter of the cap of
        its own. False only for a record the cap or the string table refuses (counted)."""
    def release_records(self, spans: Iterable[str], /) -> int:
        """Drop the records of these spans (their collector took them) and their drop
        counts; returns how many records."""
    def ack_records(self, spans: Iterable[str], acked: int, /) -> int:
        """Drop the records of these spans numbered up to ``acked`` (their collector's
        stream has them); returns how many. Their drop counts stay."""
    def stream_records(
        self, spans: Iterable[str], acked: int, /
    ) -> tuple[list[dict[str, Any]], int]:
        """A collector's stream: :meth:`ack_records`, then the rest of these spans'
        records as the snapshot lists them and the newest one's number (``acked`` when
        there is none)."""
    def expire_records(self, before: float, /) -> int:
        """Release the uncollected records received before ``before``; returns how many."""
    def records_dropped_in(self, spans: Iterable[str], /) -> int:
        """The collected records of these spans dropped at the byte cap."""
    def add_digests(
        self,
        address: str,
        context: str,
        span: str | None,
        prefix: str,
        labels: Sequence[tuple[str, str]],
        values: Sequence[float],
        /,
    ) -> None:
        """Add a task's values to its digests, ``(activity, unit)`` of each label, once:
        the phases a worker sends with the task's records (no payload reports them)."""
    def ingest(self, address: str, payload: bytes, now: float, /) -> bool:
        """Apply a worker payload; True when a full flush of the worker is needed.
        A malformed payload is counted (``payload_errors``), never raised."""
    def set_span(self, span_id: str, parent: str | None, name: tuple[str, ...], /) -> None: ...
    def count_error(self, where: str, n: int = 1) -> None: ...
    def snapshot(
        self,
        spans: Iterable[str] | None = None,
        t_from: float = 0.0,
        t_to: float = 0.0,
        now: float | None = None,
    ) -> bytes:
        """Drain the ring and encode the filtered state (docs/architecture.md, "Snapshot
        wire layout")."""
    def to_dict(
        self, spans: Iterable[str] | None = None, t_from: float = 0.0, t_to: float = 0.0
    ) -> dict[str, Any]:
        """``decode_snapshot(snapshot(spans, t_from, t_to))``."""
    def hook_profile(self) -> dict[str, Any]:
        """``{"from->to": {"calls", "timed", "ns_per_call"}, "drains": ...}``: the hook's
        own cost per transition kind (one call in 64 timed, drains excluded)."""
    def digest_totals(self, context: str, by: str) -> dict[tuple[str, str, str], float]:
        """``{(id, activity, unit): value}`` of one context's digests, ``id`` the worker,
        the prefix or the span as ``by`` says (``"worker"``, ``"prefix"``, ``"span"``),
        summed over the rest."""
    def to_json(self) -> str:
        """The native state file text (docs/architecture.md, "State file layout")."""

@final
class DigestTracker:
    """The worker side: Dask's fine metrics as msgpack payloads for the scheduler."""

    def __new__(
        cls,
        incarnation: str,
        window: int = 4,
        *,
        followed: Iterable[str] = (),
        sent_apart: Iterable[str] = (),
    ) -> Self: ...
    @property
    def incarnation(self) -> str: ...
    @property
    def seq(self) -> int: ...
    @property
    def window(self) -> int: ...
    @window.setter
    def window(self, value: int) -> None: ...
    @property
    def followed(self) -> tuple[str, ...]: ...
    @property
    def sent_apart(self) -> tuple[str, ...]: ...
    def payload(
        self, digests_total: dict[Any, float], changed: dict[Any, float] | None = None
    ) -> bytes:
        """The digests that changed in the last ``window`` payloads; ``changed``: the keys
        of the followed contexts changed since the last payload (None reads every key)."""
    def full_payload(self, digests_total: dict[Any, float], /) -> bytes:
        """Every digest (a flush)."""

@final
class TaskPhases:
    """One task's phase clock: wall and CPU seconds per phase, bytes, codecs."""

    def __new__(cls, *, cpu_interval: float = 0.001, base: str = "other") -> Self: ...
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
    def cpu_wait(self) -> dict[str, float] | None: ...
    @property
    def cpu_wait_bound(self) -> float: ...
    @property
    def runq_reads(self) -> int: ...
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
    def rebase(self, phase: str, /) -> None: ...
    def close(self) -> float: ...
    def take_baskets(self, file: Any, /) -> dict[int, tuple[int, int]]:
        """``{seek: (fNbytes, fObjlen + fKeylen)}`` of the logged baskets of ``file`` (by
        identity); empties the log."""
    def add_helper(self, helper: TaskPhases, /) -> None:
        """Add a helper thread's closed clock: its phases to ``helper_wall`` and
        ``helper_cpu`` (beside the task's own), its codecs, ``read_bytes``, baskets (moved)
        and errors to the task's; counts a helper run."""

@final
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
    def __new__(cls, func: Any, enter: Any, leave: Any) -> Self: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, instance: Any, owner: Any = None, /) -> Any: ...

@final
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

    def __new__(
        cls,
        func: Any,
        phase: str | None,
        opaque: bool = False,
        codec: str | None = None,
        unmaterialized: Any = None,
        chunk: type | None = None,
        basket: bool = False,
        queue: bool = False,
        ended_by: tuple[tuple[type, str], ...] = (),
    ) -> Self: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, instance: Any, owner: Any = None, /) -> Any: ...
    @property
    def __name__(self) -> str: ...
    @property
    def __qualname__(self) -> str: ...
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
