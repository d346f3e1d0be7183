"""flowsql's test suite. A package so that test modules import the shared harnesses as
``tests.harness.*`` (the repository root is on pytest's ``pythonpath``)."""
