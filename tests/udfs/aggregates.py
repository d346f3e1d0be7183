"""Aggregate sample functions: called once per group with the group's arrays."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

import flowsql


@flowsql.udaf(result_type="DOUBLE", arg_types=["DOUBLE", "DOUBLE"])
def weighted_avg(values: pa.Array, weights: pa.Array) -> float | None:
    """sum(v * w) / sum(w) over the rows where both are set; NULL for none."""
    both = pc.and_(pc.is_valid(values), pc.is_valid(weights))
    values, weights = values.filter(both), weights.filter(both)
    total = pc.sum(weights).as_py()
    if not total:
        return None
    return pc.sum(pc.multiply(values, weights)).as_py() / total


@flowsql.udaf(result_type="BIGINT")
def spread(values: pa.Array) -> int | None:
    """max - min (NULL over no values)."""
    bounds = pc.min_max(values).as_py()
    return None if bounds["min"] is None else bounds["max"] - bounds["min"]


@flowsql.udaf(result_type="VARCHAR")
def joined(values: pa.Array) -> str:
    """The group's strings sorted and joined with '|' (a deterministic order)."""
    return "|".join(sorted(v for v in values.to_pylist() if v is not None))


@flowsql.udaf(result_type="BIGINT")
def row_count(values: pa.Array) -> int:
    return len(values)


@flowsql.udaf(result_type="BIGINT")
def fails_on_big_group(values: pa.Array) -> int:
    if len(values) > 2:
        raise RuntimeError("too many rows")
    return len(values)


# -- class-form aggregates (accumulators) ------------------------------------------------

@flowsql.udaf(result_type="DOUBLE", arg_types=["DOUBLE"])
class Mean:
    """The average of the non-NULL values: mergeable and retractable ([sum, count])."""

    def create_accumulator(self) -> list[float]:
        return [0.0, 0]

    def accumulate(self, acc: list[float], values: pa.Array) -> None:
        acc[0] += pc.sum(values).as_py() or 0.0
        acc[1] += pc.count(values).as_py()

    def retract(self, acc: list[float], values: pa.Array) -> None:
        acc[0] -= pc.sum(values).as_py() or 0.0
        acc[1] -= pc.count(values).as_py()

    def merge(self, acc: list[float], other: list[float]) -> list[float]:
        return [acc[0] + other[0], acc[1] + other[1]]

    def get_value(self, acc: list[float]) -> float | None:
        return acc[0] / acc[1] if acc[1] else None


@flowsql.udaf(result_type="BIGINT")
class Range:
    """max - min: mergeable, not retractable ([min, max], None before any value)."""

    def create_accumulator(self) -> list[int | None]:
        return [None, None]

    def accumulate(self, acc: list[int | None], values: pa.Array) -> None:
        bounds = pc.min_max(values).as_py()
        self.merge(acc, [bounds["min"], bounds["max"]])

    def merge(self, acc: list[int | None], other: list[int | None]) -> None:
        if other[0] is not None:
            acc[0] = other[0] if acc[0] is None else min(acc[0], other[0])
            acc[1] = other[1] if acc[1] is None else max(acc[1], other[1])

    def get_value(self, acc: list[int | None]) -> int | None:
        return None if acc[0] is None else acc[1] - acc[0]  # type: ignore[operator]


@flowsql.udaf(result_type="VARCHAR")
class Collect:
    """The non-NULL strings sorted and joined with '|': retractable, not mergeable (a
    multiset of value -> count)."""

    def create_accumulator(self) -> dict[str, int]:
        return {}

    def accumulate(self, acc: dict[str, int], values: pa.Array) -> None:
        counts = pc.value_counts(values.drop_null()).to_pylist()
        for item in counts:
            acc[item["values"]] = acc.get(item["values"], 0) + item["counts"]

    def retract(self, acc: dict[str, int], values: pa.Array) -> None:
        for value in values.drop_null().to_pylist():
            acc[value] -= 1
            if not acc[value]:
                del acc[value]

    def get_value(self, acc: dict[str, int]) -> str:
        return "|".join(v for v in sorted(acc) for _ in range(acc[v]))


@flowsql.udaf(result_type="BIGINT")
class FailsOnNine:
    """A count that fails in accumulate when it sees the value 9."""

    def create_accumulator(self) -> int:
        return 0

    def accumulate(self, acc: int, values: pa.Array) -> int:
        if 9 in values.to_pylist():
            raise ValueError("nine")
        return acc + len(values)

    def merge(self, acc: int, other: int) -> int:
        return acc + other

    def get_value(self, acc: int) -> int:
        return acc


@flowsql.udaf(result_type="BIGINT")
class KeepsASet:
    """An accumulator that is not JSON data (a set)."""

    def create_accumulator(self) -> set[int]:
        return set()

    def accumulate(self, acc: set[int], values: pa.Array) -> None:
        acc.update(values.to_pylist())

    def merge(self, acc: set[int], other: set[int]) -> None:
        acc.update(other)

    def get_value(self, acc: set[int]) -> int:
        return len(acc)


@flowsql.udaf(result_type="BIGINT")
class NoValue:
    """Misses get_value: refused at registration."""

    def create_accumulator(self) -> int:
        return 0

    def accumulate(self, acc: int, values: pa.Array) -> int:
        return acc
