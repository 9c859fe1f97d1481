"""The collector's fault suite: a full disk, poison payloads, slow and idle clients, compressed amplification.
Acknowledged spans lost = 0 in every scenario; legitimate clients keep being served. The scenarios are in
`fixtures/faults.py` (shared with `bench/faults.py`, which runs them longer and prints the figures); the
kills are in `test_collector_kills.py`."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.faults import amplification, disk_full, poison, slow_clients


@pytest.mark.needs("namespace")  # a tmpfs in a private mount namespace; fails in CI when it cannot be made
def test_a_full_disk_loses_nothing_acknowledged_and_the_collector_recovers(tmp_path: Path) -> None:
    """The disk fills while exporters send: refused with 503 (never acknowledged then lost); a kill -9 and a
    restart on the full disk (it starts); a SIGTERM on it (it ends, within its shutdown_timeout, leaving
    the rest in the log); space returns and everything flows again."""
    figures = disk_full(tmp_path)
    print(figures.line())
    assert figures.refused > 0, "the full disk was never felt: the scenario did not test anything"
    assert figures.lost == 0, figures.line()
    assert figures.extra["accepted after space returned"] > 0
    assert figures.extra["sigterm on a full disk (s)"] < 60  # it ends (it used to hang for ever)
    assert figures.leftovers == 0
    log = "".join(figures.logs)
    assert "could not write Parquet" in log and "write-ahead log's reserve" in log
    assert "the next start writes them" in log  # the SIGTERM on the full disk said what it left


def test_poison_payloads_get_their_answer_and_legitimate_clients_are_served(tmp_path: Path) -> None:
    figures = poison(tmp_path)
    print(figures.line())
    assert figures.extra["wrong answers"] == []
    assert figures.refused == 0  # no legitimate export (HTTP or gRPC) failed meanwhile
    assert figures.lost == 0 and figures.acknowledged > 0


def test_idle_and_trickling_connections_do_not_stop_anyone_else(tmp_path: Path) -> None:
    """A TLS connection that never sends a ClientHello used to block every HTTPS client; four bodies that
    trickle in used to hold the whole queue from their Content-Length and get every request refused."""
    figures = slow_clients(tmp_path)
    print(figures.line())
    assert figures.extra["legitimate exports served"] == "20/20"
    assert figures.extra["idle connection open throughout"] is True  # served while the bad ones were there
    assert figures.lost == 0


def test_compressed_bodies_are_charged_decompressed_and_memory_stays_near_the_limit(tmp_path: Path) -> None:
    """Eight clients send gzip OTLP/JSON that inflates ~20x. Documented margin (docs/collector.md): the
    limit plus one large JSON parse at a time, at most 8 x max_request_body_size (20 MiB) = 160 MiB.
    It used to reach 1,287 MiB at limit_mib 512."""
    figures = amplification(tmp_path, clients=8, seconds=8.0, limit_mib=512)
    print(figures.line())
    assert figures.extra["requests accepted"] > 0
    assert figures.extra["peak RSS MiB"] <= 512 + 8 * 20, figures.line()
    assert figures.lost == 0
