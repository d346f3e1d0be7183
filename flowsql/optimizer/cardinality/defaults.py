"""The textbook defaults the estimator falls back on when statistics say nothing.

They are guesses, kept in one place so EXPLAIN readers and tests can name them:

* a table of unknown size has ``DEFAULT_TABLE_ROWS`` rows;
* equality with a constant on a column of unknown distinct count keeps
  ``EQ_SELECTIVITY`` (System R's 1/10), or 1/bound when an upper bound of the distinct
  values is smaller than ten;
* a range (``<``, ``<=``, ``>``, ``>=``) without min/max keeps ``RANGE_SELECTIVITY`` (1/3);
  a ``BETWEEN`` without min/max keeps ``BETWEEN_SELECTIVITY`` (1/9, both sides of one range);
* ``LIKE 'abc%'`` (a prefix) keeps ``LIKE_PREFIX_SELECTIVITY``; a pattern that must
  contain a fragment elsewhere (``'%abc'``, ``'%abc%'``) keeps ``LIKE_SELECTIVITY`` per
  fixed fragment, so ``'%a%b%'`` keeps 1/16;
* ``IS NULL`` without a null count keeps ``NULL_SELECTIVITY``;
* any other predicate (and a user-defined predicate without a hint) keeps
  ``UNKNOWN_SELECTIVITY`` (1/2, the default of ``flowsql.planner.udf``);
* a string column of unknown distinct count has ``STRING_DISTINCT_FRACTION`` of its
  table's rows as distinct values, but at least ``DEFAULT_DISTINCT`` (PostgreSQL's default)
  when the table has that many rows; other columns of unknown distinct count are assumed
  unique (the row count is an upper bound, and it keeps foreign-key joins right);
* an anti join keeps at least ``ANTI_MIN_FRACTION`` of its left rows (a NOT EXISTS that
  removes everything is rarely written).
"""

from __future__ import annotations

from flowsql.planner.udf import DEFAULT_SELECTIVITY

DEFAULT_TABLE_ROWS = 1000.0
EQ_SELECTIVITY = 0.1
RANGE_SELECTIVITY = 1 / 3
BETWEEN_SELECTIVITY = 1 / 9
LIKE_PREFIX_SELECTIVITY = 0.1
LIKE_SELECTIVITY = 0.25
NULL_SELECTIVITY = 0.1
UNKNOWN_SELECTIVITY = DEFAULT_SELECTIVITY
STRING_DISTINCT_FRACTION = 0.1
DEFAULT_DISTINCT = 200.0
ANTI_MIN_FRACTION = 0.1
#: a column whose measured distinct count reaches this fraction of its table's rows is a key
UNIQUE_FRACTION = 0.98
