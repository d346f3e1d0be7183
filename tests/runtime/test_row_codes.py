"""``lexicographic_ids`` against the numpy call it replaces, on random code columns of
every width (folds that fit, folds that must be re-ranked, columns that must be ranked
themselves), and on hand-checked rows."""

from __future__ import annotations

import numpy as np
import pytest

from flowsql.runtime.kernels.row_codes import lexicographic_ids


def test_hand_checked_rows() -> None:
    codes = [np.array([1, 0, 1, 0, 1]), np.array([0, 5, 0, 2, 3])]
    # distinct tuples in order: (0, 2), (0, 5), (1, 0), (1, 3)
    assert lexicographic_ids(codes).tolist() == [2, 1, 2, 0, 3]


@pytest.mark.parametrize("seed", range(20))
def test_equals_numpy_unique_over_rows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(20):
        rows = int(rng.integers(1, 200))
        columns = int(rng.integers(1, 5))
        codes = [rng.integers(0, int(rng.choice([1, 3, 1000, 2**40, 2**62])), rows)
                 for _ in range(columns)]
        expected = np.unique(np.stack(codes), axis=1, return_inverse=True)[1].reshape(-1)
        got = lexicographic_ids(codes)
        assert got.dtype == np.int64
        assert got.tolist() == expected.tolist()


def test_no_rows_and_negative_codes() -> None:
    assert lexicographic_ids([np.array([], np.int64)] * 2).tolist() == []
    with pytest.raises(ValueError):
        lexicographic_ids([np.array([0, 1]), np.array([-1, 0])])
