"""Keyed streaming operators built by hand over a table of every engine key type, and what
the exchange in front of each does with their rows.

``table`` holds one column per key type (small pools, so keys repeat, NULLs included), a
high-cardinality key ``many``, the rowtime ``ts``, a value ``v`` and a 10-second window
``ws``/``we``. ``OPERATORS`` builds each keyed operator kind over it, keyed by one of
``KEYS`` (columns, several columns, or an expression); ``exchanges`` gives the hash
exchanges the streaming distribution pass places in front of the operator, ``routing``
the subtask the real ``Partitioner`` sends each key to, ``stored_keys`` the key columns of a
state table, and ``canonical`` makes key values comparable whatever type an operator
stored them in.
"""

from __future__ import annotations

import decimal
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.optimizer.streaming.distribution import enforce_streaming_distribution
from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry
from flowsql.planner.expressions import AggCall, Cast, Expr, SortKey
from flowsql.planner.logical import WindowShape
from flowsql.planner.physical import (
    WINDOW_END,
    WINDOW_START,
    ExchangeExec,
    PhysicalPlan,
    TableScanExec,
    WindowAggregateExec,
)
from flowsql.planner.physical_streaming import (
    GroupAggregateExec,
    IntervalJoinExec,
    OverAggregateExec,
    RankExec,
    StreamJoinExec,
    WindowedAggregateExec,
    WindowJoinExec,
)
from flowsql.planner.schema import Field, Schema, to_arrow_schema
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.parallel.partitioner import Partitioner
from flowsql.runtime.registry import create_operator
from tests.harness.operators import leaf

TS = pa.timestamp("ms")
#: rowtimes are this far apart (a little out of order)
STEP_MS = 700

# -- the input: one column per key type, drawn from small pools so keys repeat ----------------

STRINGS = ["", "a", "ab", "a string longer than eight bytes", "\u00e9t\u00e9", None]
POOLS: dict[str, tuple[pa.DataType, list[Any]]] = {
    "i8": (pa.int8(), [-3, 0, 7, 127, None]),
    "i16": (pa.int16(), [-300, 0, 7, None]),
    "i32": (pa.int32(), [-(2**31), 0, 7, 2**31 - 1, None]),
    "i64": (pa.int64(), [-(2**63), 0, 7, 2**63 - 1, None]),
    "bool": (pa.bool_(), [True, False, None]),
    "f32": (pa.float32(), [-0.0, 0.0, 1.5, math.nan, math.inf, None]),
    "f64": (pa.float64(), [-0.0, 0.0, 1.5, math.nan, -math.inf, 1e300, None]),
    "dec": (pa.decimal128(10, 2), [decimal.Decimal("1.50"), decimal.Decimal("-0.01"),
                                   decimal.Decimal("0.00"), None]),
    "dec38": (pa.decimal128(38, 10), [decimal.Decimal("12345678901234567890.0123456789"),
                                      decimal.Decimal("-1.5"), None]),
    "str": (pa.string(), STRINGS),
    "bin": (pa.binary(), [b"", b"\x00", b"xyz", b"0123456789abcdef0", None]),
    "date": (pa.date32(), [date(1970, 1, 1), date(1969, 12, 31), date(2024, 2, 29), None]),
    "ts_ms": (TS, [0, -1, 1_700_000_000_123, None]),
    "ts_us": (pa.timestamp("us"), [0, -1_000_001, 1_700_000_000_123_456, None]),
    "ts_tz": (pa.timestamp("us", "UTC"), [0, 1_700_000_000_123_456, None]),
    "time": (pa.time64("us"), [0, 1_000_001, 86_399_999_999, None]),
    "null": (pa.null(), [None]),
}


def table(seed: int, rows: int = 72) -> pa.Table:
    """See the module docstring; ``many`` takes about ``rows / 2`` distinct values."""
    rng = random.Random(seed)
    ts = np.array([STEP_MS * i - rng.randrange(0, 1_500) for i in range(rows)], np.int64)
    ts = np.maximum(ts, 0)
    start = ts - ts % 10_000
    columns = {name: pa.array([rng.choice(pool) for _ in range(rows)], dtype)
               for name, (dtype, pool) in POOLS.items()}
    columns.update({"many": pa.array([rng.randrange(rows // 2 + 1) for _ in range(rows)],
                                     pa.int64()),
                    "ts": pa.array(ts, TS),
                    "v": pa.array([rng.randrange(50) for _ in range(rows)], pa.int64()),
                    "ws": pa.array(start, TS), "we": pa.array(start + 10_000, TS)})
    return pa.table(columns)



# -- keys: which columns (or expressions over them) an operator is keyed by -----------------

KeyMaker = Callable[[dict[str, Field]], tuple[Expr, ...]]


def _columns(*names: str) -> KeyMaker:
    return lambda fields: tuple(fields[n].ref() for n in names)


def _cast(name: str, dtype: pa.DataType) -> KeyMaker:
    return lambda fields: (Cast(fields[name].ref(), dtype),)


KEYS: dict[str, KeyMaker] = {
    **{name: _columns(name) for name in POOLS},
    "many": _columns("many"),
    "many+str": _columns("many", "str"),
    "str+i32+null": _columns("str", "i32", "null"),
    "str+ts_us+dec": _columns("str", "ts_us", "dec"),
    "f64+bool+date": _columns("f64", "bool", "date"),
    "cast(i32 as bigint)": _cast("i32", pa.int64()),
    "cast(dec as decimal(20,4))": _cast("dec", pa.decimal128(20, 4)),
    "cast(ts_ms as timestamp(6))": _cast("ts_ms", pa.timestamp("us")),
    "cast(f32 as double)": _cast("f32", pa.float64()),
    "cast(i8 as string)": _cast("i8", pa.string()),
}


# -- operators --------------------------------------------------------------------------------

@dataclass
class Case:
    """A keyed node over one or two leaves and the batches of each leaf."""

    node: PhysicalPlan
    inputs: list[list[pa.RecordBatch]]


def _leaf(rows: pa.Table) -> tuple[PhysicalPlan, dict[str, Field], list[pa.RecordBatch]]:
    node, batches = leaf(rows, chunk=6)
    return node, {f.name: f for f in node.schema}, batches


def _aggs(fields: dict[str, Field]) -> tuple[tuple[AggCall, ...], Schema]:
    calls = (AggCall("count_star", (), T.INT64), AggCall("sum", (fields["v"].ref(),), T.INT64))
    return calls, tuple(Field.fresh(f"a{i}", c.dtype) for i, c in enumerate(calls))


def _group_fields(keys: tuple[Expr, ...]) -> Schema:
    return tuple(Field.fresh(f"g{i}", k.dtype) for i, k in enumerate(keys))


def _group_aggregate(rows: pa.Table, keys: KeyMaker) -> Case:
    child, fields, batches = _leaf(rows)
    k = keys(fields)
    v = fields["v"].ref()
    calls = (AggCall("count_star", (), T.INT64), AggCall("sum", (v,), T.INT64),
             AggCall("max", (v,), T.INT64), AggCall("count", (v,), T.INT64, True))
    agg_fields = tuple(Field.fresh(f"a{i}", c.dtype) for i, c in enumerate(calls))
    return Case(GroupAggregateExec(child, k, _group_fields(k), calls, agg_fields, 1.0),
                [batches])


def _window_aggregate(shape: WindowShape) -> Callable[[pa.Table, KeyMaker], Case]:
    def case(rows: pa.Table, keys: KeyMaker) -> Case:
        child, fields, batches = _leaf(rows)
        k = keys(fields)
        calls, agg_fields = _aggs(fields)
        slots: tuple[int | str, ...] = (*range(len(k)), WINDOW_START, WINDOW_END)
        group_fields = (*_group_fields(k), Field.fresh("window_start", TS),
                        Field.fresh("window_end", TS))
        return Case(WindowAggregateExec(child, shape, fields["ts"].ref(), k, slots,
                                        group_fields, calls, agg_fields, 1.0), [batches])
    return case


def _windowed_aggregate(rows: pa.Table, keys: KeyMaker) -> Case:
    child, fields, batches = _leaf(rows)
    k = (*keys(fields), fields["ws"].ref(), fields["we"].ref())
    calls, agg_fields = _aggs(fields)
    return Case(WindowedAggregateExec(child, k, _group_fields(k), calls, agg_fields,
                                      (fields["ws"].ref(), fields["we"].ref()), 1.0), [batches])


def _over(frame: str, preceding: int | None) -> Callable[[pa.Table, KeyMaker], Case]:
    def case(rows: pa.Table, keys: KeyMaker) -> Case:
        child, fields, batches = _leaf(rows)
        calls, agg_fields = _aggs(fields)
        return Case(OverAggregateExec(child, keys(fields), fields["ts"].ref(), frame,
                                      preceding, calls, agg_fields, 1.0), [batches])
    return case


def _rank(kind: str) -> Callable[[pa.Table, KeyMaker], Case]:
    def case(rows: pa.Table, keys: KeyMaker) -> Case:
        child, fields, batches = _leaf(rows)
        window = None
        if kind == "top_n":
            order, lower, upper, time = (SortKey(fields["v"].ref(), False),), 1, 2, None
        elif kind == "deduplicate":
            order, lower, upper, time = (SortKey(fields["ts"].ref(), True),), 1, 1, "rowtime"
        else:
            order, lower, upper, time = (SortKey(fields["v"].ref(), False),), 1, 2, None
            window = (fields["ws"].ref(), fields["we"].ref())
        return Case(RankExec(child, keys(fields), order, lower, upper,
                             Field.fresh("rn", pa.int64()), time, window, 1.0), [batches])
    return case


def _join(kind: str) -> Callable[[pa.Table, KeyMaker], Case]:
    def case(rows: pa.Table, keys: KeyMaker) -> Case:
        # the right side holds the same keys in another order, so keys meet across sides
        left, lf, lb = _leaf(rows)
        right, rf, rb = _leaf(rows.take(pa.array(np.arange(rows.num_rows)[::-1].copy())))
        lk, rk = keys(lf), keys(rf)
        if kind == "regular":
            node: PhysicalPlan = StreamJoinExec(left, right, "inner", lk, rk, None, False, 1.0)
        elif kind == "interval":
            node = IntervalJoinExec(left, right, "inner", lk, rk, lf["ts"].ref(), rf["ts"].ref(),
                                    -2_000, 3_000, None, 1.0)
        else:
            lw, rw = (lf["ws"].ref(), lf["we"].ref()), (rf["ws"].ref(), rf["we"].ref())
            node = WindowJoinExec(left, right, "inner", (*lk, *lw), (*rk, *rw), lw, rw, None,
                                  1.0)
        return Case(node, [lb, rb])
    return case


OPERATORS: dict[str, Callable[[pa.Table, KeyMaker], Case]] = {
    "group_aggregate": _group_aggregate,
    "tumble": _window_aggregate(WindowShape("tumble", size=10_000)),
    "hop": _window_aggregate(WindowShape("hop", size=10_000, slide=5_000)),
    "cumulate": _window_aggregate(WindowShape("cumulate", size=10_000, step=5_000)),
    "session": _window_aggregate(WindowShape("session", gap=3_000)),
    "windowed_aggregate": _windowed_aggregate,
    "over_rows_unbounded": _over("rows", None),
    "over_range_bounded": _over("range", 2_000),
    "top_n": _rank("top_n"),
    "deduplicate": _rank("deduplicate"),
    "window_rank": _rank("window_rank"),
    "regular_join": _join("regular"),
    "interval_join": _join("interval"),
    "window_join": _join("window"),
}


# -- what the exchange does -------------------------------------------------------------------

class _Receiver:
    """One receiving subtask's channel: keeps what it is sent."""

    def __init__(self) -> None:
        self.batches: list[pa.RecordBatch] = []

    def write(self, batch: pa.RecordBatch) -> None:
        self.batches.append(batch)


def exchanges(node: PhysicalPlan) -> list[ExchangeExec]:
    """The hash exchanges the streaming distribution pass puts in front of ``node``."""
    # the leaves as scans: a scan runs on every subtask, a leaf of values on one only
    scans = tuple(TableScanExec(TableEntry("t", to_arrow_schema(child.schema), {}),
                                child.schema, (), 1.0) for child in node.inputs)
    placed = enforce_streaming_distribution(node.with_inputs(scans),
                                            {"parallelism.default": "2"})
    while type(placed) is not type(node):
        placed = placed.inputs[0]
    exchanges = list(placed.inputs)
    for exchange in exchanges:
        assert isinstance(exchange, ExchangeExec) and exchange.kind == "hash", exchange
    return exchanges  # type: ignore[return-value]


def canonical(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    """Python values that compare (and hash) equal exactly when the SQL values are equal,
    whatever representation the operator stored them in."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    if pa.types.is_timestamp(column.type):
        # in microseconds: the pool's nanosecond values are distinct there too
        column = pc.cast(pc.cast(column, pa.timestamp("us", column.type.tz), safe=False),
                         pa.int64())
    elif pa.types.is_time(column.type):
        column = pc.cast(column, pa.int64())
    values = column.to_pylist()
    out = []
    for value in values:
        if isinstance(value, float):
            value = "NaN" if math.isnan(value) else value + 0.0
        elif isinstance(value, decimal.Decimal):
            value = value.normalize()
        elif isinstance(value, str):
            value = value.encode()
        out.append(value)
    return out


def keys_of(batch: pa.RecordBatch, fns: Sequence[Callable[[pa.RecordBatch], pa.Array]]
             ) -> list[tuple[Any, ...]]:
    return list(zip(*(canonical(fn(batch)) for fn in fns)))


def routing(case: Case, parallelism: int, max_parallelism: int
            ) -> dict[tuple[Any, ...], int]:
    """Key (``canonical`` values) -> the subtask the exchanges in front of ``case.node``
    send its rows to, through the real ``Partitioner``; on a join, equal keys of the two
    sides must go to one subtask. With ``parallelism == max_parallelism`` the subtask is
    the key group."""
    routed: dict[tuple[Any, ...], int] = {}
    for exchange, batches in zip(exchanges(case.node), case.inputs):
        receivers = [_Receiver() for _ in range(parallelism)]
        partitioner = Partitioner("hash", exchange.keys, exchange.input.schema,
                                  receivers, 0, max_parallelism)  # type: ignore[arg-type]
        for batch in batches:
            partitioner.write(batch)
        fns = [compile_expr(k, exchange.input.schema) for k in exchange.keys]
        for subtask, receiver in enumerate(receivers):
            for batch in receiver.batches:
                for key in keys_of(batch, fns):
                    assert routed.setdefault(key, subtask) == subtask, (
                        f"the exchange sends key {key} to subtasks {routed[key]} and {subtask}")
    return routed


# -- driving the operator ---------------------------------------------------------------------

def open_operator(case: Case, max_parallelism: int, subtask: int = 0,
                  parallelism: int = 1) -> Operator:
    operator = create_operator(case.node)
    operator.open(OperatorContext(
        "test", {"pipeline.max-parallelism": str(max_parallelism),
                 "execution.batch-size": "8"},
        subtask_index=subtask, parallelism=parallelism))
    return operator


def feed(operator: Operator, case: Case, steps: range | None = None) -> list[pa.RecordBatch]:
    """Feed the batches of ``steps`` (all by default) of every input, interleaved, with a
    watermark after the middle one (some windows fire, some state stays); never ends
    the input. Returns the output batches."""
    count = max(len(batches) for batches in case.inputs)
    out: list[pa.RecordBatch] = []
    for step in steps if steps is not None else range(count):
        for index, batches in enumerate(case.inputs):
            if step < len(batches):
                out.extend(operator.process_batch(index, batches[step]))
        if step == count // 2:
            out.extend(b for b in operator.process_watermark(middle_watermark(case))
                       if isinstance(b, pa.RecordBatch))
    return out


def middle_watermark(case: Case) -> int:
    rows = max(sum(b.num_rows for b in batches) for batches in case.inputs)
    return STEP_MS * rows // 2 - 5_000


# -- what the operator stores -----------------------------------------------------------------

def stored_keys(name: str, table: pa.Table, case: Case) -> list[pa.Array | pa.ChunkedArray]:
    """The key columns of the keyed state table ``name``, one entry per row."""
    stored = [f"k{i}" for i in range(len(exchanges(case.node)[0].keys))]
    if all(n in table.column_names for n in stored):
        return [table.column(n) for n in stored]
    if isinstance(case.node, RankExec):  # ranking state holds the input rows, c0, c1, ...
        schema = case.node.input.schema
        data = pa.RecordBatch.from_arrays(
            [table.column(f"c{i}").combine_chunks() for i in range(len(schema))],
            names=[f.name for f in schema])
        return [compile_expr(k, schema)(data) for k in case.node.partition_keys]
    raise AssertionError(f"state {name}: cannot find the key columns in {table.schema}")
