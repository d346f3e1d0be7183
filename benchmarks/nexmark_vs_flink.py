"""Nexmark throughput of flowsql and of Apache Flink 2.3 in the same run, per query and
parallelism, over the same generated events.

The events are written once by ``flowsql nexmark gen``'s code (Parquet, kept under
``data/nexmark/<events>``) with CSV copies for Flink (PyFlink ships no Parquet format;
``flowsql.nexmark.verify.write_flink_files``). Per parallelism, every query in flowsql,
then every query in Flink:

- flowsql as ``flowsql nexmark run --data DIR`` runs it (``flowsql.nexmark.runner``): the
  query into a blackhole table over the Parquet files, timed from submitting
  ``INSERT INTO`` (planning included) to the job's end, after the worker processes of a
  parallel job are started; peak RSS of the largest process; a fresh process per query.
  With ``--flowsql-csv`` also over the CSV files Flink reads (the same input format).
- Flink as ``benchmarks/flink_baseline.py`` times its jobs (``benchmarks/nexmark_flink_job.py``
  in ``.venv-flink``): one JVM (a local mini cluster) runs the queries one after the
  other; each is first run over ``--warm-events`` events (untimed: the JVM loads and
  compiles its planner and operators), then timed over them again (Flink's fixed cost per
  job, mostly), then timed over the CSV files into a blackhole table, from submission to
  the job's end; peak RSS of the Python process and the JVM together during that job (the
  JVM's heap grown by the queries before it included). The Flink text of q13/q14 is ``flowsql.nexmark.verify.FLINK_FORMS``.

events/s is all events (every kind) over the seconds, for both. The machine's 1-minute load
average is sampled before each job: the machine is shared, so the ratio of the two engines
measured one right after the other is the figure to read, not the absolute rates.

    python benchmarks/nexmark_vs_flink.py [--events 200000] [--parallelism 1,2]
        [--queries q0,q1,...] [--markdown] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from flowsql.nexmark.generate import generate_files  # noqa: E402
from flowsql.nexmark.generator import KINDS, GeneratorConfig  # noqa: E402
from flowsql.nexmark.queries import QUERY_NAMES  # noqa: E402
from flowsql.nexmark.runner import QueryRun, run_queries, write_side_input  # noqa: E402
from flowsql.nexmark.verify import (  # noqa: E402
    ensure_flink,
    flink_tables,
    flink_text,
    run_flink_job,
    write_flink_files,
)

#: q6 plans in neither engine; the queries the issue has published Flink figures for and
#: the stateful ones first (a run stopped early has measured those)
FIRST = ["q0", "q5", "q7", "q4", "q8", "q9", "q11", "q15", "q16", "q17", "q18", "q19", "q20"]
DEFAULT_QUERIES = FIRST + [q for q in QUERY_NAMES if q not in FIRST and q != "q6"]


@dataclass(frozen=True)
class Figure:
    """One query at one parallelism in both engines (None where an engine failed)."""

    query: str
    parallelism: int
    events: int
    flowsql_events_per_s: float | None
    flowsql_peak_rss_mib: float | None
    #: flowsql over the CSV files Flink reads
    flowsql_csv_events_per_s: float | None
    flowsql_csv_peak_rss_mib: float | None
    flink_events_per_s: float | None
    flink_peak_rss_mib: float | None
    #: Flink's marginal rate: (events - warm-up events) / (seconds - seconds of the same
    #: job over the warm-up events), its fixed cost per job taken out
    flink_marginal_events_per_s: float | None
    #: seconds of Flink's job over the warm-up events (mostly its fixed cost per job)
    flink_small_seconds: float | None
    load_before: float
    error: str | None = None
    #: flowsql's largest keyed state while the job ran (sampled; see QueryRun)
    flowsql_peak_state_mib: float | None = None

    @property
    def ratio(self) -> float | None:
        """flowsql over Parquet / Flink over CSV."""
        if self.flowsql_events_per_s is None or not self.flink_events_per_s:
            return None
        return self.flowsql_events_per_s / self.flink_events_per_s

    @property
    def marginal_ratio(self) -> float | None:
        """flowsql over Parquet / Flink's marginal rate."""
        if self.flowsql_events_per_s is None or not self.flink_marginal_events_per_s:
            return None
        return self.flowsql_events_per_s / self.flink_marginal_events_per_s

    @property
    def csv_ratio(self) -> float | None:
        """flowsql / Flink, both over the CSV files."""
        if self.flowsql_csv_events_per_s is None or not self.flink_events_per_s:
            return None
        return self.flowsql_csv_events_per_s / self.flink_events_per_s


def prepare(events: int, warm_events: int, directory: Path) -> tuple[Path, Path, Path, str]:
    """(parquet dir, csv dir, warm-up csv dir, side input path), written unless there."""
    parquet, csv_dir, warm = directory / "parquet", directory / "csv", directory / "warm"
    for out, count in ((parquet, events), (warm / "parquet", warm_events)):
        if not all((out / kind / "part-0.parquet").exists() for kind in KINDS):
            print(f"generating {count:,d} events into {out} ...", file=sys.stderr)
            generate_files(GeneratorConfig(events=count), out)
    for source, target in ((parquet, csv_dir), (warm / "parquet", warm / "csv")):
        if not all((target / kind / "part-0.csv").exists() for kind in KINDS):
            write_flink_files(source, target)
    return parquet, csv_dir, warm / "csv", write_side_input(str(directory))


def flink_figures(queries: list[str], parallelism: int, events: int, tables: list[str],
                  warm_tables: list[str], timeout: float) -> dict[str, dict[str, Any]]:
    """Per query Flink's figures (or ``error``): one JVM runs them all, one after the
    other."""
    spec = {"mode": "bench", "parallelism": parallelism, "events": events,
            "warm_tables": warm_tables, "tables": tables,
            "queries": [[q, flink_text(q)] for q in queries]}
    try:
        done = run_flink_job(spec, timeout)
    except subprocess.TimeoutExpired as e:
        return {q: {"error": f"Flink: {e}"} for q in queries}
    figures: dict[str, dict[str, Any]] = {}
    for line in done.stdout.splitlines():
        if line.startswith("@@FIGURE "):
            entry = json.loads(line[len("@@FIGURE "):])
            figures[entry["query"]] = entry
    return {q: figures.get(q, {"error": f"the Flink job ended ({done.returncode}) before it"})
            for q in queries}


def flowsql_runs(queries: list[str], parallelism: int, events: int, directory: Path,
                 data_format: str) -> dict[str, tuple[QueryRun, float]]:
    """Per query flowsql's run (a fresh process each) and the load average before it."""
    runs = {}
    for query in queries:
        load = os.getloadavg()[0]
        run = next(run_queries([query], GeneratorConfig(events=events), parallelism,
                               str(directory), data_format))
        print(f"p{parallelism} {query:>4}  flowsql ({data_format}) "
              f"{_rate(run.events_per_second):>8}  load {load:.1f}"
              + (f"  {run.error}" if run.error else ""), file=sys.stderr, flush=True)
        runs[query] = (run, load)
    return runs


def figure(query: str, parallelism: int, args: argparse.Namespace,
           ours: tuple[QueryRun, float], ours_csv: tuple[QueryRun, float] | None,
           flink: dict[str, Any]) -> Figure:
    run, load = ours
    csv_run = ours_csv[0] if ours_csv is not None else None
    errors = [f"flowsql: {r.error}" for r in (run, csv_run) if r is not None and r.error]
    if "error" in flink:
        errors.append(f"Flink: {flink['error']}")
    return Figure(query, parallelism, args.events, run.events_per_second, _mib_of(run),
                  csv_run.events_per_second if csv_run is not None else None,
                  _mib_of(csv_run) if csv_run is not None else None,
                  flink.get("events_per_s"), flink.get("peak_rss_mib"),
                  _marginal(flink, args.events, args.warm_events), flink.get("small_seconds"),
                  load, "; ".join(errors) or None,
                  run.peak_state_bytes / 2**20 if run.peak_state_bytes is not None else None)


def _mib_of(run: QueryRun) -> float | None:
    return run.peak_rss_bytes / 2**20 if run.peak_rss_bytes else None


def _marginal(flink: dict[str, float], events: int, warm_events: int) -> float | None:
    if "seconds" not in flink or flink["seconds"] <= flink["small_seconds"]:
        return None
    return (events - warm_events) / (flink["seconds"] - flink["small_seconds"])


def _rate(value: float | None) -> str:
    return "failed" if value is None else f"{value / 1e3:,.0f} K"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} MiB"


def _rate_or_dash(value: float | None) -> str:
    """A rate where None means not measurable, not a failure."""
    return "-" if value is None else _rate(value)


def table(figures: list[Figure], parallelism: int) -> str:
    """The markdown table of one parallelism (the flowsql-over-CSV columns only when
    that was measured)."""
    with_csv = any(f.flowsql_csv_events_per_s is not None for f in figures)
    head = ["query", "flowsql events/s", "Flink events/s", "flowsql / Flink",
            "Flink job over warm-up events", "Flink marginal events/s",
            "flowsql / Flink marginal", "flowsql peak RSS", "Flink peak RSS",
            "flowsql peak state", "load"]
    if with_csv:
        head[2:2] = ["flowsql over CSV"]
        head.insert(5, "flowsql over CSV / Flink")
    lines = [f"Parallelism {parallelism}, {figures[0].events:,d} events per query\n",
             "| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for f in figures:
        cells = [f.query, _rate(f.flowsql_events_per_s), _rate(f.flink_events_per_s),
                 _ratio(f.ratio),
                 "-" if f.flink_small_seconds is None else f"{f.flink_small_seconds:.1f} s",
                 _rate_or_dash(f.flink_marginal_events_per_s), _ratio(f.marginal_ratio),
                 _mib(f.flowsql_peak_rss_mib), _mib(f.flink_peak_rss_mib),
                 "-" if f.flowsql_peak_state_mib is None
                 else f"{f.flowsql_peak_state_mib:.1f} MiB",
                 f"{f.load_before:.1f}"]
        if with_csv:
            cells[2:2] = [_rate(f.flowsql_csv_events_per_s)]
            cells.insert(5, _ratio(f.csv_ratio))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_json(path: Path, events: int, results: dict[int, list[Figure]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(
        {"events": events, "cpus": os.cpu_count(),
         "results": [{**asdict(f), "ratio": f.ratio, "csv_ratio": f.csv_ratio,
                      "marginal_ratio": f.marginal_ratio}
                     for figures in results.values() for f in figures]}, indent=2) + "\n")


def tables_from_json(path: Path) -> str:
    """The markdown tables of a JSON file this script wrote."""
    payload = json.loads(path.read_text())
    names = {f.name for f in fields(Figure)}
    figures = [Figure(**{k: v for k, v in row.items() if k in names})
               for row in payload["results"]]
    levels = sorted({f.parallelism for f in figures})
    return "\n\n".join(table([f for f in figures if f.parallelism == p], p) for p in levels)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--warm-events", type=int, default=10_000,
                        help="events of Flink's warm-up job (default 10000)")
    parser.add_argument("--parallelism", default="1,2")
    parser.add_argument("--queries", default=",".join(DEFAULT_QUERIES))
    parser.add_argument("--data", type=Path, default=None,
                        help="directory of the events (default data/nexmark/<events>)")
    parser.add_argument("--timeout", type=float, default=7200.0,
                        help="seconds the Flink process of one parallelism may take")
    parser.add_argument("--flowsql-csv", action="store_true",
                        help="also run flowsql over the CSV files Flink reads")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH")
    parser.add_argument("--tables-from", type=Path, default=None, metavar="PATH",
                        help="only print the markdown tables of a JSON file written before")
    args = parser.parse_args(argv)
    if args.tables_from is not None:
        print(tables_from_json(args.tables_from))
        return 0
    queries = args.queries.split(",")
    unknown = set(queries) - set(QUERY_NAMES)
    if unknown:
        parser.error(f"unknown queries: {', '.join(sorted(unknown))}")
    levels = [int(p) for p in args.parallelism.split(",")]

    ensure_flink()
    directory = args.data or ROOT / "data" / "nexmark" / str(args.events)
    parquet, csv_dir, warm_csv, side_input = prepare(args.events, args.warm_events, directory)
    tables = flink_tables(csv_dir, side_input)
    warm_tables = flink_tables(warm_csv, side_input)
    started = time.perf_counter()
    results: dict[int, list[Figure]] = {}
    for p in levels:
        ours = flowsql_runs(queries, p, args.events, parquet, "parquet")
        ours_csv = (flowsql_runs(queries, p, args.events, csv_dir, "csv")
                    if args.flowsql_csv else {})
        print(f"p{p}: Flink ...", file=sys.stderr, flush=True)
        flink = flink_figures(queries, p, args.events, tables, warm_tables, args.timeout)
        results[p] = [figure(q, p, args, ours[q], ours_csv.get(q), flink[q]) for q in queries]
        for f in results[p]:
            print(f"p{p} {f.query:>4}  flowsql {_rate(f.flowsql_events_per_s):>8}  "
                  f"Flink {_rate(f.flink_events_per_s):>8}  ratio {_ratio(f.ratio)}"
                  + (f"  {f.error}" if f.error else ""), file=sys.stderr, flush=True)
        if args.json is not None:
            write_json(args.json, args.events, results)
        print(table(results[p], p) if args.markdown else "\n".join(map(str, results[p])))
        print(flush=True)
    print(f"{time.perf_counter() - started:.0f} s in all; load average now "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
