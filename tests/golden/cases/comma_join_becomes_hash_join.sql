-- why: equality predicates in WHERE turn a comma join into a hash join, never a cross product.
SELECT n_name, r_name FROM nation, region WHERE n_regionkey = r_regionkey AND r_name = 'ASIA'
