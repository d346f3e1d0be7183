"""VAR_POP / VAR_SAMP / STDDEV_POP / STDDEV_SAMP from mergeable moments.

A variance aggregate keeps three accumulators that add up across rows, slices and
retractions: the count ``n`` of non-NULL values, their sum ``s`` and their sum of squares
``q``. The result is Flink's (Calcite's reduction of these aggregates):

* ``VAR_POP  = (q - s * s / n) / n``, NULL when ``n = 0``;
* ``VAR_SAMP = (q - s * s / n) / (n - 1)``, NULL when ``n <= 1``;
* ``STDDEV_*`` the square root of the matching variance.

Rounding can leave ``q - s * s / n`` a hair below zero for equal values; it is clamped to
zero so that a standard deviation is never NaN.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from flowsql.planner.physical import VARIANCE_FUNCTIONS

VARIANCE_AGGREGATES = VARIANCE_FUNCTIONS

__all__ = ["VARIANCE_AGGREGATES", "variance"]


def variance(function: str, n: np.ndarray, total: np.ndarray, squares: np.ndarray
             ) -> pa.Array:
    """``function`` (one of ``VARIANCE_AGGREGATES``) per row of the moments, as float64."""
    n = np.asarray(n, dtype=np.float64)
    total = np.asarray(total, dtype=np.float64)
    squares = np.asarray(squares, dtype=np.float64)
    sample = function.endswith("_samp")
    defined = n > (1 if sample else 0)
    safe_n = np.where(n > 0, n, 1.0)
    spread = np.maximum(squares - total * total / safe_n, 0.0)
    result = spread / np.where(defined, n - 1 if sample else n, 1.0)
    if function.startswith("stddev"):
        result = np.sqrt(result)
    return pa.array(result, pa.float64(), mask=~defined)
