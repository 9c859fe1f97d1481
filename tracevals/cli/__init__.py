"""The `tracevals` command line: one module per subcommand, imported only when it runs."""

from __future__ import annotations

import importlib

import click

from tracevals import __version__

# name -> "module:attribute". A subcommand's module is imported when the subcommand runs (or its
# help is shown), so `tracevals sql` does not pay for importing the collector or the simulator.
COMMANDS: dict[str, str] = {
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
}

HELP = {
    "collect": "Receive OTLP (gRPC and HTTP) and write a durable Parquet lake.",
    "compact": "Rewrite the closed hours of a lake as a few large files sorted by session.",
    "demo": "Run the bundled order-support cases k times for two variants and compare them.",
    "export": "Write every row of a per-trace view (trajectories, steps ...) to Parquet, an hour group at a time.",
    "gate": "Pass or fail a candidate variant against a baseline on release thresholds (exit 0 or 1).",
    "ingest": "Write OTLP trace files (JSON or protobuf) into a lake.",
    "report": "Write the reliability report of a lake selection (.html .md .csv .json).",
    "run": "Run a task set k times against your agent and score every attempt.",
    "score": "Score the sessions of a lake (a range, a sample, or live) and store the scores.",
    "sql": "Run a read-only SQL query over the views of a lake.",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, HELP.get(name, "")) for name in self.list_commands(ctx)]
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
