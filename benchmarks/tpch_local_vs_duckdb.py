"""TPC-H: flowsql's local engine against DuckDB on the same Parquet files.

Each engine runs in its own process (``python -m flowsql.tpch.cli run ... --json``), so each
peak RSS belongs to one engine; the local engine's answers are verified against DuckDB (in a
further process, outside both measurements). DuckDB keeps its defaults: all cores, views over
``read_parquet``. Progress goes to stderr, the comparison to stdout; ``--markdown`` prints it as
a table for docs/benchmarks.md.

    python benchmarks/tpch_local_vs_duckdb.py --sf 1 --data data/sf1 [--parallelism 2] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flowsql.tpch.cli import query_list
from flowsql.tpch.generate import generate, missing_tables
from flowsql.tpch.queries import QUERY_NUMBERS

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class EngineRun:
    """What one engine's process reported; ``report`` is None when it produced no report."""

    engine: str
    exit_status: int
    report: dict[str, Any] | None

    def outcome(self, query: int) -> dict[str, Any] | None:
        if self.report is None:
            return None
        return next((o for o in self.report["outcomes"] if o["query"] == query), None)

    def seconds(self, query: int) -> float | None:
        outcome = self.outcome(query)
        return outcome["seconds"] if outcome is not None else None


def run_engine(engine: str, data: Path, sf: float, queries: Sequence[int], repeat: int,
               verify: bool, timeout: float | None, parallelism: int | None = None
               ) -> EngineRun:
    with tempfile.TemporaryDirectory(prefix="tpch-bench-") as scratch:
        report_file = Path(scratch) / "report.json"
        command = [sys.executable, "-m", "flowsql.tpch.cli", "run", "--sf", f"{sf:g}",
                   "--data", str(data), "--engine", engine,
                   "--queries", ",".join(map(str, queries)), "--repeat", str(repeat),
                   "--json", str(report_file), *(["--verify"] if verify else []),
                   *(["--parallelism", str(parallelism)] if parallelism is not None else [])]
        print(f"$ {' '.join(command)}", file=sys.stderr, flush=True)
        try:
            status = subprocess.run(command, stdout=sys.stderr, timeout=timeout,
                                    check=False).returncode
        except subprocess.TimeoutExpired:
            print(f"{engine}: no result within {timeout:g} s", file=sys.stderr)
            return EngineRun(engine, -1, None)
        report = json.loads(report_file.read_text()) if report_file.exists() else None
        return EngineRun(engine, status, report)


def _seconds(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "-"


def _ratio(numerator: float | None, denominator: float | None) -> str:
    if numerator is None or denominator is None or denominator <= 0:
        return "-"
    return f"{numerator / denominator:.1f}x"


def _verified(outcome: dict[str, Any] | None) -> str:
    if outcome is None:
        return "-"
    if outcome["error"] is not None:
        return "error"
    return {True: "yes", False: "NO", None: "-"}[outcome["verified"]]


def comparison_rows(local: EngineRun, duckdb: EngineRun,
                    queries: Sequence[int]) -> list[list[str]]:
    rows = []
    both_local: float | None = None
    both_duckdb: float | None = None
    for query in queries:
        mine, theirs = local.seconds(query), duckdb.seconds(query)
        if mine is not None and theirs is not None:
            both_local = (both_local or 0.0) + mine
            both_duckdb = (both_duckdb or 0.0) + theirs
        rows.append([f"Q{query}", _seconds(mine), _seconds(theirs), _ratio(mine, theirs),
                     _verified(local.outcome(query))])
    verified = sum(_verified(local.outcome(q)) == "yes" for q in queries)
    rows.append(["total (queries both ran)", _seconds(both_local), _seconds(both_duckdb),
                 _ratio(both_local, both_duckdb), f"{verified}/{len(queries)}"])
    return rows


def render(header: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(header) + " |",
                 "|" + "|".join(["---"] + ["---:"] * (len(header) - 2) + [":---:"]) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(cell.rjust(width) if i else cell.ljust(width)
                               for i, (cell, width) in enumerate(zip(row, widths)))
                     for row in [header, *rows])


def _peak(run: EngineRun) -> str:
    if run.report is None:
        return f"no report (exit status {run.exit_status})"
    return f"{run.report['peak_rss_bytes'] / 2**20:.0f} MiB"


def _duckdb_threads() -> str:
    import duckdb

    return str(duckdb.connect().execute("select current_setting('threads')").fetchall()[0][0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sf", type=float, default=1.0, help="scale factor (default 1)")
    parser.add_argument("--data", type=Path, default=None,
                        help="directory of <table>.parquet files (default data/sf<SF>); "
                             "generated when missing")
    parser.add_argument("--queries", type=query_list, default=list(QUERY_NUMBERS))
    parser.add_argument("--repeat", type=int, default=1, help="runs per query, best reported")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds each engine may take for all queries")
    parser.add_argument("--parallelism", type=int, default=None,
                        help="parallelism.default of the local engine (default 1: one "
                             "process, Arrow's kernels threaded); DuckDB uses all cores")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    data: Path = (args.data or ROOT / "data" / f"sf{args.sf:g}").resolve()
    if missing_tables(data):
        print(f"generating TPC-H SF {args.sf:g} into {data}", file=sys.stderr, flush=True)
        generate(args.sf, data)

    local = run_engine("local", data, args.sf, args.queries, args.repeat, True, args.timeout,
                       args.parallelism)
    duckdb = run_engine("duckdb", data, args.sf, args.queries, args.repeat, False, args.timeout)

    header = ["query", "local s", "duckdb s", "local/duckdb", "verified"]
    print(f"TPC-H SF {args.sf:g}, best of {args.repeat}; {platform.machine()}, "
          f"local parallelism {args.parallelism or 1}, DuckDB threads {_duckdb_threads()}")
    print()
    print(render(header, comparison_rows(local, duckdb, args.queries), args.markdown))
    print()
    print(f"peak RSS: local {_peak(local)}, duckdb {_peak(duckdb)}")
    return 0 if local.exit_status == 0 and duckdb.exit_status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
