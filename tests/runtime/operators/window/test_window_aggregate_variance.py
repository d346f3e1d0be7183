"""VAR_POP / VAR_SAMP / STDDEV_POP / STDDEV_SAMP of the window aggregate: moments (count,
sum, sum of squares) that merge across partials, slices and sessions. Hand-checked."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from flowsql.errors import PlanError
from flowsql.runtime.kernels.variance import variance
from flowsql.runtime.operators.window.accumulators import Accumulators
from flowsql.runtime.operators.window.window_specs import AggregateSpec, WindowSpec
from tests.harness.windows import SCHEMA, run

VARIANCES = (AggregateSpec("var_pop", 2, "vp"), AggregateSpec("var_samp", 2, "vs"),
             AggregateSpec("stddev_pop", 2, "sp"), AggregateSpec("stddev_samp", 2, "ss"))


def test_variance_kernel_follows_flink_for_empty_and_single_inputs():
    n, total, squares = np.array([0, 1, 2, 3]), np.array([0.0, 3, 4, 3]), np.array([0.0, 9, 10, 3])
    assert variance("var_pop", n, total, squares).to_pylist() == [None, 0.0, 1.0, 0.0]
    assert variance("var_samp", n, total, squares).to_pylist() == [None, None, 2.0, 0.0]
    assert variance("stddev_pop", n, total, squares).to_pylist() == [None, 0.0, 1.0, 0.0]
    # three equal values whose float sums leave a hair below zero stay 0, not NaN
    equal = variance("stddev_samp", np.array([3]), np.array([0.3]), np.array([0.03]))
    assert equal.to_pylist()[0] == pytest.approx(0.0, abs=1e-7)


def test_moments_merge_across_partials():
    accumulators = Accumulators(VARIANCES, SCHEMA)

    def partial(keys: list[str], values: list[int | None]) -> pa.Table:
        batch = pa.record_batch([pa.array(keys), pa.array([0] * len(keys), pa.int64()),
                                 pa.array(values, pa.int64()),
                                 pa.array([0] * len(keys), pa.int64())], schema=SCHEMA)
        table = pa.Table.from_pydict({"k": batch.column(0), **accumulators.arguments(batch)})
        return accumulators.partial(table, ["k"])

    first = partial(["a", "a", "b", "c"], [1, 3, None, 4])
    second = partial(["a", "b", "c"], [5, 2, None])
    merged = accumulators.merge(pa.concat_tables([first, second]), ["k"]).sort_by("k")
    finished = [c.to_pylist() for c in accumulators.finish(merged)]
    assert [f.type for f in accumulators.output_fields] == [pa.float64()] * 4
    assert list(zip(merged.column("k").to_pylist(), *finished)) == [
        ("a", pytest.approx(8 / 3), 4.0, pytest.approx((8 / 3) ** 0.5), 2.0),  # 1 3 | 5
        ("b", 0.0, None, 0.0, None),    # one non-NULL value
        ("c", 0.0, None, 0.0, None)]


def test_hop_window_merges_the_moments_of_its_slices():
    # HOP slide 5, size 10, WATERMARK ts - 0: [0, 10) holds 1 2 | 6, [5, 15) 6 | 8
    events = [("a", 1, 1), ("a", 2, 2), ("a", 6, 6), ("a", 12, 8)]
    out, late = run(WindowSpec.hop(5, 10), events, delay=0, aggregates=VARIANCES)
    assert late == 0
    assert out == [
        ("a", -5, 5, 0.25, 0.5, 0.5, pytest.approx(0.5 ** 0.5)),
        ("a", 0, 10, pytest.approx(14 / 3), 7.0, pytest.approx((14 / 3) ** 0.5),
         pytest.approx(7 ** 0.5)),
        ("a", 5, 15, 1.0, 2.0, 1.0, pytest.approx(2 ** 0.5)),
        ("a", 10, 20, 0.0, None, 0.0, None)]


def test_distinct_variance_is_refused():
    with pytest.raises(PlanError, match="DISTINCT var_pop"):
        AggregateSpec("var_pop", 2, "vp", distinct=True)
