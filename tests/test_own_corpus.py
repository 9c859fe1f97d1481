"""The corpus of real framework recordings (tests/corpus: frameworks and instrumentations, Python and JavaScript,
x their content modes, recorded against the simulated model, truth files written by hand from each scenario's
script), read through `tracevals ingest` and the `turns` view and compared with every truth field.

What tracevals does not read right yet is pinned in tests/corpus/KNOWN_GAPS.json by the value it reads, leaf by
leaf (a tool call's key, a token count, else the field): a leaf outside it that is wrong is a regression, a
pinned leaf that reads anything else (worse, or right) fails too, and the file must follow. docs/dialects.md
says why each gap is there; `bench/corpus.py` prints the figures it records (and `--pin` rewrites the file
from what is read, for a change that is meant). Fields a recording does not hold (content not captured) are
listed as such, not compared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fixtures.corpus_check import ROOT, compare, ingest, recordings

from tracevals.queries import open_lake

RECORDINGS = recordings()
KNOWN: dict[str, dict[str, Any]] = json.loads((ROOT / "KNOWN_GAPS.json").read_text())


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


def _shown(value: Any) -> str:
    return json.dumps(value, default=str)[:300]


def _differences(read: dict[str, Any], pinned: dict[str, Any]) -> list[str]:
    out = []
    for leaf in sorted(set(read) | set(pinned)):
        if leaf not in pinned:
            out.append(f"{leaf}: now read wrong as {_shown(read[leaf])}")
        elif leaf not in read:
            out.append(f"{leaf}: now right (pinned as {_shown(pinned[leaf])}): remove it from KNOWN_GAPS.json")
        elif read[leaf] != pinned[leaf]:
            out.append(f"{leaf}: read {_shown(read[leaf])}, pinned {_shown(pinned[leaf])}")
    return out


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: str(p.relative_to(ROOT).with_suffix("")))
def test_every_truth_field_is_read_or_a_pinned_gap(corpus: duckdb.DuckDBPyConnection, recording: Path) -> None:
    result = compare(corpus, recording)
    read = json.loads(json.dumps(result.pins, default=str))  # as the file holds it
    assert read == KNOWN.get(result.recording, {}), "\n".join(_differences(read, KNOWN.get(result.recording, {})))
