"""Differential runs of the streaming SQL corpus on Apache Flink and on flowsql.

Runs every query of ``tests/flink/queries`` over the event files in ``tests/flink/data``
on Flink (PyFlink, streaming mode, in ``.venv-flink``: one JVM per parallelism runs all
queries, a few dozen per job, see ``flink_diff_job.py``) and on flowsql in streaming mode,
both at parallelism 1 and 2 with per-record watermarks; applies each changelog, normalizes
the values (see ``tests/flink/flink_corpus.py``) and compares the final results as
multisets. Flink runs every query ``--runs`` times: a query whose Flink results differ
between runs is non-deterministic and gets no fixture.

With ``--write-fixtures`` Flink's results become the fixtures the CI test
``tests/flink/test_flink_fixtures.py`` checks flowsql against without Flink
(``expected/<id>_p1.csv.gz``, ``expected/<id>_p2.csv.gz`` where p2 differs, and
``nondeterministic.txt``). ``--from-fixtures`` skips Flink and compares flowsql with the
stored fixtures. ``--known`` writes the differences found into ``known_differences.txt``
(each with its first line of evidence; edit the reasons into classes afterwards).

    python benchmarks/flink_diff.py [--parallelism 1,2] [--runs 2] [--only REGEX]
        [--write-fixtures] [--from-fixtures] [--known] [--regenerate] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the corpus module the CI test uses, tests.flink.flink_corpus

import flink_diff_corpus  # noqa: E402
from flink_diff_data import generate  # noqa: E402

from tests.flink import flink_corpus as corpus  # noqa: E402

VENV_PYTHON = ROOT / ".venv-flink" / "bin" / "python"
JOB = Path(__file__).resolve().parent / "flink_diff_job.py"
CACHE = ROOT / "data" / "flink_diff"
_LINE = re.compile(r"^(p\d+r\d+s\d+)\|(\S+?)(?::\d+)?> ([+-][IUD])\[(.*)\]$")


# --- Flink -----------------------------------------------------------------------------

def run_flink(queries: list[tuple[str, str]], parallelisms: list[int], runs: int,
              chunk: int, timeout: float
              ) -> tuple[dict[int, dict[str, Any]], dict[str, Any]]:
    """Runs the queries in one Flink process; per parallelism and query: columns, error
    and the result of every run (a Counter of normalized rows). The process's progress
    goes to ``data/flink_diff/flink_job.log``."""
    spec = {"parallelisms": parallelisms, "runs": runs, "chunk": chunk,
            "settings": corpus.SETTINGS, "tables": corpus.table_ddl(),
            "queries": [list(q) for q in queries]}
    started = time.perf_counter()
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / "flink_job.log").open("w") as log:
        done = subprocess.run([str(VENV_PYTHON), str(JOB)], input=json.dumps(spec),
                              stdout=subprocess.PIPE, stderr=log, text=True, check=False,
                              timeout=timeout, cwd=ROOT, env={**os.environ, "PYTHONPATH": ""})
    lines = done.stdout.splitlines()
    final = [line for line in lines if line.startswith("@@DONE ")]
    if done.returncode != 0 or not final:
        raise SystemExit(f"Flink run failed ({done.returncode}): see {CACHE / 'flink_job.log'}")
    report: dict[str, Any] = json.loads(final[-1][len("@@DONE "):])
    print(f"flink: {len(queries)} queries x {runs} runs x parallelism {parallelisms} in "
          f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
    changes: dict[tuple[str, str], Counter[corpus.Row]] = {}
    malformed: dict[str, str] = {}
    kinds_seen: dict[tuple[str, str], Counter[str]] = {}
    for line in lines:
        match = _LINE.match(line)
        if not match:
            continue
        tag, qid, kind, body = match.groups()
        entry = report.get(qid)
        if entry is None or entry["columns"] is None:
            continue
        kinds = [k for _, k in entry["columns"]]
        values = body.split(", ")
        if len(values) != len(kinds):
            malformed[qid] = f"cannot split printed row into {len(kinds)} values: {line}"
            continue
        row = tuple(corpus.normal_flink(v, k) for v, k in zip(values, kinds))
        counter = changes.setdefault((tag, qid), Counter())
        counter[row] += 1 if kind in ("+I", "+U") else -1
        kinds_seen.setdefault((tag, qid), Counter())[kind] += 1
    sql_of = dict(queries)
    for (_, qid), seen in kinds_seen.items():
        if seen["+U"] > seen["-U"] and "ROW_NUMBER" in sql_of[qid].upper():
            # Flink's Top-1 may send an upsert changelog: a +U replaces the row with the
            # same key, which the printed rows do not name, so the final result cannot be
            # rebuilt (elsewhere a lone +U is an update whose old row a filter removed)
            malformed[qid] = ("Flink emitted an upsert changelog (+U without -U); its "
                              "final result needs the upsert key")
    per_parallelism: dict[int, dict[str, Any]] = {}
    for p in parallelisms:
        for qid, entry in report.items():
            tags = entry["runs"].get(str(p), {})
            per_parallelism.setdefault(p, {})[qid] = {
                "error": malformed.get(qid) or entry["error"],
                "results": [changes.get((tag, qid), Counter())
                            for _, tag in sorted(tags.items())]}
    return per_parallelism, report


def flink_outcome(entry: dict[str, Any], runs: int) -> tuple[str, Any]:
    """("ok", result) | ("error", message) | ("nondeterministic", description)."""
    if entry["error"]:
        return "error", entry["error"]
    results = [+r for r in entry["results"]]  # drops zero counts
    if len(results) < runs:
        return "error", "a run produced no complete result"
    if any(min(r.values(), default=0) < 0 for r in entry["results"]):
        return "error", "changelog removes rows it never added"
    if any(r != results[0] for r in results[1:]):
        sizes = sorted({sum(r.values()) for r in results})
        return "nondeterministic", f"Flink runs disagree (row counts {sizes})"
    return "ok", results[0]


def save_cache(path: Path, outcomes: dict[int, dict[str, tuple[str, Any]]],
               columns: dict[str, list[str]]) -> None:
    """Adds these Flink outcomes to the cache (a run of some queries keeps the others')."""
    path.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(path.read_text("utf-8")) if path.exists() else {}
    payload = old.get("outcomes", {})
    for p, per_query in outcomes.items():
        payload.setdefault(str(p), {}).update(
            {qid: [status, sorted_or_text(value)] for qid, (status, value) in per_query.items()})
    merged = {**old.get("columns", {}), **columns}
    path.write_text(json.dumps({"outcomes": payload, "columns": merged}), "utf-8")


def sorted_or_text(value: Any) -> Any:
    return [list(r) for r in corpus.sorted_rows(value)] if isinstance(value, Counter) else value


def load_cache(path: Path) -> tuple[dict[int, dict[str, tuple[str, Any]]], dict[str, list[str]]]:
    payload = json.loads(path.read_text("utf-8"))
    outcomes = {int(p): {qid: (status, Counter(tuple(r) for r in value)
                               if status == "ok" else value)
                         for qid, (status, value) in per_query.items()}
                for p, per_query in payload["outcomes"].items()}
    return outcomes, payload["columns"]


# --- fixtures --------------------------------------------------------------------------

def write_fixtures(outcomes: dict[int, dict[str, tuple[str, Any]]],
                   columns: dict[str, list[str]], sql_of: dict[str, str]) -> None:
    """Flink's results as fixtures: p1 always, p2 only where it differs from p1 (and not
    for queries that depend on timing there); a query non-deterministic at a parallelism
    is listed instead, one failing in Flink gets nothing."""
    ran = {qid for per_query in outcomes.values() for qid in per_query}
    for qid in ran:
        for p in corpus.PARALLELISMS:
            corpus.fixture_path(qid, p).unlink(missing_ok=True)
    unstable = {key: reason for key, reason in corpus.read_listing(
        corpus.NONDETERMINISTIC).items() if key.rsplit("_p", 1)[0] not in ran}
    for qid in sorted(ran & set(columns)):
        statuses = {p: outcomes[p].get(qid, ("error", "not run")) for p in outcomes}
        for p, (status, value) in sorted(statuses.items()):
            if status == "nondeterministic" and not corpus.depends_on_timing(sql_of[qid], p):
                unstable[f"{qid}_p{p}"] = value
        for p, (status, value) in sorted(statuses.items()):
            if status != "ok" or corpus.depends_on_timing(sql_of[qid], p):
                continue
            p1 = statuses.get(1)
            if p != 1 and p1 is not None and p1[0] == "ok" and p1[1] == value:
                continue
            corpus.write_fixture(corpus.fixture_path(qid, p), columns[qid],
                                 corpus.sorted_rows(value))
    header = ("# Queries whose Flink result differed between repeated runs of the same\n"
              "# job (written by benchmarks/flink_diff.py); they have no fixture.\n")
    corpus.NONDETERMINISTIC.write_text(
        header + "".join(f"{key} {reason}\n" for key, reason in sorted(unstable.items())),
        "utf-8")


def fixture_outcomes(queries: list[tuple[str, str]], parallelisms: list[int]
                     ) -> dict[int, dict[str, tuple[str, Any]]]:
    outcomes: dict[int, dict[str, tuple[str, Any]]] = {}
    unstable = corpus.read_listing(corpus.NONDETERMINISTIC)
    for p in parallelisms:
        outcomes[p] = {}
        for qid, _ in queries:
            path = corpus.expected(qid, p)
            if f"{qid}_p{p}" in unstable:
                outcomes[p][qid] = ("nondeterministic", unstable[f"{qid}_p{p}"])
            elif path is None:
                outcomes[p][qid] = ("error", "no fixture")
            else:
                outcomes[p][qid] = ("ok", corpus.read_fixture(path)[1])
    return outcomes


# --- flowsql and the comparison --------------------------------------------------------

def compare(queries: list[tuple[str, str]], outcomes: dict[int, dict[str, tuple[str, Any]]]
            ) -> dict[str, dict[str, str]]:
    """Per ``<id>_p<P>``: status (match / differs / flowsql-error / flink-error /
    nondeterministic) and evidence."""
    verdicts: dict[str, dict[str, str]] = {}
    for p, per_query in outcomes.items():
        runner = corpus.FlowsqlRunner(p)
        started = time.perf_counter()
        try:
            for qid, sql in queries:
                key = f"{qid}_p{p}"
                status, flink = per_query.get(qid, ("error", "not run"))
                if corpus.depends_on_timing(sql, p):
                    verdicts[key] = {"status": "timing", "evidence": "lateness depends on "
                                     "when the idle source subtask finishes"}
                    continue
                if status == "error":
                    verdicts[key] = {"status": "flink-error", "evidence": str(flink)}
                    continue
                if status == "nondeterministic":
                    verdicts[key] = {"status": "nondeterministic", "evidence": str(flink)}
                    continue
                try:
                    _, ours = runner.run(sql)
                except Exception as e:  # noqa: BLE001 - any failure is a verdict
                    first = str(e).strip().splitlines()[0] if str(e).strip() else repr(e)
                    verdicts[key] = {"status": "flowsql-error",
                                     "evidence": f"{type(e).__name__}: {first}"[:300]}
                    continue
                if ours == flink:
                    verdicts[key] = {"status": "match", "evidence": ""}
                else:
                    verdicts[key] = {"status": "differs",
                                     "evidence": corpus.describe_difference(flink, ours)}
        finally:
            runner.close()
        print(f"flowsql p{p}: {len(queries)} queries in "
              f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
    return verdicts


def summary(verdicts: dict[str, dict[str, str]], parallelisms: list[int]) -> str:
    lines = ["| parallelism | queries | match | differs | flowsql error | Flink "
             "non-deterministic | timing-dependent | Flink error |",
             "|---|---|---|---|---|---|---|---|"]
    for p in parallelisms:
        mine = [v["status"] for k, v in verdicts.items() if k.endswith(f"_p{p}")]
        count = Counter(mine)
        lines.append(f"| {p} | {len(mine)} | {count['match']} | {count['differs']} | "
                     f"{count['flowsql-error']} | {count['nondeterministic']} | "
                     f"{count['timing']} | {count['flink-error']} |")
    return "\n".join(lines)


def write_known(verdicts: dict[str, dict[str, str]]) -> None:
    """Every difference as ``<id>_p<P> <first line of evidence>``, keeping the reasons
    already written for keys that still differ and the lines of queries not run now."""
    old = corpus.read_listing(corpus.KNOWN_DIFFERENCES)
    listing = {key: reason for key, reason in old.items() if key not in verdicts}
    for key, verdict in verdicts.items():
        if verdict["status"] in ("differs", "flowsql-error"):
            evidence = verdict["evidence"].splitlines()[0]
            listing[key] = old.get(key) or f"{verdict['status']}: {evidence}"
    lines = [f"{key} {reason}\n" for key, reason in sorted(listing.items())]
    header = ("# Corpus queries on which flowsql is known to differ from Flink: "
              "<query>_p<parallelism> reason.\n# tests/flink/test_flink_fixtures.py fails "
              "when a listed query matches again: then remove its line.\n")
    corpus.KNOWN_DIFFERENCES.write_text(header + "".join(lines), "utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--parallelism", default="1,2")
    parser.add_argument("--runs", type=int, default=2, help="Flink repeats per query")
    parser.add_argument("--chunk", type=int, default=40, help="queries per Flink job")
    parser.add_argument("--only", default=None, help="regex over query ids")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--regenerate", action="store_true",
                        help="rewrite the data files and generated.sql first")
    parser.add_argument("--from-fixtures", action="store_true",
                        help="compare with the stored fixtures instead of running Flink")
    parser.add_argument("--from-cache", action="store_true",
                        help=f"reuse the Flink results of the last run ({CACHE})")
    parser.add_argument("--write-fixtures", action="store_true")
    parser.add_argument("--known", action="store_true",
                        help="write known_differences.txt from the differences found")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH")
    args = parser.parse_args(argv)
    parallelisms = [int(p) for p in args.parallelism.split(",")]
    if args.regenerate:
        generate(corpus.DATA)
        flink_diff_corpus.GENERATED.write_text(
            flink_diff_corpus.render(flink_diff_corpus.corpus()), "utf-8")
    queries = corpus.load_corpus()
    if args.only:
        queries = [q for q in queries if re.search(args.only, q[0])]
    cache = CACHE / "flink_results.json"
    if args.from_fixtures:
        outcomes = fixture_outcomes(queries, parallelisms)
    elif args.from_cache:
        outcomes, columns = load_cache(cache)
        wanted = {qid for qid, _ in queries}
        outcomes = {p: {q: o for q, o in per_query.items() if q in wanted}
                    for p, per_query in outcomes.items() if p in parallelisms}
    else:
        if not VENV_PYTHON.exists():
            from flink_baseline import ensure_venv  # creates .venv-flink with apache-flink

            ensure_venv(sys.executable)
        per_parallelism, report = run_flink(queries, parallelisms, args.runs, args.chunk,
                                            args.timeout)
        outcomes = {p: {qid: flink_outcome(entry, args.runs) for qid, entry in per_query.items()}
                    for p, per_query in per_parallelism.items()}
        columns = {qid: [name for name, _ in entry["columns"]]
                   for qid, entry in report.items() if entry["columns"]}
        save_cache(cache, outcomes, columns)
    if args.write_fixtures and not args.from_fixtures:
        write_fixtures(outcomes, columns, dict(queries))
    verdicts = compare(queries, outcomes)
    print(summary(verdicts, parallelisms))
    for key, verdict in sorted(verdicts.items()):
        if verdict["status"] != "match":
            print(f"{key}: {verdict['status']}: {verdict['evidence'].splitlines()[0]}"
                  if verdict["evidence"] else f"{key}: {verdict['status']}")
    if args.known:
        write_known(verdicts)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(verdicts, indent=1), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
