"""The corpus of real framework recordings (tests/corpus: 9 frameworks / instrumentations x their content
modes, recorded against the simulated model, truth files written by hand from each scenario's script), read
through `tracevals ingest` and the `turns` view and compared with every truth field.

What tracevals does not read right yet is listed, field by field, in tests/corpus/KNOWN_GAPS.json, and
docs/dialects.md says why. The test holds that list exact: a field outside it that is wrong is a
regression, and a listed field that is now right must leave the list (so the figure in docs/dialects.md,
printed by bench/corpus.py, stays true)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from fixtures.corpus_check import ROOT, compare, ingest, recordings

from tracevals.queries import open_lake

RECORDINGS = recordings()
KNOWN: dict[str, list[str]] = json.loads((ROOT / "KNOWN_GAPS.json").read_text())


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    lake = tmp_path_factory.mktemp("own-corpus") / "lake"
    ingest(lake, RECORDINGS)
    return open_lake(lake, materialize=True)


def test_the_corpus_covers_eight_frameworks_and_their_modes() -> None:
    frameworks = {p.parent.parent.name for p in RECORDINGS}
    modes = {(p.parent.parent.name, p.parent.name) for p in RECORDINGS}
    assert len(frameworks) >= 8 and len(modes) >= 20, (frameworks, len(modes))
    assert all(p.with_name(p.stem + ".truth.json").is_file() for p in RECORDINGS)
    assert set(KNOWN) <= {str(p.relative_to(ROOT).with_suffix("")) for p in RECORDINGS}  # no stale entry


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: str(p.relative_to(ROOT).with_suffix("")))
def test_every_truth_field_is_read_or_a_known_gap(corpus: duckdb.DuckDBPyConnection, recording: Path) -> None:
    result = compare(corpus, recording)
    known = sorted(KNOWN.get(result.recording, []))
    assert result.gaps == known, "\n".join(result.wrong) or "fixed: remove it from tests/corpus/KNOWN_GAPS.json"
