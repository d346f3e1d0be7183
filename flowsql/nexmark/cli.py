"""``flowsql nexmark``: generate the Nexmark events to files, run the queries.

``gen --events N --out DIR`` writes the events as Parquet (``flowsql.nexmark.generate``);
``run --queries q0,q1 --events N --parallelism P`` runs each query into a blackhole table
and prints its events/s and peak RSS (``flowsql.nexmark.runner``). Generator options
(``--seed``, ``--rate``) are the same for both, so ``run --data DIR`` over files written by
``gen`` reads the very events the connector would generate.

``run --verify`` does not time the queries: it runs each one in flowsql and in Apache
Flink 2.3 (PyFlink in ``.venv-flink``) over the same generated files and compares the final
results (``flowsql.nexmark.verify``), printing a verdict per query; ``--fixtures DIR`` also
writes Flink's results there (the CI fixtures in ``tests/nexmark/expected``).

Exit status of ``run``: 0 when every query ran (with ``--verify``: every verdict passed),
1 when one failed.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from flowsql.nexmark.generator import GeneratorConfig
from flowsql.nexmark.queries import QUERY_NAMES

EXIT_OK, EXIT_FAILED = 0, 1


def query_names(text: str) -> list[str]:
    """Parse ``q0,q1,q5`` (or ``all``) into query names (argparse type)."""
    if text.strip().lower() == "all":
        return list(QUERY_NAMES)
    names = [p.strip().lower() for p in text.split(",") if p.strip()]
    wrong = [n for n in names if n not in QUERY_NAMES]
    if wrong or not names:
        raise argparse.ArgumentTypeError(f"queries are q0 to q22 (or 'all'), got {text!r}")
    return names


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def _config(args: argparse.Namespace) -> GeneratorConfig:
    return GeneratorConfig(events=args.events, first_event_rate=args.rate,
                           next_event_rate=args.rate, seed=args.seed)


def _add_generator_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=_positive_int, required=True,
                        help="events of all kinds to generate")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random choices")
    parser.add_argument("--rate", type=_positive_int, default=10_000,
                        help="events per second of event time (first-event.rate and "
                             "next-event.rate)")


def register(subparsers: Any) -> None:
    """Add the ``nexmark`` command (with ``gen`` and ``run``) to a parser's subcommands."""
    parser = subparsers.add_parser("nexmark", help="Nexmark streaming benchmark",
                                   description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="nexmark_command", required=True)
    gen = commands.add_parser("gen", help="write the events as Parquet files per table")
    _add_generator_options(gen)
    gen.add_argument("--out", required=True, help="directory to write person/auction/bid to")
    gen.add_argument("--format", choices=("parquet", "json"), default="parquet",
                     help="parquet, or json: newline-delimited JSON files, timestamps as "
                          "'yyyy-MM-dd HH:mm:ss.SSS' (default: parquet)")
    gen.set_defaults(func=_gen)
    run = commands.add_parser("run", help="run queries into blackhole tables, timed")
    _add_generator_options(run)
    run.add_argument("--queries", type=query_names, default=list(QUERY_NAMES),
                     help="comma-separated query names (default: all)")
    run.add_argument("--parallelism", type=_positive_int, default=1)
    run.add_argument("--data", default=None,
                     help="read the events from files 'gen' wrote instead of generating")
    run.add_argument("--verify", action="store_true",
                     help="compare each query's result with Apache Flink's instead of timing")
    run.add_argument("--fixtures", default=None, metavar="DIR",
                     help="with --verify: write Flink's results as fixtures into DIR")
    run.set_defaults(func=_run)


def _gen(args: argparse.Namespace) -> int:
    from flowsql.nexmark.generate import generate_files

    rows = generate_files(_config(args), args.out, args.format)
    for kind, count in rows.items():
        print(f"{kind:>8}  {count:>10} rows  {args.out}/{kind}")
    return EXIT_OK


def _run(args: argparse.Namespace) -> int:
    if args.verify:
        return _verify(args)
    if args.fixtures is not None:
        raise SystemExit("--fixtures needs --verify")
    from flowsql.nexmark.runner import run_queries

    print(f"{'query':>5}  {'events':>9}  {'seconds':>8}  {'events/s':>10}  {'peak RSS MB':>11}"
          f"  {'peak state MB':>13}  {'state rows':>10}")
    status = EXIT_OK
    for run in run_queries(args.queries, _config(args), args.parallelism, args.data):
        if run.error is not None:
            status = EXIT_FAILED
            print(f"{run.query:>5}  {run.events:>9}  failed: {run.error}", flush=True)
            continue
        assert run.seconds is not None and run.peak_rss_bytes is not None
        print(f"{run.query:>5}  {run.events:>9}  {run.seconds:>8.3f}  "
              f"{run.events_per_second:>10,.0f}  {run.peak_rss_bytes / 2**20:>11.0f}  "
              f"{(run.peak_state_bytes or 0) / 2**20:>13.1f}  {run.peak_state_rows or 0:>10,}",
              flush=True)
    return status


def _verify(args: argparse.Namespace) -> int:
    from flowsql.nexmark.verify import verify, write_fixtures

    report = verify(args.queries, _config(args), args.parallelism, args.data)
    print(f"{'query':>5}  {'verdict':<16}  detail")
    for verdict in report.verdicts:
        print(f"{verdict.query:>5}  {verdict.status:<16}  {verdict.detail}", flush=True)
    if args.fixtures is not None:
        written = write_fixtures(report.flink, args.fixtures)
        print(f"Flink's results of {len(written)} queries written to {args.fixtures}")
    return EXIT_FAILED if any(v.failed for v in report.verdicts) else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """``python -m flowsql.nexmark.cli gen|run ...``."""
    parser = argparse.ArgumentParser(prog="flowsql")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
