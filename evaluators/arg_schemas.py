"""Arguments against a tool's JSON Schema (draft 2020-12), with validators and verdicts cached.

Validators compile once per schema and verdicts are memoised per (schema, arguments) pair, because a
batch repeats the same few schemas and, in test runs, the same arguments many times.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from tracevals.model.json_text import TooDeep
from tracevals.model.json_text import loads as json_loads

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

_MAX_MESSAGE = 120
TOO_DEEP = "nested too deeply to check against the schema"


def schema_error(schema: Mapping[str, Any], value: Any) -> str | None:
    """None when `value` (tool arguments, an output) is valid against `schema`, else one line:
    `at 'path': message`."""
    try:
        schema_text = _one_copy(json.dumps(schema, sort_keys=True, default=str))
        args_text = json.dumps(value, sort_keys=True, default=str)
        return _cached_error(schema_text, args_text)
    except (RecursionError, TooDeep):  # a value nested past what the encoder or the validator recurses into
        return TOO_DEEP


@lru_cache(maxsize=256)
def _one_copy(schema_text: str) -> str:
    """The first string equal to `schema_text` seen: the verdicts' keys share one copy of each schema's text
    (a new one each call held up to 65,536 copies of a schema)."""
    return schema_text


@lru_cache(maxsize=256)
def _validator(schema_text: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator  # imported when a schema is checked, not by every command

    return Draft202012Validator(json.loads(schema_text))


@lru_cache(maxsize=65536)
def _cached_error(schema_text: str, args_text: str) -> str | None:
    from jsonschema.exceptions import best_match

    error = best_match(_validator(schema_text).iter_errors(json_loads(args_text)))
    if error is None:
        return None
    path = ".".join(str(p) for p in error.absolute_path)
    message = " ".join(error.message.split())
    if len(message) > _MAX_MESSAGE:
        message = message[: _MAX_MESSAGE - 3] + "..."
    return f"at '{path}': {message}" if path else message
