"""DESCRIBE JOB '<id>': the job's SHOW JOBS row and its operators' counts."""

from __future__ import annotations

import pytest

import flowsql
from flowsql.errors import FlowSQLError


def test_describe_job_shows_the_row_and_the_operators() -> None:
    with flowsql.connect(**{"execution.runtime-mode": "streaming"}) as s:
        s.sql("CREATE TABLE g (id BIGINT) WITH ('connector'='datagen','number-of-rows'='3')")
        s.sql("CREATE TABLE b (id BIGINT) WITH ('connector'='blackhole')")
        job = s.sql("INSERT INTO b SELECT id FROM g").job
        assert job.wait(30) == "FINISHED"
        result = s.sql(f"describe job '{job.id}'")
        assert result.to_arrow().to_pylist() == s.sql("SHOW JOBS").to_arrow().to_pylist()
        assert result.message == (
            "SinkExec (table b) [operator 1]: 3 in, 0 out, input ended\n"
            "ProjectExec [operator 2]: 3 in, 3 out, input ended\n"
            "ProjectExec [operator 3]: 3 in, 3 out, input ended\n"
            "TableScanExec (table g) [operator 4]: 0 in, 3 out")
        with pytest.raises(FlowSQLError, match="DESCRIBE JOB: no job '99' in this session "
                           r"\(SHOW JOBS lists them; known: '\d+'\)"):
            s.sql("DESCRIBE JOB '99'")
        with pytest.raises(FlowSQLError, match="expected DESCRIBE JOB '<id>'"):
            s.sql("DESCRIBE JOB 7")


def test_describe_job_of_a_failed_job_shows_its_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "bad.csv").write_text("1\nnot a number\n")
    with flowsql.connect() as s:
        s.sql(f"CREATE TABLE bad (n BIGINT) WITH ('connector' = 'filesystem', "
              f"'path' = '{tmp_path / 'bad.csv'}', 'format' = 'csv')")
        s.sql("CREATE TABLE out_n (n BIGINT) WITH ('connector' = 'blackhole')")
        job = s.sql("INSERT INTO out_n SELECT n FROM bad").job
        job.join(30)
        result = s.sql(f"DESCRIBE JOB '{job.id}'")
        assert result.to_arrow()["status"].to_pylist() == ["FAILED"]
        assert result.message is not None and result.message.startswith("error: ")
