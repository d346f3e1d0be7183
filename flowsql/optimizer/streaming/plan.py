"""The streaming planning pass: a batch physical plan -> the plan a stream can run.

One bottom-up pass (``to_streaming``). Every node learns what its inputs deliver as
:class:`StreamInfo` -- the changelog mode (insert-only or updating), which columns are
rowtime attributes, which column pairs are a window's start and end, and whether the input
ever ends -- and is replaced by its streaming algorithm where the batch one would wait for
the end of its input:

* scans of a table with a WATERMARK get a ``WatermarkAssignerExec`` (its column is then a
  rowtime attribute, kept by filters and by projections that pass it through unchanged);
  a source that reads splits (Kafka partitions) gets the WATERMARK itself instead
  (``TableScanExec.watermark``), to generate it per split;
* a scan of a changelog source (debezium-json values, upsert-kafka) is updating;
* a column computed as ``PROCTIME()`` is a proctime attribute (kept the same way); an
  operator that uses one as its time (window aggregate, interval join, OVER aggregate)
  gets a ``ProctimeWatermarkExec`` right below it, whose watermark is the wall clock, and
  then runs exactly as over a rowtime;
* an aggregate becomes a changelog ``GroupAggregateExec`` (updating), except one grouped
  by both bounds of a window its insert-only input carries (a window join, window Top-N or
  window aggregate below, or a window TVF the window aggregate rule left alone): that is a
  ``WindowedAggregateExec``, insert-only, whose output bounds are window bounds again
  (Flink's cascading window aggregation); either way an aggregate's FILTER (WHERE ..) is
  folded into its arguments (``optimizer.aggregate_filter``);
* a join of two windowed inputs whose condition equates both window bounds
  (``L.window_start = R.window_start AND L.window_end = R.window_end``) becomes a
  ``WindowJoinExec`` (insert-only, also for outer, semi and anti joins); a join of two
  rowtime inputs whose condition bounds one rowtime by the other an ``IntervalJoinExec``;
  a lookup join (``FOR SYSTEM_TIME AS OF``, the binder's ``Join.lookup``) a
  ``LookupJoinExec`` whose looked-up table stays a batch plan;
  any other inner/outer join a ``StreamJoinExec`` (updating when an input is updating or
  the join is outer);
* ``ROW_NUMBER() OVER (...)`` filtered to a range becomes a ``RankExec``: deduplication when
  ordered by a time attribute and kept to rank 1, a window Top-N when partitioned by a
  window's start and end, Top-N otherwise; ``ORDER BY .. LIMIT n`` is a global Top-N;
* aggregates OVER (ORDER BY rowtime ROWS|RANGE .. PRECEDING) become ``OverAggregateExec``.

Operators that need an insert-only input (window aggregates, interval joins, OVER, Top-N,
LIMIT, filesystem sinks) reject an updating one, naming the node that made it updating;
constructs without a streaming algorithm (a plain ORDER BY, semi/anti joins other than
window joins, UNION without ALL, ...) are rejected with what to write instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from flowsql.errors import PlanError
from flowsql.optimizer.aggregate_filter import filter_into_arguments
from flowsql.optimizer.streaming.patterns import interval_bounds, interval_ms, rank_range
from flowsql.optimizer.streaming.user_aggregates import check_user_group_aggregate
from flowsql.planner.config.connectors import CONNECTORS, connector_of
from flowsql.planner.expressions import (
    AggCall,
    Call,
    ColumnRef,
    Expr,
    WindowCall,
    column_ids,
)
from flowsql.planner.physical import (
    STREAMING_AGGREGATE_FUNCTIONS,
    VARIANCE_FUNCTIONS,
    ExchangeExec,
    FilterExec,
    HashAggregateExec,
    HashJoinExec,
    LimitExec,
    NestedLoopJoinExec,
    PhysicalPlan,
    ProjectExec,
    SetOpExec,
    SortExec,
    SourceWatermark,
    TableFunctionExec,
    TableScanExec,
    TopNExec,
    ValuesExec,
    WindowAggregateExec,
    WindowExec,
    WindowTableFunctionExec,
)
from flowsql.planner.physical_streaming import (
    INSERT_ONLY,
    UPDATING,
    GroupAggregateExec,
    IntervalJoinExec,
    LookupJoinExec,
    OverAggregateExec,
    ProctimeWatermarkExec,
    RankExec,
    SinkExec,
    StreamJoinExec,
    WatermarkAssignerExec,
    WindowedAggregateExec,
    WindowJoinExec,
)
from flowsql.planner.schema import Field

#: aggregates the changelog group aggregate computes
GROUP_AGGREGATES = STREAMING_AGGREGATE_FUNCTIONS
#: aggregates the OVER aggregate computes
_OVER_AGGREGATES = tuple(f for f in GROUP_AGGREGATES if f not in VARIANCE_FUNCTIONS)


@dataclass(frozen=True)
class StreamInfo:
    """What a node's output is, as a stream."""

    mode: str
    #: the node that made the stream updating (for error messages)
    updated_by: str | None
    rowtimes: frozenset[int]
    #: (window_start cid, window_end cid) of windows whose bounds are columns here
    windows: tuple[tuple[int, int], ...]
    bounded: bool
    #: columns computed as PROCTIME() (processing-time attributes)
    proctimes: frozenset[int] = frozenset()
    #: window_end cids of windows assigned by processing time (a window TVF over a
    #: PROCTIME() column): no watermark passes their ends, so a window join cannot use them
    proctime_windows: frozenset[int] = frozenset()


def to_streaming(plan: PhysicalPlan, settings: dict[str, str]
                 ) -> tuple[PhysicalPlan, StreamInfo]:
    """The streaming form of ``plan`` (see the module docstring) and what its root
    delivers."""
    return _Planner(settings).convert(plan)

def is_bounded_table(options: dict[str, str], total_rows: int | None) -> bool:
    """Whether a table's source ends, as its connector declares: a watched directory or a
    datagen table without a row limit does not."""
    return connector_of(options).is_bounded(options, total_rows)


class _Planner:
    def __init__(self, settings: dict[str, str]) -> None:
        from flowsql.optimizer.plan_window_aggregate import watermark_interval_ms

        self.interval = watermark_interval_ms(settings)

    def convert(self, node: PhysicalPlan) -> tuple[PhysicalPlan, StreamInfo]:
        handler = _HANDLERS.get(type(node))
        if handler is None:
            raise PlanError(f"{_name(node)} is not supported in streaming mode")
        return handler(self, node)

    def _inputs(self, node: PhysicalPlan) -> tuple[list[PhysicalPlan], list[StreamInfo]]:
        converted = [self.convert(child) for child in node.inputs]
        return [c[0] for c in converted], [c[1] for c in converted]

    # -- leaves ---------------------------------------------------------------------------
    def scan(self, node: TableScanExec) -> tuple[PhysicalPlan, StreamInfo]:
        table = node.table
        if not connector_of(table.options).source:
            raise PlanError(f"table '{table.name}' ({table.connector} connector) can only be "
                            "written to (INSERT INTO), not read")
        bounded = is_bounded_table(table.options, table.statistics.row_count)
        info = StreamInfo(INSERT_ONLY, None, frozenset(), (), bounded)
        if connector_of(table.options).reads_changelog(table.options):
            info = replace(info, mode=UPDATING,
                           updated_by=f"table '{table.name}' (a changelog source)")
        spec = table.watermark
        column = next((f for f in node.fields if spec and f.name.lower() == spec.column.lower()),
                      None)
        if spec is None or column is None:
            return node, info
        rowtimes = frozenset({column.cid})
        if connector_of(table.options).split_watermarks:
            watermark = SourceWatermark(column.ref(), spec.delay_ms, self.interval)
            return replace(node, watermark=watermark), replace(info, rowtimes=rowtimes)
        assigner = WatermarkAssignerExec(node, column.ref(), spec.delay_ms, self.interval,
                                         node.est_rows)
        return assigner, replace(info, rowtimes=rowtimes)

    def values(self, node: ValuesExec) -> tuple[PhysicalPlan, StreamInfo]:
        return node, StreamInfo(INSERT_ONLY, None, frozenset(), (), True)

    # -- row-wise -------------------------------------------------------------------------
    def filter(self, node: FilterExec) -> tuple[PhysicalPlan, StreamInfo]:
        if isinstance(node.input, WindowExec) and _row_number(node.input) is not None:
            return self._rank(node, node.input)
        (child,), (info,) = self._inputs(node)
        return replace(node, input=child), info

    def table_function(self, node: TableFunctionExec) -> tuple[PhysicalPlan, StreamInfo]:
        """Stateless: an updating input's row kinds follow each row to its function rows,
        which retracts correctly only if the function gives a row the same rows again."""
        (child,), (info,) = self._inputs(node)
        if info.mode == UPDATING and not node.function.hints.deterministic:
            raise PlanError(f"table function '{node.function.name}' is not deterministic, so "
                            f"it cannot run over an updating input ({info.updated_by}): a "
                            "retraction would not meet the rows its insertion produced")
        return replace(node, input=child), info

    def project(self, node: ProjectExec) -> tuple[PhysicalPlan, StreamInfo]:
        (child,), (info,) = self._inputs(node)
        if isinstance(child, RankExec) and child.rank_field is not None:
            used = set().union(*(column_ids(e) for e in node.exprs)) if node.exprs else set()
            if child.rank_field.cid not in used:
                child = replace(child, rank_field=None)
        moved = {e.cid: f.cid for e, f in zip(node.exprs, node.fields)
                 if isinstance(e, ColumnRef)}
        rowtimes = frozenset(moved[c] for c in info.rowtimes if c in moved)
        proctimes = frozenset(moved[c] for c in info.proctimes if c in moved) | {
            f.cid for e, f in zip(node.exprs, node.fields) if _is_proctime(e)}
        windows = tuple((moved[s], moved[e]) for s, e in info.windows
                        if s in moved and e in moved)
        proctime_windows = frozenset(moved[c] for c in info.proctime_windows if c in moved)
        out: PhysicalPlan = replace(node, input=child)
        computed = self._computed_rowtime(node, child)
        if computed is not None:
            assert isinstance(child, TableScanExec) and child.table.watermark is not None
            spec = child.table.watermark
            if connector_of(child.table.options).split_watermarks:
                # the source evaluates the computed column's expression over its own fields
                expr = next(e for e, f in zip(node.exprs, node.fields) if f is computed)
                watermark = SourceWatermark(expr, spec.delay_ms, self.interval)
                out = replace(node, input=replace(child, watermark=watermark))
            else:
                out = WatermarkAssignerExec(out, computed.ref(), spec.delay_ms, self.interval,
                                            node.est_rows)
            rowtimes |= {computed.cid}
        return out, replace(info, rowtimes=rowtimes, windows=windows, proctimes=proctimes,
                            proctime_windows=proctime_windows)

    @staticmethod
    def _computed_rowtime(node: ProjectExec, child: PhysicalPlan) -> Field | None:
        """The field of ``node`` computing its scan's WATERMARK column, when that column
        is a computed one (the binder puts computed columns in a Project on the scan)."""
        if not isinstance(child, TableScanExec) or child.table.watermark is None:
            return None
        column = child.table.watermark.column.lower()
        if not any(c.name.lower() == column for c in child.table.computed):
            return None
        return next((f for e, f in zip(node.exprs, node.fields)
                     if f.name.lower() == column and not isinstance(e, ColumnRef)), None)

    def exchange(self, node: ExchangeExec) -> tuple[PhysicalPlan, StreamInfo]:
        return self.convert(node.input)

    # -- windows --------------------------------------------------------------------------
    def window_tvf(self, node: WindowTableFunctionExec) -> tuple[PhysicalPlan, StreamInfo]:
        (child,), (info,) = self._inputs(node)
        _insert_only(info, "a window table function")
        start, end, time = (f.cid for f in node.window_fields)
        proctime_windows = info.proctime_windows
        rowtimes = info.rowtimes
        if column_ids(node.time_column) & info.proctimes:
            proctime_windows |= {end}
        elif column_ids(node.time_column) & info.rowtimes:
            rowtimes |= {time}  # window_time is a rowtime attribute (Flink)
        return replace(node, input=child), replace(
            info, windows=(*info.windows, (start, end)), proctime_windows=proctime_windows,
            rowtimes=rowtimes)

    def window_aggregate(self, node: WindowAggregateExec) -> tuple[PhysicalPlan, StreamInfo]:
        (child,), (info,) = self._inputs(node)
        _insert_only(info, "a window aggregate")
        if column_ids(node.time_column) & info.proctimes:
            child = ProctimeWatermarkExec(child, node.time_column, child.est_rows)
        elif not (column_ids(node.time_column) & info.rowtimes):
            raise PlanError(f"window aggregate in streaming mode: the time column "
                            f"'{_render(node.time_column)}' is not a rowtime attribute "
                            "(declare WATERMARK FOR it in CREATE TABLE) nor a processing-time "
                            "attribute (a column AS PROCTIME())")
        slots = {slot: f.cid for slot, f in zip(node.group_slots, node.group_fields)}
        windows = ((slots["window_start"], slots["window_end"]),)
        # window_time stays a rowtime attribute of an event-time window aggregate's result
        # (Flink): a window TVF or a window aggregate over it cascades
        rowtimes = frozenset({slots["window_time"]}) if "window_time" in slots and not (
            column_ids(node.time_column) & info.proctimes) else frozenset()
        return (replace(node, input=child, watermark_delay_ms=None),
                StreamInfo(INSERT_ONLY, None, rowtimes, windows, info.bounded))

    # -- aggregation ----------------------------------------------------------------------
    def aggregate(self, node: HashAggregateExec) -> tuple[PhysicalPlan, StreamInfo]:
        (child,), (info,) = self._inputs(node)
        filtered = sorted({a.name for a in node.aggs
                           if a.function is not None and a.filter is not None})
        if filtered:
            raise PlanError(f"streaming: the user-defined aggregate {', '.join(filtered)} "
                            "cannot take a FILTER clause; filter its input instead")
        node = replace(node, aggs=tuple(filter_into_arguments(a) for a in node.aggs))
        user = sorted({a.name for a in node.aggs if a.function is not None})
        bad = [a.name for a in node.aggs
               if a.function is None and (
                   a.name not in GROUP_AGGREGATES
                   or (a.distinct and a.name not in ("count", "sum", "avg")))]
        if bad:
            raise PlanError(f"streaming GROUP BY cannot compute {', '.join(sorted(set(bad)))} "
                            f"(supported: {', '.join(GROUP_AGGREGATES)}, DISTINCT for "
                            "count/sum/avg)")
        window = _grouped_window(node, info)
        if window is not None:
            return self._windowed_aggregate(node, child, info, window)
        if user:
            check_user_group_aggregate(node, info.mode == UPDATING, info.updated_by)
        plan = GroupAggregateExec(child, node.group_exprs, node.group_fields, node.aggs,
                                  node.agg_fields, node.est_rows,
                                  insert_only_input=info.mode != UPDATING)
        return plan, StreamInfo(UPDATING, "GROUP BY (a changelog aggregate)", frozenset(), (),
                                info.bounded)

    @staticmethod
    def _windowed_aggregate(node: HashAggregateExec, child: PhysicalPlan, info: StreamInfo,
                            window: tuple[int, int]) -> tuple[PhysicalPlan, StreamInfo]:
        """The aggregate as a ``WindowedAggregateExec``; ``window`` holds the positions of
        window_start and window_end among its group expressions, whose output fields are
        the window bounds of its insert-only result."""
        start, end = (node.group_exprs[i] for i in window)
        plan = WindowedAggregateExec(child, node.group_exprs, node.group_fields, node.aggs,
                                     node.agg_fields, (start, end), node.est_rows)
        bounds = (node.group_fields[window[0]].cid, node.group_fields[window[1]].cid)
        # a grouped window_time of the window TVF stays a rowtime attribute (Flink)
        rowtimes = frozenset(f.cid for e, f in zip(node.group_exprs, node.group_fields)
                             if isinstance(e, ColumnRef) and e.cid in info.rowtimes)
        return plan, StreamInfo(INSERT_ONLY, None, rowtimes, (bounds,), info.bounded)

    def over(self, node: WindowExec) -> tuple[PhysicalPlan, StreamInfo]:
        (child,), (info,) = self._inputs(node)
        first = node.calls[0]
        order = first.order_by
        if any(c.name not in _OVER_AGGREGATES and c.function is None and c.name != "count_star" for c in node.calls):
            names = sorted({c.name for c in node.calls})
            raise PlanError(f"window functions {', '.join(names)} over a stream: only ROW_NUMBER"
                            " filtered to a range (Top-N, deduplication) and aggregates ordered "
                            "by a rowtime are supported")
        if (len(order) != 1 or not order[0].ascending or not isinstance(order[0].expr, ColumnRef)
                or order[0].expr.cid not in info.rowtimes | info.proctimes):
            raise PlanError("OVER aggregates over a stream must be ordered by a time "
                            "attribute ascending (ORDER BY ts), with a WATERMARK on it or "
                            "computed AS PROCTIME()")
        _insert_only(info, "an OVER aggregate")
        frames = {(c.partition_by, tuple(order), str(c.frame)) for c in node.calls}
        if len(frames) != 1 or any(c.distinct for c in node.calls):
            raise PlanError("OVER aggregates over a stream must share one window "
                            "(PARTITION BY, ORDER BY and frame) and cannot be DISTINCT")
        frame = first.frame
        assert frame is not None
        if frame.end.kind != "current_row":
            raise PlanError("OVER frames over a stream must end at CURRENT ROW")
        preceding: int | None = None
        if frame.start.kind == "preceding":
            preceding = _frame_offset(frame.mode, frame.start.offset)
        elif frame.start.kind != "unbounded_preceding":
            raise PlanError("OVER frames over a stream must start at UNBOUNDED PRECEDING or "
                            "n PRECEDING")
        functions = sorted({c.name for c in node.calls if c.function is not None
                            and not c.function.accumulator})
        if functions and preceding is None:
            raise PlanError(f"OVER aggregates over a stream with an UNBOUNDED PRECEDING frame "
                            f"cannot compute the user-defined aggregate {', '.join(functions)}"
                            ": a function called with all of a frame's rows would need every "
                            "row of the partition kept; declare it as a class (an accumulator)"
                            " or bound the frame (n PRECEDING)")
        aggs = tuple(AggCall(c.name, c.args, c.dtype, function=c.function) for c in node.calls)
        if order[0].expr.cid in info.proctimes:
            child = ProctimeWatermarkExec(child, order[0].expr, child.est_rows)
        plan = OverAggregateExec(child, first.partition_by, order[0].expr, frame.mode,
                                 preceding, aggs, node.fields, node.est_rows)
        return plan, info

    def _rank(self, node: FilterExec, window: WindowExec) -> tuple[PhysicalPlan, StreamInfo]:
        (child,), (info,) = self._inputs(window)
        call = _row_number(window)
        assert call is not None
        field = window.fields[0]
        kept = rank_range(node.predicate, field.cid)
        if kept is None:
            raise PlanError("ROW_NUMBER over a stream must be filtered to a range of ranks "
                            "(WHERE rn <= N, rn = 1 or rn BETWEEN a AND b)")
        _insert_only(info, "Top-N / deduplication")
        partition = tuple(call.partition_by)
        cids = {e.cid for e in partition if isinstance(e, ColumnRef)}
        window_pair = next(((s, e) for s, e in info.windows if s in cids and e in cids), None)
        time_attribute = None
        order = call.order_by
        if (len(order) == 1 and isinstance(order[0].expr, ColumnRef)
                and order[0].expr.cid in info.rowtimes and kept == (1, 1)):
            time_attribute = "rowtime"
        bounds = None
        if window_pair is not None:
            by_cid = {e.cid: e for e in partition if isinstance(e, ColumnRef)}
            bounds = (by_cid[window_pair[0]], by_cid[window_pair[1]])
            partition = tuple(e for e in partition
                              if not (isinstance(e, ColumnRef) and e.cid in window_pair))
        plan = RankExec(child, partition, tuple(order), kept[0], kept[1], field,
                        time_attribute, bounds, node.est_rows)
        insert_only = window_pair is not None  # a window's ranks are final when it fires
        mode = INSERT_ONLY if insert_only else UPDATING
        return plan, StreamInfo(mode, None if insert_only else "Top-N / deduplication",
                                info.rowtimes if insert_only else frozenset(),
                                info.windows, info.bounded,
                                info.proctimes if insert_only else frozenset(),
                                info.proctime_windows)

    def top_n(self, node: TopNExec) -> tuple[PhysicalPlan, StreamInfo]:
        (child,), (info,) = self._inputs(node)
        _insert_only(info, "ORDER BY .. LIMIT (Top-N)")
        plan = RankExec(child, (), node.keys, node.offset + 1, node.offset + node.limit, None,
                        None, None, node.est_rows)
        return plan, StreamInfo(UPDATING, "ORDER BY .. LIMIT (Top-N)", frozenset(), (),
                                info.bounded)

    # -- joins ----------------------------------------------------------------------------
    def join(self, node: HashJoinExec | NestedLoopJoinExec) -> tuple[PhysicalPlan, StreamInfo]:
        if isinstance(node, HashJoinExec) and node.lookup:
            return self._lookup_join(node)
        (left, right), (linfo, rinfo) = self._inputs(node)
        if isinstance(node, HashJoinExec):
            left_keys, right_keys, residual = node.left_keys, node.right_keys, node.residual
        else:
            left_keys, right_keys, residual = (), (), node.condition
        bounded = linfo.bounded and rinfo.bounded
        windows = _window_pairs(left_keys, right_keys, linfo, rinfo)
        if windows is not None and node.kind in _WINDOW_JOIN_KINDS and not node.null_aware:
            return self._window_join(node, (left, right), (linfo, rinfo), windows, residual)
        if node.kind not in ("inner", "left", "right", "full"):
            raise PlanError(f"a {node.kind} join (from IN / EXISTS / a scalar subquery) is not "
                            "supported over streams yet; write it as an inner or outer join "
                            "(IN / EXISTS are supported as a window join: both sides windowed "
                            "and the subquery equating window_start and window_end)")
        interval = self._interval(node, linfo, rinfo, residual)
        if interval is not None:
            _insert_only(linfo, "an interval join")
            _insert_only(rinfo, "an interval join")
            lt, rt, lower, upper, rest = interval
            if isinstance(lt, ColumnRef) and lt.cid in linfo.proctimes:
                left = ProctimeWatermarkExec(left, lt, left.est_rows)
                right = ProctimeWatermarkExec(right, rt, right.est_rows)
            plan: PhysicalPlan = IntervalJoinExec(left, right, node.kind, left_keys, right_keys,
                                                  lt, rt, lower, upper, rest, node.est_rows)
            # both sides' rowtime attributes stay rowtimes of the output (Flink): a window
            # TVF or an OVER aggregate can follow an interval join
            kept = frozenset(f.cid for f in plan.schema) & (linfo.rowtimes | rinfo.rowtimes)
            return plan, StreamInfo(INSERT_ONLY, None, kept, (), bounded)
        updated_by = next((i.updated_by for i in (linfo, rinfo) if i.mode == UPDATING), None)
        if updated_by is None and node.kind != "inner":
            updated_by = f"a {node.kind} outer join"
        mode = UPDATING if updated_by else INSERT_ONLY
        plan = StreamJoinExec(left, right, node.kind, left_keys, right_keys, residual,
                              mode == UPDATING, node.est_rows)
        return plan, StreamInfo(mode, updated_by, frozenset(), (), bounded)

    def _lookup_join(self, node: HashJoinExec) -> tuple[PhysicalPlan, StreamInfo]:
        """``FOR SYSTEM_TIME AS OF``: only the probe side becomes a stream; the looked-up
        table stays the bounded batch plan the lookup operator runs itself. Probe rows
        pass through unchanged, so their time attributes and window bounds stay what they
        were (Flink keeps the left input's time attributes)."""
        left, info = self.convert(node.left)
        _insert_only(info, "a lookup join")
        plan = LookupJoinExec(left, node.right, node.kind, node.left_keys, node.right_keys,
                              node.residual, node.est_rows)
        return plan, info

    def _window_join(self, node: HashJoinExec | NestedLoopJoinExec,
                     inputs: tuple[PhysicalPlan, PhysicalPlan],
                     infos: tuple[StreamInfo, StreamInfo],
                     windows: tuple[tuple[int, int], tuple[int, int]],
                     residual: Expr | None) -> tuple[PhysicalPlan, StreamInfo]:
        """The join as a ``WindowJoinExec``: its output is insert-only, and the window
        bounds of a side whose rows are never padded stay window bounds."""
        assert isinstance(node, HashJoinExec)
        linfo, rinfo = infos
        _insert_only(linfo, "a window join")
        _insert_only(rinfo, "a window join")
        if windows[0][1] in linfo.proctime_windows or windows[1][1] in rinfo.proctime_windows:
            raise PlanError("a window join needs event-time windows (a window TVF over a "
                            "rowtime attribute with a WATERMARK); processing-time windows "
                            "are not supported")
        refs = [tuple(next(f for f in child.schema if f.cid == cid).ref() for cid in pair)
                for child, pair in zip(node.inputs, windows)]
        plan = WindowJoinExec(*inputs, node.kind, node.left_keys, node.right_keys,
                              (refs[0][0], refs[0][1]), (refs[1][0], refs[1][1]), residual,
                              node.est_rows)
        kept = {"inner": windows, "left": windows[:1], "semi": windows[:1],
                "anti": windows[:1], "right": windows[1:], "full": ()}[node.kind]
        return plan, StreamInfo(INSERT_ONLY, None, frozenset(), kept,
                                linfo.bounded and rinfo.bounded)

    @staticmethod
    def _interval(node: PhysicalPlan, linfo: StreamInfo, rinfo: StreamInfo,
                  residual: Expr | None) -> tuple[Expr, Expr, int, int, Expr | None] | None:
        # both rowtimes or both proctimes: one side's watermark bounds the other's times
        pairs = ([(lt, rt) for lt in linfo.rowtimes for rt in rinfo.rowtimes]
                 + [(lt, rt) for lt in linfo.proctimes for rt in rinfo.proctimes])
        for lt, rt in pairs:
            found = interval_bounds(residual, lt, rt)
            if found is not None:
                left_field = next(f for f in node.inputs[0].schema if f.cid == lt)
                right_field = next(f for f in node.inputs[1].schema if f.cid == rt)
                return left_field.ref(), right_field.ref(), *found
        return None

    # -- the rest -------------------------------------------------------------------------
    def limit(self, node: LimitExec) -> tuple[PhysicalPlan, StreamInfo]:
        (child,), (info,) = self._inputs(node)
        _insert_only(info, "LIMIT")
        return replace(node, input=child), info

    def set_op(self, node: SetOpExec) -> tuple[PhysicalPlan, StreamInfo]:
        if not (node.kind == "union" and node.all):
            raise PlanError(f"{node.kind.upper()}{' ALL' if node.all else ''} is not supported "
                            "over streams; UNION ALL is (add GROUP BY for distinct rows)")
        (left, right), (linfo, rinfo) = self._inputs(node)
        updated_by = linfo.updated_by or rinfo.updated_by
        # a column is a rowtime of the union when it is one in both inputs
        rowtimes = frozenset(f.cid for f, a, b in zip(node.schema, left.schema, right.schema)
                             if a.cid in linfo.rowtimes and b.cid in rinfo.rowtimes)
        proctimes = frozenset(f.cid for f, a, b in zip(node.schema, left.schema, right.schema)
                              if a.cid in linfo.proctimes and b.cid in rinfo.proctimes)
        return replace(node, left=left, right=right), StreamInfo(
            UPDATING if updated_by else INSERT_ONLY, updated_by, rowtimes, (),
            linfo.bounded and rinfo.bounded, proctimes)

    def sort(self, node: SortExec) -> tuple[PhysicalPlan, StreamInfo]:
        raise PlanError("ORDER BY is not supported on a stream: a stream has no end to sort "
                        "by. Write ORDER BY .. LIMIT n (a continuously updated Top-N), or "
                        "sort the final result after materializing it (batch mode: SET "
                        "'execution.runtime-mode' = 'batch')")

    def sink(self, node: SinkExec) -> tuple[PhysicalPlan, StreamInfo]:
        (child,), (info,) = self._inputs(node)
        connector = connector_of(node.table.options)
        if not connector.sink_accepts_updates and info.mode == UPDATING:
            updating = [c.name for c in CONNECTORS.values() if c.sink and c.sink_accepts_updates]
            raise PlanError(f"table '{node.table.name}' ({connector.name} sink) accepts only "
                            f"insert-only results, but the query is updating (because of "
                            f"{info.updated_by}); write to a {' or '.join(updating)} table, "
                            "or use a windowed aggregate")
        return replace(node, input=child), info


_WINDOW_JOIN_KINDS = ("inner", "left", "right", "full", "semi", "anti")


def _window_pairs(left_keys: tuple[Expr, ...], right_keys: tuple[Expr, ...],
                  linfo: StreamInfo, rinfo: StreamInfo
                  ) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """The (window_start, window_end) cids of a left and a right window whose starts and
    ends the equi keys equate (a window join), or None."""
    equal = {(a.cid, b.cid) for a, b in zip(left_keys, right_keys)
             if isinstance(a, ColumnRef) and isinstance(b, ColumnRef)}
    for ls, le in linfo.windows:
        for rs, re in rinfo.windows:
            if (ls, rs) in equal and (le, re) in equal:
                return (ls, le), (rs, re)
    return None


def _grouped_window(node: HashAggregateExec, info: StreamInfo) -> tuple[int, int] | None:
    """Positions in ``node.group_exprs`` of the window_start and window_end of a window of
    its input, when the aggregate can run as a windowed one: the input is insert-only,
    the window is an event-time one (no watermark passes the end of a processing-time
    window before the operator that uses it). DISTINCT stays inside the windowed aggregate,
    as in Flink (it keeps value sets). None keeps the changelog aggregate, which gives the
    same final rows as an updating result."""
    if info.mode != INSERT_ONLY:
        return None
    positions = {e.cid: i for i, e in enumerate(node.group_exprs) if isinstance(e, ColumnRef)}
    for start, end in info.windows:
        if start in positions and end in positions and end not in info.proctime_windows:
            return positions[start], positions[end]
    return None


def _insert_only(info: StreamInfo, consumer: str) -> None:
    if info.mode == UPDATING:
        raise PlanError(f"{consumer} needs an insert-only input, but its input is updating "
                        f"(because of {info.updated_by}); use a window TVF aggregate instead "
                        "of an unwindowed GROUP BY")


def _is_proctime(expr: Expr) -> bool:
    return isinstance(expr, Call) and expr.name == "proctime" and not expr.args


def _row_number(window: WindowExec) -> WindowCall | None:
    calls = window.calls
    if len(calls) == 1 and calls[0].name == "row_number" and calls[0].order_by:
        return calls[0]
    return None


def _frame_offset(mode: str, offset: object) -> int:
    value = getattr(offset, "value", offset)
    ms = interval_ms(value)
    if ms is None or ms < 0:
        raise PlanError(f"OVER frame offset {offset} over a stream must be a non-negative "
                        f"{'row count' if mode == 'rows' else 'day-time interval'}")
    return ms


def _name(node: PhysicalPlan) -> str:
    return type(node).__name__.removesuffix("Exec")


def _render(expr: Expr) -> str:
    from flowsql.planner.expressions import render

    return render(expr)


_HANDLERS: dict[type, Callable[[_Planner, object], tuple[PhysicalPlan, StreamInfo]]] = {
    TableScanExec: _Planner.scan,  # type: ignore[dict-item]
    ValuesExec: _Planner.values,  # type: ignore[dict-item]
    FilterExec: _Planner.filter,  # type: ignore[dict-item]
    ProjectExec: _Planner.project,  # type: ignore[dict-item]
    ExchangeExec: _Planner.exchange,  # type: ignore[dict-item]
    WindowTableFunctionExec: _Planner.window_tvf,  # type: ignore[dict-item]
    TableFunctionExec: _Planner.table_function,  # type: ignore[dict-item]
    WindowAggregateExec: _Planner.window_aggregate,  # type: ignore[dict-item]
    HashAggregateExec: _Planner.aggregate,  # type: ignore[dict-item]
    WindowExec: _Planner.over,  # type: ignore[dict-item]
    TopNExec: _Planner.top_n,  # type: ignore[dict-item]
    HashJoinExec: _Planner.join,  # type: ignore[dict-item]
    NestedLoopJoinExec: _Planner.join,  # type: ignore[dict-item]
    LimitExec: _Planner.limit,  # type: ignore[dict-item]
    SetOpExec: _Planner.set_op,  # type: ignore[dict-item]
    SortExec: _Planner.sort,  # type: ignore[dict-item]
    SinkExec: _Planner.sink,  # type: ignore[dict-item]
}
