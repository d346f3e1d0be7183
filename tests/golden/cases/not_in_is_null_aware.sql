-- why: NOT IN with a subquery becomes a null-aware anti join.
SELECT c_custkey FROM customer WHERE c_nationkey NOT IN (SELECT s_nationkey FROM supplier WHERE s_acctbal > 0)
