"""hamming_distance, bit_count and bitwise_xor/and/or in generated kernels, on both
devices, against numpy: signature lengths from 64 to 4096 bits (and odd byte counts), NULL
signatures, filters, ORDER BY ... LIMIT k with ties broken by id, and the 22026 of a length
mismatch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.errors import QueryError

_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], np.int64)


def _signatures(rows: int, width: int, seed: int, null_every: int = 0) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    # few distinct bits so that distances repeat: ties must be broken by id
    matrix = (rng.random((rows, width)) < 0.02).astype(np.uint8) * rng.integers(1, 256, (rows, width), dtype=np.uint8)
    valid = np.ones(rows, bool)
    if null_every:
        valid[::null_every] = False
    sig = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), rows, [pa.py_buffer(np.packbits(valid, bitorder="little")),
                                                                       pa.py_buffer(matrix.tobytes())])
    table = pa.table({"id": pa.array(np.arange(rows, dtype=np.int64)), "grp": pa.array(np.arange(rows) % 7, pa.int32()),
                      "sig": sig})
    return table, matrix, valid


def _connect(device: str, tmp_path: Path, table: pa.Table) -> Any:
    path = tmp_path / "sigs.parquet"
    pq.write_table(table, path, row_group_size=max(1, table.num_rows // 3))
    db = penstock.connect(device=device, strict=True)
    db.register("s", path)
    return db


def _top_k(distance: np.ndarray, valid: np.ndarray, ids: np.ndarray, k: int) -> list[tuple[int, int]]:
    order = np.lexsort((ids[valid], distance[valid]))[:k]
    return [(int(ids[valid][i]), int(distance[valid][i])) for i in order]


@pytest.mark.parametrize("width", [8, 32, 256, 512, 13])
def test_hamming_top_k_equals_numpy(device: str, tmp_path: Path, width: int) -> None:
    table, matrix, valid = _signatures(3000, width, seed=width, null_every=11)
    query = (np.random.default_rng(99).random(width) < 0.02).astype(np.uint8)
    db = _connect(device, tmp_path, table)
    distance = _POPCOUNT[matrix ^ query].sum(axis=1)
    ids = np.arange(len(matrix))
    for k in (1, 10, 1000):
        got = db.sql("SELECT id, hamming_distance(sig, $1) AS d FROM s ORDER BY d, id LIMIT " + str(k),
                     [query.tobytes()])
        assert got.engine.startswith("penstock")
        rows = got.to_arrow()
        assert list(zip(rows["id"].to_pylist(), rows["d"].to_pylist())) == _top_k(distance, valid, ids, k)


def test_null_signatures_give_null(device: str, tmp_path: Path) -> None:
    table, matrix, valid = _signatures(200, 16, seed=3, null_every=4)
    db = _connect(device, tmp_path, table)
    rows = db.sql("SELECT id, hamming_distance(sig, sig) AS d, bit_count(sig) AS b FROM s ORDER BY id").to_arrow()
    expected_bits = _POPCOUNT[matrix].sum(axis=1)
    assert rows["d"].to_pylist() == [0 if ok else None for ok in valid]
    assert rows["b"].to_pylist() == [int(b) if ok else None for b, ok in zip(expected_bits, valid)]
    assert rows.schema.field("d").type == pa.int32() and rows.schema.field("b").type == pa.int64()


def test_filter_in_front_of_top_k(device: str, tmp_path: Path) -> None:
    table, matrix, valid = _signatures(2000, 64, seed=5)
    query = matrix[17].tobytes()
    db = _connect(device, tmp_path, table)
    rows = db.sql("SELECT id, hamming_distance(sig, $1) AS d FROM s WHERE grp = 3 AND id > 100 "
                  "ORDER BY d, id LIMIT 25", [query]).to_arrow()
    ids = np.arange(len(matrix))
    keep = (ids % 7 == 3) & (ids > 100)
    distance = _POPCOUNT[matrix ^ matrix[17]].sum(axis=1)
    assert list(zip(rows["id"].to_pylist(), rows["d"].to_pylist())) == _top_k(distance, keep, ids, 25)


@pytest.mark.parametrize("fn,op", [("bitwise_xor", np.bitwise_xor), ("bitwise_and", np.bitwise_and),
                                   ("bitwise_or", np.bitwise_or)])
def test_bit_count_of_bitwise_operations(device: str, tmp_path: Path, fn: str, op: Any) -> None:
    table, matrix, valid = _signatures(500, 40, seed=7, null_every=9)
    query = np.random.default_rng(8).integers(0, 256, 40, dtype=np.uint8)
    db = _connect(device, tmp_path, table)
    rows = db.sql(f"SELECT bit_count({fn}(sig, $1)) AS b FROM s ORDER BY id", [query.tobytes()]).to_arrow()
    expected = _POPCOUNT[op(matrix, query)].sum(axis=1)
    assert rows["b"].to_pylist() == [int(b) if ok else None for b, ok in zip(expected, valid)]


def test_hamming_of_a_constant_and_aggregates(device: str, tmp_path: Path) -> None:
    table, matrix, _ = _signatures(1000, 8, seed=11)
    db = _connect(device, tmp_path, table)
    rows = db.sql("SELECT grp, min(hamming_distance(sig, '\\x00000000000000ff'::bytea)) AS m, count(*) AS c "
                  "FROM s GROUP BY grp ORDER BY grp").to_arrow()
    constant = np.zeros(8, np.uint8)
    constant[7] = 0xFF
    distance = _POPCOUNT[matrix ^ constant].sum(axis=1)
    groups = np.arange(len(matrix)) % 7
    assert rows["m"].to_pylist() == [int(distance[groups == g].min()) for g in range(7)]


def test_length_mismatch_raises_22026(device: str, tmp_path: Path) -> None:
    table, _, _ = _signatures(100, 32, seed=13)
    db = _connect(device, tmp_path, table)
    with pytest.raises(QueryError) as raised:
        db.sql("SELECT hamming_distance(sig, $1) FROM s", [b"\x01\x02"])
    assert raised.value.sqlstate == "22026"
    with pytest.raises(QueryError) as raised:
        db.sql("SELECT bit_count(bitwise_and(sig, $1)) FROM s", [bytes(31)])
    assert raised.value.sqlstate == "22026"
    # the connection still works
    assert db.sql("SELECT count(*) AS c FROM s").to_arrow()["c"].to_pylist() == [100]


def test_bytea_results_comparisons_and_order(device: str, tmp_path: Path) -> None:
    table, matrix, valid = _signatures(300, 12, seed=17, null_every=10)
    db = _connect(device, tmp_path, table)
    query = matrix[5]
    rows = db.sql("SELECT id, sig, bitwise_or(sig, $1) AS o FROM s WHERE id < 40 ORDER BY id", [query.tobytes()])
    assert rows.engine.startswith("penstock")
    got = rows.to_arrow()
    assert got["sig"].to_pylist() == table["sig"].to_pylist()[:40]
    assert got["o"].to_pylist() == [bytes(r | query) if ok else None for r, ok in zip(matrix[:40], valid[:40])]
    greater = db.sql("SELECT count(*) AS c FROM s WHERE sig > $1 OR sig = $1", [query.tobytes()])
    assert greater.engine.startswith("penstock")
    assert greater.to_arrow()["c"].to_pylist() == [sum(1 for r, ok in zip(matrix, valid) if ok and bytes(r) >= bytes(query))]


def test_bytea_keys_fall_back_and_say_why(tmp_path: Path) -> None:
    table, _, _ = _signatures(50, 8, seed=19)
    path = tmp_path / "sigs.parquet"
    pq.write_table(table, path)
    db = penstock.connect(device="cpu")
    db.register("s", path)
    result = db.sql("SELECT sig, count(*) AS c FROM s GROUP BY sig")
    assert result.engine == "datafusion" and "bytea values as grouping" in (result.fallback_reason or "")
    assert sum(result.to_arrow()["c"].to_pylist()) == 50


def _top_k_over_csv_text(device: str, tmp_path: Path, rows: int, width: int, seed: int, null_every: int,
                         prefix: str, signature: str, k: int, query_row: int) -> Any:
    """Signatures written to a CSV file as `prefix` + hex text; the k nearest to row
    `query_row`'s by hamming_distance(`signature`, $1) over column h equal numpy's. The connection."""
    table, matrix, valid = _signatures(rows, width, seed=seed, null_every=null_every)
    text = [prefix + bytes(r).hex() if ok else None for r, ok in zip(matrix, valid)]
    path = tmp_path / "sigs.csv"
    pa.csv.write_csv(pa.table({"id": table["id"], "h": pa.array(text, pa.string())}), path)
    db = penstock.connect(device=device, strict=True)
    db.register("c", path)
    query = matrix[query_row]
    got = db.sql(f"SELECT id, hamming_distance({signature}, $1) AS d FROM c ORDER BY d, id LIMIT {k}",
                 [query.tobytes()]).to_arrow()
    distance = _POPCOUNT[matrix ^ query].sum(axis=1)
    assert list(zip(got["id"].to_pylist(), got["d"].to_pylist())) == _top_k(distance, valid, np.arange(rows), k)
    return db


def test_signatures_from_csv_hex_text(device: str, tmp_path: Path) -> None:
    db = _top_k_over_csv_text(device, tmp_path, 400, 16, seed=23, null_every=7, prefix="",
                              signature="decode(h, 'hex')", k=20, query_row=11)
    bad = tmp_path / "bad.csv"
    bad.write_text("id,h\n1,00ff\n2,0g\n")
    db.register("b", bad)
    with pytest.raises(QueryError) as raised:
        db.sql("SELECT bit_count(decode(h, 'hex')) FROM b")
    assert raised.value.sqlstate == "22023"


def test_text_cast_to_bytea_reads_postgresql_hex(device: str, tmp_path: Path) -> None:
    """CAST(text AS bytea): '\\x..' is hex digits, other text its bytes; a backslash of the
    escape format is refused (22P02) rather than read otherwise than PostgreSQL does."""
    db = _top_k_over_csv_text(device, tmp_path, 300, 8, seed=29, null_every=6, prefix="\\x",
                              signature="CAST(h AS bytea)", k=7, query_row=3)
    plain = tmp_path / "plain.csv"
    plain.write_text("id,h\n1,abcdefgh\n2,a\\\\b\n")
    db.register("p", plain)
    assert db.sql("SELECT bit_count(CAST(h AS bytea)) AS b FROM p WHERE id = 1").to_arrow()["b"].to_pylist() == \
        [sum(bin(c).count("1") for c in b"abcdefgh")]
    with pytest.raises(QueryError) as raised:
        db.sql("SELECT bit_count(CAST(h AS bytea)) FROM p")
    assert raised.value.sqlstate == "22P02"


def test_fallback_refuses_text_cast_to_bytea(tmp_path: Path) -> None:
    """DataFusion takes CAST(text AS bytea) as the text's bytes: a query that would fall back
    with one is refused (0A000) rather than answered otherwise than PostgreSQL."""
    path = tmp_path / "t.csv"
    path.write_text("id,h\n1,\\x01\n")
    db = penstock.connect(device="cpu")
    db.register("c", path)
    with pytest.raises(QueryError) as raised:
        db.sql("SELECT CAST(h AS bytea) AS b, count(*) FROM c GROUP BY CAST(h AS bytea)")
    assert raised.value.sqlstate == "0A000"
    assert db.sql("SELECT 'abc'::bytea AS b, count(*) AS n FROM c GROUP BY 1").to_arrow()["n"].to_pylist() == [1]
