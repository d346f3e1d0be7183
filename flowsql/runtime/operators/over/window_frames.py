"""Window geometry over rows sorted by (partition keys, order keys), all as numpy arrays.

For ``n`` sorted rows a :class:`Layout` gives, per row, the bounds of its partition and of
its peer group (rows equal on every order key), and :func:`frame_bounds` turns a SQL frame
into half-open row ranges ``[start, end)`` clipped to the partition. RANGE frames with an
offset search the single order key's values with one global ``np.searchsorted`` over a
composite key (partition number scaled past the value span, so partitions never mix);
rows whose order value is NULL get their peer group as frame, as in DuckDB.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.expressions import Frame, FrameBound, Literal, SortKey


def change_flags(columns: Sequence[pa.Array], n: int) -> np.ndarray:
    """True where a row differs from the previous one in any column (NULLs equal each
    other); row 0 is always a change."""
    flags = np.zeros(n, dtype=bool)
    if n:
        flags[0] = True
    for column in columns:
        if n < 2 or pa.types.is_null(column.type):
            continue
        head, tail = column.slice(0, n - 1), column.slice(1)
        differs = pc.fill_null(pc.not_equal(tail, head), False)
        nulls = column.is_null().to_numpy(zero_copy_only=False)
        flags[1:] |= differs.to_numpy(zero_copy_only=False) | (nulls[1:] != nulls[:-1])
    return flags


def _spans(flags: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: group number, group start, group end (exclusive)."""
    n = len(flags)
    starts = np.flatnonzero(flags)
    ends = np.append(starts[1:], n)
    group = np.cumsum(flags) - 1
    return group, starts[group], ends[group]


@dataclass
class Layout:
    """Partition and peer-group bounds of every sorted row."""

    n: int
    partition: np.ndarray
    part_start: np.ndarray
    part_end: np.ndarray
    peer: np.ndarray
    peer_start: np.ndarray
    peer_end: np.ndarray

    @staticmethod
    def of(partition_keys: Sequence[pa.Array], order_keys: Sequence[pa.Array],
           n: int) -> Layout:
        part_flags = change_flags(partition_keys, n)
        peer_flags = part_flags | change_flags(order_keys, n)
        partition, part_start, part_end = _spans(part_flags)
        peer, peer_start, peer_end = _spans(peer_flags)
        return Layout(n, partition, part_start, part_end, peer, peer_start, peer_end)

    @property
    def index(self) -> np.ndarray:
        return np.arange(self.n)


def default_frame(has_order: bool) -> Frame:
    """SQL's default frame: up to the current row's peers with ORDER BY, else all."""
    end = "current_row" if has_order else "unbounded_following"
    return Frame("range", FrameBound("unbounded_preceding"), FrameBound(end))


def _offset_value(bound: FrameBound) -> Any:
    value = bound.offset.value if isinstance(bound.offset, Literal) else bound.offset
    if value is None:
        raise ExecutionError(f"window frame offset of {bound} must not be NULL")
    return value


def _as_number(values: pa.Array) -> np.ndarray:
    """Order values as float64 numbers on a uniform scale (dates: days; timestamps:
    their unit)."""
    t = values.type
    if pa.types.is_date(t):
        values = values.cast(pa.date32()).cast(pa.int32())
    elif pa.types.is_timestamp(t):
        values = values.cast(pa.int64())
    return np.asarray(pc.fill_null(values.cast(pa.float64()), 0.0).to_numpy(
        zero_copy_only=False), dtype=np.float64)


def _offset_number(bound: FrameBound, order_type: pa.DataType) -> float:
    value = _offset_value(bound)
    if isinstance(value, tuple):  # (months, days, nanos) interval
        months, days, nanos = value
        if months:
            raise ExecutionError("RANGE frames with month intervals are not supported")
        if pa.types.is_timestamp(order_type):
            per_second = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[order_type.unit]
            return days * 86400 * per_second + nanos * per_second / 10**9
        return days + nanos / (86400 * 10**9)
    if isinstance(value, datetime.timedelta):
        return value.total_seconds() / 86400
    if isinstance(value, decimal.Decimal):
        return float(value)
    return float(value)


def _row_bound(bound: FrameBound, idx: np.ndarray, layout: Layout, is_end: bool) -> np.ndarray:
    kind = bound.kind
    if kind == "unbounded_preceding":
        return layout.part_start.copy()
    if kind == "unbounded_following":
        return layout.part_end.copy()
    shift = 1 if is_end else 0
    if kind == "current_row":
        return idx + shift
    offset = int(_offset_value(bound))
    return idx + shift + (offset if kind == "following" else -offset)


def _range_bound(bound: FrameBound, layout: Layout, order: SortKey | None,
                 values: pa.Array | None, is_end: bool) -> np.ndarray:
    kind = bound.kind
    if kind == "unbounded_preceding":
        return layout.part_start.copy()
    if kind == "unbounded_following":
        return layout.part_end.copy()
    if kind == "current_row":
        return (layout.peer_end if is_end else layout.peer_start).copy()
    if order is None or values is None:
        raise ExecutionError("a RANGE frame with an offset needs exactly one ORDER BY key")
    offset = _offset_number(bound, values.type)
    number = _as_number(values)
    if not order.ascending:
        number = -number
    nulls = values.is_null().to_numpy(zero_copy_only=False)
    valid = number[~nulls]
    low = float(valid.min()) if len(valid) else 0.0
    span = (float(valid.max()) - low if len(valid) else 0.0) + 2 * abs(offset) + 3
    base = abs(offset) + 1
    key = layout.partition * span + base + (number - low)
    key[nulls] = layout.partition[nulls] * span + (0.5 if order.nulls_first else span - 0.5)
    delta = offset if kind == "following" else -offset
    bounds = np.searchsorted(key, key + delta, side="right" if is_end else "left")
    peers = layout.peer_end if is_end else layout.peer_start
    return np.where(nulls, peers, bounds)


def frame_bounds(frame: Frame, layout: Layout, order_keys: Sequence[SortKey],
                 order_values: Sequence[pa.Array]) -> tuple[np.ndarray, np.ndarray]:
    """Half-open ``[start, end)`` of every row's frame, clipped to its partition (an empty
    frame has ``start == end``)."""
    idx = layout.index
    if frame.mode == "rows":
        start = _row_bound(frame.start, idx, layout, False)
        end = _row_bound(frame.end, idx, layout, True)
    else:
        single = len(order_keys) == 1
        order = order_keys[0] if single else None
        values = order_values[0] if single else None
        start = _range_bound(frame.start, layout, order, values, False)
        end = _range_bound(frame.end, layout, order, values, True)
    start = np.clip(start, layout.part_start, layout.part_end)
    end = np.clip(end, layout.part_start, layout.part_end)
    return start, np.maximum(start, end)
