-- why: EXISTS under OR cannot be a semi join; it becomes a mark join.
SELECT n_name FROM nation WHERE n_regionkey = 0 OR EXISTS (SELECT 1 FROM supplier WHERE s_nationkey = n_nationkey AND s_acctbal > 9000)
