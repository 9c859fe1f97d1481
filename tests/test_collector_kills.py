"""SIGKILLs at random moments (seeded): 8 while sending, 9 while a previous run's log is being written out
at start, 6 while compacting. Nothing acknowledged is lost; a restart never writes again what an earlier
one committed (the commit journal), and a killed compaction leaves neither a temporary file nor a row
twice once the next run is done. The scenario is `fixtures.faults.kills` (bench/faults.py runs more)."""

from __future__ import annotations

from pathlib import Path

from fixtures.faults import kills


def test_random_kills_lose_nothing_and_write_nothing_twice(tmp_path: Path) -> None:
    send, replay, compaction = kills(tmp_path, send_kills=8, replay_kills=8, compact_kills=6, seed=7)
    for figures in (send, replay, compaction):
        print(figures.line())
        assert figures.lost == 0, figures.line()
        assert figures.leftovers == 0, figures.line()
    assert send.kills + replay.kills + compaction.kills >= 20
    # the restarts found part of the log already committed, and skipped it: no row is on disk twice
    assert replay.extra["starts that found part of the log committed"] > 0
    assert replay.duplicated == 0, replay.line()
    # the kills landed while compaction was writing, and the next run cleaned up after them
    assert compaction.extra["kills that left a half-written file"] > 0
    assert compaction.duplicated == 0, compaction.line()
