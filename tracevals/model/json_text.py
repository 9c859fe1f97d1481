"""JSON text read from spans, scores and task files, parsed without trusting its shape.

`json.loads` raises `RecursionError` for a document nested past what the parser recurses into (a few
thousand `[` do it), and a `RecursionError` is no `ValueError`: a caller that reads "not JSON" as a
`ValueError` (most of them) would let one hostile span value end a whole command with a traceback. `loads`
raises `TooDeep`, a `ValueError`, for it, and for a value nested deeper than `MAX_DEPTH` (which parses, and
then passes the recursion limit in the code that walks it), so every caller's "not JSON" covers both. The
one definition for span values: no parse catches `RecursionError` itself (`json.dumps` of a deep value and a
schema check still do, where nothing is parsed); YAML documents get the same bound (`check_depth`).

And text every reader and writer can hold: `whole_text`, a lone UTF-16 surrogate (JSON's `\\ud83d` escape
standing alone, Python's `surrogateescape`) read as U+FFFD, by the collector and the instrumentation alike.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


# Arrays and objects inside each other, at most, in a value `loads` gives. Far deeper than anything a tool, a
# model or a task file writes, and far from Python's recursion limit: the code that reads a parsed value walks
# it by recursion (canonical arguments, argument matching, pseudonyms, reports), one to three frames a level,
# and a value the parser took (it goes a thousand deep) ended `score`, `report` and `cases extract` in a
# `RecursionError` there.
MAX_DEPTH = 100


class TooDeep(ValueError):
    """The JSON text nests deeper than `MAX_DEPTH` (or than the parser goes): read as text that is not JSON."""


def whole_text(text: str) -> str:
    """`text` with each lone UTF-16 surrogate as U+FFFD, the replacement character. JSON's `\\ud83d` and
    Python's `surrogateescape` (a file name that is not UTF-8, as `os.listdir` gives it) make strings that
    UTF-8, so Parquet, protobuf and every exporter, cannot hold: JavaScript writes one for a string cut inside
    an emoji. U+FFFD is what Go's `encoding/json` and JavaScript's protobuf encoder make of it."""
    return _LONE_SURROGATE.sub("\ufffd", text) if _LONE_SURROGATE.search(text) else text


def loads(text: str | bytes, *, max_depth: int | None = MAX_DEPTH, **kwargs: Any) -> Any:
    """`json.loads(text, **kwargs)`; `TooDeep` (a `ValueError`) instead of a `RecursionError`, and for a value
    nested deeper than `max_depth` (None: as deep as the parser goes)."""
    try:
        value = json.loads(text, **kwargs)
    except RecursionError:
        raise TooDeep("nested deeper than the parser goes") from None
    # only a text with more brackets than the bound can pass it: the walk is skipped for nearly every value
    if max_depth is not None and _brackets(text) > max_depth:
        check_depth(value, max_depth)
    return value


def check_depth(value: Any, max_depth: int = MAX_DEPTH) -> None:
    """`TooDeep` when `value` (parsed JSON or YAML) nests arrays and objects deeper than `max_depth`."""
    if not _within(value, max_depth):
        raise TooDeep(f"nested more than {max_depth} arrays and objects deep")


def _brackets(text: str | bytes) -> int:
    if isinstance(text, str):
        return text.count("[") + text.count("{")
    return text.count(b"[") + text.count(b"{")


def _within(value: Any, max_depth: int) -> bool:
    """Whether `value` nests at most `max_depth` arrays and objects deep (a loop, not recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        elif not isinstance(item, list):
            continue
        if depth + 1 > max_depth:
            return False
        stack.extend((child, depth + 1) for child in item if isinstance(child, (dict, list)))
    return True


def strict(value: Any) -> Any:
    """`value` with every float that is no number (NaN, an infinity) as None, at any depth: a figure that is
    missing (a rate of no attempts), which strict JSON writes as `null` and a CSV cell leaves empty."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(v) for v in value]
    return value


def json_text(value: Any, **kwargs: Any) -> str:
    """`value` as strict JSON, what every `--format json` prints: `json.dumps` writes NaN and Infinity, which
    no other JSON reader takes (`jq`, JavaScript, Spark); a float that is no number is `null` (`strict`), and
    a value JSON has no type for is its text."""
    try:
        return json.dumps(value, allow_nan=False, default=str, **kwargs)
    except ValueError:  # a NaN or an infinity somewhere: walked only then
        return json.dumps(strict(value), allow_nan=False, default=str, **kwargs)
