"""EXPLAIN MEMO: the chosen plan, then every group of the physical search's memo with the
alternatives costed per requirement (the kept one marked ``*``, cheapest first), then the
root's alternatives. Checked on TPC-H SF 0.01: a merge join whose sorts serve the ORDER BY
above it wins over hash joins sorted afterwards, and a GROUP BY under an ORDER BY on its
keys has no sort aggregate because its input delivers no order."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import flowsql
from flowsql.errors import PlanError, SqlSyntaxError
from tests.harness.tpch import TPCH_TABLES

MERGE = ("SELECT s_nationkey, s_name, c_name FROM supplier JOIN customer "
         "ON s_nationkey = c_nationkey ORDER BY s_nationkey")
GROUPED = ("SELECT l_returnflag, count(*) AS n FROM lineitem GROUP BY l_returnflag "
           "ORDER BY l_returnflag")
ALTERNATIVE = re.compile(r"^    ([* ]) (.+): cost=([0-9.e+-]+)ms$")


@dataclass
class Requirement:
    text: str
    in_chosen_plan: bool
    #: (kept, label with enforcers, cost in ms), as listed
    alternatives: list[tuple[bool, str, float]] = field(default_factory=list)


@dataclass
class Group:
    line: str
    requirements: dict[str, Requirement] = field(default_factory=dict)


def memo_sections(text: str) -> dict[str, dict[str, Group]]:
    """Per ``== Memo: ... ==`` section (by title), its groups by number (``G1``...)."""
    sections: dict[str, dict[str, Group]] = {}
    groups: dict[str, Group] | None = None
    group: Group | None = None
    requirement: Requirement | None = None
    for line in text.splitlines():
        if line.startswith("== "):
            groups = sections.setdefault(line, {}) if line.startswith("== Memo: ") else None
            continue
        if groups is None or not line.strip():
            continue
        if re.match(r"^G\d+ ", line):
            number, rest = line.split(" ", 1)
            group = groups[number] = Group(rest)
        elif line.startswith("  required "):
            assert group is not None
            head, _, note = line[len("  required "):].rpartition(":")
            requirement = group.requirements[head] = Requirement(
                head, note.strip() == "in the chosen plan")
        elif line == "    no plan":
            assert requirement is not None and not requirement.alternatives
        else:
            match = ALTERNATIVE.match(line)
            assert match is not None, f"unexpected memo line: {line!r}"
            assert requirement is not None
            requirement.alternatives.append(
                (match.group(1) == "*", match.group(2), float(match.group(3))))
    return sections


@pytest.fixture(scope="module", params=[1, 2], ids=["parallelism1", "parallelism2"])
def session(request: pytest.FixtureRequest, tpch_dir: Path) -> Iterator[flowsql.Session]:
    s = flowsql.connect(parallelism=request.param)
    for name in TPCH_TABLES:
        s.sql(f"CREATE TABLE {name} WITH ('path'='{tpch_dir / (name + '.parquet')}')")
    yield s
    s.close()


def _memo(session: flowsql.Session, sql: str) -> tuple[str, dict[str, dict[str, Group]]]:
    text = session.sql("EXPLAIN MEMO " + sql).plan_text
    assert text is not None
    return text, memo_sections(text)


def test_every_requirement_lists_its_alternatives_cheapest_first_with_one_kept(
        session: flowsql.Session) -> None:
    text, sections = _memo(session, MERGE)
    assert text.startswith("== Physical Plan ==\n")
    assert "\n== Physical Alternatives At The Root ==\n" in text
    parallelism = int(session.settings["parallelism.default"])
    assert len(sections) == (1 if parallelism == 1 else 2)
    assert sum(title.endswith("(chosen) ==") for title in sections) == 1
    for groups in sections.values():
        assert list(groups) == [f"G{n}" for n in range(1, len(groups) + 1)]
        for group in groups.values():
            for requirement in group.requirements.values():
                costs = [cost for _, _, cost in requirement.alternatives]
                assert costs == sorted(costs)
                kept = [a for a in requirement.alternatives if a[0]]
                assert len(kept) == (1 if requirement.alternatives else 0)
                if kept:
                    assert kept[0][2] == costs[0]


def test_the_merge_join_whose_sorts_serve_the_order_by_is_kept(tpch_dir: Path) -> None:
    with flowsql.connect() as session:
        for name in ("supplier", "customer"):
            session.sql(f"CREATE TABLE {name} WITH ('path'='{tpch_dir / (name + '.parquet')}')")
        text, sections = _memo(session, MERGE)
    plan = text.split("== Physical Plan ==\n")[1].split("\n\n")[0].splitlines()
    assert plan[1].lstrip().startswith("SortMergeJoin[inner] keys=[s_nationkey = c_nationkey]")
    assert [" ".join(line.split()[:2]) for line in plan] == [
        "Project [s_nationkey,", "SortMergeJoin[inner] keys=[s_nationkey", "Sort [s_nationkey",
        "TableScan supplier", "Sort [c_nationkey", "TableScan customer"]
    groups = sections["== Memo: whole query on one subtask (chosen) =="]
    assert groups["G1"].line.startswith("Sort [s_nationkey ASC NULLS LAST] rows=~6000 "
                                        "inputs=[G2]")
    join = groups["G3"]
    assert join.line.startswith("HashJoin[inner")
    assert join.line.endswith("inputs=[G4, G5]")
    ordered = join.requirements["single sorted(s_nationkey ASC NULLS LAST)"]
    assert ordered.in_chosen_plan
    labels = [label for _, label, _ in ordered.alternatives]
    assert labels == ["merge join on one subtask",
                      "hash join build=left on one subtask + Sort",
                      "hash join build=right on one subtask + Sort"]
    assert ordered.alternatives[0][0]
    # without the ORDER BY's requirement no sort is placed for a merge join: hash joins only
    unordered = join.requirements["any"]
    assert not unordered.in_chosen_plan
    assert all(label.startswith("hash join") for _, label, _ in unordered.alternatives)
    supplier = groups["G4"]
    assert supplier.line.startswith("TableScan supplier")
    assert [a[1] for a in supplier.requirements[
        "single sorted(s_nationkey ASC NULLS LAST)"].alternatives] == ["scan + Sort"]
    assert supplier.requirements["single sorted(s_nationkey ASC NULLS LAST)"].in_chosen_plan
    # the merge join first asks for an order the scan itself delivers: there is none
    assert supplier.requirements[
        "single sorted(s_nationkey ASC NULLS LAST) delivered"].alternatives == []
    root = text.split("== Physical Alternatives At The Root ==\n")[1].splitlines()
    assert root == [line for line in root if line[:2] in ("* ", "  ")]
    assert root[0].startswith("* merge join on one subtask: cost=")


def test_no_sort_aggregate_without_an_order_its_input_delivers(
        session: flowsql.Session) -> None:
    _, sections = _memo(session, GROUPED)
    for groups in sections.values():
        aggregate = next(g for g in groups.values() if g.line.startswith("HashAggregate"))
        labels = {label for r in aggregate.requirements.values()
                  for _, label, _ in r.alternatives}
        assert not any("sort aggregate" in label for label in labels)
        scan = next(g for g in groups.values() if g.line.startswith("TableScan lineitem"))
        assert scan.requirements["hash(l_returnflag) sorted(l_returnflag ASC NULLS LAST) "
                                 "delivered"].alternatives == []
    chosen = next(g for t, g in sections.items() if t.endswith("(chosen) =="))
    assert chosen["G1"].line.startswith("Sort [l_returnflag ASC NULLS LAST]")


def test_costs_off_and_streaming_are_errors(tpch_dir: Path) -> None:
    with flowsql.connect() as session:
        session.sql(f"CREATE TABLE nation WITH ('path'='{tpch_dir / 'nation.parquet'}')")
        with pytest.raises(SqlSyntaxError, match="COSTS OFF does not apply to EXPLAIN MEMO"):
            session.sql("EXPLAIN (COSTS OFF) MEMO SELECT * FROM nation")
    with flowsql.connect(**{"execution.runtime-mode": "streaming"}) as session:
        session.sql("CREATE TABLE endless (id BIGINT, k INT) WITH ('connector' = 'datagen', "
                    "'rows-per-second' = '100')")
        with pytest.raises(PlanError, match="EXPLAIN MEMO shows the physical search of a "
                                            "batch query"):
            session.sql("EXPLAIN MEMO SELECT k, COUNT(*) AS c FROM endless GROUP BY k")
