"""TPC-H join orders: flowsql's chosen order against DuckDB's, both run by flowsql.

For each query, DuckDB's join tree comes from ``EXPLAIN (FORMAT JSON)`` over views of the same
Parquet files: every maximal tree of inner joins in DuckDB's plan is a block, its leaves the
base tables found below it (through projections, filters and the preserved side of semi/anti
joins). Each comma-separated FROM list of three or more tables in the query is rewritten as
explicit nested ``JOIN ... ON`` in the shape of the DuckDB block over the same tables: every
WHERE conjunct that references only that FROM list's relations goes into the ON of the lowest
join that has all of them (one relation's filters stay in WHERE, as do subqueries and
correlated conjuncts). Self-joins (``nation n1, nation n2``) are matched to DuckDB's leaves by
the join conditions DuckDB shows. flowsql then runs the rewritten query with
``optimizer.disable-rules`` = ``reorder_joins``, so the written tree is kept (the physical
planner still picks each hash join's build side); its EXPLAIN is checked to hold DuckDB's
block. Everything else -- decorrelation, pushdown, the joins a subquery becomes -- is planned
as usual, except that those joins are not reordered either.

Both variants run in this process on the local engine at parallelism 1, a warm-up first, then
best of ``--repeat``; both answers are verified against DuckDB's (outside the timings).

    python benchmarks/join_order_vs_duckdb.py --sf 1 --data /work/data/sf1 [--markdown]
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import sqlglot
from sqlglot import exp

import flowsql
from flowsql.errors import FlowSQLError
from flowsql.session import Session
from flowsql.sql.dialect import DIALECT
from flowsql.tpch.cli import query_list
from flowsql.tpch.generate import TABLES, table_path
from flowsql.tpch.queries import load_query
from flowsql.tpch.verify import compare_tables, is_ordered_query

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_QUERIES = [2, 5, 7, 8, 9, 21]
# TPC-H column names start with their table's prefix.
PREFIX_TABLE = {"p": "part", "s": "supplier", "ps": "partsupp", "c": "customer", "o": "orders",
                "l": "lineitem", "n": "nation", "r": "region"}
DUCKDB_JOINS = {"HASH_JOIN", "NESTED_LOOP_JOIN", "PIECEWISE_MERGE_JOIN", "BLOCKWISE_NL_JOIN",
                "CROSS_PRODUCT", "POSITIONAL_JOIN"}


# -- join trees -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Leaf:
    """A base table in a join tree; ``alias`` is set once matched to the query."""

    table: str
    alias: str | None = None


@dataclass(frozen=True)
class JoinNode:
    """An inner join; ``equalities`` are the ``column = column`` pairs DuckDB shows for it."""

    left: Tree
    right: Tree
    equalities: frozenset[frozenset[str]] = frozenset()


Tree = Leaf | JoinNode


def leaves(tree: Tree) -> list[Leaf]:
    if isinstance(tree, Leaf):
        return [tree]
    return leaves(tree.left) + leaves(tree.right)


def joins(tree: Tree) -> Iterator[JoinNode]:
    if isinstance(tree, JoinNode):
        yield tree
        yield from joins(tree.left)
        yield from joins(tree.right)


def tree_text(tree: Tree) -> str:
    """Compact text: ``((lineitem ⋈ orders) ⋈ supplier)``."""
    if isinstance(tree, Leaf):
        return tree.alias if tree.alias and tree.alias != tree.table else tree.table
    return f"({tree_text(tree.left)} ⋈ {tree_text(tree.right)})"


def canonical(tree: Tree) -> str:
    """The tree with each join's sides sorted: equal for the same tree up to build sides."""
    if isinstance(tree, Leaf):
        return tree.alias or tree.table
    return "(" + " ".join(sorted([canonical(tree.left), canonical(tree.right)])) + ")"


# -- DuckDB's plan --------------------------------------------------------------------------
def _extra(node: dict[str, Any], key: str) -> list[str]:
    value = node.get("extra_info", {}).get(key)
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _is_inner_join(node: dict[str, Any]) -> bool:
    if node["name"] == "CROSS_PRODUCT":
        return True
    return node["name"] in DUCKDB_JOINS and _extra(node, "Join Type") == ["INNER"]


def _base_table(node: dict[str, Any]) -> str | None:
    """The table a block's leaf reads: through unary nodes and the preserved side of
    semi/anti joins down to a Parquet scan; None when the leaf is anything else."""
    while True:
        if node["name"] in ("READ_PARQUET", "TABLE_SCAN", "SEQ_SCAN"):
            columns = _extra(node, "Projections")
            if not columns:
                return None
            return PREFIX_TABLE.get(columns[0].split("_")[0])
        children = node["children"]
        join_type = (_extra(node, "Join Type") or [""])[0]
        if len(children) == 1 or join_type in ("SEMI", "ANTI", "MARK"):
            node = children[0]
        elif join_type in ("RIGHT_SEMI", "RIGHT_ANTI"):
            node = children[1]
        else:
            return None


def _equalities(node: dict[str, Any]) -> frozenset[frozenset[str]]:
    pairs = (re.fullmatch(r"(\w+) = (\w+)", c.strip()) for c in _extra(node, "Conditions"))
    return frozenset(frozenset(m.groups()) for m in pairs if m is not None)


def _through_projections(node: dict[str, Any]) -> dict[str, Any]:
    """The inner join below a chain of projections and filters, else ``node`` itself: DuckDB
    puts projections between the joins of one block."""
    below = node
    while below["name"] in ("PROJECTION", "FILTER") and len(below["children"]) == 1:
        below = below["children"][0]
    return below if _is_inner_join(below) else node


def duckdb_blocks(plan: dict[str, Any]) -> list[Tree]:
    """Every maximal tree of inner joins in DuckDB's plan whose leaves are all base tables."""
    blocks: list[Tree] = []

    def block(node: dict[str, Any], opaque: list[dict[str, Any]]) -> Tree | None:
        node = _through_projections(node)
        if _is_inner_join(node):
            left, right = (block(c, opaque) for c in node["children"])
            if left is None or right is None:
                return None
            return JoinNode(left, right, _equalities(node))
        opaque.append(node)
        table = _base_table(node)
        return Leaf(table) if table is not None else None

    def walk(node: dict[str, Any]) -> None:
        if _is_inner_join(node):
            below: list[dict[str, Any]] = []
            tree = block(node, below)
            if tree is not None:
                blocks.append(tree)
            for child in below:
                for grandchild in child["children"]:
                    walk(grandchild)
            return
        for child in node["children"]:
            walk(child)

    walk(plan)
    return blocks


def open_duckdb(data: Path) -> Any:
    import duckdb

    connection = duckdb.connect()
    for table in TABLES:
        connection.execute(f"CREATE VIEW {table} AS SELECT * FROM "
                           f"read_parquet('{table_path(data, table)}')")
    return connection


# -- rewriting a query into DuckDB's tree ---------------------------------------------------
@dataclass
class FromList:
    """One SELECT's comma-separated FROM list: its relations (alias -> table)."""

    select: exp.Select
    relations: dict[str, str]

    def alias_of(self, column: exp.Column) -> str | None:
        """The relation of this FROM list a column belongs to; None for an outer one."""
        if column.table:
            return column.table if column.table in self.relations else None
        table = PREFIX_TABLE.get(column.name.split("_")[0])
        owners = [a for a, t in self.relations.items() if t == table]
        return owners[0] if len(owners) == 1 else None


def from_lists(query: exp.Expression) -> list[FromList]:
    found = []
    for select in query.find_all(exp.Select):
        from_ = select.args.get("from_") or select.args.get("from")
        items = [from_.this] if from_ is not None else []
        items += [j.this for j in select.args.get("joins") or []
                  if not j.args.get("on") and not j.args.get("kind") and not j.args.get("side")]
        if len(items) < 3 or not all(isinstance(i, exp.Table) for i in items):
            continue
        found.append(FromList(select, {i.alias_or_name: i.name for i in items}))
    return found


@dataclass
class Conjunct:
    expression: exp.Expression
    aliases: frozenset[str] | None  # None: must stay in WHERE


def conjuncts(from_list: FromList) -> list[Conjunct]:
    where = from_list.select.args.get("where")
    if where is None:
        return []
    found = []
    for part in where.this.flatten() if isinstance(where.this, exp.And) else [where.this]:
        if part.find(exp.Subquery, exp.Exists, exp.Select) is not None:
            found.append(Conjunct(part, None))
            continue
        owners = {from_list.alias_of(c) for c in part.find_all(exp.Column)}
        local = None not in owners and bool(owners)
        found.append(Conjunct(part, frozenset(o for o in owners if o) if local else None))
    return found


@dataclass
class Placement:
    """A block's leaves matched to aliases, with each join's ON conjuncts."""

    tree: Tree
    on: dict[int, list[Conjunct]] = field(default_factory=dict)  # id(JoinNode) -> ON
    rest: list[Conjunct] = field(default_factory=list)

    def score(self) -> tuple[int, int]:
        """(joins with an ON, joins whose column equalities are DuckDB's)."""
        with_on = matching = 0
        for node in joins(self.tree):
            on = self.on.get(id(node), [])
            with_on += bool(on)
            shown = {frozenset(c.name for c in part.expression.find_all(exp.Column))
                     for part in on if isinstance(part.expression, exp.EQ)}
            matching += node.equalities <= shown
        return with_on, matching


def _with_aliases(tree: Tree, aliases: Iterator[str]) -> Tree:
    if isinstance(tree, Leaf):
        return Leaf(tree.table, next(aliases))
    return JoinNode(_with_aliases(tree.left, aliases), _with_aliases(tree.right, aliases),
                    tree.equalities)


def place(tree: Tree, parts: list[Conjunct]) -> Placement:
    placement = Placement(tree)
    placed: set[int] = set()

    def visit(node: Tree) -> frozenset[str]:
        if isinstance(node, Leaf):
            assert node.alias is not None
            return frozenset([node.alias])
        left, right = visit(node.left), visit(node.right)
        both = left | right
        on = [i for i, c in enumerate(parts)
              if i not in placed and c.aliases is not None and c.aliases <= both
              and c.aliases & left and c.aliases & right]
        placed.update(on)
        placement.on[id(node)] = [parts[i] for i in on]
        return both

    visit(tree)
    placement.rest = [c for i, c in enumerate(parts) if i not in placed]
    return placement


def best_placement(block: Tree, from_list: FromList) -> Placement:
    """Aliases for the block's leaves (all ways of matching a table's aliases to its leaves
    when it appears more than once), keeping the placement whose joins all have an ON and whose
    equalities are DuckDB's."""
    parts = conjuncts(from_list)
    tables = [leaf.table for leaf in leaves(block)]
    by_table = {t: [a for a, u in from_list.relations.items() if u == t] for t in set(tables)}
    options = []
    for orders in itertools.product(*(itertools.permutations(by_table[t]) for t in by_table)):
        queues = {t: list(o) for t, o in zip(by_table, orders)}
        names = iter([queues[t].pop(0) for t in tables])
        options.append(place(_with_aliases(block, names), parts))
    return max(options, key=Placement.score)


def _from_text(tree: Tree, placement: Placement, top: bool = True) -> str:
    if isinstance(tree, Leaf):
        return tree.table if tree.alias == tree.table else f"{tree.table} AS {tree.alias}"
    left = _from_text(tree.left, placement, False)
    right = _from_text(tree.right, placement, False)
    on = placement.on.get(id(tree), [])
    text = (f"{left} JOIN {right} ON " + " AND ".join(f"({c.expression.sql(DIALECT)})"
                                                       for c in on)
            if on else f"{left} CROSS JOIN {right}")
    return text if top else f"({text})"


def force_duckdb_order(sql: str, blocks: Sequence[Tree]) -> tuple[str, list[Tree]]:
    """The query with each FROM list of 3+ tables in the shape of the DuckDB block over the
    same tables, and the blocks used (with aliases)."""
    query = sqlglot.parse_one(sql, read=DIALECT)
    unused = list(blocks)
    used = []
    for from_list in from_lists(query):
        wanted = sorted(from_list.relations.values())
        block = next((b for b in unused if sorted(x.table for x in leaves(b)) == wanted), None)
        if block is None:
            continue
        unused.remove(block)
        placement = best_placement(block, from_list)
        used.append(placement.tree)
        rewritten = sqlglot.parse_one("SELECT 1 FROM " + _from_text(placement.tree, placement),
                                      read=DIALECT)
        from_list.select.set("from_", rewritten.args.get("from_"))
        from_list.select.set("joins", rewritten.args.get("joins"))
        rest = [c.expression for c in placement.rest]
        from_list.select.set("where", exp.Where(this=exp.and_(*rest, copy=False)) if rest
                            else None)
    return query.sql(DIALECT), used


# -- flowsql's plan -------------------------------------------------------------------------
def explain(session: Session, sql: str) -> str:
    return "\n".join(r["plan"] for r in session.sql("EXPLAIN " + sql).to_arrow().to_pylist())


def _section(plan: str, title: str) -> str:
    return plan.split(f"== {title} ==")[1].split("\n== ")[0]


@dataclass
class PlanNode:
    text: str
    children: list[PlanNode]


def parse_plan(section: str) -> PlanNode:
    lines = [ln for ln in section.splitlines() if ln.strip()]
    root = PlanNode(lines[0].strip(), [])
    stack = [(len(lines[0]) - len(lines[0].lstrip()), root)]
    for line in lines[1:]:
        depth = len(line) - len(line.lstrip())
        node = PlanNode(line.strip(), [])
        while stack[-1][0] >= depth:
            stack.pop()
        stack[-1][1].children.append(node)
        stack.append((depth, node))
    return root


_SCAN = re.compile(r"Scan (\w+)(?: AS (\w+))?")
_JOIN_SIGN = {"inner": "⋈", "cross": "×", "semi": "⋉", "anti": "▷", "left": "⟕",
              "right": "⟖", "full": "⟗"}


def plan_tree_text(node: PlanNode, under_join: bool = False) -> str:
    """Compact join tree of an optimized logical plan: scans by alias, joins by kind, an
    aggregate below a join as γ(...); other nodes are left out."""
    scan = _SCAN.match(node.text)
    if scan:
        return scan.group(2) or scan.group(1)
    join = re.match(r"Join\[(\w+)\]", node.text)
    if join and len(node.children) == 2:
        sign = _JOIN_SIGN.get(join.group(1), join.group(1))
        left, right = (plan_tree_text(c, True) for c in node.children)
        return f"({left} {sign} {right})"
    inner = [plan_tree_text(c, under_join) for c in node.children]
    if node.text.startswith("Aggregate") and under_join:
        return f"γ({inner[0]})"
    return inner[0] if len(inner) == 1 else "[" + ", ".join(inner) + "]"


def plan_blocks(node: PlanNode) -> list[Tree]:
    """The inner-join blocks of an optimized logical plan, as trees of scans (a leaf that is a
    semi or anti join counts as the scan of its preserved side, as in :func:`duckdb_blocks`)."""
    blocks: list[Tree] = []

    def block(n: PlanNode, below: list[PlanNode]) -> Tree | None:
        if re.match(r"Join\[(inner|cross)\]", n.text) and len(n.children) == 2:
            left, right = (block(c, below) for c in n.children)
            return JoinNode(left, right) if left is not None and right is not None else None
        below.append(n)
        while n.children and (len(n.children) == 1 or re.match(r"Join\[(semi|anti)\]", n.text)):
            n = n.children[0]  # through unary nodes and the preserved side of semi/anti joins
        scan = _SCAN.match(n.text)
        return Leaf(scan.group(1), scan.group(2) or scan.group(1)) if scan else None

    def walk(n: PlanNode) -> None:
        if re.match(r"Join\[(inner|cross)\]", n.text):
            below: list[PlanNode] = []
            tree = block(n, below)
            if tree is not None:
                blocks.append(tree)
            for b in below:
                for c in b.children:
                    walk(c)
            return
        for c in n.children:
            walk(c)

    walk(node)
    return blocks


# -- measuring ------------------------------------------------------------------------------
def open_session(data: Path, disabled_rules: str = "") -> Session:
    session = flowsql.connect(parallelism=1)
    for table in TABLES:
        session.sql(f"CREATE TABLE {table} WITH ('path'='{table_path(data, table)}')")
    if disabled_rules:
        session.sql(f"SET 'optimizer.disable-rules' = '{disabled_rules}'")
    return session


def _attempt(run: Callable[[], pa.Table]) -> pa.Table | FlowSQLError:
    try:
        return run()
    except FlowSQLError as exc:  # e.g. a join order whose hash table exceeds the budget
        return exc


def best_seconds(runs: Sequence[Callable[[], pa.Table]],
                 repeat: int) -> list[tuple[float, pa.Table | FlowSQLError]]:
    """Best time and last result (or the error) of each run: a warm-up of each, then
    ``repeat`` rounds that take turns, so a change in the machine's load falls on all alike.
    A run that failed is not repeated."""
    results = [_attempt(run) for run in runs]
    best = [float("inf")] * len(runs)
    for _ in range(repeat):
        for i, run in enumerate(runs):
            if isinstance(results[i], FlowSQLError):
                continue
            start = time.perf_counter()
            results[i] = _attempt(run)
            best[i] = min(best[i], time.perf_counter() - start)
    return list(zip(best, results))


@dataclass
class QueryFigures:
    query: int
    ours: str
    duckdb_order: str
    forced_kept: bool
    ours_seconds: float | None = None
    forced_seconds: float | None = None
    verified: str = "-"
    plans: dict[str, str] = field(default_factory=dict)


def measure(number: int, ours: Session, forced: Session, duck: Any,
            repeat: int) -> QueryFigures:
    sql = load_query(number)
    blocks = duckdb_blocks(json.loads(duck.execute("EXPLAIN (FORMAT JSON) " + sql)
                                      .fetchall()[0][1])[0])
    forced_sql, used = force_duckdb_order(sql, blocks)
    our_plan, forced_plan = explain(ours, sql), explain(forced, forced_sql)
    forced_tree = parse_plan(_section(forced_plan, "Optimized Logical Plan"))
    kept = {canonical(b) for b in plan_blocks(forced_tree)}
    figures = QueryFigures(
        number, plan_tree_text(parse_plan(_section(our_plan, "Optimized Logical Plan"))),
        plan_tree_text(forced_tree), bool(used) and all(canonical(b) in kept for b in used),
        plans={"ours": our_plan, "duckdb order": forced_plan, "forced sql": forced_sql})
    expected = duck.sql(sql).to_arrow_table()
    ordered = is_ordered_query(sql)
    variants = {"ours": lambda: ours.sql(sql).to_arrow()}
    if figures.forced_kept:  # else the forced run would only measure the FROM order written
        variants["forced"] = lambda: forced.sql(forced_sql).to_arrow()
    problems = []
    for name, (seconds, result) in zip(variants, best_seconds(list(variants.values()), repeat)):
        if isinstance(result, FlowSQLError):
            problems.append(f"{name}: {result}")
            continue
        setattr(figures, f"{name}_seconds", seconds)
        problems += [f"{name}: {p}" for p in compare_tables(result, expected, ordered)]
    figures.verified = "yes" if not problems else "NO"
    if not figures.forced_kept:
        problems.append("DuckDB's order not forced: no DuckDB block for a FROM list, or "
                        "EXPLAIN does not show it")
    for problem in problems:
        print(f"Q{number} {problem}", file=sys.stderr)
    return figures


def _seconds(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "-"


def render(rows: list[list[str]], header: list[str], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(header) + " |",
                 "|" + "|".join(["---", "---", "---", "---:", "---:", "---:", ":---:",
                                 ":---:"]) + "|"]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    return "\n".join("  ".join(r) for r in [header, *rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sf", type=float, default=1.0, help="scale factor (default 1)")
    parser.add_argument("--data", type=Path, default=None,
                        help="directory of <table>.parquet files (default data/sf<SF>)")
    parser.add_argument("--queries", type=query_list, default=DEFAULT_QUERIES)
    parser.add_argument("--repeat", type=int, default=1, help="timed runs per variant, best "
                        "reported (after one warm-up)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--plans", action="store_true",
                        help="print both EXPLAINs and the forced query to stderr")
    args = parser.parse_args(argv)
    data: Path = (args.data or ROOT / "data" / f"sf{args.sf:g}").resolve()
    duck = open_duckdb(data)
    ours, forced = open_session(data), open_session(data, "reorder_joins")
    rows = []
    for number in args.queries:
        print(f"Q{number} ...", file=sys.stderr, flush=True)
        figures = measure(number, ours, forced, duck, args.repeat)
        if args.plans:
            for name, text in figures.plans.items():
                print(f"-- Q{number} {name}\n{text}\n", file=sys.stderr)
        ratio = (f"{figures.ours_seconds / figures.forced_seconds:.2f}"
                 if figures.ours_seconds and figures.forced_seconds else "-")
        rows.append([f"Q{number}", f"`{figures.ours}`", f"`{figures.duckdb_order}`",
                     _seconds(figures.ours_seconds), _seconds(figures.forced_seconds), ratio,
                     "yes" if figures.forced_kept else "NO", figures.verified])
    header = ["query", "flowsql's order", "DuckDB's order (forced)", "ours s", "duckdb-order s",
              "ours/duckdb-order", "forced tree kept", "verified"]
    print(f"TPC-H SF {args.sf:g}, local engine, parallelism 1, best of {args.repeat} after a "
          f"warm-up; {platform.machine()}")
    print()
    print(render(rows, header, args.markdown))
    return 0 if all(r[-1] == "yes" and r[-2] == "yes" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
