"""ROOT input metrics: byte totals, compression ratio, branch coverage per file."""

from __future__ import annotations

from test_metrics_support import baskets, chunk, close, metrics_of

META_A = {
    "filename": "a",
    "compression_ratio": 4.0,
    "total_branches": 10,
    "total_tree_bytes": 100_000,
}
META_B = {
    "filename": "b",
    "compression_ratio": 2.0,
    "total_branches": 4,
    "total_tree_bytes": 10_000,
}


def read(file: str, start: int, branches: list[str], compressed: int, uncompressed: int, **extra):
    """A chunk record of ``file`` that read ``branches``: compressed and uncompressed bytes."""
    meta = {"a": META_A, "b": META_B}[file]
    return chunk(
        file=file,
        entry_start=start,
        file_metadata=meta,
        accessed_branches=branches,
        accessed_bytes=compressed,
        accessed_uncompressed_bytes=uncompressed,
        **extra,
    )


CHUNKS = [
    read("a", 0, ["Jet_pt", "Jet_eta"], 4000, 16000),
    read("a", 1, ["Jet_pt", "Muon_pt"], 6000, 20000),
    read("b", 0, ["Jet_pt"], 1000, 2000, bytes_read=None),
    # it failed late and read its bytes all the same
    read("b", 1, ["Muon_eta"], 500, 1000, error="RuntimeError: late failure"),
]


def test_byte_totals() -> None:
    m = metrics_of(chunks=CHUNKS)
    assert m["bytes_read_uncompressed"] == 16000 + 20000 + 2000 + 1000
    assert m["chunk_bytes_read_task"] == 4 * 8000
    assert m["chunk_bytes_read"] is None
    assert m["unavailable"]["chunk_bytes_read"] == "1 of 4 chunk records lack 'bytes_read'"


def test_compression_ratio_of_what_was_read() -> None:
    # Uncompressed / compressed, as TTree.compression_ratio: > 1 for compressed data.
    m = metrics_of(chunks=CHUNKS)
    assert close(m["compression_ratio"], 39000 / (4000 + 6000 + 1000 + 500))
    partial = [
        *CHUNKS,
        chunk(entry_start=2, accessed_bytes=None, accessed_uncompressed_bytes=10**6),
    ]
    m = metrics_of(chunks=partial)
    assert m["compression_ratio"] is None  # a ratio over part of the baskets would mislead
    assert "lack 'accessed_bytes'" in m["unavailable"]["compression_ratio"]


def test_compression_ratio_leaves_out_embedded_baskets() -> None:
    # Baskets embedded in the TTree metadata (as in the 2015 ttbar file of tests/data) have
    # no compressed size: they count on neither side of the ratio.
    mixed = chunk(accessed_bytes=300, accessed_uncompressed_bytes=1700, accessed_embedded_bytes=700)
    m = metrics_of(chunks=[mixed])
    assert close(m["compression_ratio"], 1000 / 300)
    assert close(m["file_read_metrics"]["/data/a.root"]["compression_ratio"], 1000 / 300)
    only = chunk(accessed_bytes=0, accessed_uncompressed_bytes=900, accessed_embedded_bytes=900)
    m = metrics_of(chunks=[only])
    assert m["compression_ratio"] is None
    assert m["unavailable"]["compression_ratio"] == (
        "every basket read was embedded in the TTree metadata"
    )
    assert m["file_read_metrics"]["/data/a.root"]["compression_ratio"] is None
    assert m["compression_ratios"] == []


def test_compression_ratio_unavailable() -> None:
    why = {"accessed_bytes": "the entry range holds no baskets"}
    lost = chunk(accessed_bytes=None, accessed_uncompressed_bytes=None, unavailable=why)
    m = metrics_of(chunks=[lost])
    assert m["compression_ratio"] is None
    assert m["unavailable"]["compression_ratio"] == (
        "the baskets read are not known: 1 of 1 chunk records lack "
        "'accessed_bytes' (the entry range holds no baskets)"
    )
    assert "lack 'accessed_uncompressed_bytes'" in m["unavailable"]["bytes_read_uncompressed"]


def test_a_basket_shared_by_chunks_counts_once_per_file() -> None:
    # Two chunks of one file read the basket at seek 500 (it straddles their ranges):
    # each chunk read it, the file read it once.
    def entries(start: int, *listed: tuple[int, int, int]) -> dict:
        """Entries [start, start + 20) reading ``listed`` (seek, bytes, uncompressed)."""
        return chunk(
            entry_start=start,
            entry_stop=start + 20,
            accessed_bytes=sum(b[1] for b in listed),
            accessed_uncompressed_bytes=sum(b[2] for b in listed),
            accessed_baskets=baskets(*listed),
        )

    first = entries(0, (100, 100, 300), (500, 200, 600))
    second = entries(20, (500, 200, 600), (900, 250, 900))
    m = metrics_of(chunks=[first, second])
    per_file = m["file_read_metrics"]["/data/a.root"]
    assert per_file["baskets_read"] == 3
    assert per_file["bytes_read"] == 550
    assert per_file["bytes_read_uncompressed"] == 1800
    assert per_file["bytes_read_percent"] == 100.0 * 550 / 100_000
    assert close(per_file["compression_ratio"], 1800 / 550)
    assert close(m["compression_ratio"], 1800 / 550)
    assert m["bytes_read_uncompressed"] == 900 + 1500  # what the chunks decompressed


def test_a_basket_id_is_unique_per_file_and_tree() -> None:
    a = chunk(file="a", accessed_baskets=baskets((7, 10, 40)))
    b = chunk(file="b", accessed_baskets=baskets((7, 20, 40)))
    friend = chunk(file="a", treename="Friends", accessed_baskets=baskets((-1, 0, 64)))
    m = metrics_of(chunks=[a, b, friend])
    assert m["file_read_metrics"]["a"]["baskets_read"] == 2
    assert m["file_read_metrics"]["a"]["bytes_read"] == 10
    assert m["file_read_metrics"]["b"]["bytes_read"] == 20
    assert close(m["compression_ratio"], 80 / 30)


def test_branch_coverage_per_file_uses_every_chunk() -> None:
    m = metrics_of(chunks=CHUNKS)
    files = m["file_read_metrics"]
    assert files["a"] == {
        "storage_unit": "basket",  # records without the field read TTrees
        "num_chunks": 2,
        "total_branches": 10,
        "branches_read": 3,
        "branches_read_percent": 30.0,
        "total_tree_bytes": 100_000,
        "baskets_read": 2,
        "bytes_read": 10_000,
        "bytes_read_uncompressed": 36_000,
        "bytes_read_percent": 10.0,
        "compression_ratio": 36_000 / 10_000,
    }
    assert files["b"]["branches_read_percent"] == 50.0
    assert files["b"]["bytes_read_percent"] == 15.0
    assert m["avg_branches_read_percent"] == 40.0
    assert m["avg_bytes_read_percent"] == 12.5
    assert m["bytes_read_percent_per_file"] == [10.0, 15.0]
    assert m["compression_ratios"] == [36_000 / 10_000, 3000 / 1500]
    assert m["file_metadata"] == {"a": META_A, "b": META_B}
    assert m["accessed_branches"] == ["Jet_eta", "Jet_pt", "Muon_eta", "Muon_pt"]
    assert m["total_branches_read"] == 4


def test_files_without_metadata() -> None:
    m = metrics_of(chunks=[*CHUNKS, chunk(file="c", file_metadata=None, accessed_bytes=None)])
    c = m["file_read_metrics"]["c"]
    assert (c["branches_read"], c["branches_read_percent"], c["bytes_read"]) == (2, None, None)
    assert m["avg_bytes_read_percent"] == 12.5  # over the files that have it
    m = metrics_of(chunks=[chunk(file_metadata=None)])
    assert m["avg_branches_read_percent"] is None
    assert "no file has branches_read_percent" in m["unavailable"]["avg_branches_read_percent"]
    assert m["compression_ratios"] == [4.0]  # from the chunk's read sizes, not its metadata


def test_no_chunk_records() -> None:
    m = metrics_of()
    for key in ("bytes_read_uncompressed", "compression_ratio", "file_read_metrics"):
        assert m[key] is None
        assert "@track_metrics" in m["unavailable"][key]
