"""What keeps a `tracevals run` a unit of the lake: its lease (one process per run id, `lake.leases`) and its
signals (`harness.stopping`): the messages, the resume command and the exit codes."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click
from rich.console import Console

from tracevals.cli.shared.output import say
from tracevals.harness.stopping import StopRequest, stop_on_signals
from tracevals.lake.lake import Lake
from tracevals.lake.leases import Holder, Lease, LeaseBusy, LeaseError
from tracevals.lake.paths import LakeError
from tracevals.model.quoting import command_line, shell_word

# how long `tracevals run --resume` waits for the run's holder to end (a CI retry waits for its first try)
RESUME_WAIT_S = 24 * 3600.0


def take_run_lease(lake: Lake, run_id: str, resume: bool, console: Console) -> Lease:
    """The run's lease, or one line saying who holds it (and, with `resume`, after waiting for it)."""

    def waiting(holder: Holder) -> None:
        say(
            console,
            f"run {run_id!r} is in progress on {holder.describe()}: waiting for it to end (--resume)",
        )

    try:
        return Lease(lake, "runs", run_id, "tracevals run").acquire(
            wait=RESUME_WAIT_S if resume else 0.0, on_wait=waiting
        )
    except LeaseBusy as busy:
        where = busy.holder.describe() if busy.holder else "another host"
        raise click.ClickException(
            f"run {run_id!r} is in progress on {where}; --resume to join after it ends"
        ) from None
    except (LeaseError, LakeError) as exc:
        raise click.ClickException(str(exc)) from None


def resume_command(run_id: str) -> str:
    """The command that resumes this run: this one, with its run id (a generated id must be named)."""
    args = sys.argv[1:]
    if "run" not in args:  # called from Python (click's test runner): say what to add
        return f"tracevals run … --run-id {shell_word(run_id)}"
    if not any(a == "--run-id" or a.startswith("--run-id=") for a in args):
        args = [*args, "--run-id", run_id]
    return command_line("tracevals", *args)


@contextmanager
def stoppable(run_id: str, console: Console, release: Callable[[], None], lease: Lease) -> Iterator[StopRequest]:
    """The attempts' phase of a run: SIGINT / SIGTERM stop it as `harness.stopping` says, with these
    messages; a lost lease stops it too."""
    request = StopRequest()
    lease.on_lost = request.stop
    again = "Ctrl-C" if os.isatty(0) else "the signal"

    def first(stop: StopRequest) -> None:
        say(
            console,
            f"\ntracevals: {stop.name}: no new attempt starts; the {stop.in_flight} in flight finish and are kept "
            f"({again} again aborts them)",
        )

    def second(stop: StopRequest) -> None:
        say(
            console,
            f"tracevals: {stop.name} again: aborted the {stop.in_flight} attempts in flight (not kept: the "
            f"resumed run repeats them); resume with: {resume_command(run_id)}",
        )
        console.show_cursor(True)
        release()
        sys.stderr.flush()
        os._exit(stop.exit_code)  # worker threads cannot be interrupted: the process ends under them

    with stop_on_signals(first, second, request) as stop:
        yield stop


def stopped(stop: StopRequest, run_id: str, done: int, total: int, console: Console) -> None:
    """After a stop: say what was kept and how to resume, then exit 128 + the signal (1 for a lost lease)."""
    why = stop.reason or f"stopped by {stop.name}"
    say(
        console,
        f"tracevals: {why}: {done} of {total} attempts are in the lake, none started after the "
        f"{'signal' if stop.signum else 'stop'}; resume with: {resume_command(run_id)}",
    )
    raise SystemExit(stop.exit_code)
