"""Assigning records to fixed windows (tumble, hop, cumulate), vectorized with numpy.

Each function maps event times ``ts`` (int64 ms) to (row index, window_start, window_end)
triples, one per window a record belongs to. Window starts are aligned to the epoch plus
``offset`` with a floor modulo, so negative times and offsets behave like Flink's
``TimeWindow.getWindowStartWithOffset``.
"""

from __future__ import annotations

import numpy as np

from flowsql.runtime.operators.window.window_specs import WindowSpec

Assignment = tuple[np.ndarray, np.ndarray, np.ndarray]


def assign_windows(spec: WindowSpec, ts: np.ndarray) -> Assignment:
    if spec.kind == "tumble":
        return _tumble(spec, ts)
    if spec.kind == "hop":
        return _hop(spec, ts)
    return _cumulate(spec, ts)


def _tumble(spec: WindowSpec, ts: np.ndarray) -> Assignment:
    starts = ts - np.mod(ts - spec.offset, spec.size)
    return np.arange(len(ts)), starts, starts + spec.size


def _hop(spec: WindowSpec, ts: np.ndarray) -> Assignment:
    per_row = spec.size // spec.slide
    last_start = ts - np.mod(ts - spec.offset, spec.slide)
    rows = np.repeat(np.arange(len(ts)), per_row)
    starts = last_start[rows] - np.tile(np.arange(per_row), len(ts)) * spec.slide
    return rows, starts, starts + spec.size


def _cumulate(spec: WindowSpec, ts: np.ndarray) -> Assignment:
    starts = ts - np.mod(ts - spec.offset, spec.size)
    first_step = (ts - starts) // spec.step + 1  # the first window end after ts, in steps
    counts = spec.size // spec.step - first_step + 1
    rows = np.repeat(np.arange(len(ts)), counts)
    position = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    ends = starts[rows] + (first_step[rows] + position) * spec.step
    return rows, starts[rows], ends
