"""A small grammar of random queries over the tables of ``random_tables``, one query per seed.

Every query is valid and deterministic in flowsql and in DuckDB, so three runs of it can be
compared exactly:

* ROW_NUMBER and ROWS frames order by a unique ``id`` last (ties would make them arbitrary);
  RANK, DENSE_RANK and RANGE frames may order by duplicated keys (peers get equal values);
* ORDER BY always spells NULLS FIRST / LAST (the engines' defaults differ) and orders only by
  output columns holding exact values (never a float ``avg``, whose last bits may differ and
  reorder near-ties); rows that tie on the ORDER BY keys may come in any order, so the
  comparison (``result_equivalence``) checks the keys in order and the rows as a multiset;
* window partitions and join keys never hold more than a small share of a table (see
  ``random_tables``), so a spilling operator always can make progress at a 1 MiB budget.

Shapes (the ``shape`` label names them, e.g. ``aggregate-rollup<join-left+orderby-limit``):
``sort``, ``join-{inner,left,full}``, ``semi-{in,exists}``, ``anti-{not-exists,not-in}``,
``aggregate-{plain,distinct,grouping-sets,rollup,cube}`` over a table, a join or a UNION ALL,
``window``, and ``setop-{union,intersect,except}[-all]``; any of them may end in ORDER BY with
or without LIMIT (``+orderby``, ``+orderby-limit``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tests.property.random_tables import GROUPS, HOT_KEY, KEY_RANGE

TABLES = ("t1", "t2", "t3")
#: joins pair a table with one no larger than the second of these (t1 x t1 would multiply
#: the hot key's rows into a result too large for a fast test)
JOIN_PAIRS = (("t1", "t2"), ("t1", "t3"), ("t2", "t3"), ("t2", "t1"), ("t3", "t1"),
              ("t2", "t2"), ("t3", "t3"))
#: columns whose values are exact (every column of the tables is)
COLUMNS = ("id", "k", "g", "s", "d", "dt", "v")
GROUP_KEYS = ("g", "s", "dt", "k", "v")
PARTITION_KEYS = ("g", "s", "k", "dt")
SET_COLUMN_LISTS = (("k",), ("k", "s"), ("g", "dt"), ("s", "d"), ("g", "v"), ("k", "g", "s"))


@dataclass(frozen=True)
class Output:
    """One output column: its SQL expression, its alias, and whether its values are exact
    (only exact columns may be ORDER BY keys)."""

    sql: str
    name: str
    exact: bool = True


@dataclass(frozen=True)
class RandomQuery:
    """A generated query. ``order_positions`` are the output positions of its ORDER BY keys
    (empty: the result is a multiset); ``cut_head`` / ``cut_tail`` say OFFSET / LIMIT may have
    cut a group of rows tying on those keys, whose membership is then not determined."""

    seed: int
    shape: str
    sql: str
    order_positions: tuple[int, ...] = ()
    cut_head: bool = False
    cut_tail: bool = False


class _Grammar:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    # --- small parts ---------------------------------------------------------------------

    def chance(self, probability: float) -> bool:
        return self.rng.random() < probability

    def predicate(self, alias: str) -> str:
        r = self.rng
        choices = [
            lambda: f"{alias}.v > {r.randint(-900, 600)}",
            lambda: f"{alias}.d < {r.randint(-80_000, 90_000)}.{r.randint(0, 99):02d}",
            lambda: f"{alias}.dt >= DATE '199{r.randint(5, 8)}-0{r.randint(1, 9)}-1{r.randint(0, 9)}'",
            lambda: f"{alias}.g IN ({', '.join(str(g) for g in r.sample(range(GROUPS), 8))})",
            lambda: f"{alias}.s >= '{r.choice('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz')}'",
            lambda: f"({alias}.k IS NULL OR {alias}.v < {r.randint(-500, 500)})",
            lambda: f"{alias}.k BETWEEN {r.randint(0, KEY_RANGE // 2)} AND {r.randint(KEY_RANGE // 2, KEY_RANGE)}",
            lambda: f"{alias}.s IS NOT NULL AND {alias}.k <> {HOT_KEY}",
        ]
        return self.rng.choice(choices)()

    def maybe_where(self, alias: str, probability: float = 0.5) -> str:
        return f" WHERE {self.predicate(alias)}" if self.chance(probability) else ""

    def direction(self) -> str:
        return (f"{self.rng.choice(['ASC', 'DESC'])} "
                f"NULLS {self.rng.choice(['FIRST', 'LAST'])}")

    def order_by(self, outputs: list[Output], shape: str, sql: str, seed: int,
                 probability: float) -> RandomQuery:
        """Wrap ``sql`` (whose columns are ``outputs``) with a random ORDER BY [LIMIT]."""
        exact = [i for i, o in enumerate(outputs) if o.exact]
        if not exact or not self.chance(probability):
            return RandomQuery(seed, shape, sql)
        positions = self.rng.sample(exact, self.rng.randint(1, min(3, len(exact))))
        keys = ", ".join(f"{outputs[i].name} {self.direction()}" for i in positions)
        ordered = f"SELECT * FROM ({sql}) AS q ORDER BY {keys}"
        if not self.chance(0.5):
            return RandomQuery(seed, shape + "+orderby", ordered, tuple(positions))
        limit = self.rng.choice([1, 7, 100, 1000, 5000])
        offset = self.rng.choice([0, 0, 0, 3, 250])
        ordered += f" LIMIT {limit}" + (f" OFFSET {offset}" if offset else "")
        return RandomQuery(seed, shape + "+orderby-limit", ordered, tuple(positions),
                           cut_head=offset > 0, cut_tail=True)

    @staticmethod
    def select(outputs: list[Output]) -> str:
        return ", ".join(f"{o.sql} AS {o.name}" for o in outputs)

    def columns(self, alias: str, count: int, prefix: str = "") -> list[Output]:
        return [Output(f"{alias}.{c}", f"{prefix}{c}")
                for c in self.rng.sample(COLUMNS, count)]

    # --- shapes --------------------------------------------------------------------------

    def sort(self, seed: int) -> RandomQuery:
        table = self.rng.choice(TABLES)
        outputs = self.columns("a", self.rng.randint(2, 5))
        sql = f"SELECT {self.select(outputs)} FROM {table} AS a{self.maybe_where('a')}"
        return self.order_by(outputs, "sort", sql, seed, probability=1.0)

    def join_source(self, kind: str) -> tuple[str, str]:
        """``FROM ... JOIN ...`` text with aliases a and b, and its shape label."""
        left, right = self.rng.choice(JOIN_PAIRS)
        condition = "a.k = b.k" + (" AND a.g = b.g" if self.chance(0.3) else "")
        text = (f"{left} AS a {kind.upper()} JOIN {right} AS b ON {condition}"
                f"{self.maybe_where('a', 0.4)}")
        return text, f"join-{kind}"

    def join(self, seed: int) -> RandomQuery:
        kind = self.rng.choice(["inner", "left", "full"])
        source, shape = self.join_source(kind)
        outputs = (self.columns("a", self.rng.randint(1, 3), "a_")
                   + self.columns("b", self.rng.randint(1, 3), "b_"))
        sql = f"SELECT {self.select(outputs)} FROM {source}"
        return self.order_by(outputs, shape, sql, seed, probability=0.4)

    def semi_or_anti(self, seed: int) -> RandomQuery:
        left, right = self.rng.choice(JOIN_PAIRS)
        outputs = self.columns("a", self.rng.randint(2, 4))
        inner_filter = self.predicate("b")
        kind = self.rng.choice(["semi-in", "semi-exists", "anti-not-exists", "anti-not-in"])
        correlated = "b.k = a.k" + (" AND b.g = a.g" if self.chance(0.3) else "")
        if kind == "semi-in":
            test = f"a.k IN (SELECT b.k FROM {right} AS b WHERE {inner_filter})"
        elif kind == "semi-exists":
            test = f"EXISTS (SELECT 1 FROM {right} AS b WHERE {correlated} AND {inner_filter})"
        elif kind == "anti-not-exists":
            test = (f"NOT EXISTS (SELECT 1 FROM {right} AS b WHERE {correlated} "
                    f"AND {inner_filter})")
        else:
            # mostly without NULLs on the inside; otherwise NOT IN is never true
            not_null = " AND b.k IS NOT NULL" if self.chance(0.75) else ""
            test = f"a.k NOT IN (SELECT b.k FROM {right} AS b WHERE {inner_filter}{not_null})"
        sql = f"SELECT {self.select(outputs)} FROM {left} AS a WHERE {test}"
        return self.order_by(outputs, kind, sql, seed, probability=0.3)

    def aggregate_source(self) -> tuple[str, list[str], str]:
        """FROM text, the aliases whose columns may be used, and the source's shape label."""
        pick = self.rng.random()
        if pick < 0.6:
            table = self.rng.choice(TABLES)
            return f"{table} AS a{self.maybe_where('a', 0.4)}", ["a"], "table"
        if pick < 0.85:
            source, shape = self.join_source(self.rng.choice(["inner", "left"]))
            return source, ["a", "b"], shape
        first, second = self.rng.sample(TABLES, 2)
        columns = ", ".join(COLUMNS)
        union = (f"SELECT {columns} FROM {first} AS x{self.maybe_where('x', 0.3)} UNION ALL "
                 f"SELECT {columns} FROM {second} AS y{self.maybe_where('y', 0.3)}")
        return f"({union}) AS a", ["a"], "union-all"

    def aggregate_call(self, aliases: list[str], index: int) -> Output:
        alias = self.rng.choice(aliases)
        r = self.rng
        calls = [
            ("count(*)", True), (f"count({alias}.{r.choice(COLUMNS)})", True),
            (f"sum({alias}.v)", True), (f"sum({alias}.d)", True),
            (f"min({alias}.{r.choice(['s', 'dt', 'd', 'v'])})", True),
            (f"max({alias}.{r.choice(['s', 'dt', 'd', 'v'])})", True),
            (f"avg({alias}.{r.choice(['v', 'd'])})", False),
        ]
        distinct = [(f"count(DISTINCT {alias}.{r.choice(['s', 'k', 'g', 'dt'])})", True),
                    (f"sum(DISTINCT {alias}.v)", True)]
        sql, exact = r.choice(distinct if self.chance(0.2) else calls)
        return Output(sql, f"agg{index}", exact)

    def aggregate(self, seed: int) -> RandomQuery:
        source, aliases, source_shape = self.aggregate_source()
        key_count = self.rng.randint(1, 3)
        keys = [Output(f"{self.rng.choice(aliases)}.{c}", f"key_{c}")
                for c in self.rng.sample(GROUP_KEYS, key_count)]
        calls = [self.aggregate_call(aliases, i) for i in range(self.rng.randint(1, 4))]
        mode = self.rng.choices(["plain", "grouping-sets", "rollup", "cube"],
                                weights=[5, 2, 2, 1])[0]
        key_sql = ", ".join(k.sql for k in keys)
        if mode == "plain":
            group_by = f"GROUP BY {key_sql}"
        elif mode == "grouping-sets":
            sets = {tuple(sorted(self.rng.sample(range(key_count),
                                                 self.rng.randint(0, key_count))))
                    for _ in range(self.rng.randint(2, 3))}
            sets.add(tuple(range(key_count)))  # at least one set with every key
            group_by = "GROUP BY GROUPING SETS (" + ", ".join(
                "(" + ", ".join(keys[i].sql for i in s) + ")" for s in sorted(sets)) + ")"
        else:
            group_by = f"GROUP BY {mode.upper()} ({key_sql})"
        if mode != "plain" and self.chance(0.5):
            calls.append(Output(f"GROUPING({keys[0].sql})", "grouping_first"))
        having = ""
        if mode == "plain" and self.chance(0.25):
            having = f" HAVING count(*) > {self.rng.choice([1, 2, 5, 50])}"
        distinct = any("DISTINCT" in c.sql for c in calls)
        shape = f"aggregate-{mode}{'-distinct' if distinct else ''}<{source_shape}"
        outputs = keys + calls
        sql = f"SELECT {self.select(outputs)} FROM {source} {group_by}{having}"
        return self.order_by(outputs, shape, sql, seed, probability=0.4)

    def window_call(self, index: int) -> Output:
        r = self.rng
        partition = ", ".join(f"a.{c}" for c in r.sample(PARTITION_KEYS, r.randint(1, 2)))
        order_column = r.choice(["v", "dt", "d", "s", "k"])
        order = f"a.{order_column} {self.direction()}"
        function = r.choice(["row_number", "rank", "dense_rank", "sum_range", "sum_rows",
                             "sum_partition", "count_partition"])
        over = {
            "row_number": ("ROW_NUMBER()", f"ORDER BY {order}, a.id"),
            "rank": ("RANK()", f"ORDER BY {order}"),
            "dense_rank": ("DENSE_RANK()", f"ORDER BY {order}"),
            "sum_range": (f"SUM(a.{r.choice(['v', 'd'])})", f"ORDER BY {order}"),
            "sum_rows": (f"SUM(a.{r.choice(['v', 'd'])})",
                         f"ORDER BY {order}, a.id ROWS BETWEEN UNBOUNDED PRECEDING "
                         f"AND CURRENT ROW"),
            "sum_partition": (f"SUM(a.{r.choice(['v', 'd'])})", ""),
            "count_partition": ("COUNT(*)", ""),
        }[function]
        return Output(f"{over[0]} OVER (PARTITION BY {partition} {over[1]})".replace(" )", ")"),
                      f"w{index}")

    def window(self, seed: int) -> RandomQuery:
        table = self.rng.choice(TABLES)
        outputs = self.columns("a", self.rng.randint(1, 3))
        outputs += [self.window_call(i) for i in range(self.rng.randint(1, 3))]
        sql = f"SELECT {self.select(outputs)} FROM {table} AS a{self.maybe_where('a', 0.4)}"
        return self.order_by(outputs, "window", sql, seed, probability=0.3)

    def set_operation(self, seed: int) -> RandomQuery:
        first, second = self.rng.choice(JOIN_PAIRS)
        columns = self.rng.choice(SET_COLUMN_LISTS)
        operator = self.rng.choice(["UNION", "INTERSECT", "EXCEPT"])
        every = self.chance(0.5)
        listed = ", ".join(f"{c} AS {c}" for c in columns)
        sql = (f"SELECT {listed} FROM {first} AS x{self.maybe_where('x', 0.5)} "
               f"{operator}{' ALL' if every else ''} "
               f"SELECT {listed} FROM {second} AS y{self.maybe_where('y', 0.5)}")
        shape = f"setop-{operator.lower()}{'-all' if every else ''}"
        outputs = [Output(c, c) for c in columns]
        return self.order_by(outputs, shape, sql, seed, probability=0.3)


#: shape families and their weights in the mix
_FAMILIES = (("sort", 2), ("join", 3), ("semi_or_anti", 3), ("aggregate", 5), ("window", 3),
             ("set_operation", 3))


def random_query(seed: int) -> RandomQuery:
    """The query for ``seed`` (the same on every run and machine)."""
    grammar = _Grammar(seed)
    family = grammar.rng.choices([f for f, _ in _FAMILIES], weights=[w for _, w in _FAMILIES])[0]
    query: RandomQuery = getattr(grammar, family)(seed)
    return query
