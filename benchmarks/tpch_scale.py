"""TPC-H at several scale factors: flowsql under a memory budget against DuckDB, every query
in its own process, with peak memory measured and flowsql's answers verified.

Each (scale factor, query, engine) runs in a fresh child process (this script with
``--child``), so a query's peak RSS is its own and a query that runs out of memory or time
cannot disturb the next. The parent measures:

* seconds: the query alone, timed inside the child (table registration and, at parallelism
  above 1, the start of the worker processes happen before the clock starts);
* peak RSS: the child's own maximum resident set (``wait4``), and, at parallelism above 1,
  the largest sum of the RSS of the child and its worker processes, sampled every 0.2 s;
* verified: flowsql's result compared with DuckDB's by ``flowsql.tpch.verify`` (multiset
  unless the query orders its result).

A query that runs longer than ``--timeout`` seconds is stopped (its whole process group) and
reported as ``timeout``. Progress goes to stderr; the tables to stdout, ``--markdown`` for
docs/benchmarks.md. With two or more scale factors it also prints how each engine's time
grows from the smallest to the largest.

    nice -n 10 python benchmarks/tpch_scale.py --sf 1 10 [--data-root /work/data]
        [--budget 2gb] [--parallelism 1] [--queries 1-22] [--timeout 600] [--markdown]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa

from flowsql.tpch.cli import query_list
from flowsql.tpch.generate import TABLES, missing_tables, table_path
from flowsql.tpch.queries import QUERY_NUMBERS, load_query
from flowsql.tpch.runner import describe_error, open_duckdb
from flowsql.tpch.verify import compare_tables, is_ordered_query

ROOT = Path(__file__).resolve().parent.parent
ENGINES = ("flowsql", "duckdb")
SAMPLE_SECONDS = 0.2


@dataclass
class Measurement:
    """One engine's run of one query at one scale factor. ``error`` is set when the query
    failed, ran out of time (``timeout``) or its process died; then ``seconds`` is None."""

    sf: float
    query: int
    engine: str
    seconds: float | None = None
    rows: int | None = None
    error: str | None = None
    peak_rss_bytes: int | None = None
    tree_peak_rss_bytes: int | None = None
    wall_seconds: float | None = None


# --- the child: run one query on one engine ------------------------------------------------

def _flowsql_runner(data: Path, budget: str, parallelism: int):  # type: ignore[no-untyped-def]
    import flowsql

    session = flowsql.connect(**{"execution.memory-budget": budget,
                                 "parallelism.default": str(parallelism)})
    for table in TABLES:
        path = str(table_path(data, table)).replace("'", "''")
        session.sql(f"CREATE TABLE {table} WITH ('connector'='filesystem', 'path'='{path}', "
                    f"'format'='parquet')")
    if parallelism > 1:
        # start the worker processes before the clock does (a tiny query would otherwise be
        # planned on one subtask, in this process)
        session.set("optimizer.small-query-on-one-subtask", "false")
        session.sql("SELECT count(*) FROM region").to_arrow()
        session.set("optimizer.small-query-on-one-subtask", "true")
    return session, lambda sql: session.sql(sql).to_arrow()


def run_child(args: argparse.Namespace) -> int:
    """Run one query, write its result as Arrow IPC to ``--result`` and the measurement as
    JSON to ``--report``. Exit status 0 whether or not the query failed: the report says."""
    report: dict[str, object] = {"seconds": None, "rows": None, "error": None}
    session = None
    try:
        if args.engine == "duckdb":
            run_query = open_duckdb(args.data)
        else:
            session, run_query = _flowsql_runner(args.data, args.budget, args.parallelism)
        sql = load_query(args.query)
        started = time.perf_counter()
        table: pa.Table = run_query(sql)
        report["seconds"] = time.perf_counter() - started
        report["rows"] = table.num_rows
        with pa.OSFile(str(args.result), "wb") as sink, \
                pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
    except Exception as exc:  # reported, not raised: the parent goes on with the next query
        report["error"] = describe_error(exc)
    finally:
        if session is not None:
            session.close()
    Path(args.report).write_text(json.dumps(report), encoding="utf-8")
    return 0


# --- the parent: one child per query and engine --------------------------------------------

def _tree_rss(pid: int) -> int:
    import psutil

    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            total += process.memory_info().rss
    return total


def _sample_tree(pid: int, stop: threading.Event, peak: list[int], limit: int,
                 over_limit: threading.Event) -> None:
    """Record the largest RSS of the process tree; stop the tree when it passes ``limit``
    (the machine is shared: a runaway query must not push others into swap or the OOM
    killer)."""
    while not stop.wait(SAMPLE_SECONDS):
        peak[0] = max(peak[0], _tree_rss(pid))
        if peak[0] > limit:
            over_limit.set()
            _stop_group(pid)
            return


def measure(sf: float, data: Path, query: int, engine: str, args: argparse.Namespace,
            scratch: Path) -> tuple[Measurement, pa.Table | None]:
    """Run one query in a child process; the result table is returned for verification."""
    result_file, report_file = scratch / f"{engine}-q{query}.arrow", scratch / "report.json"
    for stale in (result_file, report_file):
        stale.unlink(missing_ok=True)
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--engine", engine,
               "--data", str(data), "--query", str(query), "--budget", args.budget,
               "--parallelism", str(args.parallelism), "--result", str(result_file),
               "--report", str(report_file)]
    measurement = Measurement(sf=sf, query=query, engine=engine)
    started = time.perf_counter()
    child = subprocess.Popen(command, start_new_session=True, stdout=sys.stderr)
    stop, over_limit, tree_peak = threading.Event(), threading.Event(), [0]
    limit = int(args.max_rss_gib * 2**30)
    sampler = threading.Thread(target=_sample_tree,
                               args=(child.pid, stop, tree_peak, limit, over_limit),
                               daemon=True)
    sampler.start()
    timer = threading.Timer(args.timeout, _stop_group, args=(child.pid,))
    timer.start()
    try:
        _, status, usage = os.wait4(child.pid, 0)
    finally:
        timer.cancel()
        stop.set()
        sampler.join()
    child.returncode = os.waitstatus_to_exitcode(status)
    measurement.wall_seconds = time.perf_counter() - started
    measurement.peak_rss_bytes = usage.ru_maxrss * 1024  # Linux reports KiB
    measurement.tree_peak_rss_bytes = tree_peak[0] or None
    _stop_group(child.pid)  # worker processes left behind by a killed child
    if over_limit.is_set():
        measurement.error = f"stopped: RSS above {args.max_rss_gib:g} GiB"
        return measurement, None
    if measurement.wall_seconds >= args.timeout:
        measurement.error = f"timeout after {args.timeout:g} s"
        return measurement, None
    if not report_file.exists():
        measurement.error = f"process died (exit status {child.returncode})"
        return measurement, None
    report = json.loads(report_file.read_text(encoding="utf-8"))
    measurement.seconds, measurement.rows = report["seconds"], report["rows"]
    measurement.error = report["error"]
    if measurement.error is not None:
        return measurement, None
    with pa.memory_map(str(result_file)) as source:
        table = pa.ipc.open_file(source).read_all()
    result_file.unlink()
    return measurement, table


def _stop_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


@dataclass
class QueryRow:
    sf: float
    query: int
    flowsql: Measurement
    duckdb: Measurement
    verified: str


def verify(query: int, mine: pa.Table | None, theirs: pa.Table | None,
           flowsql: Measurement) -> str:
    if flowsql.error is not None:
        return _failure_label(flowsql)
    if mine is None or theirs is None:
        return "-"
    differences = compare_tables(mine, theirs, ordered=is_ordered_query(load_query(query)))
    for line in differences[:3]:
        print(f"  Q{query}: {line}", file=sys.stderr)
    return "yes" if not differences else "NO"


def run_scale(sf: float, data: Path, args: argparse.Namespace) -> list[QueryRow]:
    rows: list[QueryRow] = []
    with tempfile.TemporaryDirectory(prefix="tpch-scale-") as scratch_name:
        scratch = Path(scratch_name)
        for query in args.queries:
            results: dict[str, tuple[Measurement, pa.Table | None]] = {}
            for engine in ENGINES:
                results[engine] = measure(sf, data, query, engine, args, scratch)
                measurement = results[engine][0]
                print(f"SF {sf:g} Q{query} {engine}: {_seconds(measurement.seconds)} s, "
                      f"peak {_peak_cell(measurement, args.parallelism)}, "
                      f"load {_load()}"
                      f"{'' if measurement.error is None else ', ' + measurement.error[:300]}",
                      file=sys.stderr, flush=True)
            (mine, mine_table), (theirs, theirs_table) = results["flowsql"], results["duckdb"]
            row = QueryRow(sf, query, mine, theirs, verify(query, mine_table, theirs_table, mine))
            rows.append(row)
    return rows


# --- reporting -----------------------------------------------------------------------------

def _load() -> str:
    """The 1, 5 and 15 minute load averages (the machine may be shared: timings under load
    are only comparable within one run)."""
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def _seconds(value: float | None) -> str:
    return f"{value:.2f}" if value is not None else "-"


def _ratio(numerator: float | None, denominator: float | None) -> str:
    if numerator is None or denominator is None or denominator <= 0:
        return "-"
    return f"{numerator / denominator:.1f}x"


def _mib(value: int | None) -> str:
    return f"{value / 2**20:.0f} MiB" if value else "-"


def _failure_label(measurement: Measurement) -> str:
    """``timeout``, ``RSS limit``, ``died`` or the exception's class name."""
    error = measurement.error or ""
    for prefix, label in (("timeout", "timeout"), ("stopped", "RSS limit"),
                          ("process died", "died")):
        if error.startswith(prefix):
            return label
    return error.split(":", 1)[0]


def _flowsql_cell(measurement: Measurement) -> str:
    """The query's seconds, or what stopped it and the wall-clock seconds of its process
    (start-up included) until then."""
    if measurement.error is None:
        return _seconds(measurement.seconds)
    return f"{_failure_label(measurement)} after {measurement.wall_seconds or 0:.0f} s"


def _peak_cell(measurement: Measurement, parallelism: int) -> str:
    if parallelism > 1:
        return f"{_mib(measurement.peak_rss_bytes)} (all {_mib(measurement.tree_peak_rss_bytes)})"
    return _mib(measurement.peak_rss_bytes)


def scale_table(rows: Sequence[QueryRow], parallelism: int) -> tuple[list[str], list[list[str]]]:
    header = ["query", "flowsql s", "duckdb s", "flowsql/duckdb", "verified",
              "flowsql peak RSS", "duckdb peak RSS"]
    body = [[f"Q{r.query}", _flowsql_cell(r.flowsql), _seconds(r.duckdb.seconds),
             _ratio(r.flowsql.seconds, r.duckdb.seconds), r.verified,
             _peak_cell(r.flowsql, parallelism), _mib(r.duckdb.peak_rss_bytes)] for r in rows]
    both = [r for r in rows if r.flowsql.seconds is not None and r.duckdb.seconds is not None]
    mine = sum(r.flowsql.seconds or 0.0 for r in both)
    theirs = sum(r.duckdb.seconds or 0.0 for r in both)
    peak = max((r.flowsql.tree_peak_rss_bytes if parallelism > 1 else r.flowsql.peak_rss_bytes)
               or 0 for r in rows) if rows else 0
    verified = sum(r.verified == "yes" for r in rows)
    body.append([f"total ({len(both)} queries both ran)", _seconds(mine), _seconds(theirs),
                 _ratio(mine, theirs), f"{verified}/{len(rows)}", f"max {_mib(peak)}",
                 f"max {_mib(max((r.duckdb.peak_rss_bytes or 0 for r in rows), default=0))}"])
    return header, body


def growth_table(small: Sequence[QueryRow], large: Sequence[QueryRow]
                 ) -> tuple[list[str], list[list[str]]]:
    """Per query and in total: time at the larger scale over time at the smaller one."""
    sf_small, sf_large = small[0].sf, large[0].sf
    header = ["query", f"flowsql SF {sf_small:g} s", f"flowsql SF {sf_large:g} s",
              "flowsql growth", f"duckdb SF {sf_small:g} s", f"duckdb SF {sf_large:g} s",
              "duckdb growth"]
    by_query = {r.query: r for r in large}
    body: list[list[str]] = []
    totals = [0.0, 0.0, 0.0, 0.0]
    for before in small:
        after = by_query.get(before.query)
        if after is None:
            continue
        cells = [before.flowsql.seconds, after.flowsql.seconds, before.duckdb.seconds,
                 after.duckdb.seconds]
        body.append([f"Q{before.query}", _seconds(cells[0]), _seconds(cells[1]),
                     _ratio(cells[1], cells[0]), _seconds(cells[2]), _seconds(cells[3]),
                     _ratio(cells[3], cells[2])])
        if all(c is not None for c in cells):
            totals = [t + (c or 0.0) for t, c in zip(totals, cells)]
    body.append(["total (queries all four ran)", _seconds(totals[0]), _seconds(totals[1]),
                 _ratio(totals[1], totals[0]), _seconds(totals[2]), _seconds(totals[3]),
                 _ratio(totals[3], totals[2])])
    return header, body


def render(header: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(header) + " |",
                 "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(cell.rjust(width) if i else cell.ljust(width)
                               for i, (cell, width) in enumerate(zip(row, widths)))
                     for row in [header, *rows])


def _duckdb_threads() -> str:
    import duckdb

    return str(duckdb.connect().execute("select current_setting('threads')").fetchall()[0][0])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sf", type=float, nargs="+", default=[1.0, 10.0],
                        help="scale factors (default: 1 10)")
    parser.add_argument("--data-root", type=Path, default=ROOT / "data",
                        help="holds sf<SF>/<table>.parquet for each scale factor "
                             "(generate with: flowsql tpch gen --sf SF --out ROOT/sf<SF>)")
    parser.add_argument("--budget", default="2gb",
                        help="flowsql's execution.memory-budget (default 2gb)")
    parser.add_argument("--parallelism", type=int, default=1, choices=(1, 2, 3, 4))
    parser.add_argument("--queries", type=query_list, default=list(QUERY_NUMBERS))
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds one query may take on one engine (default 600)")
    parser.add_argument("--max-rss-gib", type=float, default=8.0,
                        help="stop a query whose processes together hold more (default 8)")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--json", type=Path, default=None,
                        help="also write every measurement to this JSON file")
    # the child's arguments
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--engine", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--query", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--report", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        return run_child(args)
    scales: list[tuple[float, Path]] = []
    for sf in args.sf:
        data = (args.data_root / f"sf{sf:g}").resolve()
        if missing_tables(data):
            print(f"error: {data} lacks TPC-H tables; generate them with: "
                  f"flowsql tpch gen --sf {sf:g} --out {data}", file=sys.stderr)
            return 2
        scales.append((sf, data))
    load_before = _load()
    results = [run_scale(sf, data, args) for sf, data in scales]

    print(f"TPC-H, flowsql with execution.memory-budget {args.budget} at parallelism "
          f"{args.parallelism}, against DuckDB (threads {_duckdb_threads()}); one process per "
          f"query; {platform.machine()}, {os.cpu_count()} cores; timeout {args.timeout:g} s; "
          f"load average {load_before} at the start, {_load()} at the end")
    for (sf, _), rows in zip(scales, results):
        print(f"\nSF {sf:g}\n")
        print(render(*scale_table(rows, args.parallelism), args.markdown))
    if len(results) >= 2:
        print(f"\nGrowth from SF {scales[0][0]:g} to SF {scales[-1][0]:g} (time ratio)\n")
        print(render(*growth_table(results[0], results[-1]), args.markdown))
    if args.json is not None:
        args.json.write_text(json.dumps([{**asdict(r.flowsql), "verified": r.verified}
                                         for rows in results for r in rows]
                                        + [asdict(r.duckdb) for rows in results for r in rows],
                                        indent=2) + "\n", encoding="utf-8")
    failed = any(r.verified != "yes" for rows in results for r in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
