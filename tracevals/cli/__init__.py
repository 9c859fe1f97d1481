"""The `tracevals` command line: one module per subcommand, imported only when it runs."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import click

from tracevals import __version__

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
