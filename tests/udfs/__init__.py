"""Sample user-defined functions the UDF tests register by import path
(``tests.udfs.scalars.times_two``): worker processes and Spark's Python workers import
them from here, as they would a user's module."""
