"""roastcoffea._native.key_split against dask.utils.key_split, differentially.

The native answer must equal dask's for every key, exceptions included:
the edge cases of the dask-internals reference (section 8.4) and a large
seeded corpus of generated keys, first uncached and then from the cache.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from dask.utils import key_split as dask_key_split

from roastcoffea import _native

key_split = _native.key_split

Outcome = tuple[str, Any]


def outcome(fn: Callable[[Any], str], key: Any) -> Outcome:
    """The result, or the exception type, of fn(key)."""
    try:
        return ("ok", fn(key))
    except Exception as exc:
        return ("raise", type(exc))


def dask_outcome(key: Any) -> Outcome:
    # dask's lru_cache treats equal keys as one: a bytes or tuple subclass
    # equal to a plain key would get the plain key's cached answer.
    dask_key_split.cache_clear()
    return outcome(dask_key_split, key)


class S(str):
    pass


class B(bytes):
    pass


class T(tuple):
    pass


class RaisingHash:
    def __hash__(self) -> int:
        raise ValueError("no hash")


HEX32 = "ae05086432ca935f6eba409a8ecd4896"
UUID = "f7d1c9a4-6a4e-4c3b-9a8e-1f2d3c4b5a6e"

EDGE_CASES: list[Any] = [
    # dask's doctests
    "x",
    "x-1",
    "x-1-2-3",
    ("x-2", 1),
    "('x-2', 1)",
    "('x', 1)",
    "hello-world-1",
    b"hello-world-1",
    HEX32,
    "<module.submodule.myclass object at 0xdaf372",
    None,
    "x-abcdefab",
    "_(x)",
    # reference section 8.4
    "x--1",
    "x-abcdefgh",
    "x-deadline",
    "x-feedback",
    "x-Deadbeef",
    "x-ABCDEFAB",
    "x-abcdefa",
    "x-abcdefabc",
    "x-dbeefcafe",
    "x-1a",
    "x-a1",
    "x-abc_d",
    "x-_a",
    "__",
    "_-x",
    "",
    "-1",
    "1",
    1,
    1.5,
    (),
    ("x",),
    (("x-1", 0), 1),
    "(1, 2)",
    '("x", 1)',
    "(x-1)",
    "_x-1",
    "x-y-z",
    "hello-World-1",
    "X-1",
    HEX32.upper(),
    HEX32 + "-1",
    HEX32[:-1],
    "inc-" + HEX32,
    UUID,
    "task-" + UUID,
    "finalize-hlgfinalizecompute-0d9b2a7c3e4f5a6b7c8d9e0f1a2b3c4d",
    "('getitem-1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d', 0)",
    "read-parquet-fused-values-abc123",
    "sum-aggregate-abc",
    "λ-1",
    "é-abc",
    "x-ñandú",
    "x-éabcdef",
    "x-\u0661",
    "\u0661-x",
    "1-x",
    "<lambda>",
    "<lambda>-abc",
    "<>",
    "< a.b.c d>-1",
    "<a\xa0b.c>",
    "x y-1",
    "x,y-1",
    "('x,y', 1)",
    "__main__.f-1",
    "x.y-abc",
    b"\xff-1",
    S("x-1"),
    B(b"x-1"),
    T(("x-1", 1)),
    # exceptions and odd types
    [1, 2],
    ("x", [1]),
    (b"\xff",),
    ((),),
    RaisingHash(),
    b"",
    b"\xed\xa0\x80-1",  # an encoded surrogate: not UTF-8
    b"\xc0\xaf",  # overlong
    frozenset({"x-1"}),
    # strings with no UTF-8 form (lone surrogates)
    "\ud800-1",
    "x-\udc00",
    "<\ud800.y z>",
    "\ud800",
    # whitespace and brackets
    "<\u2003>",
    "< >",
    "<<a.b>>",
    "<x\u3000y.z>-1",
    "\"'(_x_)'\"-y",
    ",x-1",
    "(,x)-1",
    "a" * 32,
    "0" * 32,
    "g" + "0" * 31,
    "x-" + "abcdef12",
    "x-Ⅻ",  # a letter number: not alpha
    "x-\u0301",  # a combining mark: not alpha
    "ǅ-abc",  # titlecase letter
    "x-\ua4d0\ua4d1",  # Lisu letters
    "\U00010400-\U00010428",  # Deseret letters outside the BMP
    "\U0001d518\U0001d52b\U0001d526-1",  # mathematical letters
]


@pytest.mark.parametrize("key", EDGE_CASES, ids=repr)
def test_edge_cases_match_dask(key: Any) -> None:
    assert outcome(key_split, key) == dask_outcome(key)


def test_documented_answers() -> None:
    assert key_split(("x-2", 1)) == "x"
    assert key_split(HEX32) == "data"
    assert key_split("x-abcdefab") == "x"
    assert key_split(B(b"x-1")) == "Other"
    assert key_split(T(("x-1", 1))) == "Other"
    with pytest.raises(UnicodeDecodeError):
        key_split(b"\xff-1")
    with pytest.raises(IndexError):
        key_split(())
    with pytest.raises(TypeError):
        key_split([1, 2])


# ---- generated keys ---------------------------------------------------------

LETTERS = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    "αβγδεζηθλμπσωΣΩ"  # Greek
    "абвгдежзийкЖЩЯ"  # Cyrillic
    "ابتثجحخ"  # Arabic
    "कखगघ"  # Devanagari consonants (letters)
    "日本語字"  # CJK
    "ñéüßøåç"
    "ǅⅫ"
)
MARKS = "\u0301\u093f\u0902"  # combining marks: not alpha
# ASCII, Arabic-Indic, Devanagari and fullwidth digits
DIGITS = "0123456789\u0661\u0662\u0663\u0664\u0966\u0967\u0968\uff13\uff14"
SPACES = " \t\n\xa0\u2003\u3000\u1680\x1c"
PUNCT = "-_,()'\"<>.:/[]{}#@ "
WORDS = [
    "x",
    "inc",
    "add",
    "getitem",
    "read-parquet",
    "from-delayed",
    "finalize",
    "sum-aggregate",
    "lambda",
    "abcdefab",
    "deadbeef",
    "feedface",
    "cafebabe",
    "Deadbeef",
    "histogram",
    "fill",
    "ñandú",
    "λ",
    "данные",
    "数据",
]


def hex_token(rng: random.Random, n: int, upper: bool = False) -> str:
    s = "".join(rng.choice("0123456789abcdef") for _ in range(n))
    return s.upper() if upper else s


def af_word(rng: random.Random) -> str:
    """An 8-letter word starting with a-f: dask's hex rule stops on it."""
    tail = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7))
    return rng.choice("abcdef") + tail


def soup(rng: random.Random, n: int) -> str:
    pools = [LETTERS, DIGITS, SPACES, PUNCT, PUNCT, MARKS, "-", "-", "<>", "abcdef"]
    return "".join(rng.choice(rng.choice(pools)) for _ in range(n))


def token(rng: random.Random) -> str:
    kind = rng.randrange(10)
    if kind == 0:
        return hex_token(rng, 32)
    if kind == 1:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if kind == 2:
        return hex_token(rng, rng.randrange(1, 12))
    if kind == 3:
        return af_word(rng)
    if kind == 4:
        return str(rng.randrange(10**6))
    if kind == 5:
        return rng.choice(WORDS)
    if kind == 6:
        return hex_token(rng, 32, upper=True)
    if kind == 7:
        return soup(rng, rng.randrange(0, 6))
    if kind == 8:
        return "".join(rng.choice(LETTERS) for _ in range(rng.randrange(1, 9)))
    return rng.choice(["", "_", "-", "1a", "a1", "x_y"])


def text_key(rng: random.Random) -> str:
    kind = rng.randrange(12)
    name = rng.choice(WORDS)
    if kind <= 2:
        return "-".join([name] + [token(rng) for _ in range(rng.randrange(0, 4))])
    if kind == 3:
        return f"('{name}-{token(rng)}', {rng.randrange(100)})"
    if kind == 4:
        mod = ".".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 4)))
        return f"<{mod} object at 0x{hex_token(rng, 12)}>" + rng.choice(["", "-1", "-abc"])
    if kind == 5:
        return rng.choice(["<lambda>", "<lambda>-" + token(rng), "<" + soup(rng, 4) + ">"])
    if kind == 6:
        return rng.choice("_-0123456789(\"'<,") + text_key(rng)
    if kind == 7:
        return hex_token(rng, 32) + rng.choice(["", "-1", "-" + token(rng)])
    if kind == 8:
        return soup(rng, rng.randrange(0, 24))
    if kind == 9:
        return rng.choice(SPACES) + name + rng.choice(SPACES) + "-" + token(rng)
    if kind == 10:
        return name + "-" + af_word(rng) + "-" + token(rng)
    return "".join(rng.choice(LETTERS + MARKS + DIGITS) for _ in range(rng.randrange(1, 10)))


def generated_key(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(20)
    if kind < 13:
        return text_key(rng)
    if kind < 15:
        raw = text_key(rng).encode("utf-8", "surrogatepass")
        if rng.randrange(8) == 0:  # invalid UTF-8 somewhere
            at = rng.randrange(len(raw) + 1)
            raw = raw[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88"]) + raw[at:]
        return raw
    if kind < 19 and depth < 3:
        inner = generated_key(rng, depth + 1)
        return (inner, *[rng.randrange(100) for _ in range(rng.randrange(0, 3))])
    return rng.choice([(), None, 7, 2.5, ("x",), b""])


def corpus(n: int, seed: int) -> list[Any]:
    rng = random.Random(seed)
    return [generated_key(rng) for _ in range(n)]


def mismatches(keys: list[Any]) -> list[tuple[Any, Outcome, Outcome]]:
    bad = []
    for key in keys:
        mine, theirs = outcome(key_split, key), outcome(dask_key_split, key)
        if mine != theirs:
            bad.append((key, mine, theirs))
    return bad


def test_generated_keys_match_dask() -> None:
    keys = corpus(120_000, seed=20260817)
    dask_key_split.cache_clear()
    first = mismatches(keys)
    assert not first, f"{len(first)} mismatches, first ones: {first[:10]}"
    # Second pass: every answer now comes from the caches.
    second = mismatches(keys)
    assert not second, f"{len(second)} cached mismatches, first ones: {second[:10]}"


def test_generated_corpus_is_diverse() -> None:
    keys = corpus(20_000, seed=20260817)
    answers = {outcome(dask_key_split, k) for k in keys}
    kinds = {type(k) for k in keys}
    assert {str, bytes, tuple} <= kinds
    assert ("ok", "data") in answers
    assert ("ok", "Other") in answers
    assert ("raise", UnicodeDecodeError) in answers
    assert ("raise", IndexError) in answers
    assert len(answers) > 1000


def test_surrogate_keys_match_dask() -> None:
    rng = random.Random(7)
    keys = []
    for _ in range(2000):
        base = list(text_key(rng))
        for _ in range(rng.randrange(1, 3)):
            base.insert(rng.randrange(len(base) + 1), chr(rng.randrange(0xD800, 0xE000)))
        keys.append("".join(base))
    assert not mismatches(keys)
