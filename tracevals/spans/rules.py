"""The generic rules: what holds for every stack, declared or not.

- A placeholder (`__REDACTED__`, `[REDACTED]`, `<redacted>`, `<elided>`, `<not specified>`, Logfire's
  `[Scrubbed due to 'session']` ...) is no value: never an id, a name or content (`is_placeholder`).
- A tool's arguments or result recorded in a framework's generic input / output attribute may sit in a single
  wrapper object (`{"kwargs": {...}}`, `{"args": [], "kwargs": {...}}`, `{"result": x}`, `{"output": x}`, a
  serialised ToolMessage, LlamaIndex's ToolOutput): it is unwrapped by rule (`unwrap`).
- A dict or list recorded as its Python repr is read as that value (`python_literal`); an object recorded as a
  Pydantic model's str() (`status='success' result={...} error=None`) is read as its fields where a declared
  wrapper then applies to them (`model_fields`).
- A declared output whose text says its span failed (`Dialect.error_outputs`) makes the span a failure
  (`says_failed`), whatever its status.
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

import ast
import json
import re
from typing import Any

from tracevals.model.json_text import loads as json_loads
from tracevals.spans.declare import Key, Unwrap
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


# An object recorded as a Pydantic model's str(): `name=value` pairs, one space apart, each value a Python repr.
_FIELD = re.compile(r"[A-Za-z_]\w*=")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_OPENERS, _CLOSERS = "([{<", ")]}>"
MAX_MODEL_TEXT = 1 << 20  # longer text is read as it is (the scan is linear, but a bound keeps it cheap)


def _field_value(text: str) -> Any:
    """One field of `model_fields`: a Python literal read as that value (a quoted string, a number, True / False /
    None, a dict or list by `python_literal`), anything else (`<generator object ...>`) as its text."""
    if text in PY_WORDS:
        return {"True": True, "False": False, "None": None}[text]
    if text[:1] in ("'", '"'):
        try:
            found = ast.literal_eval(text)  # a string literal only: nothing runs
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return text
        return found if isinstance(found, str) else text
    if _NUMBER.fullmatch(text):
        return json_loads(text)
    return python_literal(text) if text[:1] in ("{", "[") else text


def model_fields(value: Any) -> dict[str, Any] | None:
    """The fields of an object recorded as a Pydantic model's str() (`status='success' result={'city': 'Paris'}
    error=None`: OpenLLMetry's Agno instrumentation writes a tool's result object so), or None for any other value:
    text that starts with a field, whose fields (two or more, each named once) end at a space followed by the next
    field's name outside quotes and brackets, and whose quotes and brackets are balanced.

    >>> model_fields("status='failure' result=None error='unknown city: Atlantis'")
    {'status': 'failure', 'result': None, 'error': 'unknown city: Atlantis'}
    """
    if not isinstance(value, str) or len(value) > MAX_MODEL_TEXT or not _FIELD.match(value):
        return None
    fields: dict[str, Any] = {}
    at, n = 0, len(value)
    while at < n:
        found = _FIELD.match(value, at)
        if found is None:
            return None
        name, start = found.group()[:-1], found.end()
        end, depth, quote = start, 0, ""
        while end < n:
            ch = value[end]
            if quote:
                if ch == "\\":
                    end += 1
                elif ch == quote:
                    quote = ""
            elif ch in "'\"":
                quote = ch
            elif ch in _OPENERS:
                depth += 1
            elif ch in _CLOSERS:
                depth -= 1
                if depth < 0:
                    return None
            elif ch == " " and depth == 0 and _FIELD.match(value, end + 1):
                break
            end += 1
        if quote or depth or name in fields:
            return None
        fields[name] = _field_value(value[start:end])
        at = end + 1
    return fields if len(fields) >= 2 else None


def says_failed(key: Key, value: Any) -> bool:
    """Whether a declared output (`Dialect.error_outputs`: an attribute and a regular expression) says its span
    failed: its text matches the expression. The normalizer and the collector's columnar path both ask this."""
    return isinstance(value, str) and key.regex is not None and re.search(key.regex, value) is not None


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
        fields = model_fields(value)  # a result object's str(): its fields, where a wrapper rule applies to them
        if fields is not None:
            current = fields
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
