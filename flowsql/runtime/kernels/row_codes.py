"""Dense ids of rows of several integer code columns, in lexicographic order.

``lexicographic_ids(codes)`` is exactly ``np.unique(np.stack(codes), axis=1,
return_inverse=True)[1]``: row ``i`` gets the rank of the tuple ``(codes[0][i],
codes[1][i], ...)`` among the distinct tuples, tuples ordered column by column. That numpy
call sorts the rows as structured records, which is several times slower than sorting one
int64 column; here the columns are folded into one int64 by mixed radix (each column's
codes are non-negative, so ``id * width + code`` keeps the lexicographic order), re-ranked
to dense ids whenever the next fold could overflow, and one 1-D ``np.unique`` ranks the
result. Callers give codes from ``dictionary_encode`` (dense, non-negative).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: the folded id stays below this, far from int64 overflow
_LIMIT = 1 << 62


def lexicographic_ids(codes: Sequence[np.ndarray]) -> np.ndarray:
    """Dense int64 id per row of the non-negative integer ``codes`` columns (equal
    lengths, at least one), ids ordered as the rows' tuples are (see the module
    docstring)."""
    ids = np.asarray(codes[0], np.int64)
    if not len(ids):
        return np.empty(0, np.int64)
    if np.any(ids < 0):
        raise ValueError("lexicographic_ids: codes must be non-negative")
    top = int(ids.max())
    for column in codes[1:]:
        column = np.asarray(column, np.int64)
        if np.any(column < 0):
            raise ValueError("lexicographic_ids: codes must be non-negative")
        width = int(column.max()) + 1
        if (top + 1) * width >= _LIMIT:
            _, ids = np.unique(ids, return_inverse=True)
            ids = np.asarray(ids, np.int64).reshape(-1)
            top = int(ids.max())
            if (top + 1) * width >= _LIMIT:
                _, column = np.unique(column, return_inverse=True)
                column = np.asarray(column, np.int64).reshape(-1)
                width = int(column.max()) + 1
        ids = ids * width + column
        top = top * width + width - 1
    _, dense = np.unique(ids, return_inverse=True)
    return np.asarray(dense, np.int64).reshape(-1)
