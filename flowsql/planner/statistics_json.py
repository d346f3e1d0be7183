"""TableStatistics as JSON, so a catalog entry's statistics can be written out and read back.

The JSON form is a plain object whose keys are the dataclass fields; unknown figures are
``null`` and histograms are lists. ``statistics_from_json(statistics_to_json(s)) == s`` for
every :class:`TableStatistics` (floats survive because JSON numbers are written with
``repr``-exact precision). A ``"version"`` key lets a later layout read an older file.
"""

from __future__ import annotations

import json
from typing import Any

from flowsql.planner.statistics import ColumnStatistics, TableStatistics

__all__ = ["statistics_from_json", "statistics_to_json"]

#: the layout written by :func:`statistics_to_json`
JSON_VERSION = 1


def statistics_to_json(statistics: TableStatistics) -> str:
    """``statistics`` as a JSON text (keys sorted, so equal statistics give equal texts)."""
    document: dict[str, Any] = {
        "version": JSON_VERSION,
        "row_count": statistics.row_count,
        "total_bytes": statistics.total_bytes,
        "distinct_bounds": dict(statistics.distinct_bounds),
        "origin": statistics.origin,
        "fingerprint": statistics.fingerprint,
        "columns": {name: _column_document(column)
                    for name, column in statistics.columns.items()},
    }
    return json.dumps(document, sort_keys=True, allow_nan=False)


def statistics_from_json(text: str) -> TableStatistics:
    """The statistics :func:`statistics_to_json` wrote; a ValueError for a text of another
    layout version or shape."""
    document = json.loads(text)
    if not isinstance(document, dict) or document.get("version") != JSON_VERSION:
        raise ValueError(f"not table statistics of layout version {JSON_VERSION}")
    columns = {str(name): _column_statistics(column)
               for name, column in (document.get("columns") or {}).items()}
    return TableStatistics(
        row_count=_optional_int(document.get("row_count")),
        total_bytes=_optional_int(document.get("total_bytes")),
        distinct_bounds={str(k): int(v)
                         for k, v in (document.get("distinct_bounds") or {}).items()},
        columns=columns,
        origin=str(document.get("origin", "none")),
        fingerprint=str(document.get("fingerprint", "")),
    )


def _column_document(column: ColumnStatistics) -> dict[str, Any]:
    return {"null_count": column.null_count, "distinct_count": column.distinct_count,
            "min_value": column.min_value, "max_value": column.max_value,
            "histogram": list(column.histogram), "avg_width": column.avg_width}


def _column_statistics(document: dict[str, Any]) -> ColumnStatistics:
    return ColumnStatistics(
        null_count=_optional_int(document.get("null_count")),
        distinct_count=_optional_int(document.get("distinct_count")),
        min_value=_optional_float(document.get("min_value")),
        max_value=_optional_float(document.get("max_value")),
        histogram=tuple(float(b) for b in document.get("histogram") or ()),
        avg_width=_optional_float(document.get("avg_width")),
    )


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)
