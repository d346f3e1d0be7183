"""``flowsql nexmark run --verify``: each query's final result in flowsql compared with
Apache Flink's over the same generated events.

Flink runs in its own virtual environment, ``.venv-flink`` in the project root (PyFlink
``apache-flink==FLINK_VERSION``; created when missing), as ``benchmarks/nexmark_flink_job.py``
under that environment's interpreter: flowsql never imports pyflink. Both engines run in
streaming mode at the same parallelism over the events ``flowsql nexmark gen`` wrote:

- flowsql reads the Parquet files (``tables.file_ddl``); Flink reads CSV copies of them
  written here (:func:`write_flink_files`): PyFlink's distribution has the CSV and JSON
  formats but no Parquet format jar (``pyflink/lib``), and nothing may be downloaded at run
  time. CSV is the cheaper of the two to parse, and the events hold no value CSV cannot
  carry (no NULLs; strings are quoted).
- Both tables have the same columns and the same watermark, ``dateTime`` minus 4 seconds.
  The files are bounded: at their end the watermark goes to +infinity in both engines, so
  every window closes and the final results are complete.
- A query's final result is its changelog applied (``+I``/``+U`` add a row, ``-U``/``-D``
  remove one), compared as a multiset of normalized rows (:func:`normal`: floating-point
  and decimal values rounded to 6 decimals, timestamps to milliseconds).

Where the two engines may rightly differ the comparison is narrowed, each for a stated
reason (:data:`NOT_COMPARED`, :data:`COMPARED_COLUMNS`, :data:`FLINK_FORMS`).
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import gzip
import io
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv
import pyarrow.parquet as pq

import flowsql
from flowsql.nexmark.generator import KINDS, GeneratorConfig
from flowsql.nexmark.queries import QUERIES, SIDE_INPUT_COLUMNS
from flowsql.nexmark.tables import file_ddl

FLINK_VERSION = "2.3.0"
ROOT = Path(flowsql.__file__).resolve().parent.parent
FLINK_VENV = ROOT / ".venv-flink"
FLINK_JOB = ROOT / "benchmarks" / "nexmark_flink_job.py"
FLOAT_DIGITS = 6

#: queries whose results are not compared, and why
NOT_COMPARED = {
    "q12": "processing-time windows: which window a bid lands in depends on when it is "
           "read, in Flink as in flowsql",
}

#: queries whose rows are compared on some columns only: those the query's ranking
#: determines (the rest come from whichever of several tied rows an engine keeps)
COMPARED_COLUMNS = {
    # ROW_NUMBER by price DESC, dateTime ASC: two bids of an auction at the same price and
    # millisecond are tied
    "q9": ["id", "price", "bid_dateTime"],
    # the last bid per (bidder, auction) by dateTime: bids in the same millisecond are tied
    "q18": ["auction", "bidder", "dateTime"],
    # the 10 highest bids per auction: bids at the same price are tied
    "q19": ["auction", "price", "rank_number"],
}

#: the Flink text of a query where it differs from ours, and why
FLINK_FORMS = {
    # q13 looks bids up in the bounded side input by processing time. Flink 2's filesystem
    # connector is no lookup source (the suite read its side input through the legacy CSV
    # source, which Flink 2 removed), so Flink plans FOR SYSTEM_TIME AS OF over it as an
    # event-versioned temporal join and rejects it (no primary key). The side input never
    # changes while the query runs, so the lookup join equals the regular join, which is
    # how flowsql plans it too.
    "q13": (QUERIES["q13"].replace("(SELECT *, PROCTIME() AS p_time FROM bid)", "bid")
            .replace(" FOR SYSTEM_TIME AS OF B.p_time", "")),
    # q14's count_char is a user-defined function; in Flink the same count as built-ins
    # (a Python UDF would need PyFlink's Python worker in the job)
    "q14": (QUERIES["q14"].replace(
        "count_char(extra, 'c')",
        "CHAR_LENGTH(extra) - CHAR_LENGTH(REPLACE(extra, 'c', ''))")),
}

#: queries whose result differs from Flink's by a known difference of the engines, the
#: column it shows in and why; the verdict is ``known difference`` when the results are
#: equal once that column of flowsql's rows is truncated to an integer as Flink computes it
KNOWN_DIFFERENCES = {
    "q4": ("avg_final", "AVG of a BIGINT column: Flink's result is a BIGINT (the average "
                        "truncated), flowsql's a DOUBLE"),
    "q17": ("avg_price", "AVG of a BIGINT column: Flink's result is a BIGINT (the average "
                         "truncated), flowsql's a DOUBLE"),
}

#: queries whose Flink changelog is an upsert stream on these columns: Flink's Top-1
#: without the rank column sends the collecting sink a new row for a key as +U with no
#: -U of the row it replaces
UPSERT_KEYS = {"q9": ("id",)}

Row = tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    """One engine's outcome for a query: its final rows (with the column names), or the
    error that stopped it."""

    columns: tuple[str, ...] = ()
    rows: Counter[Row] | None = None
    error: str | None = None


@dataclass(frozen=True)
class Verdict:
    """``status`` is ``match``, ``known difference`` (:data:`KNOWN_DIFFERENCES`),
    ``differs``, ``not compared`` (:data:`NOT_COMPARED`), ``both reject`` (both engines
    refuse the query), ``flowsql error`` or ``flink error``; ``detail`` says how or why.
    The first four and ``both reject`` pass."""

    query: str
    status: str
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.status in ("differs", "flowsql error", "flink error")


# --- values --------------------------------------------------------------------------

def _truncated(text: str) -> str:
    return text if text == "NULL" else str(int(decimal.Decimal(text)))


def _normal_float(value: float) -> str:
    text = f"{round(value, FLOAT_DIGITS):.{FLOAT_DIGITS}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def normal(value: Any, kind: str | None = None) -> str:
    """A value as its normalized string; ``kind`` is Flink's logical type of a value
    that Flink's job sent as text (a DECIMAL or TIMESTAMP)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float | decimal.Decimal):
        return _normal_float(float(value))
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    if kind is not None and kind.upper().startswith(("DECIMAL", "DOUBLE", "FLOAT")):
        return _normal_float(float(value))
    return str(value)


def applied(changes: Iterable[tuple[str, Row]], upsert_key: list[int] | None = None
            ) -> Counter[Row]:
    """The final rows of a changelog; raises ValueError when it removes a row it never
    added. With ``upsert_key`` (column positions) the changelog is an upsert stream: a row
    replaces the one with its key, ``-D`` removes the key's row."""
    if upsert_key is not None:
        by_key: dict[Row, Row] = {}
        for kind, row in changes:
            key = tuple(row[i] for i in upsert_key)
            if kind in ("+I", "+U"):
                by_key[key] = row
            elif by_key.pop(key, None) is None:
                raise ValueError(f"the changelog removes a key it never added: {key}")
        return Counter(by_key.values())
    rows: Counter[Row] = Counter()
    for kind, row in changes:
        rows[row] += 1 if kind in ("+I", "+U") else -1
        if rows[row] < 0:
            raise ValueError(f"the changelog removes a row it never added: {row}")
    return +rows


def narrowed(query: str, outcome: Outcome, truncate: str | None = None) -> Counter[Row]:
    """The outcome's rows on the columns :data:`COMPARED_COLUMNS` names for ``query``;
    the column ``truncate`` (a number) truncated toward zero to an integer."""
    rows = outcome.rows
    assert rows is not None
    if truncate is not None:
        at = outcome.columns.index(truncate)
        truncated: Counter[Row] = Counter()
        for row, count in rows.items():
            truncated[(*row[:at], _truncated(row[at]), *row[at + 1:])] += count
        rows = truncated
    wanted = COMPARED_COLUMNS.get(query)
    if wanted is None:
        return rows
    index = [outcome.columns.index(name) for name in wanted]
    result: Counter[Row] = Counter()
    for row, count in rows.items():
        result[tuple(row[i] for i in index)] += count
    return result


# --- the files and tables ------------------------------------------------------------

def write_flink_files(parquet_dir: str | Path, out: str | Path) -> None:
    """CSV copies of ``gen``'s Parquet tables (``out/<kind>/part-0.csv``, no header,
    timestamps as ``yyyy-MM-dd HH:mm:ss.SSS``, which Flink's CSV format reads)."""
    for kind in KINDS:
        table = pq.read_table(Path(parquet_dir) / kind)
        columns = [pc.strftime(column, "%Y-%m-%d %H:%M:%S")
                   if pa.types.is_timestamp(column.type) else column
                   for column in table.columns]
        directory = Path(out) / kind
        directory.mkdir(parents=True, exist_ok=True)
        pyarrow.csv.write_csv(pa.table(columns, names=table.column_names),
                              directory / "part-0.csv",
                              pyarrow.csv.WriteOptions(include_header=False))


def flink_tables(csv_dir: str | Path, side_input_csv: str | Path) -> list[str]:
    """Flink's DDL of person/auction/bid over ``csv_dir`` and of q13's side input."""
    return [*file_ddl(str(csv_dir), "csv"),
            f"CREATE TABLE side_input ({SIDE_INPUT_COLUMNS}) WITH ('connector' = "
            f"'filesystem', 'path' = '{side_input_csv}', 'format' = 'csv')"]


def flink_text(query: str) -> str:
    return FLINK_FORMS.get(query, QUERIES[query])


# --- Flink ---------------------------------------------------------------------------

def flink_python() -> Path:
    return FLINK_VENV / "bin" / "python"


def ensure_flink(python: str = sys.executable) -> None:
    """Creates ``.venv-flink`` with apache-flink==FLINK_VERSION unless it is there (the
    same environment ``benchmarks/flink_baseline.py`` uses)."""
    probe = subprocess.run(
        [str(flink_python()), "-c", "from pyflink.version import __version__ as v; print(v)"],
        capture_output=True, text=True, check=False) if flink_python().exists() else None
    if probe is not None and probe.stdout.strip() == FLINK_VERSION:
        return
    if not flink_python().exists():
        print(f"creating {FLINK_VENV} ...", file=sys.stderr)
        subprocess.run([python, "-m", "venv", str(FLINK_VENV)], check=True)
    print(f"installing apache-flink=={FLINK_VERSION} into {FLINK_VENV} ...", file=sys.stderr)
    pip = [str(flink_python()), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, f"apache-flink=={FLINK_VERSION}"], check=True)


def run_flink_job(spec: dict[str, Any], timeout: float | None = None
                  ) -> subprocess.CompletedProcess[str]:
    """``benchmarks/nexmark_flink_job.py`` on ``spec`` under ``.venv-flink``'s python; its
    standard error (Flink's progress) passes through."""
    return subprocess.run([str(flink_python()), str(FLINK_JOB)], input=json.dumps(spec),
                          stdout=subprocess.PIPE, text=True, check=False, timeout=timeout,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": ""})


def flink_outcomes(queries: list[str], parallelism: int, tables: list[str],
                   timeout: float | None = None) -> dict[str, Outcome]:
    """Each query's outcome in Flink (one JVM runs them all, a job per query)."""
    spec = {"mode": "verify", "parallelism": parallelism, "tables": tables,
            "queries": [[q, flink_text(q)] for q in queries]}
    done = run_flink_job(spec, timeout)
    outcomes: dict[str, Outcome] = {}
    for line in done.stdout.splitlines():
        if line.startswith("@@RESULT "):
            entry = json.loads(line[len("@@RESULT "):])
            outcomes[entry["query"]] = _flink_outcome(entry)
    for query in queries:
        outcomes.setdefault(query, Outcome(error=f"the Flink job ended ({done.returncode}) "
                                                 "before this query"))
    return outcomes


def _flink_outcome(entry: dict[str, Any]) -> Outcome:
    if entry["error"] is not None:
        return Outcome(error=entry["error"])
    types, columns = entry["types"], entry["columns"]
    key = UPSERT_KEYS.get(entry["query"])
    try:
        rows = applied(((kind, tuple(normal(v, t) for v, t in zip(values, types, strict=True)))
                        for kind, values in entry["changes"]),
                       [columns.index(c) for c in key] if key is not None else None)
    except ValueError as e:
        return Outcome(error=str(e))
    return Outcome(tuple(entry["columns"]), rows)


# --- flowsql -------------------------------------------------------------------------

def flowsql_outcome(session: flowsql.Session, query: str) -> Outcome:
    """The query's final rows in ``session`` (streaming: the changelog applied)."""
    try:
        table = session.sql(QUERIES[query]).to_arrow()
    except Exception as e:  # noqa: BLE001 - any failure is an outcome
        first = str(e).strip().splitlines()[0] if str(e).strip() else repr(e)
        return Outcome(error=f"{type(e).__name__}: {first}")
    rows = Counter(tuple(normal(v) for v in row.values()) for row in table.to_pylist())
    return Outcome(tuple(table.schema.names), rows)


# --- the comparison ------------------------------------------------------------------

def verdict(query: str, ours: Outcome, flink: Outcome) -> Verdict:
    """The verdict on one query's two outcomes."""
    if query in NOT_COMPARED:
        return Verdict(query, "not compared", NOT_COMPARED[query])
    if ours.error is not None and flink.error is not None:
        return Verdict(query, "both reject", f"flowsql: {ours.error} | Flink: {flink.error}")
    if ours.error is not None:
        return Verdict(query, "flowsql error", ours.error)
    if flink.error is not None:
        return Verdict(query, "flink error", flink.error)
    assert ours.rows is not None and flink.rows is not None
    if ours.columns != flink.columns:
        return Verdict(query, "differs", f"columns {list(ours.columns)} vs Flink's "
                                         f"{list(flink.columns)}")
    mine, theirs = narrowed(query, ours), narrowed(query, flink)
    rows = sum(theirs.values())
    narrowed_to = (f" (compared on {', '.join(COMPARED_COLUMNS[query])})"
                   if query in COMPARED_COLUMNS else "")
    if mine == theirs:
        return Verdict(query, "match", f"{rows} rows{narrowed_to}")
    if query in KNOWN_DIFFERENCES:
        column, reason = KNOWN_DIFFERENCES[query]
        if narrowed(query, ours, truncate=column) == theirs:
            return Verdict(query, "known difference",
                           f"{rows} rows equal with flowsql's {column} truncated: {reason}")
    return Verdict(query, "differs", describe_difference(theirs, mine) + narrowed_to)


def describe_difference(flink: Counter[Row], ours: Counter[Row]) -> str:
    missing, extra = flink - ours, ours - flink
    parts = [f"Flink {sum(flink.values())} rows, flowsql {sum(ours.values())}"]
    if missing:
        parts.append(f"{sum(missing.values())} only in Flink, e.g. {min(missing)}")
    if extra:
        parts.append(f"{sum(extra.values())} only in flowsql, e.g. {min(extra)}")
    return "; ".join(parts)


@dataclass(frozen=True)
class Report:
    """The verdicts, and Flink's outcomes (for :func:`write_fixtures`)."""

    verdicts: list[Verdict]
    flink: dict[str, Outcome]


def verify(queries: list[str], config: GeneratorConfig, parallelism: int = 1,
           data_dir: str | None = None, timeout: float | None = None) -> Report:
    """Runs ``queries`` in Flink and in flowsql at ``parallelism`` over ``data_dir``'s
    files (``config``'s events, generated into a temporary directory when None)."""
    from flowsql.nexmark.generate import generate_files
    from flowsql.nexmark.runner import open_session

    ensure_flink()
    compared = [q for q in queries if q not in NOT_COMPARED]
    with tempfile.TemporaryDirectory(prefix="nexmark-verify-") as scratch:
        if data_dir is None:
            data_dir = os.path.join(scratch, "parquet")
            generate_files(config, data_dir)
        csv_dir = os.path.join(scratch, "csv")
        write_flink_files(data_dir, csv_dir)
        session = open_session(config, parallelism, data_dir, side_input_dir=scratch)
        try:
            ours = {query: flowsql_outcome(session, query) for query in compared}
        finally:
            session.close()
        tables = flink_tables(csv_dir, os.path.join(scratch, "side_input.csv"))
        flink = flink_outcomes(compared, parallelism, tables, timeout) if compared else {}
    verdicts = [verdict(q, ours.get(q, Outcome()), flink.get(q, Outcome())) for q in queries]
    return Report(verdicts, flink)


# --- fixtures ------------------------------------------------------------------------

def fixture_path(directory: str | Path, query: str) -> Path:
    return Path(directory) / f"{query}.csv.gz"


def write_fixtures(flink: dict[str, Outcome], directory: str | Path) -> list[str]:
    """Flink's final rows of every query it ran as ``<query>.csv.gz`` under ``directory``
    (a header of column names, then the normalized rows sorted; a fixed gzip header, so the
    same rows give the same bytes); returns the queries written."""
    written = []
    for query, outcome in sorted(flink.items()):
        if outcome.rows is None:
            continue
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(outcome.columns)
        writer.writerows(sorted(outcome.rows.elements()))
        path = fixture_path(directory, query)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", filename="",
                                                   mtime=0) as packed:
            packed.write(text.getvalue().encode("utf-8"))
        written.append(query)
    return written


def read_fixture(directory: str | Path, query: str) -> Outcome:
    """The Flink outcome :func:`write_fixtures` stored for ``query``."""
    with gzip.open(fixture_path(directory, query), "rt", newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        columns = tuple(next(reader))
        return Outcome(columns, Counter(tuple(row) for row in reader))
