"""Seeded random tables for the budget-equivalence property test, written as Parquet files.

Three tables (``t1``, ``t2``, ``t3``; :data:`TABLE_ROWS` rows each) share one schema, so any
two can be joined on the same columns or combined by set operations:

==========  ================  ===================================================================
column      type              distribution (why)
==========  ================  ===================================================================
``id``      int64             unique 0..n-1 in random order: the tie-breaker that makes
                              ROW_NUMBER and ROWS frames deterministic
``k``       int64             join / group key over ~``KEY_RANGE`` values, 5 % NULL, one hot key
                              (:data:`HOT_KEY`) holding a larger share of the rows (skew: a
                              partition several times the average, yet far below 1 MiB, so a
                              spilling operator can always make progress)
``g``       int32             25 values, 4 % NULL: few large groups, heavy duplicates
``s``       string            2,000 words of 0-24 letters (the empty string included), skewed
                              (the most frequent about 1 % of rows), 5 % NULL
``d``       decimal(12, 2)    -100,000.00 .. 100,000.00, 3 % NULL: exact sums
``dt``      date32            1995-01-01 .. 1999-12-31, 3 % NULL
``v``       int64             -1,000 .. 1,000, 2 % NULL
==========  ================  ===================================================================

The largest table is several MiB in memory, the others a few MiB or less, so a 1 MiB budget
forces every blocking operator to spill while each key group stays well below the budget
(an operator may rightly refuse a single key whose rows exceed it; the data never asks that).
Files are written with small row groups so scans yield many batches.
"""

from __future__ import annotations

import string
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

TABLE_ROWS: dict[str, int] = {"t1": 90_000, "t2": 30_000, "t3": 12_000}
#: probability of the hot key per table: the product of the hot rows of two tables bounds
#: the size of a join's hottest key
HOT_SHARE: dict[str, float] = {"t1": 0.015, "t2": 0.002, "t3": 0.005}
HOT_KEY = 7
KEY_RANGE = 20_000
GROUPS = 25
WORDS = 2_000
ROW_GROUP_ROWS = 8_192

SCHEMA = pa.schema([
    ("id", pa.int64()), ("k", pa.int64()), ("g", pa.int32()), ("s", pa.string()),
    ("d", pa.decimal128(12, 2)), ("dt", pa.date32()), ("v", pa.int64()),
])


def _with_nulls(rng: np.random.Generator, values: np.ndarray, share: float,
                arrow_type: pa.DataType) -> pa.Array:
    return pa.array(values, type=arrow_type, mask=rng.random(len(values)) < share)


def _decimals(cents: np.ndarray, null: np.ndarray) -> pa.Array:
    """decimal(12, 2) values ``cents / 100``, built from their 128-bit two's complement
    words (low word, sign-extended high word) without a per-value Python object."""
    words = np.column_stack([cents, cents >> 63]).astype(np.int64)
    valid = pa.array(~null).buffers()[1]
    return pa.Array.from_buffers(pa.decimal128(12, 2), len(cents),
                                 [valid, pa.py_buffer(words.tobytes())])


def _vocabulary(rng: np.random.Generator) -> np.ndarray:
    letters = np.array(list(string.ascii_letters + string.digits))
    lengths = rng.integers(0, 25, WORDS)
    words = {"".join(rng.choice(letters, size=n)) for n in lengths}
    return np.array(sorted(words), dtype=object)


def random_table(rng: np.random.Generator, name: str, vocabulary: np.ndarray) -> pa.Table:
    """One table of :data:`SCHEMA` with ``TABLE_ROWS[name]`` rows drawn from ``rng``."""
    n = TABLE_ROWS[name]
    keys = rng.integers(0, KEY_RANGE, n)
    keys[rng.random(n) < HOT_SHARE[name]] = HOT_KEY
    # weights 1 / (rank + 20): a long tail with no word above about 1 % of the rows
    weights = 1.0 / (np.arange(len(vocabulary)) + 20.0)
    words = rng.choice(vocabulary, size=n, p=weights / weights.sum())
    cents = rng.integers(-10_000_000, 10_000_001, n)
    days = rng.integers(9131, 9131 + 5 * 365 + 1, n)  # 1995-01-01 + up to 5 years
    columns = [
        pa.array(rng.permutation(n), pa.int64()),
        _with_nulls(rng, keys, 0.05, pa.int64()),
        _with_nulls(rng, rng.integers(0, GROUPS, n), 0.04, pa.int32()),
        _with_nulls(rng, words, 0.05, pa.string()),
        _decimals(cents, rng.random(n) < 0.03),
        _with_nulls(rng, days.astype(np.int32), 0.03, pa.date32()),
        _with_nulls(rng, rng.integers(-1000, 1001, n), 0.02, pa.int64()),
    ]
    return pa.Table.from_arrays(columns, schema=SCHEMA)


def write_tables(seed: int, directory: Path) -> dict[str, Path]:
    """Write every table for ``seed`` as ``directory/<name>.parquet``; name -> path."""
    rng = np.random.default_rng(seed)
    vocabulary = _vocabulary(rng)
    paths = {}
    for name in TABLE_ROWS:
        path = directory / f"{name}.parquet"
        pq.write_table(random_table(rng, name, vocabulary), path, row_group_size=ROW_GROUP_ROWS)
        paths[name] = path
    return paths
