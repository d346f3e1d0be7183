"""Constant folding and boolean simplification of bound expressions.

The optimizer may not import the runtime, so literals are folded here with Python values;
anything this module is unsure about (unknown functions, overflow-prone or error-raising
cases such as division by zero) is left for the runtime to evaluate. Every fold keeps the
node's declared ``dtype``: the planner's types are the contract the runtime honours.

SQL's three-valued logic drives the boolean rules: ``x AND FALSE`` is FALSE and
``x OR TRUE`` is TRUE whatever ``x`` is, but ``x AND NULL`` stays (it is FALSE or NULL).

User-defined function calls are never folded here (the optimizer cannot run them; the
runtime folds a deterministic call with constant arguments, never a non-deterministic
one), and an operand with a non-deterministic call is never deduplicated or factored out.
"""

from __future__ import annotations

import calendar
import datetime as dt
import decimal
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from flowsql.optimizer.columns import expr_key
from flowsql.planner import types as T
from flowsql.planner.determinism import is_deterministic
from flowsql.planner.expressions import (
    Call,
    Case,
    Cast,
    Expr,
    Literal,
    conjuncts,
    transform,
)

#: exact for DECIMAL(38, s) operands, their sums and products (Python's default context
#: rounds to 28 digits, which would fold 38-digit arithmetic to a wrong value)
_EXACT_DECIMALS = decimal.Context(prec=2 * T.MAX_DECIMAL_PRECISION + 2,
                                  traps=[decimal.InvalidOperation, decimal.DivisionByZero,
                                         decimal.Overflow])


def fold(expr: Expr) -> Expr:
    """Simplify ``expr`` bottom-up; returns ``expr`` itself when nothing changed."""
    return transform(expr, _fold_node)


def _fold_node(e: Expr) -> Expr | None:
    if isinstance(e, Call):
        if e.name == "and":
            return _fold_and(e)
        if e.name == "or":
            return _fold_or(e)
        if e.name == "not":
            return _fold_not(e)
        if all(isinstance(a, Literal) for a in e.args):
            return _fold_literal_call(e)
        return None
    if isinstance(e, Cast) and isinstance(e.arg, Literal):
        return _fold_cast(e.arg, e.dtype)
    if isinstance(e, Case):
        return _fold_case(e)
    return None


def is_true(e: Expr) -> bool:
    return isinstance(e, Literal) and e.value is True


def is_false(e: Expr) -> bool:
    return isinstance(e, Literal) and e.value is False


def _flatten(name: str, args: tuple[Expr, ...]) -> list[Expr]:
    out: list[Expr] = []
    for a in args:
        if isinstance(a, Call) and a.name == name:
            out.extend(_flatten(name, a.args))
        else:
            out.append(a)
    return out


def _dedupe(args: list[Expr]) -> list[Expr]:
    """Drop repeated operands (``x AND x`` is ``x``), keeping first occurrences."""
    seen: set[str] = set()
    out = []
    for a in args:
        key = expr_key(a)
        if key not in seen or not is_deterministic(a):  # f() AND f() calls f twice
            seen.add(key)
            out.append(a)
    return out


def _fold_and(e: Call) -> Expr | None:
    args = _flatten("and", e.args)
    if any(is_false(a) for a in args):
        return Literal(False, T.BOOL)
    args = _dedupe([a for a in args if not is_true(a)])
    return _rebuild("and", args, e, Literal(True, T.BOOL))


def _fold_or(e: Call) -> Expr | None:
    args = _flatten("or", e.args)
    if any(is_true(a) for a in args):
        return Literal(True, T.BOOL)
    args = _dedupe([a for a in args if not is_false(a)])
    factored = _factor_common_conjuncts(args)
    if factored is not None:
        return factored
    return _rebuild("or", args, e, Literal(False, T.BOOL))


def _rebuild(name: str, args: list[Expr], original: Call, empty: Literal) -> Expr | None:
    if not args:
        return empty
    if len(args) == 1:
        return args[0]
    if len(args) == len(original.args) and all(a is b for a, b in zip(args, original.args)):
        return None
    return Call(name, tuple(args), T.BOOL)


def _factor_common_conjuncts(branches: list[Expr]) -> Expr | None:
    """``(A AND B) OR (A AND C)`` -> ``A AND (B OR C)``.

    Exact in three-valued logic (AND distributes over OR), and it matters: a join
    predicate repeated in every branch (TPC-H Q19) becomes a top-level conjunct that the
    filter pushdown can turn into a join condition instead of leaving a cross product.
    """
    if len(branches) < 2:
        return None
    split = [conjuncts(b) for b in branches]
    keys = [{expr_key(c) for c in s if is_deterministic(c)} for s in split]
    common = set.intersection(*keys)
    if not common:
        return None
    head = [c for c in split[0] if expr_key(c) in common]
    head = _dedupe(head)
    rests = [[c for c in s if expr_key(c) not in common] for s in split]
    if any(not r for r in rests):
        # one branch is exactly the common part: A OR (A AND C) is A
        return fold(Call("and", tuple(head), T.BOOL)) if len(head) > 1 else head[0]
    rest = Call("or", tuple(_and_of(r) for r in rests), T.BOOL)
    return fold(Call("and", (*head, rest), T.BOOL))


def _and_of(items: list[Expr]) -> Expr:
    return items[0] if len(items) == 1 else Call("and", tuple(items), T.BOOL)


def _fold_not(e: Call) -> Expr | None:
    arg = e.args[0]
    if isinstance(arg, Literal):
        return Literal(None if arg.value is None else not arg.value, T.BOOL)
    if isinstance(arg, Call) and arg.name == "not":
        return arg.args[0]
    return None


def _fold_case(e: Case) -> Expr | None:
    conditions: list[Expr] = []
    values: list[Expr] = []
    for c, v in zip(e.conditions, e.values):
        if isinstance(c, Literal) and not c.value:
            continue  # FALSE or NULL never selects its branch
        if is_true(c) and not conditions:
            return v
        if is_true(c):
            return Case(tuple(conditions), tuple(values), v, e.dtype)
        conditions.append(c)
        values.append(v)
    if not conditions:
        return e.otherwise
    if len(conditions) == len(e.conditions):
        return None
    return Case(tuple(conditions), tuple(values), e.otherwise, e.dtype)


def _fold_literal_call(e: Call) -> Expr | None:
    values = [a.value for a in e.args if isinstance(a, Literal)]
    if e.name in ("is_null", "is_not_null"):
        return Literal((values[0] is None) == (e.name == "is_null"), T.BOOL)
    if e.name == "coalesce":
        first = next((v for v in values if v is not None), None)
        return _typed(first, e.dtype)
    fn = _STRICT.get(e.name)
    if fn is None:
        return None
    if any(v is None for v in values):
        return Literal(None, e.dtype)
    try:
        with decimal.localcontext(_EXACT_DECIMALS):
            result = fn(*values)
            folded = _typed(result, e.dtype)
    except (ArithmeticError, TypeError, ValueError, OverflowError):
        return None
    # A result outside its type is left to the runtime, whose checked arithmetic reports
    # the overflow (folding must neither wrap nor widen it).
    return folded if _fits(folded.value, e.dtype) else None


def _fits(value: Any, dtype: pa.DataType) -> bool:
    """Whether a folded ``value`` is representable in ``dtype`` (integer range, decimal
    precision); other types are not range-checked here."""
    if value is None or isinstance(value, bool):
        return True
    if T.is_integer(dtype) and isinstance(value, int):
        bits = dtype.bit_width
        low, high = (0, 2**bits - 1) if pa.types.is_unsigned_integer(dtype) \
            else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        return low <= value <= high
    if T.is_decimal(dtype) and isinstance(value, decimal.Decimal):
        return value.is_finite() and (value == 0 or value.adjusted() < dtype.precision
                                      - dtype.scale)
    return True


def _arith(op: Callable[[Any, Any], Any], sign: int) -> Callable[[Any, Any], Any]:
    """Python arithmetic with SQL's operand rules: floats and Decimals do not mix in Python,
    so a float operand makes both floats (the result type is DOUBLE then anyway); dates
    take the calendar path with ``sign`` +1 for add and -1 for subtract."""
    def run(a: Any, b: Any) -> Any:
        if isinstance(a, dt.date) or isinstance(b, dt.date):
            return _date_arith(sign, a, b)
        if isinstance(a, tuple | list | pa.MonthDayNano) or \
                isinstance(b, tuple | list | pa.MonthDayNano):
            # An interval is a (months, days, nanoseconds) value, not a Python sequence to
            # repeat or concatenate: its arithmetic is left to the runtime.
            raise TypeError("interval arithmetic is left to the runtime")
        if isinstance(a, float) or isinstance(b, float):
            return op(float(a), float(b))
        return op(a, b)
    return run


def _divide(a: Any, b: Any) -> Any:
    if b == 0:
        raise ArithmeticError("division by zero is left to the runtime")
    return float(a) / float(b)


def _modulo(a: Any, b: Any) -> Any:
    if b == 0:
        raise ArithmeticError("modulo by zero is left to the runtime")
    if isinstance(a, int) and isinstance(b, int):
        r = abs(a) % abs(b)
        return r if a >= 0 else -r
    return decimal.Decimal(a) % decimal.Decimal(b) if not isinstance(a, float) else a % b


def _add_months(d: dt.date, months: int) -> dt.date:
    """Calendar month arithmetic clamping to the month's last day (as DuckDB does)."""
    total = d.year * 12 + (d.month - 1) + months
    year, month = divmod(total, 12)
    day = min(d.day, calendar.monthrange(year, month + 1)[1])
    return dt.date(year, month + 1, day)


def _date_arith(sign: int, a: Any, b: Any) -> Any:
    if sign == 0:
        raise TypeError("only + and - apply to dates")
    if isinstance(a, dt.date) and isinstance(b, int):
        return a + dt.timedelta(days=sign * b)
    if isinstance(b, dt.date) and isinstance(a, int) and sign == 1:
        return b + dt.timedelta(days=a)
    if isinstance(a, dt.date) and isinstance(b, dt.date) and sign == -1:
        return (a - b).days
    date, interval = (a, b) if isinstance(a, dt.date) else (b, a)
    if isinstance(date, dt.datetime) or not isinstance(interval, tuple | pa.MonthDayNano):
        raise TypeError("only date +/- interval folds")
    months, days, nanos = interval
    if nanos:
        raise TypeError("sub-day intervals on dates are left to the runtime")
    return _add_months(date, sign * months) + dt.timedelta(days=sign * days)


_STRICT: dict[str, Callable[..., Any]] = {
    "add": _arith(lambda a, b: a + b, 1),
    "subtract": _arith(lambda a, b: a - b, -1),
    "multiply": _arith(lambda a, b: a * b, 0),
    "divide": _divide,
    "modulo": _modulo,
    "negate": lambda a: -a,
    "eq": lambda a, b: a == b,
    "neq": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "lte": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "gte": lambda a, b: a >= b,
}


def _typed(value: Any, dtype: pa.DataType) -> Literal:
    """A literal of exactly ``dtype``: decimals are quantized to the type's scale."""
    if value is None:
        return Literal(None, dtype)
    if T.is_decimal(dtype):
        with decimal.localcontext(_EXACT_DECIMALS):
            value = decimal.Decimal(value).quantize(decimal.Decimal(1).scaleb(-dtype.scale))
    elif T.is_float(dtype):
        value = float(value)
    elif T.is_integer(dtype) and isinstance(value, bool | int):
        value = int(value)
    return Literal(value, dtype)


def _fold_cast(arg: Literal, target: pa.DataType) -> Expr | None:
    """Fold the casts the binder leaves on literals (widening numbers, text to date)."""
    value, source = arg.value, arg.dtype
    if value is None:
        return Literal(None, target)
    if source.equals(target):
        return arg
    try:
        if T.is_numeric(source) and (T.is_integer(target) and T.is_integer(source)):
            return _typed(value, target)
        if T.is_numeric(source) and T.is_decimal(target) and not T.is_float(source):
            literal = _typed(value, target)
            digits = len(literal.value.as_tuple().digits)
            return literal if digits <= target.precision else None
        if T.is_numeric(source) and T.is_float(target):
            return Literal(float(value), target)
        if T.is_string(source) and pa.types.is_date(target):
            return Literal(dt.date.fromisoformat(str(value).strip()[:10]), target)
        if pa.types.is_date(source) and pa.types.is_date(target):
            return Literal(value, target)
    except (ArithmeticError, ValueError, TypeError):
        return None
    return None
