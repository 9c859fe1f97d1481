"""The `tracevals` command line: one module per subcommand."""

from __future__ import annotations

import click

from tracevals import __version__
from tracevals.cli.demo import demo
from tracevals.cli.sql import sql


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="tracevals")
def main() -> None:
    """Does your AI agent do its job again, not once? Reliability evals from OpenTelemetry traces.

    \b
    Examples:
      tracevals demo                      # the whole pipeline on a simulated model, no servers
      tracevals sql --lake demo-out/lake "select task_id, tools from trajectories limit 5"
    """


main.add_command(demo)
main.add_command(sql)
