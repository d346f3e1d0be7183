"""Seeded event files for the Flink differential corpus: orders, bids and clicks.

Each table is one headerless CSV file (the form both engines read with the ``filesystem``
connector) whose last column ``ts`` is the event time, ``yyyy-MM-dd HH:mm:ss.SSS`` from
2024-01-01 00:00:00. Rows advance about 0.6 s apart over about a minute, several keys
each, in one of two shapes:

* ``messy``: out of order by up to 1.5 s, plus about one row in ten that is late by 3 to
  15 s (dropped by event-time operators under a 2-second watermark delay), and a few
  rows with the same timestamp;
* ``clean``: out of order by less than 1 s only, so under a 2-second watermark delay no
  row is late and the result of every operator is independent of how two inputs
  interleave.

Nullable numeric columns hold NULL as an empty field in a few rows. One file per table
keeps both engines' sources at one reading subtask at parallelism 2 as well. The same
seed always writes the same bytes.

    python benchmarks/flink_diff_data.py [--out tests/flink/data] [--seed 7] [--rows 90]
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import random
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "tests" / "flink" / "data"
EPOCH = dt.datetime(2024, 1, 1)
USERS = ("u1", "u2", "u3", "u4", "u5")
PRODUCTS = ("apple", "fig", "pear", "plum")
ITEMS = ("i1", "i2", "i3", "i4")
URLS = ("/cart", "/home", "/pay", "/search")

Row = list[str]


def event_times(rng: random.Random, rows: int, messy: bool) -> list[float]:
    """Event times in seconds, in arrival order: a rising base time with jitter, and for
    ``messy`` some late rows and duplicates of the previous timestamp."""
    times: list[float] = []
    base = 0.0
    for _ in range(rows):
        base += rng.uniform(0.1, 1.1)
        if messy and times and rng.random() < 0.1:
            times.append(max(0.0, base - rng.uniform(3.0, 15.0)))
        elif messy and times and rng.random() < 0.05:
            times.append(times[-1])
        else:
            jitter = rng.uniform(0.0, 1.5 if messy else 0.9)
            times.append(max(0.0, base - jitter))
    return [round(t, 3) for t in times]


def timestamp(seconds: float) -> str:
    moment = EPOCH + dt.timedelta(milliseconds=round(seconds * 1000))
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def nullable(rng: random.Random, value: str) -> str:
    return "" if rng.random() < 0.06 else value


def order_row(rng: random.Random, i: int) -> Row:
    return [str(1000 + i), rng.choice(USERS), rng.choice(PRODUCTS),
            f"{rng.randint(100, 9999) / 100:.2f}", nullable(rng, str(rng.randint(1, 5)))]


def bid_row(rng: random.Random, i: int) -> Row:
    return [str(5000 + i), rng.choice(ITEMS), rng.choice(USERS),
            nullable(rng, str(rng.randint(10, 500)))]


def click_row(rng: random.Random, i: int) -> Row:
    return [rng.choice(USERS), rng.choice(URLS), str(rng.randint(1, 120))]


#: table -> row maker (the columns before ``ts``); the DDL lives with the corpus
TABLES: dict[str, Callable[[random.Random, int], Row]] = {
    "orders": order_row, "bids": bid_row, "clicks": click_row}


def write_table(path: Path, make: Callable[[random.Random, int], Row], seed: int, rows: int,
                messy: bool) -> None:
    rng = random.Random(seed)
    times = event_times(rng, rows, messy)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        for i, seconds in enumerate(times):
            writer.writerow([*make(rng, i), timestamp(seconds)])


def generate(out: Path, seed: int = 7, rows: int = 90) -> list[Path]:
    """Writes ``<table>.csv`` (messy) and ``<table>_ok.csv`` (clean) for every table."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for index, (table, make) in enumerate(TABLES.items()):
        for suffix, messy in (("", True), ("_ok", False)):
            path = out / f"{table}{suffix}.csv"
            write_table(path, make, seed * 100 + index * 2 + int(messy), rows, messy)
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rows", type=int, default=90)
    args = parser.parse_args(argv)
    for path in generate(args.out, args.seed, args.rows):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
