"""The cardinality estimator: rows and distinct counts of logical plans, never costs.

One idea per module: ``defaults`` (the textbook guesses when nothing is known),
``columns`` (per-column estimates and how distinct counts shrink with the rows),
``ranges`` (histogram / min-max interpolation), ``selectivity`` (predicates),
``dampening`` (exponential backoff for correlated factors), ``joins`` (equi, semi, anti and
outer joins), ``groups`` (GROUP BY), and ``estimator`` (the walk over a plan).
"""

from flowsql.optimizer.cardinality.columns import ColumnEstimate
from flowsql.optimizer.cardinality.estimator import CardinalityEstimator, equi_sides, table_rows

__all__ = ["CardinalityEstimator", "ColumnEstimate", "equi_sides", "table_rows"]
