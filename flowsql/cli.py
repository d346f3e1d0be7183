"""The ``flowsql`` command: run SQL from ``-c``, ``-f`` or piped stdin, or open the REPL.

Where the SQL comes from, first match wins: ``-c TEXT``; ``-f FILE`` (``-f -`` is stdin);
a sub-command (``tpch``); stdin when it is not a terminal; otherwise the interactive shell.
``-i FILE`` runs an init script in the same session before any of these (Flink's ``-i``).

Output: every result goes to stdout in ``--format`` (an aligned table, CSV or JSON lines);
results are printed as each statement completes, so earlier results survive a later error.
In CSV and JSON modes the messages of DDL and SET go to stderr, keeping stdout machine-readable.
``--format changelog`` prints a query's changes as they happen, one ``op | columns`` line per
change (``+I``, ``-U``, ``+U``, ``-D``, like Flink's tableau mode); a streaming query over an
unbounded table is always printed that way (Ctrl-C stops it). ``INSERT INTO`` submits a job
and the script waits for it (Ctrl-C cancels it). The interactive shell shows aligned tables.

Exit status (the contract scripts rely on):
  0    every statement succeeded
  1    a statement failed: ``Error: <message>`` on stderr (no traceback); later statements
       are not run
  2    bad command-line usage, or an internal error (one line naming it; the traceback only
       with ``--debug``)
  130  interrupted with Ctrl-C
  141  stdout was closed early (e.g. piped into ``head``)
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

import pyarrow as pa

import flowsql
from flowsql.errors import FlowSQLError
from flowsql.render import render_changelog, render_csv, render_json, render_result
from flowsql.session import Result, Session

__all__ = ["build_parser", "main"]

EXIT_OK = 0
EXIT_SQL_ERROR = 1
EXIT_INTERNAL = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
EXIT_TERMINATED = 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread: it unwinds like Ctrl-C, so running jobs stop
    with a final checkpoint and the worker processes are shut down before the exit."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated()

FORMATS = ("table", "csv", "json", "changelog")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``flowsql`` console script; returns the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in arguments
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(arguments)
        except SystemExit as exit_:  # --help, or a usage error already reported by argparse
            return exit_.code if isinstance(exit_.code, int) else EXIT_INTERNAL
        return _dispatch(args)
    except FlowSQLError as error:
        _flush_stdout()
        print(f"Error: {error}", file=sys.stderr)
        return EXIT_SQL_ERROR
    except Terminated:
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as error:
        _flush_stdout()
        if debug:
            traceback.print_exc()
        hint = "" if debug else " (run with --debug for the traceback)"
        print(f"Internal error: {type(error).__name__}: {error}{hint}", file=sys.stderr)
        return EXIT_INTERNAL


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, including the sub-commands that could be loaded."""
    parser = argparse.ArgumentParser(
        prog="flowsql",
        description="Run SQL with flowsql. With no SQL given, reads a script from piped "
                    "stdin or opens the interactive shell.")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("-c", "--command", metavar="SQL", dest="sql_text",
                        help="run these ';'-separated statements and exit")
    source.add_argument("-f", "--file", metavar="FILE", dest="sql_file",
                        help="run the statements in FILE ('-' reads stdin) and exit")
    parser.add_argument("-i", "--init", metavar="FILE", dest="init_file",
                        help="run the statements in FILE first (e.g. CREATE TABLE, SET), "
                             "then the SQL given or the interactive shell")
    parser.add_argument("--format", choices=FORMATS, default="table",
                        help="how results are printed (default: table)")
    parser.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                        type=_setting, dest="settings",
                        help="a session setting, e.g. --set execution.batch-size=8192 "
                             "(repeatable)")
    parser.add_argument("--max-rows", type=_row_limit, default=40, metavar="N",
                        help="rows shown per table in table format; 0 shows all (default: 40)")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of internal errors")
    parser.add_argument("--version", action="version", version=f"flowsql {flowsql.__version__}")
    subcommands = parser.add_subparsers(dest="subcommand", metavar="COMMAND")
    _register_tpch(subcommands)
    _register_nexmark(subcommands)
    return parser


# --- argument types -------------------------------------------------------------------------

def _setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got '{text}'")
    return key.strip(), value.strip()


def _row_limit(text: str) -> int | None:
    try:
        limit = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of rows, got '{text}'") from None
    if limit < 0:
        raise argparse.ArgumentTypeError("the row limit cannot be negative")
    return limit or None


def _register_tpch(subcommands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``flowsql tpch``; if its module cannot be loaded, the command still exists and
    says why it is unavailable instead of the whole CLI failing."""
    try:
        from flowsql.tpch.cli import register
    except Exception as error:  # any import-time failure disables only this command
        reason = f"{type(error).__name__}: {error}"
        placeholder = subcommands.add_parser("tpch", help="TPC-H tools (unavailable)",
                                             add_help=False)
        placeholder.add_argument("rest", nargs=argparse.REMAINDER)
        placeholder.set_defaults(func=_unavailable("tpch", reason))
        return
    register(subcommands)


def _register_nexmark(subcommands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``flowsql nexmark`` (``gen``, ``run``)."""
    from flowsql.nexmark.cli import register

    register(subcommands)


def _unavailable(name: str, reason: str) -> Callable[[argparse.Namespace], int]:
    def report(args: argparse.Namespace) -> int:
        print(f"Error: the '{name}' command is unavailable ({reason})", file=sys.stderr)
        return EXIT_SQL_ERROR

    return report


# --- running ----------------------------------------------------------------------------------

def _dispatch(args: argparse.Namespace) -> int:
    if args.subcommand is not None:
        if args.sql_text is not None or args.sql_file is not None or args.init_file is not None:
            print(f"flowsql: error: -c/-f/-i cannot be combined with '{args.subcommand}'",
                  file=sys.stderr)
            return EXIT_INTERNAL
        return int(args.func(args) or EXIT_OK)
    session = _open_session(args.settings)
    try:
        if args.init_file is not None:
            # as Flink's -i: an error in the init script ends the command (status 1)
            _run_script(session, _read_script(args.init_file), args)
        if args.sql_text is not None:
            return _run_script(session, args.sql_text, args)
        if args.sql_file is not None:
            return _run_script(session, _read_script(args.sql_file), args)
        if not sys.stdin.isatty():
            return _run_script(session, sys.stdin.read(), args)
        from flowsql.shell.repl import run_repl

        return run_repl(session, max_rows=args.max_rows)
    finally:
        session.close()


def _open_session(settings: list[tuple[str, str]]) -> Session:
    session = flowsql.connect()
    for key, value in settings:
        session.set(key, value)
    return session


def _read_script(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise FlowSQLError(f"cannot read {path}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise FlowSQLError(f"cannot read {path}: not UTF-8 text ({error.reason})") from None


def _run_script(session: Session, text: str, args: argparse.Namespace) -> int:
    """Run every statement, printing each result as soon as its statement completes."""
    separator = "" if args.format == "json" else "\n"
    printed_any = False
    for result in session.run_script(text):
        if result.kind == "query" and (args.format == "changelog" or result.table is None):
            if printed_any and separator:
                sys.stdout.write(separator)
            _print_changes(result, args.format)
            printed_any = True
            continue
        if result.job is not None:
            _wait_for_job(result)
            continue
        output = _format(result, args.format, args.max_rows)
        if output is None:
            continue
        if printed_any and separator:
            sys.stdout.write(separator)
        if output:
            sys.stdout.write(output + "\n")
        sys.stdout.flush()
        printed_any = True
    return EXIT_OK


def _print_changes(result: Result, fmt: str) -> None:
    """Print a query's changes as they happen (a streaming query over an unbounded input
    never ends: Ctrl-C stops it, and closing the iterator stops the job cleanly)."""
    changes = result.stream()
    first = True
    try:
        for batch in changes:
            table = pa.Table.from_batches([batch])
            if fmt == "csv":
                text = render_csv(table)
                text = text if first else text.partition("\n")[2]
            elif fmt == "json":
                text = render_json(table)
            else:
                text = render_changelog(table, header=first)
            first = False
            if text:
                sys.stdout.write(text + "\n")
                sys.stdout.flush()
    finally:
        close = getattr(changes, "close", None)
        if close is not None:
            close()


def _wait_for_job(result: Result) -> None:
    """A script waits for its INSERT jobs (Ctrl-C cancels the job and stops)."""
    job = result.job
    print(result.message, file=sys.stderr)
    try:
        status = job.wait()
    except KeyboardInterrupt:
        job.cancel()
        job.join(5.0)
        raise
    print(f"Job {job.id} {status.lower()}", file=sys.stderr)


def _format(result: Result, fmt: str, max_rows: int | None) -> str | None:
    """The text for stdout, or None when the result printed nothing there."""
    if fmt == "table":
        return render_result(result, max_rows=max_rows)
    if result.table is None:
        if result.message:
            print(result.message, file=sys.stderr)
        return None
    return render_csv(result.table) if fmt == "csv" else render_json(result.table)


# --- process edges -------------------------------------------------------------------------

def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        _silence_stdout()


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return
