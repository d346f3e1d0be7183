"""The variance family as partials: chunks' count, mean and M2 merged by Chan's formula give
the variance of all rows (checked against numpy's two-pass variance), also for values far
from zero whose spread is small (within the precision their chunk means keep)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from flowsql.planner import types as T
from flowsql.planner.expressions import AggCall, ColumnRef
from flowsql.runtime.operators.aggregate import partial_aggregates as partials

NAMES = ["var_pop", "var_samp", "stddev_pop", "stddev_samp"]


def _aggs() -> list[AggCall]:
    return [AggCall(name, (ColumnRef(0, "x", T.FLOAT64),), T.FLOAT64) for name in NAMES]


# Near 1e9 a double's spacing is about 1e-7, so each chunk's mean carries that much error and
# the merged variance (spread 3) agrees to about 1e-8 relative, not to the last digits.
@pytest.mark.parametrize("offset,tolerance", [(0.0, 1e-12), (1e9, 1e-7)])
def test_merged_chunks_give_the_variance_of_all_rows(offset: float, tolerance: float
                                                     ) -> None:
    rng = np.random.default_rng(7)
    groups = rng.integers(0, 5, 20_000)
    values = offset + rng.normal(0.0, 3.0, 20_000)
    values[rng.random(20_000) < 0.1] = np.nan  # NULLs
    table = pa.table({"g0": groups, **{f"a{i}": pa.array(values, from_pandas=True)
                                       for i in range(len(NAMES))}})
    aggs = _aggs()
    chunks = [partials.partial(table.slice(start, 1234), ["g0"], aggs)
              for start in range(0, table.num_rows, 1234)]
    merged = partials.merge(pa.concat_tables(chunks), ["g0"], aggs)
    merged = partials.merge(pa.concat_tables([merged.slice(0, 2), merged.slice(2)]),
                            ["g0"], aggs)
    result = dict(zip(merged.column("g0").to_pylist(),
                      zip(*(c.to_pylist() for c in partials.final(merged, aggs)))))
    for group in range(5):
        kept = values[(groups == group) & ~np.isnan(values)]
        expected = [np.var(kept), np.var(kept, ddof=1), np.std(kept), np.std(kept, ddof=1)]
        assert result[group] == pytest.approx(expected, rel=tolerance)


def test_a_group_without_enough_values_is_null() -> None:
    table = pa.table({"g0": [1, 1, 2, 3], **{f"a{i}": pa.array([5.0, None, None, 2.0])
                                            for i in range(len(NAMES))}})
    aggs = _aggs()
    merged = partials.merge(pa.concat_tables(
        [partials.partial(table.slice(0, 2), ["g0"], aggs),
         partials.partial(table.slice(2), ["g0"], aggs)]), ["g0"], aggs)
    rows = dict(zip(merged.column("g0").to_pylist(),
                    zip(*(c.to_pylist() for c in partials.final(merged, aggs)))))
    assert rows == {1: (0.0, None, 0.0, None), 2: (None, None, None, None),
                    3: (0.0, None, 0.0, None)}
