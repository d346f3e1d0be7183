-- why: a correlated scalar aggregate subquery becomes a join with an aggregate grouped by the correlation key.
SELECT p_partkey FROM part WHERE p_retailprice > (SELECT avg(ps_supplycost) FROM partsupp WHERE ps_partkey = p_partkey)
