"""Small NULL-heavy tables for the differential suite, written once per test session.

TPC-H data has no NULLs, no empty strings and no negative keys, so it cannot catch the
classic three-valued-logic bugs. These tables do: about 30% of every nullable column is
NULL, join keys repeat and partly miss each other, strings include '' and LIKE wildcards,
numbers go negative. Doubles are multiples of 0.25 so that sums are exact in any order and
the oracle's result does not depend on how either engine parallelises an aggregate.

Every table is described once (:class:`TableFile`) and registered from that description in
both engines, so flowsql and DuckDB always read the very same bytes with the same types.
Generation is seeded: the data (and therefore every expected result) is identical on every
run.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import random
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

T = TypeVar("T")

_SEED = 20240601
_NULL_SHARE = 0.3

_WORDS = ("apple", "Apple", "banana", "", " pad ", "cherry pie", "a_b%c", "zeta", "APRICOT",
          "berry", "apple")
_LABELS = ("apple", "banana", "kiwi", "", "zeta", "Berry", "melon")
_ITEMS = ("bolt", "nut", "screw", "washer", "bolt", "gear")


@dataclass(frozen=True)
class TableFile:
    """One table on disk and how each engine registers it.

    ``columns`` is the declared column list (name, SQL type) that text formats need; Parquet
    tables leave it empty because both engines read the schema from the file.
    """

    name: str
    path: Path
    format: str
    columns: tuple[tuple[str, str], ...] = ()

    def flowsql_ddl(self) -> str:
        options = [("connector", "filesystem"), ("path", str(self.path)),
                   ("format", self.format)]
        if self.format == "csv":
            options.append(("csv.ignore-first-line", "true"))
        column_list = ""
        if self.columns:
            column_list = " (" + ", ".join(f"{n} {t}" for n, t in self.columns) + ")"
        with_clause = ", ".join(f"'{k}'='{v}'" for k, v in options)
        return f"CREATE TABLE {self.name}{column_list} WITH ({with_clause})"

    def duckdb_ddl(self) -> str:
        types = "{" + ", ".join(f"'{n}': '{t}'" for n, t in self.columns) + "}"
        if self.format == "parquet":
            source = f"read_parquet('{self.path}')"
        elif self.format == "csv":
            source = (f"read_csv('{self.path}', header=true, delim=',', quote='\"', "
                      f"auto_detect=false, columns={types})")
        else:
            source = f"read_json('{self.path}', format='newline_delimited', columns={types})"
        return f"CREATE VIEW {self.name} AS SELECT * FROM {source}"


def _maybe(rng: random.Random, value: T) -> T | None:
    return None if rng.random() < _NULL_SHARE else value


def _quarter_money(rng: random.Random, low: int, high: int) -> float:
    return rng.randint(low * 4, high * 4) / 4


def _nulls_a(rng: random.Random) -> pa.Table:
    """40 rows: unique ``id``, then one nullable column per SQL type."""
    start = dt.date(2019, 12, 31)
    special_days = [dt.date(2020, 1, 31), dt.date(2020, 2, 29), dt.date(2021, 12, 31)]
    rows = []
    for row_id in range(1, 41):
        day = (special_days[row_id % 3] if row_id % 7 == 0
               else start + dt.timedelta(days=rng.randint(0, 450)))
        rows.append({
            "id": row_id,
            "k": _maybe(rng, rng.randint(1, 8)),
            "i": _maybe(rng, rng.randint(-50, 50)),
            "bi": _maybe(rng, rng.randint(-10**12, 10**12)),
            "d": _maybe(rng, _quarter_money(rng, -100, 100)),
            "m": _maybe(rng, Decimal(rng.randint(-100000, 100000)) / 100),
            "s": _maybe(rng, rng.choice(_WORDS)),
            "dt": _maybe(rng, day),
            "b": _maybe(rng, rng.random() < 0.5),
        })
    schema = pa.schema([("id", pa.int32()), ("k", pa.int32()), ("i", pa.int32()),
                        ("bi", pa.int64()), ("d", pa.float64()), ("m", pa.decimal128(10, 2)),
                        ("s", pa.string()), ("dt", pa.date32()), ("b", pa.bool_())])
    return pa.Table.from_pylist(rows, schema=schema)


def _nulls_b(rng: random.Random) -> pa.Table:
    """24 rows whose keys overlap nulls_a's only partly (k 5..8 match, 9..12 do not)."""
    rows = [{
        "id": row_id,
        "k": _maybe(rng, rng.randint(5, 12)),
        "s": _maybe(rng, rng.choice(_LABELS)),
        "v": _maybe(rng, Decimal(rng.randint(-5000, 50000)) / 100),
        "w": _maybe(rng, _quarter_money(rng, -20, 20)),
        "dt": _maybe(rng, dt.date(2020, 1, 1) + dt.timedelta(days=rng.randint(0, 400))),
    } for row_id in range(1, 25)]
    schema = pa.schema([("id", pa.int32()), ("k", pa.int32()), ("s", pa.string()),
                        ("v", pa.decimal128(10, 2)), ("w", pa.float64()), ("dt", pa.date32())])
    return pa.Table.from_pylist(rows, schema=schema)


def _empty_t() -> pa.Table:
    schema = pa.schema([("id", pa.int32()), ("k", pa.int32()), ("m", pa.decimal128(10, 2)),
                        ("s", pa.string()), ("d", pa.float64())])
    return schema.empty_table()


_CSV_COLUMNS = (("id", "INTEGER"), ("item", "VARCHAR"), ("qty", "INTEGER"),
                ("price", "DOUBLE"), ("sold_on", "DATE"))
_JSON_COLUMNS = (("id", "INTEGER"), ("name", "VARCHAR"), ("score", "DOUBLE"),
                 ("flag", "BOOLEAN"), ("grp", "INTEGER"))


def _write_csv(rng: random.Random, path: Path) -> None:
    """Header plus 15 rows; NULLs are empty unquoted fields (numbers and dates only, since
    engines disagree on whether an empty string field is '' or NULL)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow([n for n, _ in _CSV_COLUMNS])
        for row_id in range(1, 16):
            qty = _maybe(rng, rng.randint(-3, 20))
            price = _maybe(rng, _quarter_money(rng, 0, 40))
            day = _maybe(rng, dt.date(2021, 1, 1) + dt.timedelta(days=rng.randint(0, 60)))
            writer.writerow([row_id, rng.choice(_ITEMS), "" if qty is None else qty,
                             "" if price is None else price,
                             "" if day is None else day.isoformat()])


def _write_json(rng: random.Random, path: Path) -> None:
    """12 newline-delimited objects; NULLs are JSON nulls."""
    lines = [json.dumps({
        "id": row_id,
        "name": _maybe(rng, rng.choice(_LABELS)),
        "score": _maybe(rng, _quarter_money(rng, -10, 10)),
        "flag": _maybe(rng, rng.random() < 0.5),
        "grp": _maybe(rng, rng.randint(1, 3)),
    }) for row_id in range(1, 13)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_tables(directory: Path) -> list[TableFile]:
    """Write every table into ``directory`` and describe how to register it."""
    rng = random.Random(_SEED)
    parquet = {"nulls_a": _nulls_a(rng), "nulls_b": _nulls_b(rng), "empty_t": _empty_t()}
    tables = []
    for name, table in parquet.items():
        path = directory / f"{name}.parquet"
        pq.write_table(table, path)
        tables.append(TableFile(name, path, "parquet"))
    csv_path = directory / "csv_t.csv"
    _write_csv(rng, csv_path)
    tables.append(TableFile("csv_t", csv_path, "csv", _CSV_COLUMNS))
    json_path = directory / "json_t.json"
    _write_json(rng, json_path)
    tables.append(TableFile("json_t", json_path, "json", _JSON_COLUMNS))
    return tables
