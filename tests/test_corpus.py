"""The 32 real Google ADK recordings of the shared corpus, read in place, against their truth files.

For each recording: the turns in order, with user_text, final_text, intermediate_texts, agents, tool calls
(name, args, result, is_error, error_type) and tokens, as the `turns` view extracts them. The four
telemetry modes (older GenAI keys; current GenAI with content on spans, in log records, or not at all)
must all give the same answers, since ADK's own attributes always carry the content.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fixtures.otlp_lakes import corpus_recordings, ingest_doc, ingest_scrambled, trace_ids
from fixtures.requirements import needing

from tracevals.queries import open_lake

pytestmark = pytest.mark.needs("corpus")  # read in place, never copied; fails in CI when absent
RECORDINGS = corpus_recordings()
TURN_KEYS = ("user_text", "final_text", "intermediate_texts", "agents", "tool_calls", "tokens")


def _value(text: str | None) -> Any:
    """A tool's args / result as JSON when it is JSON (ADK records dicts), else the text itself."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _turns(con: duckdb.DuckDBPyConnection, traces: set[str]) -> list[dict[str, Any]]:
    relation = con.sql("SELECT * FROM turns ORDER BY session_id, turn_index")
    rows = [dict(zip(relation.columns, row, strict=True)) for row in relation.fetchall()]
    return [
        {
            "user_text": r["user_text"],
            "final_text": r["final_text"],
            "intermediate_texts": list(r["intermediate_texts"]),
            "agents": list(r["agents"]),
            "tool_calls": [
                {
                    "name": c["name"],
                    "args": _value(c["args"]),
                    "result": _value(c["result"]),
                    "is_error": c["is_error"],
                    "error_type": c["error_type"],
                }
                for c in r["tool_calls"]
            ],
            "tokens": {"input": r["input_tokens"], "output": r["output_tokens"]},
        }
        for r in rows
        if r["trace_id"] in traces
    ]


@pytest.fixture(scope="module")
def corpus_lake(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    lake = tmp_path_factory.mktemp("corpus") / "lake"
    for path in RECORDINGS:
        ingest_doc(lake, json.loads(path.read_text()))
    return open_lake(lake, materialize=True)


def test_the_corpus_is_complete() -> None:
    assert len(RECORDINGS) == 32
    assert all(path.with_name(path.stem + ".truth.json").is_file() for path in RECORDINGS)


@pytest.mark.parametrize("recording", needing("corpus", RECORDINGS, lambda p: f"{p.parent.name}/{p.stem}"))
def test_turns_match_the_truth_file(corpus_lake: duckdb.DuckDBPyConnection, recording: Path) -> None:
    truth = json.loads(recording.with_name(recording.stem + ".truth.json").read_text())
    got = _turns(corpus_lake, trace_ids(json.loads(recording.read_text())))
    expected = [{key: turn[key] for key in TURN_KEYS} for turn in truth["turns"]]
    assert got == expected
    totals = {
        "input": sum(t["tokens"]["input"] for t in got),
        "output": sum(t["tokens"]["output"] for t in got),
    }
    assert totals == truth["tokens"]


def test_the_corpus_split_shuffled_and_duplicated_reads_the_same(
    corpus_lake: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    docs = [json.loads(path.read_text()) for path in RECORDINGS]
    lake = tmp_path / "scrambled"
    ingest_scrambled(lake, docs, seed=7, parts=3)
    everything = set().union(*(trace_ids(doc) for doc in docs))
    assert _turns(open_lake(lake, materialize=True), everything) == _turns(corpus_lake, everything)


def test_nested_model_spans_count_once_and_the_merged_span_is_not_a_call(
    corpus_lake: duckdb.DuckDBPyConnection,
) -> None:
    # ADK's call_llm wraps the provider's generate_content: one model call, its tokens counted once
    nested = corpus_lake.execute(
        "SELECT count(*), sum(span_count), min(span_count) FROM model_calls WHERE span_name = 'call_llm'"
    ).fetchall()
    assert nested == [(76, 152, 2)]
    merged = corpus_lake.execute("SELECT kind, count(*) FROM spans WHERE name = 'execute_tool (merged)' GROUP BY 1")
    assert merged.fetchall() == [("other", 4)]
    assert corpus_lake.execute("SELECT count(*) FROM tool_call_gaps").fetchall() == [(0,)]
