"""The hash join's key index finds exactly the pairs of equal, non-NULL keys, whichever
lookup it chooses (direct table, bucket directory, binary search) and however the codes are
spread: compared with a dictionary of the build keys built row by row."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow as pa
import pytest

from flowsql.runtime.operators.join.key_index import KeyIndex


def _expected(build: list[pa.Array], probe: list[pa.Array]) -> list[tuple[int, int]]:
    rows: dict[tuple[object, ...], list[int]] = defaultdict(list)
    for i, key in enumerate(zip(*(k.to_pylist() for k in build))):
        if None not in key:
            rows[key].append(i)
    return sorted((i, j) for i, key in enumerate(zip(*(k.to_pylist() for k in probe)))
                  if None not in key for j in rows.get(key, ()))


def _pairs(build: list[pa.Array], probe: list[pa.Array]) -> tuple[KeyIndex, list]:
    index = KeyIndex(build, len(build[0]))
    pid, bid = index.probe(probe)
    return index, sorted(zip(pid.tolist(), bid.tolist()))


def _composite(rng: np.random.Generator, n: int) -> tuple[list[pa.Array], list[pa.Array]]:
    """Two integer keys of wide ranges: packed codes too sparse for a direct table."""
    a, b = rng.integers(0, 10**6, n), rng.integers(-10**6, 10**6, n)
    pa_, pb = rng.integers(0, 10**6, n), rng.integers(-10**6, 10**6, n)
    return ([pa.array(a), pa.array(b)],
            [pa.array(np.concatenate([a[: n // 2], pa_])),
             pa.array(np.concatenate([b[: n // 2], pb]))])


def _strings(rng: np.random.Generator, n: int) -> tuple[list[pa.Array], list[pa.Array]]:
    """Hashed codes (spread over the whole int64 range), duplicates and a NULL."""
    return ([pa.array([f"s{v}" for v in rng.integers(0, n // 4 + 1, n)])],
            [pa.array([f"s{v}" for v in rng.integers(0, n // 3 + 1, n)] + [None])])


def _outlier(rng: np.random.Generator, n: int) -> tuple[list[pa.Array], list[pa.Array]]:
    """Dense small keys and one huge one: too crowded for buckets, binary search."""
    values = rng.integers(0, 1000, n)
    values[0] = 10**15
    return ([pa.array(values)],
            [pa.array(np.concatenate([values[:5], rng.integers(-5, 1000, n),
                                      [10**15, -10**15]]))])


def _wide(rng: np.random.Generator, n: int) -> tuple[list[pa.Array], list[pa.Array]]:
    """Keys near both ends of int64 (offsets wrap), duplicates, NULLs on the build side."""
    pool = rng.integers(-2**62, 2**62, max(1, n // 3))
    extremes = np.array([-2**63, 2**63 - 1, -2**63 + 1, 2**63 - 2], dtype=np.int64)
    values = np.concatenate([rng.choice(pool, n), extremes[:2]])
    return ([pa.array(values, mask=rng.random(len(values)) < 0.1)],
            [pa.array(np.concatenate([rng.choice(pool, n), extremes,
                                      rng.integers(-2**63, 2**63 - 1, 50)]))])


@pytest.mark.parametrize("shape", [_composite, _strings, _outlier, _wide])
@pytest.mark.parametrize("rows", [1, 7, 500, 5000])
def test_pairs_are_exactly_the_equal_keys(shape, rows: int) -> None:
    rng = np.random.default_rng(rows)
    build, probe = shape(rng, rows)
    _, pairs = _pairs(build, probe)
    assert pairs == _expected(build, probe)


def test_lookups_cover_bucket_directory_and_binary_search() -> None:
    """The shapes above reach both lookups for a large build side (the test would prove
    nothing about the directory if every case fell back to the binary search)."""
    rng = np.random.default_rng(3)
    spread, _ = _pairs(*_composite(rng, 5000))
    crowded, _ = _pairs(*_outlier(rng, 5000))
    assert spread.uses_buckets and not crowded.uses_buckets
