"""Equi-depth bounds: exact for a column that fits in the sample, the extremes always exact."""

from __future__ import annotations

import numpy as np

from flowsql.runtime.statistics.equi_depth import UniformSample, equi_depth_bounds


def test_a_small_column_is_kept_whole_and_split_exactly() -> None:
    sample = UniformSample(capacity=1000)
    for start in range(0, 640, 64):
        sample.add(np.arange(start, start + 64, dtype=np.float64))
    assert sorted(sample.values.tolist()) == list(range(640))
    bounds = equi_depth_bounds(sample.values, 0.0, 639.0, buckets=4)
    assert bounds == (0.0, 159.0, 319.0, 479.0, 639.0)


def test_the_sample_is_bounded_uniform_and_reproducible() -> None:
    def sampled(seed: int) -> np.ndarray:
        sample = UniformSample(capacity=5_000, seed=seed)
        for start in range(0, 1_000_000, 100_000):
            sample.add(np.arange(start, start + 100_000, dtype=np.float64))
        return sample.values

    values = sampled(0)
    assert len(values) == 5_000 and len(np.unique(values)) == 5_000
    counts = np.histogram(values, bins=10, range=(0, 1_000_000))[0]
    assert np.all(np.abs(counts - 500) < 100), counts  # every tenth of the input is there
    assert np.array_equal(np.sort(values), np.sort(sampled(0)))


def test_few_values_give_one_bucket_each_and_no_values_no_histogram() -> None:
    assert equi_depth_bounds(np.array([3.0, 5.0]), 3.0, 5.0) == (3.0, 3.0, 5.0)
    assert equi_depth_bounds(np.array([]), 0.0, 1.0) == ()
