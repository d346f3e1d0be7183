"""IS [NOT] TRUE / FALSE / NULL / UNKNOWN bind looser than comparison, equality and
arithmetic (standard SQL, Flink/Calcite): ``qty > 2 IS TRUE`` is ``(qty > 2) IS TRUE``.
Checked on the parse tree and on hand-checked rows (qty 1, 3, NULL)."""

from __future__ import annotations

import pyarrow as pa
import pytest
import sqlglot
from sqlglot import exp

import flowsql
from flowsql.sql.dialect import DIALECT


@pytest.mark.parametrize("text, operand", [
    ("qty > 2 IS TRUE", exp.GT),
    ("qty >= 2 IS NOT TRUE", exp.GTE),
    ("qty < 2 IS FALSE", exp.LT),
    ("qty = 2 IS NOT FALSE", exp.EQ),
    ("qty <> 2 IS NULL", exp.NEQ),
    ("qty + 1 IS NULL", exp.Add),
    ("qty * 2 > 2 IS UNKNOWN", exp.GT),
])
def test_is_predicate_takes_the_whole_comparison(text: str, operand: type) -> None:
    tree = sqlglot.parse_one(f"SELECT {text}", read=DIALECT).expressions[0]
    is_ = tree.this if isinstance(tree, exp.Not) else tree
    assert isinstance(is_, exp.Is)
    inner = is_.this.unnest() if isinstance(is_.this, exp.Paren) else is_.this
    assert isinstance(inner, operand)


def test_is_predicate_still_binds_tighter_than_not_and_and() -> None:
    tree = sqlglot.parse_one("SELECT NOT qty IS NULL AND qty > 1 IS TRUE",
                             read=DIALECT).expressions[0]
    assert isinstance(tree, exp.And)
    assert isinstance(tree.this, exp.Not) and isinstance(tree.this.this, exp.Is)
    assert isinstance(tree.expression, exp.Is)


@pytest.mark.parametrize("mode", ["batch", "streaming"])
def test_results_follow_the_standard_precedence(tmp_path, mode: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text("1,1\n2,3\n3,\n")
    session = flowsql.connect(**{"execution.runtime-mode": mode})
    session.sql(f"CREATE TABLE t (id INT, qty INT) WITH ('connector' = 'filesystem', "
                f"'path' = '{path}', 'format' = 'csv', 'csv.null-literal' = '')")
    rows = session.sql(
        "SELECT id, qty > 2 IS TRUE AS a, qty > 2 IS NOT TRUE AS b, qty > 2 IS FALSE AS c, "
        "qty = 3 IS NOT FALSE AS d, qty > 2 IS UNKNOWN AS e, qty + 1 IS NULL AS f, "
        "qty - 1 > 1 IS NOT NULL AS g FROM t").to_arrow()
    got = sorted(rows.to_pylist(), key=lambda r: r["id"])
    # qty 1: 1 > 2 false; qty 3: true; qty NULL: unknown
    assert got == [
        {"id": 1, "a": False, "b": True, "c": True, "d": False, "e": False, "f": False,
         "g": True},
        {"id": 2, "a": True, "b": False, "c": False, "d": True, "e": False, "f": False,
         "g": True},
        {"id": 3, "a": False, "b": True, "c": False, "d": True, "e": True, "f": True,
         "g": False},
    ]
    assert pa.types.is_boolean(rows.schema.field("a").type)
