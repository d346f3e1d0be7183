"""Equi-depth histograms from a bounded uniform sample of a column's values.

A column is seen batch by batch and may not fit in memory, so the histogram is built from a
uniform random sample of at most ``capacity`` non-null values (bottom-k sampling: every value
draws a random priority, the sample keeps the ``capacity`` smallest; the same generator seed
gives the same sample, so ANALYZE is reproducible). With the default 65,536 values, each of
64 buckets (1/64 of the rows) is estimated with a relative standard error of about 3%. The
sample's quantiles are the inner bounds; the outer bounds are the column's exact minimum and
maximum, so every value lies inside the histogram. A column with fewer values than the
capacity is kept whole and its histogram is exact.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_BUCKETS", "DEFAULT_SAMPLE_SIZE", "UniformSample", "equi_depth_bounds"]

DEFAULT_BUCKETS = 64
DEFAULT_SAMPLE_SIZE = 65_536


class UniformSample:
    """A uniform sample without replacement of at most ``capacity`` floats; ``add`` mutates."""

    def __init__(self, capacity: int = DEFAULT_SAMPLE_SIZE, seed: int = 0) -> None:
        self.capacity = capacity
        self._random = np.random.default_rng(seed)
        self._values = np.empty(0, dtype=np.float64)
        self._priorities = np.empty(0, dtype=np.float64)

    def add(self, values: np.ndarray) -> None:
        """Offer every value of ``values`` to the sample."""
        if len(values) == 0:
            return
        priorities = self._random.random(len(values))
        keep_values = np.concatenate([self._values, values])
        keep_priorities = np.concatenate([self._priorities, priorities])
        if len(keep_values) > self.capacity:
            chosen = np.argpartition(keep_priorities, self.capacity - 1)[:self.capacity]
            keep_values, keep_priorities = keep_values[chosen], keep_priorities[chosen]
        self._values, self._priorities = keep_values, keep_priorities

    @property
    def values(self) -> np.ndarray:
        return self._values


def equi_depth_bounds(sample: np.ndarray, low: float, high: float,
                      buckets: int = DEFAULT_BUCKETS) -> tuple[float, ...]:
    """``buckets + 1`` ascending bounds: ``low``, the sample's ``i / buckets`` quantiles,
    ``high`` (the exact minimum and maximum). Empty for an empty sample. With fewer
    sampled values than buckets, one bucket per value."""
    if len(sample) == 0:
        return ()
    buckets = max(1, min(buckets, len(sample)))
    inner = np.quantile(sample, np.arange(1, buckets) / buckets, method="inverted_cdf")
    bounds = np.concatenate([[low], np.clip(inner, low, high), [high]])
    return tuple(float(b) for b in bounds)
