"""``flowsql tpch``: generate TPC-H data and run the queries on an engine, optionally verified.

``register(subparsers)`` plugs the ``tpch`` command into the top-level ``flowsql`` parser; the
chosen handler is stored as ``args.func`` and returns the exit status. ``main(argv)`` is the
same command stand-alone (``python -m flowsql.tpch.cli run ...``).

Exit status of ``run``: 0 when every query ran (and verified, with ``--verify``), 1 when a
query failed or differed from DuckDB, 2 when the run could not start (e.g. missing data).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from flowsql.errors import FlowSQLError
from flowsql.tpch.generate import generate
from flowsql.tpch.queries import QUERY_NUMBERS
from flowsql.tpch.runner import ENGINES, QueryOutcome, RunReport, check_data_dir, run_benchmark

EXIT_OK, EXIT_FAILED, EXIT_CANNOT_START = 0, 1, 2

_HEADER = f"{'query':>5}  {'seconds':>9}  {'rows':>7}  {'verified':>8}  {'duckdb s':>9}"


def query_list(text: str) -> list[int]:
    """Parse ``1,3,5`` or ``1-5,7`` into query numbers (argparse type)."""
    numbers: list[int] = []
    try:
        for part in filter(None, (p.strip() for p in text.split(","))):
            low, _, high = part.partition("-")
            numbers.extend(range(int(low), int(high or low) + 1))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a list of query numbers: {text!r}") from exc
    wrong = [n for n in numbers if n not in QUERY_NUMBERS]
    if wrong or not numbers:
        raise argparse.ArgumentTypeError(f"query numbers must be 1 to 22, got {text!r}")
    return numbers


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def _format_seconds(seconds: float | None) -> str:
    return f"{seconds:9.3f}" if seconds is not None else f"{'-':>9}"


def _format_outcome(outcome: QueryOutcome) -> str:
    verified = {True: "yes", False: "no", None: "-"}[outcome.verified]
    rows = str(outcome.rows) if outcome.rows is not None else "-"
    lines = [f"{'Q' + str(outcome.query):>5}  {_format_seconds(outcome.seconds)}  {rows:>7}  "
             f"{verified:>8}  {_format_seconds(outcome.verify_seconds)}"]
    if outcome.error is not None:
        lines.append(f"       error: {outcome.error}")
    lines.extend(f"       {difference}" for difference in outcome.differences)
    return "\n".join(lines)


def _format_totals(report: RunReport) -> str:
    done = [o for o in report.outcomes if o.seconds is not None]
    total = sum(o.seconds for o in done if o.seconds is not None)
    rows = sum(o.rows or 0 for o in done)
    errors = sum(o.error is not None for o in report.outcomes)
    verified = (f"{sum(o.verified is True for o in report.outcomes)}/{len(report.outcomes)}"
                if report.verify else "-")
    oracle = sum(o.verify_seconds or 0.0 for o in report.outcomes) if report.verify else None
    return "\n".join([
        f"{'total':>5}  {_format_seconds(total)}  {rows:>7}  {verified:>8}  "
        f"{_format_seconds(oracle)}",
        f"engine {report.engine}: {len(done)}/{len(report.outcomes)} queries ran, "
        f"{errors} failed; tables registered in {report.load_seconds:.3f} s; "
        f"best of {report.repeat} run(s) per query",
        f"peak RSS: {report.peak_rss_bytes / 2**20:.1f} MiB",
    ])


def _gen(args: argparse.Namespace) -> int:
    try:
        generate(args.sf, args.out)
    except FlowSQLError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CANNOT_START
    print(f"TPC-H SF {args.sf:g} written to {args.out}")
    return EXIT_OK


def _run(args: argparse.Namespace) -> int:
    try:
        check_data_dir(args.data, args.sf)
    except FlowSQLError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CANNOT_START
    scale = f" SF {args.sf:g}" if args.sf is not None else ""
    print(f"TPC-H{scale} on engine {args.engine}, data {args.data}"
          f"{', verified against DuckDB' if args.verify else ''}")
    print(_HEADER)
    try:
        report = run_benchmark(args.engine, args.data, queries=args.queries,
                               verify=args.verify, repeat=args.repeat, sf=args.sf,
                               parallelism=args.parallelism,
                               on_outcome=lambda outcome: print(_format_outcome(outcome),
                                                                flush=True))
    except FlowSQLError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CANNOT_START
    print(_format_totals(report))
    if args.json is not None:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=2) + "\n",
                                   encoding="utf-8")
    return EXIT_FAILED if report.failed else EXIT_OK


def _add_commands(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="tpch_command", metavar="{gen,run}", required=True)

    gen = commands.add_parser("gen", help="generate TPC-H Parquet files (one per table)")
    gen.add_argument("--sf", type=float, required=True, help="scale factor, e.g. 0.01 or 1")
    gen.add_argument("--out", type=Path, required=True, help="output directory")
    gen.set_defaults(func=_gen)

    run = commands.add_parser("run", help="run TPC-H queries on an engine and time them")
    run.add_argument("--data", type=Path, required=True,
                     help="directory holding <table>.parquet files")
    run.add_argument("--sf", type=float, default=None,
                     help="scale factor of the data (shown in the report)")
    run.add_argument("--engine", choices=sorted(ENGINES), default="local")
    run.add_argument("--queries", type=query_list, default=list(QUERY_NUMBERS),
                     help="query numbers, e.g. 1,3,5 or 1-6 (default: all 22)")
    run.add_argument("--verify", action="store_true",
                     help="compare each result with DuckDB on the same files")
    run.add_argument("--repeat", type=_positive_int, default=1,
                     help="runs per query; the best time is reported")
    run.add_argument("--parallelism", type=_positive_int, default=None,
                     help="parallelism.default of the local engine (default: the "
                          "session's default, 1)")
    run.add_argument("--json", type=Path, default=None,
                     help="also write the measurements to this JSON file")
    run.set_defaults(func=_run)


def register(subparsers: Any) -> None:
    """Add the ``tpch`` command to the top-level CLI's ``add_subparsers()`` object.
    The caller dispatches with ``return args.func(args)``."""
    parser = subparsers.add_parser("tpch", help="TPC-H data generation and benchmark runs",
                                   description=__doc__.split("\n\n")[0])
    _add_commands(parser)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="flowsql tpch", description=__doc__.split("\n\n")[0])
    _add_commands(parser)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
