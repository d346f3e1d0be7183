"""The Flink differential corpus without Flink: its tables, its queries, how results are
normalized and stored, and how flowsql runs them.

Shared by ``tests/flink/test_flink_fixtures.py`` (flowsql against the stored Flink results)
and ``benchmarks/flink_diff.py`` (which runs Flink and writes those results).

* Tables: ``TABLES`` declares, over the CSV files in ``data/``, ``orders``, ``bids`` and
  ``clicks`` (out-of-order and late rows) with a 2-second watermark delay, the same files
  as ``<table>_w0`` / ``<table>_w5`` (0 and 5 seconds), and ``<table>_ok`` (never late).
  An empty field is NULL (``csv.null-literal`` is the empty string; the data has no
  empty strings). Both engines run with per-record watermarks (``pipeline.auto-watermark-interval`` 0),
  so which rows are late does not depend on timing.
* Queries: ``queries/*.sql`` hold named queries, each introduced by ``-- name: <id>``.
* Results: a query's final result is its changelog applied (``+I``/``+U`` add a row,
  ``-U``/``-D`` remove one), compared as a multiset of normalized rows: every value
  becomes a string, NULL is ``NULL``, floating-point and decimal values are rounded to
  ``FLOAT_DIGITS`` decimals without trailing zeros, timestamps are
  ``yyyy-MM-dd HH:mm:ss.SSS``.
* Fixtures: ``expected/<id>_p1.csv.gz`` holds Flink's result at parallelism 1 (gzipped
  CSV: a header of column names, then the rows, sorted; ``zcat`` shows it);
  ``expected/<id>_p2.csv.gz`` exists only where
  Flink's result at parallelism 2 differs from it. ``nondeterministic.txt`` lists the
  queries whose Flink results differed between repeated runs (they have no fixture;
  nor have the queries ``depends_on_timing`` at parallelism 2);
  ``known_differences.txt`` lists ``<id>_p<P>`` keys on which flowsql is known to differ,
  each with its reason.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import gzip
import io
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
QUERIES = HERE / "queries"
EXPECTED = HERE / "expected"
KNOWN_DIFFERENCES = HERE / "known_differences.txt"
NONDETERMINISTIC = HERE / "nondeterministic.txt"
PARALLELISMS = (1, 2)
FLOAT_DIGITS = 6

#: settings both engines run with (Flink's names; flowsql accepts the same keys)
SETTINGS = {"pipeline.auto-watermark-interval": "0"}

_COLUMNS = {
    "orders": "order_id BIGINT, user_id STRING, product STRING, amount DOUBLE, qty INT",
    "bids": "bid_id BIGINT, item STRING, user_id STRING, price BIGINT",
    "clicks": "user_id STRING, url STRING, dur INT",
}
#: table name -> (file stem, watermark delay in seconds)
_TABLES = {
    **{base: (base, 2) for base in _COLUMNS},
    **{f"{base}_w0": (base, 0) for base in _COLUMNS},
    **{f"{base}_w5": (base, 5) for base in _COLUMNS},
    **{f"{base}_ok": (f"{base}_ok", 2) for base in _COLUMNS},
}

Row = tuple[str, ...]
Result = Counter[Row]


def table_ddl(data: Path = DATA) -> list[str]:
    """The CREATE TABLE statements of every corpus table, in both engines' dialect."""
    statements = []
    for name, (stem, delay) in _TABLES.items():
        base = stem.removesuffix("_ok")
        statements.append(
            f"CREATE TABLE {name} ({_COLUMNS[base]}, ts TIMESTAMP(3), "
            f"WATERMARK FOR ts AS ts - INTERVAL '{delay}' SECOND) WITH ("
            f"'connector' = 'filesystem', 'path' = '{data / (stem + '.csv')}', "
            "'format' = 'csv', 'csv.null-literal' = '')")
    return statements


#: tables with late rows, and the SQL that makes a result depend on which rows are late
_LATE_TABLES = re.compile(r"\b(?:orders|bids|clicks)(?:_w0|_w5)?\b(?!_ok)", re.IGNORECASE)
_EVENT_TIME = re.compile(r"DESCRIPTOR\s*\(|\bROWS\s+BETWEEN\b|\bRANGE\s+BETWEEN\b|"
                         r"\bts\s+BETWEEN\b", re.IGNORECASE)
#: rowtime deduplication keeping the first row, which drops rows behind the watermark
_KEEP_FIRST = re.compile(r"ROW_NUMBER\(\)\s+OVER\s*\([^)]*ORDER\s+BY\s+ts(?:\s+ASC)?\s*\)"
                         r"[\s\S]*\brn\s*=\s*1\b", re.IGNORECASE)


def depends_on_timing(sql: str, parallelism: int) -> bool:
    """Whether the query's result depends on timing at ``parallelism`` in both engines:
    at parallelism > 1 an event-time operator (window, OVER frame, interval join,
    deduplication keeping the first row) over a table with late rows. Each table is one file, read by one of the two source subtasks;
    the other has nothing to read, and until its end of input reaches the keyed operator
    it holds that operator's watermark back, so how many rows are late depends on when
    it finishes (in Flink as in flowsql)."""
    return parallelism > 1 and bool(_LATE_TABLES.search(sql)) and bool(
        _EVENT_TIME.search(sql) or _KEEP_FIRST.search(sql))


_NAME = re.compile(r"--\s*name:\s*(\S+)\s*$")


def parse_queries(text: str, source: str = "") -> list[tuple[str, str]]:
    """(id, sql) pairs of a named-query file, in file order."""
    queries: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        match = _NAME.match(line.strip())
        if match:
            queries.append((match.group(1), []))
        elif line.strip().startswith("--") or not line.strip():
            continue
        elif not queries:
            raise ValueError(f"{source}: SQL before the first '-- name:' line")
        else:
            queries[-1][1].append(line)
    return [(name, "\n".join(body).strip().rstrip(";").strip()) for name, body in queries]


def load_corpus() -> list[tuple[str, str]]:
    """Every corpus query, hand-written first; ids are unique across files."""
    paths = sorted(QUERIES.glob("*.sql"), key=lambda p: (p.name != "handwritten.sql", p.name))
    queries = [q for path in paths for q in parse_queries(path.read_text("utf-8"), path.name)]
    ids = [qid for qid, _ in queries]
    duplicates = sorted({qid for qid in ids if ids.count(qid) > 1})
    if duplicates:
        raise ValueError(f"duplicate query ids {duplicates}")
    return queries


# --- normalization -------------------------------------------------------------------

def normal_float(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    text = f"{round(value, FLOAT_DIGITS):.{FLOAT_DIGITS}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def normal_timestamp(value: dt.datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"


def normal_python(value: Any) -> str:
    """A flowsql (Arrow to Python) value as its normalized string."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float | decimal.Decimal):
        return normal_float(float(value))
    if isinstance(value, dt.datetime):
        return normal_timestamp(value)
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value)


_FLINK_TIMESTAMP = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?Z?$")


def normal_flink(text: str, kind: str) -> str:
    """A value as Flink's print sink writes it (``kind`` is the column's SQL type) as its
    normalized string."""
    if text == "null":
        return "NULL"
    base = kind.split("(")[0].split()[0].upper()
    if base in ("FLOAT", "DOUBLE", "DECIMAL", "REAL"):
        return normal_float(float(text))
    if base == "BOOLEAN":
        return text.lower()
    if base.startswith("TIMESTAMP"):
        match = _FLINK_TIMESTAMP.match(text)
        if not match:
            return text
        day, hour, minute, second, fraction = match.groups()
        millis = (fraction or "0").ljust(3, "0")[:3]
        return f"{day} {hour}:{minute}:{second or '00'}.{millis}"
    return text


# --- results and fixtures ------------------------------------------------------------

def sorted_rows(result: Result) -> list[Row]:
    """The multiset as a sorted row list (negative counts are an error of the caller)."""
    rows: list[Row] = []
    for row, count in sorted(result.items()):
        if count < 0:
            raise ValueError(f"changelog removes a row it never added: {row}")
        rows.extend([row] * count)
    return rows


def fixture_path(qid: str, parallelism: int) -> Path:
    return EXPECTED / f"{qid}_p{parallelism}.csv.gz"


def write_fixture(path: Path, columns: list[str], rows: list[Row]) -> None:
    """A gzipped CSV (a fixed gzip header, so the same rows give the same bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", filename="",
                                               mtime=0) as packed:
        packed.write(text.getvalue().encode("utf-8"))


def read_fixture(path: Path) -> tuple[list[str], Result]:
    with gzip.open(path, "rt", newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        columns = next(reader)
        return columns, Counter(tuple(row) for row in reader)


def expected(qid: str, parallelism: int) -> Path | None:
    """The fixture for ``qid`` at ``parallelism``: its own, else the p1 one (p2 fixtures
    are stored only where they differ), or None when the query has none."""
    own = fixture_path(qid, parallelism)
    if own.exists():
        return own
    shared = fixture_path(qid, 1)
    return shared if shared.exists() else None


def read_listing(path: Path) -> dict[str, str]:
    """``key  reason`` lines (``#`` starts a comment line) as a dict."""
    listing: dict[str, str] = {}
    if not path.exists():
        return listing
    for line in path.read_text("utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, _, reason = line.strip().partition(" ")
        if key in listing:
            raise ValueError(f"{path.name}: {key} listed twice")
        listing[key] = reason.strip()
    return listing


def describe_difference(expected_rows: Result, actual: Result, limit: int = 6) -> str:
    """Rows only Flink has and rows only flowsql has, a few of each."""
    missing = sorted((expected_rows - actual).elements())
    extra = sorted((actual - expected_rows).elements())
    parts = [f"{len(missing)} rows only in Flink, {len(extra)} only in flowsql"]
    parts += [f"  flink:   {', '.join(r)}" for r in missing[:limit]]
    parts += [f"  flowsql: {', '.join(r)}" for r in extra[:limit]]
    return "\n".join(parts)


# --- flowsql ---------------------------------------------------------------------------

class FlowsqlRunner:
    """One streaming flowsql session at a parallelism with the corpus tables declared;
    ``run`` gives a query's final result (the changelog applied) or raises its error."""

    def __init__(self, parallelism: int, data: Path = DATA) -> None:
        import flowsql

        self.session = flowsql.connect(**{"execution.runtime-mode": "streaming",
                                          "parallelism.default": parallelism, **SETTINGS})
        for ddl in table_ddl(data):
            self.session.sql(ddl)

    def run(self, sql: str) -> tuple[list[str], Result]:
        table = self.session.sql(sql).to_arrow()
        columns = table.column_names
        values = [table.column(i).to_pylist() for i in range(table.num_columns)]
        rows = [tuple(normal_python(v) for v in row) for row in zip(*values)]
        if not columns:
            rows = [() for _ in range(table.num_rows)]
        return columns, Counter(rows)

    def close(self) -> None:
        self.session.close()
