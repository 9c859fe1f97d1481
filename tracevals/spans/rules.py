"""The generic rules: what holds for every stack, declared or not.

- A placeholder (`__REDACTED__`, `[REDACTED]`, `<redacted>`, `<elided>`, `<not specified>`, Logfire's
  `[Scrubbed due to 'session']` ...) is no value: never an id, a name or content (`is_placeholder`).
- A tool's arguments or result recorded in a framework's generic input / output attribute may sit in a single
  wrapper object (`{"kwargs": {...}}`, `{"args": [], "kwargs": {...}}`, `{"result": x}`, `{"output": x}`, a
  serialised ToolMessage, LlamaIndex's ToolOutput): it is unwrapped by rule (`unwrap`).
- A dict or list recorded as its Python repr is read as that value (`python_literal`).
- An error without a type keeps its class from the exception or status message when the message names one
  (`ValueError: unknown city`, `ValueError('unknown city')`, `<class 'ValueError'>`): `error_class`.
- A tool message that answers a call no span recorded says whether the call failed, as loops hand the model a
  failure: text that starts with `Error` or `Exception` (`Error: ValueError: unknown city`, `Error executing
  tool get_weather`), text that starts with an exception class (`error_class`), or an object whose one key is
  `error`: `answer_failed`.

The rules are data where they can be (the wrappers and placeholders are declared in `dialects.py`, read here
through `reading.py`), so the SQL views and the collector's columnar path apply the same ones.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tracevals.model.json_text import loads as json_loads
from tracevals.spans.declare import Unwrap
from tracevals.spans.reading import NO_ERROR_TYPES, PLACEHOLDER_PREFIXES, PLACEHOLDERS, UNWRAPS

_MAX_WRAPPERS = 4  # wrappers inside wrappers, at most (a cycle is impossible in JSON; this bounds the work)
# An exception class named at the start of a message (group 1); RE2 reads it as Python does (`views` in SQL)
ERROR_CLASS = (
    r"^\s*(?:<class '|builtins\.)?(?:[A-Za-z_]\w*\.)*"
    r"([A-Z]\w*(?:Error|Exception|Exit|Interrupt|Timeout|Failure|Fault|Refused|Denied))"
    r"(?:'>|\s*:|\(|\s*$)"
)
_CLASS = re.compile(ERROR_CLASS)


def is_placeholder(value: Any) -> bool:
    """Whether a value is a placeholder an instrumentation wrote where it withheld the value."""
    return isinstance(value, str) and (value in PLACEHOLDERS or value.startswith(PLACEHOLDER_PREFIXES))


def _matches(rule: Unwrap, value: dict[str, Any]) -> bool:
    keys = value.keys()
    if not (rule.keys == keys if rule.exact else rule.keys <= keys):
        return False
    if rule.empty is not None and value[rule.empty] not in ([], {}, None):
        return False
    return all(value.get(k) == v for k, v in rule.when)


def _take(value: Any, path: tuple[str | int, ...]) -> Any:
    for step in path:
        if isinstance(step, int) and isinstance(value, list) and -len(value) <= step < len(value):
            value = value[step]
        elif isinstance(step, str) and isinstance(value, dict):
            value = value.get(step)
        else:
            return None
    return value


# A Python repr of a dict or list (`python_literal`), read the same way in Python and in SQL (`views.python_literal`):
# split at its single quotes, the pieces outside the quoted strings (the odd ones, from 1) get JSON's words for
# True / False / None and must then hold JSON's structure, numbers and words only (no NaN, no trailing comma:
# where JSON parsers differ); the pieces inside must hold no control character; joined with double quotes, JSON.
# Text with a double quote or a backslash is no such repr (a string repr holding `'` or an escape): as it is.
PY_WORDS: dict[str, str] = {"True": "true", "False": "false", "None": "null"}
PY_WORD = r"\b(True|False|None)\b"
PY_OUTSIDE = r"(?:[\[\]{}:,0-9.eE+\- \t\n\r]|true|false|null)*"
PY_TRAILING_COMMA = r",[ \t\n\r]*[\]}]"
PY_CONTROL = r"[\x00-\x1f]"


def parsed(value: Any) -> Any:
    """A value recorded as JSON text, parsed; any other value (or text that is no JSON) as it is."""
    if isinstance(value, str) and value[:1] in ("{", "[", '"'):
        try:
            return json_loads(value)
        except ValueError:  # no JSON, or nested past what the parser recurses into
            return value
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def python_literal(value: Any) -> Any:
    """A dict or list recorded as its Python repr (`{'city': 'Paris', 'dst': True}`: what AutoGen, Semantic Kernel
    and Agno hand the model as a tool's result, `str(value)`), read as that value; any other value as it is. No code
    runs and nothing is evaluated: the text is rewritten as JSON by the rule above (`PY_WORDS` ...), the one the
    views apply (`views.python_literal`)."""
    if not isinstance(value, str) or value[:1] not in ("{", "[") or '"' in value or "\\" in value:
        return value
    pieces = value.split("'")
    for i, piece in enumerate(pieces):
        if i % 2 == 0:
            piece = pieces[i] = re.sub(PY_WORD, lambda m: PY_WORDS[m.group(1)], piece, flags=re.ASCII)
            if not re.fullmatch(PY_OUTSIDE, piece) or re.search(PY_TRAILING_COMMA, piece):
                return value
        elif re.search(PY_CONTROL, piece):
            return value
    try:
        found = json_loads('"'.join(pieces), parse_constant=_no_constant)
    except ValueError:
        return value
    return found if isinstance(found, (dict, list)) else value


def unwrap(value: Any) -> Any:
    """A tool's arguments or result from a framework's envelope: its wrappers unwrapped, a placeholder None.

    Text that was no wrapper comes back as the same text (its JSON is not rewritten); an unwrapped string that
    holds JSON stays that string.

    >>> unwrap('{"kwargs": {"city": "Paris"}}'), unwrap('{"result": "<not specified>"}'), unwrap("Paris")
    ({'city': 'Paris'}, None, 'Paris')
    """
    if is_placeholder(value):
        return None
    current = parsed(value)
    if current is value and isinstance(value, str):
        literal = python_literal(value)
        if literal is not value:
            return literal
    unwrapped = False
    for _ in range(_MAX_WRAPPERS):
        rule = next((r for r in UNWRAPS if _matches(r, current)), None) if isinstance(current, dict) else None
        if rule is None:
            break
        current, unwrapped = parsed(_take(current, rule.take)), True
    if not unwrapped:
        return value  # no wrapper: the value as recorded (text stays the same text)
    return None if is_placeholder(current) else current


def extract(value: Any, path: tuple[str | int, ...] = (), regex: str | None = None) -> Any:
    """The value at `path` inside an attribute's value (parsed from JSON text when it is text), or the first group
    of `regex`'s first match in its text."""
    if regex is not None:
        found = re.search(regex, value if isinstance(value, str) else json.dumps(value, default=str))
        return found.group(1) if found else None
    return _take(parsed(value), path)


_INJECTED = re.compile(r"^<[\w.]+ object at 0x[0-9a-fA-F]+>$")


def arguments(value: Any) -> Any:
    """A tool's arguments without what the framework injected: a value that is an object's repr
    (`<workflows.context.Context object at 0x7f...>`: LlamaIndex's `ctx`) is no argument the model gave."""
    parsed_value = parsed(value)
    if not isinstance(parsed_value, dict) or not any(
        isinstance(v, str) and _INJECTED.match(v) for v in parsed_value.values()
    ):
        return value
    return {k: v for k, v in parsed_value.items() if not (isinstance(v, str) and _INJECTED.match(v))}


def error_class(text: Any) -> str | None:
    """The exception class a message names at its start (`ValueError: ...`, `ValueError('...')`,
    `<class 'ValueError'>`, `builtins.ValueError: ...`), or None.

    >>> error_class("ValueError: unknown city: Atlantis"), error_class("<class 'ValueError'>"), error_class("boom")
    ('ValueError', 'ValueError', None)
    """
    if not isinstance(text, str):
        return None
    match = _CLASS.match(text)
    return match.group(1) if match else None


# The start of a tool message that reports a failure (besides an exception class, `_CLASS`): the word, then a
# colon, a space or the end. RE2 and Python read it alike (the views match it in SQL: `views.answer_failed`).
FAILED_ANSWER = r"^\s*(?:[Ee]rror|ERROR|[Ee]xception|EXCEPTION)(?:\s*:|\s|$)"
_FAILED_ANSWER = re.compile(FAILED_ANSWER)


def answer_failed(text: Any) -> bool:
    """Whether a tool message's text says the call failed (the rule above; the views' `answer_failed` in SQL).

    >>> answer_failed("Error: ValueError: unknown city"), answer_failed('{"error": "timeout"}'), answer_failed("42")
    (True, True, False)
    """
    if not isinstance(text, str):
        return False
    if _FAILED_ANSWER.match(text) or _CLASS.match(text):
        return True
    value = parsed(text)
    return isinstance(value, dict) and list(value) == ["error"] and value["error"] is not None


def error_type_of(value: str) -> str | None:
    """An `error.type` as recorded, with a Python class repr (`<class 'ValueError'>`, Semantic Kernel's) read as
    the class name; None for a value that names no type (declared: Mastra's `unknown`)."""
    if value in NO_ERROR_TYPES:
        return None
    if value.startswith("<class '"):
        return error_class(value) or value
    return value
