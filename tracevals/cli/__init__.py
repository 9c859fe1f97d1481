"""The `tracevals` command line: one module per subcommand, imported only when it runs."""

from __future__ import annotations

import ast
import contextlib
import errno
import gc
import importlib
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from tracevals import __version__
from tracevals.lake.unreadable import duckdb_error as _duckdb_error
from tracevals.lake.unreadable import vanished_file
from tracevals.model.gc_pause import gc_paused

# name -> "module:attribute". A subcommand's module is imported when the subcommand runs (or its
# help is shown), so `tracevals sql` does not pay for importing the collector or the simulator.
COMMANDS: dict[str, str] = {
    "cases": "tracevals.cli.cases:cases",
    "collect": "tracevals.cli.collect:collect",
    "compact": "tracevals.cli.compact:compact",
    "demo": "tracevals.cli.demo:demo",
    "export": "tracevals.cli.export:export",
    "gate": "tracevals.cli.gate:gate",
    "ingest": "tracevals.cli.ingest:ingest",
    "report": "tracevals.cli.report:report",
    "run": "tracevals.cli.run:run",
    "score": "tracevals.cli.score:score",
    "sql": "tracevals.cli.sql:sql",
    "ui": "tracevals.cli.ui:ui",
}
# Surfaces beside the commands that are no `tracevals` subcommand: name -> the entry point that loads it.
# The pytest plugin runs attempts, scores them and reads their verdicts, as `run` and `gate` do.
SURFACES: dict[str, str] = {"pytest_plugin": "pytest11"}


def short_help(name: str) -> str:
    """A command's short help, derived from its own docstring: the first paragraph of the command
    function's docstring, read from its module's source without importing it (so `tracevals --help`
    stays instant and the help shown in the list is the help of the command itself)."""
    module_name, attr = COMMANDS[name].split(":")
    spec = importlib.util.find_spec(module_name)
    if spec is None or spec.origin is None:
        return ""
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == attr:
            paragraph = (ast.get_docstring(node) or "").strip().split("\n\n")[0]
            return " ".join(paragraph.split())
    return ""


# errno -> what to do about it: the errors of the machine, not of the input
_FIXES = {
    errno.EROFS: "the file system is read-only here: point --lake (or --out) at a writable place",
    errno.EACCES: "this user may not: fix the folder's permissions, or run as a user who may",
    errno.EPERM: "this user may not: fix the folder's permissions, or run as a user who may",
    errno.ENOSPC: "the disk is full: free some space (tracevals compact merges a lake's small files)",
    errno.EDQUOT: "the disk quota is used up: free some space",
}


# what a command can do on a lake it may read but not write
_READ_ONLY_WAYS = {
    "score": "score --no-write prints the scores without storing them",
    "compact": "compaction rewrites the lake: run it where the lake is writable",
}


def operational_error(exc: OSError) -> str | None:
    """One line for an `OSError` the machine causes (read-only, permission, full disk); None for others."""
    fix = _FIXES.get(exc.errno or 0)
    if fix is None:
        return None
    where = f"cannot use {exc.filename}: " if exc.filename else ""  # Arrow's errors name no file
    return f"{where}{exc.strerror or exc}; {fix}"


def _interrupted(exc: Exception) -> bool:
    """Whether `exc` is DuckDB's answer to Ctrl-C: it takes the SIGINT that arrives while a query runs and
    raises `RuntimeError("Query interrupted")` (or its `InterruptException`) instead of KeyboardInterrupt.
    Known by class name and message, so that the error handler does not import duckdb."""
    if _duckdb_error(exc, "InterruptException"):
        return True
    return type(exc) is RuntimeError and str(exc) == "Query interrupted"


def _exit_if_terminated() -> None:
    """After a stop: a SIGTERM's (or SIGHUP's) unwound command (temporary files removed) exits 128 + the
    signal (143, 129), as a shell reports it; Ctrl-C goes on to click's "Aborted!"."""
    import signal

    from tracevals.queries.interrupts import stopped_by

    taken = stopped_by()
    if taken and taken != signal.SIGINT:
        click.echo(f"Aborted! ({signal.Signals(taken).name})", err=True)
        raise SystemExit(128 + taken)


# What a command's own process tunes for it (`LazyGroup.get_command`), but not for these: they run the user's
# code in their process (`run` imports the agent), whose environment is the user's, BLAS threads included.
_USER_CODE = frozenset({"run"})


def _no_blas_threads() -> None:
    """One OpenBLAS thread, unless the user chose a number (`OPENBLAS_NUM_THREADS`, before numpy loads).
    numpy (which pyarrow and Polars import) starts OpenBLAS with a thread per core that spins on start-up:
    about 0.1 CPU-s a process, on a 2-core machine the other core, for linear algebra no command does."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


class LazyGroup(click.Group):
    _own_process = False  # `main` was called with no arguments: this process is the command's own

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        own = self._own_process and cmd_name not in _USER_CODE
        if own:
            _no_blas_threads()
        # In its own process, the imports make the objects the process keeps to its end, and little garbage: the
        # cyclic collector, which walked them at every few thousand made, is paused while they run (a small lake's
        # `sql`, `score` and `report` took 0.87-0.96 of their CPU time without those walks), and they are frozen
        # after, so that no later full collection walks them again (a twentieth of `ingest`'s CPU on 100,000 spans
        # went on that)
        with gc_paused() if own else contextlib.nullcontext():
            command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        if own:
            gc.freeze()
        return command

    def main(self, args: Sequence[str] | None = None, *rest: Any, **options: Any) -> Any:
        # No arguments given: the command line of this process (the `tracevals` script, `python -m
        # tracevals`), which is the command's own. A caller that passes arguments (click's CliRunner, a
        # program calling `main([...])`) keeps its process as it is: no environment set, nothing frozen.
        if args is None:
            self._own_process = True
        return super().main(args, *rest, **options)

    def invoke(self, ctx: click.Context) -> object:
        """`_invoke`, its error line shown as a table's values are (`output.shown`): it may quote what a file or a
        lake holds (a span's name, a run id), or an argument holding a carriage return from a pipeline, and a
        terminal would act on the control and bidi characters in it."""
        try:
            return self._invoke(ctx)
        except click.ClickException as exc:
            from tracevals.cli.shared.output import shown

            exc.message = shown(exc.message)  # type: ignore[misc]  # Final in click's stubs, a plain attribute at runtime
            raise

    def _invoke(self, ctx: click.Context) -> object:
        """Every command's errors a user can fix end as one line and exit code 1, wherever they are raised:
        a `UserError` (`tracevals.model.errors`: a bad file, option or lake), and an operational `OSError`
        (a read-only lake, missing permissions, a full disk), and DuckDB running out of memory; a command
        catches none of them itself. Ctrl-C while DuckDB runs a query ends as Ctrl-C does elsewhere
        ("Aborted!", click's own)."""
        from tracevals.lake import paths
        from tracevals.model.errors import UserError
        from tracevals.queries.interrupts import installed

        try:
            with installed():  # Ctrl-C (and SIGTERM, SIGHUP) stops a DuckDB query wherever it falls
                return super().invoke(ctx)
        except KeyboardInterrupt:
            _exit_if_terminated()
            raise
        except UserError as exc:
            raise click.ClickException(str(exc)) from None
        except OSError as exc:
            message = operational_error(exc)
            if message is None:
                raise
            if exc.errno in (errno.EROFS, errno.EACCES) and ctx.invoked_subcommand in _READ_ONLY_WAYS:
                message += f" ({_READ_ONLY_WAYS[ctx.invoked_subcommand]})"
            raise click.ClickException(message) from None
        except Exception as exc:
            if _interrupted(exc):  # Ctrl-C inside a DuckDB query: what Ctrl-C anywhere else gives
                _exit_if_terminated()
                raise click.Abort() from None
            gone = vanished_file(exc)
            if gone is not None:
                raise click.ClickException(gone) from None
            if not _duckdb_error(exc, "OutOfMemoryException"):
                raise
            # DuckDB ran out of the memory it was given or could get: one line, not its traceback
            first = str(exc).splitlines()[0] if str(exc) else "out of memory"
            raise click.ClickException(
                f"{first}: free memory, lower --workers where the command has it, or raise --memory-limit"
            ) from None
        finally:
            paths.strict_files = None  # --strict was this invocation's: after it, the environment decides

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, short_help(name)) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="tracevals")
def main() -> None:
    """Does your AI agent do its job again, not once? Reliability evals from OpenTelemetry traces.

    \b
    Examples:
      tracevals demo                      # the whole pipeline on a simulated model, no servers
      tracevals sql --lake demo-out/lake "select task_id, tools from trajectories limit 5"
    """
