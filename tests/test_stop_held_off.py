"""A stop (Ctrl-C, SIGTERM, SIGHUP) that falls as a command makes something it must remove (`ingest`'s and
`score`'s temporary folders, `cases extract`'s set beside its target, a report written beside its name) waits
until the `try` that removes it has begun (`tracevals.model.signals.held_off`). CI saw `tracevals ingest`
stopped by SIGHUP right after `mkdtemp` made its folder: "Aborted! (SIGHUP)", and the folder stayed in TMPDIR.

Each test lands the signal exactly there: `mkdtemp` (or `mkstemp`) makes its folder, then the process sends
itself the signal before returning. SIGINT, whose Python default raises KeyboardInterrupt, so that a stop
taken nowhere could not end the test process; the handling is the same for the three signals."""

from __future__ import annotations

import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures.faults import otlp_json_body

from tracevals.cli import main
from tracevals.model.signals import held_off, temporary_folder
from tracevals.report.formatting import atomic_write


def _stopped_once_made(make: Callable[..., Any]) -> Callable[..., Any]:
    """`make` (`tempfile.mkdtemp`, `mkstemp`), which sends this process SIGINT once what it made exists."""

    def made_then_stopped(*args: Any, **kwargs: Any) -> Any:
        made = make(*args, **kwargs)
        signal.raise_signal(signal.SIGINT)  # Python runs the handler before this call returns
        return made

    return made_then_stopped


@pytest.fixture
def sigint_taken() -> Iterator[None]:
    """SIGINT taken as Python takes it by default (KeyboardInterrupt), whatever started the test run (a shell's
    background job, as CI's runner may be, ignores it), on the main thread, where Python runs the handlers."""
    assert threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def scratch(sigint_taken: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """TMPDIR for this test, empty (SIGINT taken: `sigint_taken`)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_ingest_stopped_as_its_folder_is_made_leaves_no_folder(
    scratch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export = tmp_path / "a.json"
    export.write_bytes(otlp_json_body(20, seed=1))
    monkeypatch.setattr(tempfile, "mkdtemp", _stopped_once_made(tempfile.mkdtemp))

    stopped = CliRunner().invoke(main, ["ingest", "--lake", str(tmp_path / "lake"), str(export)])

    assert stopped.output.strip().splitlines()[-1] == "Aborted!" and stopped.exit_code == 1, stopped.output
    assert list(scratch.iterdir()) == [] and not (tmp_path / "lake").exists()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handlers put back


def test_a_temporary_folder_is_removed_when_the_stop_falls_as_it_is_made(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "mkdtemp", _stopped_once_made(tempfile.mkdtemp))
    entered = []
    with pytest.raises(KeyboardInterrupt), temporary_folder("tracevals-test-") as folder:
        entered.append(folder)
    assert entered == [] and list(scratch.iterdir()) == []


def test_a_report_written_beside_its_name_leaves_no_part_file(
    sigint_taken: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nor an open descriptor of it: the file is opened before the stop is acted on, and closed as it unwinds."""
    monkeypatch.setattr(tempfile, "mkstemp", _stopped_once_made(tempfile.mkstemp))
    with pytest.raises(KeyboardInterrupt):
        atomic_write(tmp_path / "report.md", "# report\n")
    assert list(tmp_path.iterdir()) == []
    if Path("/proc/self/fd").is_dir():  # Linux: what this process has open, a removed file's path included
        assert not [d for d in _open_paths() if d.startswith(str(tmp_path))]


def _open_paths() -> list[str]:
    import os

    paths = []
    for descriptor in Path("/proc/self/fd").iterdir():
        try:
            paths.append(os.readlink(descriptor))
        except OSError:  # closed since it was listed
            continue
    return paths


def test_held_off_notes_a_stop_and_acts_on_it_once_released(scratch: Path) -> None:
    reached = []
    with pytest.raises(KeyboardInterrupt), held_off() as release:
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)  # a second one while held adds nothing: one stop
        reached.append("held")
        try:
            release()
        finally:
            reached.append("released")
        reached.append("after")  # not reached: release raised the stop's KeyboardInterrupt
    assert reached == ["held", "released"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

    with held_off():  # nothing came: nothing raised, the handler back
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_held_off_leaves_an_ignored_signal_ignored(scratch: Path) -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with held_off():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            signal.raise_signal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
