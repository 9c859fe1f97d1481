"""A cassette file that is not one is refused when it is opened, in one line naming it and what to do.

Replay reads an interaction's slot (attempt, key, occurrence), what it called (a tool and its arguments, or a
model's provider, method and request) and what it answered; a file without them (a hand edit, a copy cut
short, another tool's JSON) made the run end in a traceback, or made each replayed call fail inside the
attempts. The files `tracevals run --record` and `tracevals cases extract` write are read as before.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tracevals.harness.cassettes import Cassette, CassetteError, CassettePlayer, call_key, replay
from tracevals.harness.model_cassettes import MODELS_FOLDER, ModelCassette

TOOL = {
    "attempt": 1,
    "key": call_key("lookup", {"q": "x"}),
    "occurrence": 1,
    "tool": "lookup",
    "args": {"q": "x"},
    "result": {"v": 42},
}
MODEL = {
    "attempt": 1,
    "key": "k2",
    "occurrence": 1,
    "provider": "openai",
    "method": "chat.completions.create",
    "request": {"model": "m", "messages": []},
    "response": {"id": "r"},
}


def _write(folder: Path, content: Any) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    data = content if isinstance(content, bytes) else json.dumps(content).encode()
    (folder / "t1.json").write_bytes(data)


def _drop(item: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != key}


DAMAGED: list[tuple[str, Any, str]] = [
    ("cut short", b'{"interactions": [{"attempt": 1, "ke', "is not JSON (Unterminated string"),
    ("not UTF-8", b'{"interactions": "\xff"}', "is not JSON ('utf-8' codec can't decode"),
    ("nested too deep", b"[" * 100_000, "is not JSON (nested deeper than the parser goes)"),
    ("a list", [TOOL], "is not an object with a list of interactions"),
    ("interactions an object", {"interactions": {"a": 1}}, "is not an object with a list of interactions"),
    ("an interaction a string", {"interactions": [TOOL, "x"]}, ": interaction 2 is not an object"),
    ("attempt as text", {"interactions": [{**TOOL, "attempt": "1"}]}, ": interaction 1 has no attempt (an integer)"),
    ("attempt a boolean", {"interactions": [{**TOOL, "attempt": True}]}, ": interaction 1 has no attempt"),
    ("no key", {"interactions": [_drop(TOOL, "key")]}, ": interaction 1 has no key (a string)"),
    ("no occurrence", {"interactions": [_drop(TOOL, "occurrence")]}, ": interaction 1 has no occurrence"),
]


@pytest.mark.parametrize("mode", ["replay", "record-new", "record"])
@pytest.mark.parametrize(("name", "content", "says"), DAMAGED, ids=[d[0] for d in DAMAGED])
def test_a_damaged_tool_cassette_is_one_error_naming_the_file(
    tmp_path: Path, mode: str, name: str, content: Any, says: str
) -> None:
    _write(tmp_path, content)
    with pytest.raises(CassetteError) as caught:
        Cassette.open(tmp_path, "t1", mode)
    message = str(caught.value)
    assert message.startswith(f"cassette {tmp_path / 't1.json'}") and says in message, message
    assert message.endswith("restore it, or delete it and record again (--record)") and "\n" not in message


@pytest.mark.parametrize(
    ("item", "says"),
    [
        (_drop(TOOL, "tool"), "has no tool (a string)"),
        ({**TOOL, "args": ["x"]}, "has no args (an object)"),
        (_drop(TOOL, "result"), "has none of result, error"),
    ],
)
def test_a_tool_interaction_without_what_replay_reads(tmp_path: Path, item: dict[str, Any], says: str) -> None:
    _write(tmp_path, {"interactions": [TOOL, item]})
    with pytest.raises(CassetteError, match=re.escape(f"interaction 2 {says}")):
        Cassette.open(tmp_path, "t1", "replay")


@pytest.mark.parametrize(
    ("item", "says"),
    [
        (_drop(MODEL, "provider"), "has no provider (a string)"),
        (_drop(MODEL, "method"), "has no method (a string)"),
        ({**MODEL, "request": "m"}, "has no request (an object)"),
        (_drop(MODEL, "response"), "has none of response, stream, error"),
        (TOOL, "has no provider"),  # a tool cassette put among the models
    ],
)
def test_a_model_interaction_without_what_replay_reads(tmp_path: Path, item: dict[str, Any], says: str) -> None:
    _write(tmp_path / MODELS_FOLDER, {"interactions": [MODEL, item]})
    with pytest.raises(CassetteError, match="^model cassette .*t1.json: interaction 2 " + re.escape(says)):
        ModelCassette.open_in(tmp_path, "t1", "replay")


def test_whole_cassettes_still_open_and_replay(tmp_path: Path) -> None:
    """What the recorder and `cases extract` write (a stream or an error in place of a response, attempt 0,
    an error without a result) opens as before."""
    error = {**_drop(TOOL, "result"), "occurrence": 2, "error": {"error_type": "timeout", "message": "slow"}}
    _write(tmp_path, {"version": 1, "interactions": [TOOL, error, {**TOOL, "attempt": 0}]})
    cassette = Cassette.open(tmp_path, "t1", "replay")
    assert len(cassette.interactions) == 3 and replay(cassette.lookup(1, TOOL["key"], 1) or {}) == {"v": 42}
    player = CassettePlayer(cassette, attempt=7)  # no recording of its own: attempt 0's
    assert player.begin("lookup", {"q": "x"})[2] == {**TOOL, "attempt": 0}
    streamed = {**_drop(MODEL, "response"), "occurrence": 2, "stream": []}
    _write(tmp_path / MODELS_FOLDER, {"interactions": [MODEL, streamed]})
    assert len(ModelCassette.open_in(tmp_path, "t1", "replay").interactions) == 2
    (tmp_path / "t1.json").unlink()
    assert Cassette.open(tmp_path, "t1", "record").interactions == {}  # none yet: recorded from scratch
