"""JSON text read from spans, scores and task files, parsed without trusting its shape.

`json.loads` raises `RecursionError` for a document nested past what the parser recurses into (a few
thousand `[` do it), and a `RecursionError` is no `ValueError`: a caller that reads "not JSON" as a
`ValueError` (most of them) would let one hostile span value end a whole command with a traceback. `loads`
raises `TooDeep`, a `ValueError`, for it, so every caller's "not JSON" covers it. The one definition for
span values: no parse catches `RecursionError` itself (`json.dumps` of a deep value and a schema check
still do, where nothing is parsed).

And text every reader and writer can hold: `whole_text`, a lone UTF-16 surrogate (JSON's `\\ud83d` escape
standing alone, Python's `surrogateescape`) read as U+FFFD, by the collector and the instrumentation alike.
"""

from __future__ import annotations

import json
import re
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class TooDeep(ValueError):
    """The JSON text nests deeper than the parser goes: read as text that is not JSON."""


def whole_text(text: str) -> str:
    """`text` with each lone UTF-16 surrogate as U+FFFD, the replacement character. JSON's `\\ud83d` and
    Python's `surrogateescape` (a file name that is not UTF-8, as `os.listdir` gives it) make strings that
    UTF-8, so Parquet, protobuf and every exporter, cannot hold: JavaScript writes one for a string cut inside
    an emoji. U+FFFD is what Go's `encoding/json` and JavaScript's protobuf encoder make of it."""
    return _LONE_SURROGATE.sub("\ufffd", text) if _LONE_SURROGATE.search(text) else text


def loads(text: str | bytes, **kwargs: Any) -> Any:
    """`json.loads(text, **kwargs)`; `TooDeep` (a `ValueError`) instead of a `RecursionError`."""
    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        raise TooDeep("JSON nested deeper than the parser goes") from None
