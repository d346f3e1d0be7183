"""The shell's care for background jobs: quitting (``\\q``, ``quit``, Ctrl-D) while jobs
run asks first, since leaving the shell cancels them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prompt_toolkit import PromptSession

if TYPE_CHECKING:
    from prompt_toolkit.input import Input
    from prompt_toolkit.output import Output

    from flowsql.runtime.streaming.job import Job
    from flowsql.session import Session

__all__ = ["confirm_quit", "quit_question", "running_jobs"]


def running_jobs(session: Session) -> list[Job]:
    """The session's jobs that have not ended (running or restarting)."""
    return [job for job in session.jobs if job.status() in ("RUNNING", "RESTARTING")]


def quit_question(jobs: list[Job]) -> str:
    ids = ", ".join(str(job.id) for job in jobs)
    if len(jobs) == 1:
        return f"Job {ids} is running; quitting cancels it. Quit? [y/N] "
    return f"{len(jobs)} jobs are running ({ids}); quitting cancels them. Quit? [y/N] "


def confirm_quit(session: Session, *, input: Input | None = None,
                 output: Output | None = None) -> bool:
    """True when nothing runs or the user answers yes; Ctrl-C, Ctrl-D or anything but
    y/yes keeps the shell open."""
    jobs = running_jobs(session)
    if not jobs:
        return True
    asking: PromptSession[str] = PromptSession(input=input, output=output)
    try:
        answer = asking.prompt(quit_question(jobs))
    except (KeyboardInterrupt, EOFError):
        return False
    return answer.strip().lower() in ("y", "yes")
