"""Flink SQL over Kafka in one command: page views per page in 5-second tumbling windows.

What it does, step by step (``make kafka-demo``, or ``python examples/kafka_demo.py`` from the
repository root):

1. starts a Kafka-protocol broker on this machine (the dev broker of the test suite,
   memory-only, on a free loopback port);
2. produces page views (user, page, event time) covering about 15 seconds of event time
   into a topic of two partitions, a little out of order (up to 1.5 s), from a seeded
   generator, so every run prints the same windows;
3. declares the topic as a table, with a watermark 2 seconds behind the largest event
   time seen, and runs a TUMBLE window aggregation over it, printing each window's rows as
   the watermark closes it; the read is bounded (it stops at the topic's end offsets), so
   the query ends by itself;
4. stops the broker.

The SQL is printed before it runs: copy it into ``flowsql shell`` against your own broker.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from the repository root
    sys.path.insert(0, str(ROOT))

import flowsql  # noqa: E402
from tests.harness.kafka_broker import DevBroker  # noqa: E402

TOPIC = "pageviews"
PARTITIONS = 2
SEED = 2024
START = datetime(2024, 5, 1, 12, 0, 0)
SPAN_MS = 15_000
MAX_DISORDER_MS = 1_500
PAGES = ("/home", "/products", "/cart", "/checkout")
PAGE_WEIGHTS = (5, 3, 2, 1)
USERS = 8

CREATE_TABLE = """CREATE TABLE pageviews (
  `user` STRING,
  page   STRING,
  ts     TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = '{topic}',
  'properties.bootstrap.servers' = '{bootstrap}',
  'format' = 'json',
  'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset'
)"""

WINDOWED_COUNT = """SELECT window_start, window_end, page, COUNT(*) AS views
FROM TABLE(TUMBLE(TABLE pageviews, DESCRIPTOR(ts), INTERVAL '5' SECOND))
GROUP BY window_start, window_end, page"""


def page_views(events: int, seed: int = SEED) -> list[dict[str, Any]]:
    """``events`` page views spread evenly over ``SPAN_MS`` of event time, each moved back
    by a random 0 .. ``MAX_DISORDER_MS`` ms (never before ``START``), so the topic is a
    little out of order but no view is later than the watermark's 2 s allowance. The
    partition is the user's number modulo 2. Deterministic for a given seed."""
    rng = random.Random(seed)
    views = []
    for i in range(events):
        user = rng.randrange(USERS)
        page = rng.choices(PAGES, PAGE_WEIGHTS)[0]
        millis = max(0, i * SPAN_MS // events - rng.randint(0, MAX_DISORDER_MS))
        ts = START + timedelta(milliseconds=millis)
        views.append({"user": f"user{user}", "page": page,
                      "ts": timestamp(ts),
                      "partition": user % PARTITIONS})
    return views


def main(events: int = 400, seed: int = SEED, out: TextIO = sys.stdout) -> int:
    """Run the demo end to end, printing to ``out``; 0 when the query ran to its end."""
    views = page_views(events, seed)
    say = print_to(out)
    say("== starting a Kafka broker on this machine")
    with DevBroker() as broker:
        broker.create_topic(TOPIC, PARTITIONS)
        broker.produce(TOPIC, [{"value": {k: v[k] for k in ("user", "page", "ts")},
                                "key": v["user"], "partition": v["partition"]}
                               for v in views])
        say(f"== produced {len(views)} page views into topic '{TOPIC}' "
            f"({PARTITIONS} partitions), {SPAN_MS // 1000} s of event time, up to "
            f"{MAX_DISORDER_MS} ms out of order; for example:")
        for view in views[:3]:
            say(f"   {json_line(view)}")
        session = flowsql.connect()
        try:
            statements = ["SET 'execution.runtime-mode' = 'streaming'",
                          CREATE_TABLE.format(topic=TOPIC, bootstrap=broker.bootstrap)]
            for statement in statements:
                say(f"\n{statement};")
                session.sql(statement)
            say(f"\n{WINDOWED_COUNT};\n")
            say("== windows, printed as the watermark closes them:")
            say(ROW_FORMAT.format("window_start", "window_end", "page", "views"))
            for batch in session.sql(WINDOWED_COUNT).stream():
                rows = sorted(zip(*(batch.column(n).to_pylist() for n in
                                    ("window_start", "window_end", "page", "views"))))
                for start, end, page, count in rows:
                    say(ROW_FORMAT.format(timestamp(start), timestamp(end), page, count))
        finally:
            session.close()
    say("== done: the read was bounded by the topic's end offsets; broker stopped")
    return 0


ROW_FORMAT = "{:<23}  {:<23}  {:<10}  {:>5}"


def timestamp(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"


def json_line(view: dict[str, Any]) -> str:
    return (f'partition {view["partition"]}: {{"user": "{view["user"]}", '
            f'"page": "{view["page"]}", "ts": "{view["ts"]}"}}')


def print_to(out: TextIO) -> Callable[[str], None]:
    def say(text: str) -> None:
        print(text, file=out, flush=True)

    return say


def cli(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=400, help="page views to produce")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    return main(args.events, args.seed)


if __name__ == "__main__":
    raise SystemExit(cli())
