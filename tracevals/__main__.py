"""`python -m tracevals` is the `tracevals` command."""

from tracevals.cli import main

main()
