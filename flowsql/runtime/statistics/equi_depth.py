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
    """A uniform sample without replacement of at most ``capacity`` floats; ``add`` mutates.

    Offered values pile up until there are twice ``capacity`` of them, then the
    ``capacity`` with the smallest priorities are kept and the largest kept priority becomes
    the bar a later value must beat to enter at all (a bar that only falls, so a value that
    misses it could never have been in the final sample). After n values only about
    ``capacity / n`` of a batch gets past the bar: late batches cost a random draw and a
    comparison per value.
    """

    def __init__(self, capacity: int = DEFAULT_SAMPLE_SIZE, seed: int = 0) -> None:
        self.capacity = capacity
        self._random = np.random.default_rng(seed)
        self._values: list[np.ndarray] = []
        self._priorities: list[np.ndarray] = []
        self._held = 0
        self._bar = 1.0

    def add(self, values: np.ndarray) -> None:
        """Offer every value of ``values`` to the sample."""
        if len(values) == 0:
            return
        priorities = self._random.random(len(values))
        entering = priorities < self._bar
        if not entering.all():
            values, priorities = values[entering], priorities[entering]
        self._values.append(values)
        self._priorities.append(priorities)
        self._held += len(values)
        if self._held > 2 * self.capacity:
            self._compact()

    def _compact(self) -> None:
        values = np.concatenate(self._values) if self._values else np.empty(0)
        priorities = np.concatenate(self._priorities) if self._priorities else np.empty(0)
        if len(values) > self.capacity:
            chosen = np.argpartition(priorities, self.capacity - 1)[:self.capacity]
            values, priorities = values[chosen], priorities[chosen]
            self._bar = float(priorities.max())
        self._values, self._priorities, self._held = [values], [priorities], len(values)

    @property
    def values(self) -> np.ndarray:
        """The sampled values (in no particular order)."""
        self._compact()
        return self._values[0]


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
