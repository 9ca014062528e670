"""The decoders of outside bytes never crash and name what is wrong.

decode_payload, decode_snapshot and state_from_json raise ValueError with the
native decoder's message on malformed input (TypeError for a wrong argument
type); Aggregator.ingest counts it (payload_errors) and returns False.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import msgpack
import pytest

from roastcoffea import DecodeError, _native

Aggregator = _native.Aggregator
DigestTracker = _native.DigestTracker
decode_payload = _native.decode_payload
decode_snapshot = _native.decode_snapshot
state_from_json = _native.state_from_json

T0 = 1_700_000_000.0
W = "tcp://127.0.0.1:40001"
CPU = ("execute", "span-a", "inc", "thread-cpu", "seconds")
NET = ("gather-dep", "network", "seconds")


def valid_payload() -> bytes:
    return DigestTracker("inc-1").payload({CPU: 1.5, NET: 2})


def small_aggregator(samples: int = 3) -> Aggregator:
    agg = Aggregator(started=T0)
    agg.worker_seen(W, "w0", T0)
    agg.set_span("span-a", None, ("default",))
    agg.transition("inc-1", "waiting", "processing", stimulus_id="s")
    agg.transition(
        "inc-1",
        "processing",
        "memory",
        stimulus_id="s",
        worker=W,
        nbytes=8,
        startstops=[{"action": "compute", "start": T0 + 1, "stop": T0 + 2}],
    )
    for i in range(samples):
        agg.sample(W, T0 + 1 + i, (float(i),) * 17 + (T0 + i,))
    agg.ingest(W, valid_payload(), T0 + 3)
    agg.count_error("sampler:tick")
    return agg


def valid_snapshot() -> bytes:
    return small_aggregator().snapshot(now=T0 + 10)


def valid_json() -> bytes:
    return small_aggregator(samples=1).to_json().encode()


def ingest_decoder() -> tuple[Aggregator, Callable[[bytes], Any]]:
    agg = Aggregator(started=T0)

    def ingest(data: bytes) -> bool:
        return agg.ingest(W, data, T0 + 1)

    return agg, ingest


DECODERS: dict[str, tuple[Callable[[Any], Any], Callable[[], bytes]]] = {
    "payload": (decode_payload, valid_payload),
    "snapshot": (decode_snapshot, valid_snapshot),
    "state": (state_from_json, valid_json),
}


def assert_value_error(decode: Callable[[Any], Any], data: Any) -> str:
    """Refused with roastcoffea.DecodeError (a ValueError), saying why."""
    with pytest.raises(DecodeError) as info:
        decode(data)
    message = str(info.value)
    assert message.strip(), f"empty message for {data!r:.80}"
    return message


def dict_or_value_error(decode: Callable[[Any], Any], data: Any) -> bool:
    """True when data decoded; False when it was refused with a ValueError."""
    try:
        result = decode(data)
    except ValueError as exc:
        assert str(exc).strip()
        return False
    assert isinstance(result, dict)
    return True


# ---- the valid inputs decode ------------------------------------------------


@pytest.mark.parametrize("name", DECODERS)
def test_valid_input_decodes(name: str) -> None:
    decode, make = DECODERS[name]
    result = decode(make())
    assert isinstance(result, dict)
    version = _native.PAYLOAD_VERSION if name == "payload" else _native.SNAPSHOT_VERSION
    assert result["version"] == version


def test_ingest_of_a_valid_payload() -> None:
    agg, ingest = ingest_decoder()
    assert ingest(valid_payload()) is False
    assert agg.counters["payloads"] == 1
    assert agg.counters["payload_errors"] == 0


# ---- truncation ---------------------------------------------------------------


@pytest.mark.parametrize("name", DECODERS)
def test_truncated_at_every_byte(name: str) -> None:
    decode, make = DECODERS[name]
    data = make().rstrip()  # a JSON text may end in white space
    messages = {assert_value_error(decode, data[:i]) for i in range(len(data))}
    assert messages


def test_ingest_truncated_at_every_byte() -> None:
    agg, ingest = ingest_decoder()
    data = valid_payload()
    for i in range(len(data)):
        assert ingest(data[:i]) is False
    counters = agg.counters
    assert counters["payload_errors"] == len(data)
    assert counters["payloads"] == 0
    assert agg.to_dict()["digests"] == {}


# ---- oversized declared lengths -------------------------------------------------

HUGE_HEADERS = [
    b"\xdf\xff\xff\xff\xff",  # map32 of 2**32 - 1 pairs
    b"\xdd\xff\xff\xff\xff",  # array32
    b"\xdb\xff\xff\xff\xf0abc",  # str32
    b"\xc6\xff\xff\xff\xf0abc",  # bin32
    b"\xc9\xff\xff\xff\xf0\x01abc",  # ext32
    b"\xde\xff\xff",  # map16
    b"\xdc\xff\xff\x01\x02",  # array16
]


def with_field(fields: dict[str, bytes], raw: dict[str, bytes]) -> bytes:
    """A msgpack map of packed fields plus raw (hand-made) values."""
    out = bytearray(b"\xde" + (len(fields) + len(raw)).to_bytes(2, "big"))
    for key, value in {**fields, **raw}.items():
        out += msgpack.packb(key) + value
    return bytes(out)


def packed_fields(data: bytes) -> dict[str, bytes]:
    top = msgpack.unpackb(data, raw=False, strict_map_key=False)
    return {k: msgpack.packb(v, use_bin_type=True) for k, v in top.items()}


@pytest.mark.parametrize("name", ["payload", "snapshot"])
def test_oversized_declared_lengths(name: str) -> None:
    decode, make = DECODERS[name]
    fields = packed_fields(make())
    for header in HUGE_HEADERS:
        assert_value_error(decode, header)
        for key in fields:
            others = {k: v for k, v in fields.items() if k != key}
            assert_value_error(decode, with_field(others, {key: header}))
    agg, ingest = ingest_decoder()
    if name == "payload":
        for header in HUGE_HEADERS:
            assert ingest(header) is False
        assert agg.counters["payload_errors"] == len(HUGE_HEADERS)


def test_oversized_json() -> None:
    assert_value_error(state_from_json, "[" * 100_000)
    assert_value_error(state_from_json, '{"a":' * 100_000)
    text = json.loads(valid_json())
    text["started"] = "x" * 1_000_000
    assert_value_error(state_from_json, json.dumps(text))


# ---- wrong types ------------------------------------------------------------------

WRONG_VALUES: list[Any] = [None, "s", -1, 1.5, [], {}, b"b", True, [[1, 2, 3]], {"a": 1}, 2**64 - 1]


@pytest.mark.parametrize("name", ["payload", "snapshot"])
def test_wrong_types_in_msgpack(name: str) -> None:
    decode, make = DECODERS[name]
    top = msgpack.unpackb(make(), raw=False, strict_map_key=False)
    refused = 0
    for key in top:
        missing = {k: v for k, v in top.items() if k != key}
        assert_value_error(decode, msgpack.packb(missing, use_bin_type=True))
        for wrong in WRONG_VALUES:
            changed = {**top, key: wrong}
            refused += not dict_or_value_error(decode, msgpack.packb(changed, use_bin_type=True))
    assert refused >= len(top) * (len(WRONG_VALUES) - 3)
    for other in (None, 1, "text", [top], b"bin"):
        assert_value_error(decode, msgpack.packb(other, use_bin_type=True))
    assert_value_error(decode, msgpack.packb({**top, "v": top["v"] + 1}, use_bin_type=True))
    assert_value_error(decode, msgpack.packb({**top, "v": top["v"] - 1}, use_bin_type=True))


def test_wrong_types_in_payload_rows() -> None:
    top = msgpack.unpackb(valid_payload(), raw=False)
    cases = [
        {"digests": [["a", "b", "c", "d", "e"]]},
        {"digests": [["a", "b", "c", "d", "e", "not a number"]]},
        {"digests": [[1, "b", "c", "d", "e", 1.0]]},
        {"digests": ["row"]},
        {"inc": 5},
        {"seq": -1},
        {"full": 1},
        {"v": 2},
    ]
    for case in cases:
        message = assert_value_error(decode_payload, msgpack.packb({**top, **case}))
        assert "payload" in message


def test_snapshot_string_index_out_of_range() -> None:
    top = msgpack.unpackb(valid_snapshot(), raw=False, strict_map_key=False)
    assert top["tasks"]
    row = list(top["tasks"][0])
    row[0] = len(top["strings"]) + 5
    bad = {**top, "tasks": [row, *top["tasks"][1:]]}
    assert_value_error(decode_snapshot, msgpack.packb(bad, use_bin_type=True))


def test_wrong_types_in_json() -> None:
    top = json.loads(valid_json())
    refused = 0
    for key in top:
        missing = {k: v for k, v in top.items() if k != key}
        assert_value_error(state_from_json, json.dumps(missing))
        for wrong in [None, "s", -1, 1.5, [], {}, True, [[1, 2, 3]], {"a": 1}]:
            refused += not dict_or_value_error(state_from_json, json.dumps({**top, key: wrong}))
    assert refused >= len(top) * 5
    assert_value_error(state_from_json, json.dumps({**top, "format": "something-else"}))
    assert_value_error(state_from_json, json.dumps({**top, "version": top["version"] + 1}))
    assert_value_error(state_from_json, json.dumps({**top, "version": top["version"] - 1}))
    for other in ("null", "1", '"text"', "[]", ""):
        assert_value_error(state_from_json, other)


@pytest.mark.parametrize("name", ["payload", "snapshot"])
def test_non_bytes_is_a_type_error(name: str) -> None:
    decode, make = DECODERS[name]
    for wrong in ("text", None, 5, 1.5, [b"x"]):
        with pytest.raises(TypeError):
            decode(wrong)
    assert isinstance(decode(bytearray(make())), dict)
    assert isinstance(decode(memoryview(make())), dict)


def test_state_from_json_argument_types() -> None:
    for wrong in (None, 5, [b"{}"]):
        with pytest.raises(TypeError):
            state_from_json(wrong)
    text = valid_json()
    assert state_from_json(text.decode()) == state_from_json(text)


# ---- random bytes and random mutations ---------------------------------------------


def random_blobs(seed: int, n: int = 2000) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(rng.randrange(0, 300)) for _ in range(n)]


@pytest.mark.parametrize("name", DECODERS)
def test_random_bytes(name: str) -> None:
    decode, _ = DECODERS[name]
    for blob in random_blobs(seed=len(name)):
        assert_value_error(decode, blob)


def test_ingest_random_bytes() -> None:
    agg, ingest = ingest_decoder()
    blobs = random_blobs(seed=99)
    for blob in blobs:
        assert ingest(blob) is False
    assert agg.counters["payload_errors"] == len(blobs)
    assert agg.counters["payloads"] == 0


def mutations(data: bytes, seed: int, n: int = 2000) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        b = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(len(b))
            op = rng.randrange(3)
            if op == 0:
                b[at] ^= 1 << rng.randrange(8)
            elif op == 1:
                b[at] = rng.randrange(256)
            else:
                b[at : at + rng.randrange(1, 4)] = b""
        out.append(bytes(b))
    return out


@pytest.mark.parametrize("name", DECODERS)
def test_random_mutations(name: str) -> None:
    decode, make = DECODERS[name]
    results = [dict_or_value_error(decode, m) for m in mutations(make(), seed=7)]
    assert not all(results)


def test_ingest_random_mutations() -> None:
    agg, ingest = ingest_decoder()
    data = valid_payload()
    for m in mutations(data, seed=11):
        assert ingest(m) in (True, False)
    counters = agg.counters
    assert counters["payload_errors"] > 0
    assert counters["payload_errors"] + counters["payloads"] <= 2000


def test_files_from_before_prefixes_folded_read_it_as_zero() -> None:
    snapshot = msgpack.unpackb(valid_snapshot(), strict_map_key=False)
    del snapshot["counters"]["prefixes_folded"]
    decoded = decode_snapshot(msgpack.packb(snapshot))
    assert decoded["counters"]["prefixes_folded"] == 0
    state = json.loads(valid_json())
    del state["counters"]["prefixes_folded"]
    assert state_from_json(json.dumps(state).encode())["counters"]["prefixes_folded"] == 0
    del state["counters"]["intern_overflows"]  # an older counter stays required
    assert "intern_overflows" in assert_value_error(state_from_json, json.dumps(state).encode())


def test_a_nul_escape_in_a_state_string_is_refused_not_cut_short() -> None:
    text = valid_json().decode()
    assert '"w0"' in text
    message = assert_value_error(state_from_json, text.replace('"w0"', '"w\\u00000"').encode())
    assert "\\u0000" in message and "NUL" in message
    # an escaped backslash followed by u0000 is plain text, not a NUL
    kept = state_from_json(text.replace('"w0"', '"w\\\\u0000"').encode())
    assert kept["workers"][W]["name"] == "w\\u0000"


DENSE_PAYLOAD = """
import resource, msgpack
from roastcoffea import _native
payload = msgpack.packb(
    {"v": 1, "inc": "i", "seq": 1, "since": 0, "full": True, "digests": [None] * (16 << 20)}
)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    _native.decode_payload(payload)
except ValueError as exc:
    print(str(exc))
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before  # KiB
print(len(payload), grown * 1024)
"""


def test_a_dense_payload_is_refused_before_it_costs_memory() -> None:
    # 16 MiB of one-byte elements: msgpack-c would build 24 bytes of tree for each.
    done = subprocess.run(
        [sys.executable, "-c", DENSE_PAYLOAD], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    message, sizes = done.stdout.strip().splitlines()
    assert "denser than 3 bytes per element" in message
    size, grown = map(int, sizes.split())
    assert size > 16 << 20
    assert grown < 2 * size  # the decoder's peak, beyond the input itself


def test_payload_of_an_earlier_build_with_records_is_read() -> None:
    # Records used to ride payloads; a "records" key is now ignored like any unknown key.
    top = msgpack.unpackb(valid_payload(), raw=False)
    old = decode_payload(msgpack.packb({**top, "records": [[1, b"x"]]}, use_bin_type=True))
    assert old == decode_payload(valid_payload())
