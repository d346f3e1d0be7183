"""The Kafka demo (``make kafka-demo``) end to end with 40 page views: the windows it prints
are the counts worked out by hand from its seeded events.

The 40 views span 12:00:00 .. 12:00:13.418 with reordering inside each partition (e.g.
partition 1 holds 00.105 before 00.010), never more than the watermark's 2 s allowance, so
no view is dropped as late and every view is counted in its 5 s window.
"""

from __future__ import annotations

import importlib.util
import io
import re
from pathlib import Path
from types import ModuleType

DEMO = Path(__file__).resolve().parents[4] / "examples" / "kafka_demo.py"
ROW = re.compile(r"^(2024-05-01 \S+)  (2024-05-01 \S+)  (/\w+)\s+(\d+)$")

# (window_start, window_end, page, views), counted from the 40 events listed by
# page_views(40): e.g. /home in [00, 05): 00.000, 00.000, 00.010, 00.434, 04.464, 04.602
EXPECTED = [
    ("2024-05-01 12:00:00.000", "2024-05-01 12:00:05.000", "/cart", 4),
    ("2024-05-01 12:00:00.000", "2024-05-01 12:00:05.000", "/checkout", 1),
    ("2024-05-01 12:00:00.000", "2024-05-01 12:00:05.000", "/home", 6),
    ("2024-05-01 12:00:00.000", "2024-05-01 12:00:05.000", "/products", 5),
    ("2024-05-01 12:00:05.000", "2024-05-01 12:00:10.000", "/cart", 3),
    ("2024-05-01 12:00:05.000", "2024-05-01 12:00:10.000", "/checkout", 1),
    ("2024-05-01 12:00:05.000", "2024-05-01 12:00:10.000", "/home", 7),
    ("2024-05-01 12:00:05.000", "2024-05-01 12:00:10.000", "/products", 2),
    ("2024-05-01 12:00:10.000", "2024-05-01 12:00:15.000", "/cart", 3),
    ("2024-05-01 12:00:10.000", "2024-05-01 12:00:15.000", "/home", 3),
    ("2024-05-01 12:00:10.000", "2024-05-01 12:00:15.000", "/products", 5),
]


def _demo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kafka_demo", DEMO)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_seeded_events_are_the_ones_counted_by_hand() -> None:
    views = _demo().page_views(40)
    assert [(v["ts"][11:], v["page"], v["partition"]) for v in views[:6]] == [
        ("12:00:00.000", "/home", 1), ("12:00:00.000", "/home", 0),
        ("12:00:00.207", "/cart", 0), ("12:00:00.105", "/products", 1),
        ("12:00:00.010", "/home", 1), ("12:00:00.434", "/home", 1)]
    assert len(views) == 40


def test_demo_prints_the_sql_and_the_hand_counted_windows() -> None:
    out = io.StringIO()
    assert _demo().main(events=40, out=out) == 0
    text = out.getvalue()
    assert "WATERMARK FOR ts AS ts - INTERVAL '2' SECOND" in text
    assert "TUMBLE(TABLE pageviews, DESCRIPTOR(ts), INTERVAL '5' SECOND)" in text
    rows = [m.groups() for line in text.splitlines() if (m := ROW.match(line))]
    assert sorted((s, e, p, int(c)) for s, e, p, c in rows) == EXPECTED
