"""Partials of chunks that share no group are already merged: the hash aggregate skips
the merge for input clustered on a key (``partial_aggregates.disjoint``) and still gives
exactly DuckDB's answer, for clustered input and for input where chunks overlap."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest

from flowsql.planner import types as T
from flowsql.planner.expressions import AggCall
from flowsql.planner.physical import HashAggregateExec
from flowsql.planner.schema import Field
from flowsql.runtime.operators.aggregate import hash_aggregate
from flowsql.runtime.operators.aggregate import partial_aggregates as partials
from tests.harness.operators import assert_rows, drive, duck, leaf


def _table(keys: np.ndarray, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = len(keys)
    return pa.table({
        "k": pa.array(keys, pa.int64()),
        "d": pa.array(np.datetime64("2020-01-01") + (keys % 7).astype("timedelta64[D]")),
        "s": pa.array([f"s{v % 3}" for v in keys]),
        "v": pa.array(rng.integers(-50, 50, n), mask=rng.random(n) < 0.1),
        "f": pa.array(rng.random(n) * 100),
    })


AGGS = [("sum", 3, T.INT64, "sum(v)"), ("count", 3, T.INT64, "count(v)"),
        ("count_star", None, T.INT64, "count(*)"), ("avg", 3, T.FLOAT64, "avg(v)"),
        ("min", 4, T.FLOAT64, "min(f)"), ("max", 3, T.INT64, "max(v)"),
        ("var_samp", 4, T.FLOAT64, "var_samp(f)")]


def _node(table: pa.Table, groups: list[int]) -> tuple[HashAggregateExec, list]:
    node, batches = leaf(table, chunk=100)
    refs = [f.ref() for f in node.fields]
    calls = tuple(AggCall(name, (refs[col],) if col is not None else (), dtype, False, None)
                  for name, col, dtype, _ in AGGS)
    fields = tuple(Field.fresh(f"a{i}", c.dtype) for i, c in enumerate(calls))
    return HashAggregateExec(node, tuple(refs[i] for i in groups),
                             tuple(node.fields[i] for i in groups), calls, fields,
                             1.0), batches


@pytest.mark.parametrize("clustered", [True, False])
@pytest.mark.parametrize("groups", [[0], [2, 0], [1, 2]])
def test_chunked_partials_match_duckdb(monkeypatch, clustered: bool,
                                       groups: list[int]) -> None:
    """Chunks of 300 rows (60 keys of 5 rows each, clustered); unclustered, the last 400
    rows repeat every key once, so their chunks overlap all earlier ones."""
    monkeypatch.setattr(hash_aggregate, "_CHUNK_ROWS", 300)
    merges = []
    merge = partials.merge

    def counted(*args, **kwargs):
        merges.append(args[0].num_rows)
        return merge(*args, **kwargs)

    monkeypatch.setattr(partials, "merge", counted)
    keys = (np.repeat(np.arange(400), 5) if clustered else
            np.concatenate([np.repeat(np.arange(400), 4), np.arange(400)]))
    table = _table(keys, 2)
    names = ", ".join(table.column_names[i] for i in groups)
    node, batches = _node(table, groups)
    expected = duck(f"SELECT {names}, {', '.join(a[3] for a in AGGS)} FROM t "
                    f"GROUP BY {names}", t=table)
    assert_rows(drive(node, batches), expected)
    # the merge is skipped exactly when a key column (k) separates the chunks
    assert (not merges) == (clustered and 0 in groups)


def test_disjoint_needs_a_key_whose_ranges_do_not_overlap() -> None:
    def piece(keys: list[int | None], days: list[int]) -> pa.Table:
        return pa.table({"g0": pa.array(keys, pa.int64()),
                         "g1": pa.array([datetime.date(2020, 1, 1 + d) for d in days])})

    assert partials.disjoint([piece([1, 2], [1, 1]), piece([3, 5], [1, 1])], ["g0", "g1"])
    assert partials.disjoint([piece([3, 5], [1, 2]), piece([1, 5], [3, 4])], ["g0", "g1"])
    assert not partials.disjoint([piece([1, 3], [1, 1]), piece([3, 5], [1, 1])], ["g0"])
    assert not partials.disjoint([piece([1, None], [1, 1]), piece([3, 5], [2, 2])], ["g0"])
    assert not partials.disjoint([piece([1, 2], [1, 1])], ["g0"])
