"""The generated part of the Flink differential corpus: queries made by systematic
variation (aggregate sets x window kinds x keys x watermark delays, OVER frames x
aggregates x delays, join kinds x bounds x inputs, ...), written to
``tests/flink/queries/generated.sql`` as named queries (``-- name: <id>``), next to the
hand-written ``handwritten.sql``. The tables they read are declared in
``tests/flink/flink_corpus.py``: ``orders``, ``bids`` and ``clicks`` (out-of-order and late
rows, 2-second watermark delay), the same files as ``<table>_w0`` and ``<table>_w5``
(0 and 5 seconds), and ``<table>_ok`` (out of order but never late).

Every query is written to be deterministic in Flink given per-record watermarks and one
reading source subtask; where that is not so (two inputs whose interleaving decides what
is late), ``flink_diff.py`` finds it by repeating the runs.

    python benchmarks/flink_diff_corpus.py     # rewrites generated.sql
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "tests" / "flink" / "queries" / "generated.sql"

WINDOWS = {
    "tumble5": "TUMBLE(TABLE {t}, DESCRIPTOR(ts), INTERVAL '5' SECOND)",
    "tumble10": "TUMBLE(TABLE {t}, DESCRIPTOR(ts), INTERVAL '10' SECOND)",
    "hop2x6": "HOP(TABLE {t}, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND)",
    "cumulate3x9": "CUMULATE(TABLE {t}, DESCRIPTOR(ts), INTERVAL '3' SECOND, "
                   "INTERVAL '9' SECOND)",
    "session2": "SESSION(TABLE {t}{partition}, DESCRIPTOR(ts), INTERVAL '2' SECOND)",
}

#: aggregate sets over ``orders`` (amount DOUBLE, qty INT with NULLs, product STRING)
ORDER_AGGS = {
    "count": "COUNT(*) AS c",
    "sum": "COUNT(*) AS c, SUM(qty) AS sq",
    "minmax": "MIN(amount) AS mn, MAX(amount) AS mx",
    "avg": "AVG(amount) AS aa, SUM(amount) AS sa",
    "avgint": "AVG(qty) AS aq",
    "countcol": "COUNT(qty) AS cq, MIN(product) AS mp",
    "distinct": "COUNT(DISTINCT product) AS dp",
    "sumdistinct": "SUM(DISTINCT qty) AS sdq, COUNT(DISTINCT qty) AS cdq",
    "stddev": "STDDEV_POP(amount) AS sd, VAR_SAMP(amount) AS vs",
    "filter": "COUNT(*) FILTER (WHERE qty > 2) AS big, SUM(amount) FILTER "
              "(WHERE product = 'fig') AS figs",
    "maxstr": "MAX(product) AS mxp, MIN(order_id) AS first_id",
}

KEYS = {"none": [], "user": ["user_id"], "product": ["product"],
        "user_product": ["user_id", "product"]}

OVER_FRAMES = {
    "rows1": "ROWS BETWEEN 1 PRECEDING AND CURRENT ROW",
    "rows2": "ROWS BETWEEN 2 PRECEDING AND CURRENT ROW",
    "rows5": "ROWS BETWEEN 5 PRECEDING AND CURRENT ROW",
    "rowsunb": "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
    "range3s": "RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW",
    "range10s": "RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW",
    "rangeunb": "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
}

OVER_AGGS = {
    "sum": "SUM(amount) OVER (w) AS s",
    "count": "COUNT(qty) OVER (w) AS c",
    "minmax": "MIN(amount) OVER (w) AS mn, MAX(amount) OVER (w) AS mx",
    "avg": "AVG(amount) OVER (w) AS a",
}


def window_aggregate(table: str, window: str, keys: list[str], aggs: str) -> str:
    partition = ""
    if keys and window == "session2":
        partition = f" PARTITION BY {keys[0]}" if len(keys) == 1 else (
            f" PARTITION BY ({', '.join(keys)})")
    tvf = WINDOWS[window].format(t=table, partition=partition)
    key_list = "".join(f"{k}, " for k in keys)
    return (f"SELECT {key_list}window_start, window_end, {aggs}\n"
            f"FROM TABLE({tvf})\nGROUP BY {key_list}window_start, window_end")


def window_aggregates() -> dict[str, str]:
    queries: dict[str, str] = {}
    for window in WINDOWS:
        for agg, aggs in ORDER_AGGS.items():
            if window.startswith("hop") and agg == "sumdistinct":
                continue  # Flink cannot plan SUM(DISTINCT ..) over HOP windows
            queries[f"wagg_{window}_{agg}_user"] = window_aggregate(
                "orders", window, ["user_id"], aggs)
            if agg != "sum":  # the never-late input: checked at parallelism 2 as well
                queries[f"wagg_{window}_{agg}_user_ok"] = window_aggregate(
                    "orders_ok", window, ["user_id"], aggs)
        for key, keys in KEYS.items():
            if key != "user":
                queries[f"wagg_{window}_sum_{key}"] = window_aggregate(
                    "orders", window, keys, ORDER_AGGS["sum"])
        for table in ("orders_w0", "orders_w5", "orders_ok"):
            queries[f"wagg_{window}_sum_user_{table}"] = window_aggregate(
                table, window, ["user_id"], ORDER_AGGS["sum"])
        queries[f"wagg_{window}_bids_item"] = window_aggregate(
            "bids", window, ["item"], "COUNT(*) AS c, MAX(price) AS mx, SUM(price) AS s")
        queries[f"wagg_{window}_clicks_url"] = window_aggregate(
            "clicks", window, ["url"], "COUNT(DISTINCT user_id) AS users, AVG(dur) AS ad")
    return queries


def group_aggregates() -> dict[str, str]:
    queries: dict[str, str] = {}
    for agg, aggs in ORDER_AGGS.items():
        for key in ("user", "product"):
            keys = ", ".join(KEYS[key])
            queries[f"gagg_{agg}_{key}"] = (f"SELECT {keys}, {aggs}\nFROM orders\n"
                                            f"GROUP BY {keys}")
        queries[f"gagg_{agg}_none"] = f"SELECT {aggs}\nFROM orders"
    for limit in (10, 15, 20):
        queries[f"gagg_having_count{limit}"] = (
            "SELECT user_id, COUNT(*) AS c, SUM(amount) AS s\nFROM orders\n"
            f"GROUP BY user_id\nHAVING COUNT(*) > {limit}")
    for outer in ("COUNT(*) AS users", "SUM(c) AS total", "MAX(c) AS most"):
        name = outer.split()[-1]
        queries[f"gagg_nested_{name}"] = (
            f"SELECT c, {outer}\nFROM (SELECT user_id, COUNT(*) AS c FROM orders "
            "GROUP BY user_id)\nGROUP BY c")
    return queries


def over_aggregates() -> dict[str, str]:
    queries: dict[str, str] = {}
    for frame, spec in OVER_FRAMES.items():
        for agg, aggs in OVER_AGGS.items():
            window = f"PARTITION BY user_id ORDER BY ts {spec}"
            for table in ("orders", "orders_ok"):
                suffix = "" if table == "orders" else "_ok"
                if suffix and agg == "sum":
                    continue  # over_<frame>_sum_orders_ok below
                queries[f"over_{frame}_{agg}{suffix}"] = (
                    f"SELECT order_id, user_id, ts, {aggs.replace('(w)', f'({window})')}\n"
                    f"FROM {table}")
        for table in ("orders_w0", "orders_w5", "orders_ok"):
            queries[f"over_{frame}_sum_{table}"] = (
                "SELECT order_id, user_id, ts,\n  SUM(amount) OVER (PARTITION BY user_id "
                f"ORDER BY ts {spec}) AS s\nFROM {table}")
        queries[f"over_{frame}_count_product"] = (
            "SELECT order_id, product, ts,\n  COUNT(*) OVER (PARTITION BY product "
            f"ORDER BY ts {spec}) AS c\nFROM orders")
    return queries


def top_n() -> dict[str, str]:
    queries: dict[str, str] = {}
    for n in (1, 2, 3):
        for direction in ("DESC", "ASC"):
            for key, column in (("user", "user_id"), ("product", "product")):
                queries[f"topn_{key}_{direction.lower()}_{n}"] = (
                    "SELECT * FROM (\n  SELECT order_id, user_id, product, amount,\n"
                    f"    ROW_NUMBER() OVER (PARTITION BY {column} ORDER BY amount "
                    f"{direction}) AS rn\n  FROM orders)\nWHERE rn <= {n}")
    for table in ("orders", "orders_w0", "orders_ok"):
        for direction, name in (("ASC", "first"), ("DESC", "last")):
            queries[f"dedup_{name}_{table}"] = (
                "SELECT order_id, user_id, amount, ts FROM (\n  SELECT *, ROW_NUMBER() OVER "
                f"(PARTITION BY user_id ORDER BY ts {direction}) AS rn\n  FROM {table})\n"
                "WHERE rn = 1")
    return queries


def window_top_n() -> dict[str, str]:
    queries: dict[str, str] = {}
    for window in ("tumble5", "tumble10", "hop2x6", "cumulate3x9"):
        for n in (1, 3):
            for table in ("orders", "orders_ok"):
                inner = window_aggregate(table, window, ["user_id"],
                                         "SUM(amount) AS s, COUNT(*) AS c")
                suffix = "" if table == "orders" else "_ok"
                queries[f"wtopn_agg_{window}_{n}{suffix}"] = (
                    "SELECT * FROM (\n  SELECT *, ROW_NUMBER() OVER (PARTITION BY "
                    "window_start, window_end ORDER BY s DESC) AS rn\n"
                    f"  FROM ({inner}))\nWHERE rn <= {n}")
        tvf = WINDOWS[window].format(t="bids", partition="")
        queries[f"wtopn_rows_{window}"] = (
            "SELECT * FROM (\n  SELECT bid_id, item, price, window_start, window_end,\n"
            "    ROW_NUMBER() OVER (PARTITION BY window_start, window_end, item "
            f"ORDER BY price DESC, bid_id) AS rn\n  FROM TABLE({tvf}))\nWHERE rn <= 2")
    return queries


def joins() -> dict[str, str]:
    queries: dict[str, str] = {}
    for suffix in ("", "_ok"):
        o, c, b = f"orders{suffix}", f"clicks{suffix}", f"bids{suffix}"
        for kind in ("JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"):
            name = kind.split()[0].lower()
            queries[f"join_{name}_orders_bids{suffix}"] = (
                f"SELECT o.order_id, o.user_id, b.bid_id, b.price\nFROM {o} AS o {kind} "
                f"{b} AS b\n  ON o.user_id = b.user_id AND o.qty * 100 > b.price")
        for lower, upper in ((2, 2), (0, 5), (5, 0), (10, 10)):
            queries[f"ijoin_{lower}_{upper}{suffix}"] = (
                f"SELECT o.order_id, c.url, c.dur\nFROM {o} AS o JOIN {c} AS c\n"
                f"  ON o.user_id = c.user_id AND c.ts BETWEEN o.ts - INTERVAL '{lower}' "
                f"SECOND AND o.ts + INTERVAL '{upper}' SECOND")
        for kind in ("LEFT JOIN", "FULL JOIN"):
            name = kind.split()[0].lower()
            queries[f"ijoin_{name}_3_3{suffix}"] = (
                f"SELECT o.order_id, c.url, c.dur\nFROM {o} AS o {kind} {c} AS c\n"
                "  ON o.user_id = c.user_id AND c.ts BETWEEN o.ts - INTERVAL '3' SECOND "
                "AND o.ts + INTERVAL '3' SECOND")
        for window in ("tumble5", "hop2x6", "cumulate3x9"):
            lw = WINDOWS[window].format(t=o, partition="")
            rw = WINDOWS[window].format(t=c, partition="")
            for kind in ("JOIN", "LEFT JOIN", "FULL JOIN"):
                name = kind.split()[0].lower()
                queries[f"wjoin_{window}_{name}{suffix}"] = (
                    "SELECT L.user_id, L.window_start, L.window_end, L.n, R.clicks\n"
                    "FROM (SELECT user_id, window_start, window_end, COUNT(*) AS n "
                    f"FROM TABLE({lw})\n      GROUP BY user_id, window_start, window_end) L\n"
                    f"{kind} (SELECT user_id, window_start, window_end, COUNT(*) AS clicks "
                    f"FROM TABLE({rw})\n      GROUP BY user_id, window_start, window_end) R\n"
                    "  ON L.user_id = R.user_id AND L.window_start = R.window_start "
                    "AND L.window_end = R.window_end")
            queries[f"wjoin_rows_{window}{suffix}"] = (
                "SELECT L.order_id, R.url, L.window_start\n"
                f"FROM (SELECT * FROM TABLE({lw})) L\nJOIN (SELECT * FROM TABLE({rw})) R\n"
                "  ON L.user_id = R.user_id AND L.window_start = R.window_start "
                "AND L.window_end = R.window_end")
    return queries


def unions() -> dict[str, str]:
    queries: dict[str, str] = {}
    both = ("SELECT user_id, ts, 'order' AS kind FROM orders\nUNION ALL\n"
            "SELECT user_id, ts, 'click' AS kind FROM clicks")
    queries["union_rows"] = both
    for window in ("tumble5", "hop2x6", "session2"):
        tvf = WINDOWS[window].format(t="u", partition=" PARTITION BY user_id"
                                     if window == "session2" else "")
        queries[f"union_wagg_{window}"] = (
            f"WITH u AS (\n{both})\n"
            f"SELECT user_id, window_start, window_end, COUNT(*) AS c\nFROM TABLE({tvf})\n"
            "GROUP BY user_id, window_start, window_end")
    queries["union_group"] = (f"SELECT kind, COUNT(*) AS c\nFROM ({both})\nGROUP BY kind")
    return queries


def corpus() -> dict[str, str]:
    queries: dict[str, str] = {}
    for family in (window_aggregates, group_aggregates, over_aggregates, top_n,
                   window_top_n, joins, unions):
        for name, sql in family().items():
            if name in queries:
                raise ValueError(f"duplicate query id {name}")
            queries[name] = sql
    return queries


def render(queries: dict[str, str]) -> str:
    header = ("-- Generated by benchmarks/flink_diff_corpus.py: do not edit, re-run it.\n"
              "-- Each query runs on Flink and on flowsql in streaming mode (p1 and p2).\n")
    return header + "".join(f"\n-- name: {name}\n{sql};\n" for name, sql in queries.items())


def main() -> int:
    queries = corpus()
    GENERATED.parent.mkdir(parents=True, exist_ok=True)
    GENERATED.write_text(render(queries), encoding="utf-8")
    print(f"{len(queries)} queries -> {GENERATED}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
