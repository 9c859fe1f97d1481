"""The dialect declarations (`dialects.py`) compiled once into what the readers look up: which dialect a span is
of, its kind, the candidate keys of each canonical column, the placeholders and wrappers, and which attribute
keys are read at all. The normalizer, the collector's columnar path and the SQL views (`views.py`) use these
and nothing else: a rule exists once, in a declaration."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from functools import lru_cache
from typing import Any

from tracevals.spans.declare import NAME, By, Dialect, Key, Messages, key_of
from tracevals.spans.dialects import DIALECTS

# Recognising a span and reading its kind: by precedence (a stable sort keeps the declarations' order on ties).
BY_PRECEDENCE: tuple[Dialect, ...] = tuple(sorted(DIALECTS, key=lambda d: d.precedence))
RECOGNISERS: tuple[Dialect, ...] = tuple(d for d in BY_PRECEDENCE if d.recognise_keys or d.recognise_prefixes)
UNIVERSAL: frozenset[str] = frozenset(d.name for d in DIALECTS if not (d.recognise_keys or d.recognise_prefixes))
NO_DIALECT = "none"
DIALECT_NAMES: tuple[str, ...] = (*(d.name for d in RECOGNISERS), NO_DIALECT)


def _union(attribute: str) -> tuple[Any, ...]:
    seen: dict[Any, None] = {}
    for d in DIALECTS:
        seen.update(dict.fromkeys(getattr(d, attribute)))
    return tuple(seen)


def _columns(attribute: str) -> dict[str, tuple[Key, ...]]:
    out: dict[str, tuple[Key, ...]] = {}
    for d in DIALECTS:
        for column, sources in getattr(d, attribute).items():
            out[column] = out.get(column, ()) + tuple(key_of(s) for s in sources)
    return out


PLACEHOLDERS: frozenset[str] = frozenset(_union("placeholders"))
PLACEHOLDER_PREFIXES: tuple[str, ...] = _union("placeholder_prefixes")
UNWRAPS = _union("unwrap")
NOT_CALLS: frozenset[str] = frozenset(_union("not_calls"))
ERROR_FLAGS: tuple[str, ...] = _union("error_flags")
ERROR_LEVELS: Mapping[str, str] = {k: v for d in DIALECTS for k, v in d.error_levels.items()}
ERROR_MESSAGES: tuple[Key, ...] = tuple(key_of(s) for s in _union("error_messages"))
ERROR_OUTPUTS: tuple[Key, ...] = _union("error_outputs")
NO_ERROR_TYPES: frozenset[str] = frozenset(_union("no_error_types"))
ERROR_RESULTS: frozenset[str] = frozenset(d.name for d in DIALECTS if d.error_results)
# canonical column -> its candidate keys, in the declarations' order; TOOL_COLUMNS: read after them on tool spans
COLUMNS = _columns("columns")
TOOL_COLUMNS = _columns("tool_columns")
MESSAGES: tuple[Messages, ...] = _union("messages")
# the attribute keys whose value (not only presence) decides a kind, and the dialects that decide it by span name
KIND_VALUE_KEYS: tuple[str, ...] = tuple(
    sorted({c.key for d in DIALECTS for c in d.kind if c.values is not None and c.key != NAME})
)
BY_NAME: frozenset[str] = frozenset(d.name for d in DIALECTS if any(c.key == NAME for c in d.kind))


def _every_key() -> tuple[frozenset[str], frozenset[str], tuple[str, ...]]:
    """(keys whose value a column reads, keys read as a failure's flag, level or message, prefixes whose keys a
    column reads)."""
    plain: set[str] = set(KIND_VALUE_KEYS)
    deep: set[str] = set(ERROR_FLAGS) | set(ERROR_LEVELS)
    prefixes: list[str] = []
    for key in (k for keys in (*COLUMNS.values(), *TOOL_COLUMNS.values()) for k in keys):
        if key.pattern is not None:
            prefixes.append(key.name)
        else:
            plain.add(key.name)
    deep |= {k.name for k in ERROR_MESSAGES}
    return frozenset(plain), frozenset(deep), tuple(prefixes)


READ_KEYS, DEEP_KEYS, READ_PREFIXES = _every_key()
# keys under which a model span may carry message content: has_message_attributes
MESSAGE_KEYS: frozenset[str] = frozenset(m.key for m in MESSAGES if m.on == "llm")


def dialects_of(keys: Collection[str]) -> tuple[Dialect, ...]:
    """The dialects that read a span with these attribute keys, by precedence: those that recognise it, and
    those that read every span (tracevals' own)."""
    return tuple(d for d in BY_PRECEDENCE if d.name in UNIVERSAL or d.recognises(keys))


def dialect_of(keys: Collection[str]) -> str:
    """The span's dialect: the first (by precedence) that recognises it, else "none"."""
    return next((d.name for d in RECOGNISERS if d.recognises(keys)), NO_DIALECT)


def kind_of(attrs: Mapping[str, Any], dialects: tuple[Dialect, ...], name: str = "") -> str:
    """A span's canonical kind: the first clause (of its dialects, by precedence) that decides it, else other.

    A clause on an attribute's value applies when the attribute has a value; a clause on its presence when the
    key is there; a clause on the span's name always."""
    for dialect in dialects:
        for clause in dialect.kind:
            decided = _decide(clause, attrs, name)
            if decided is not None:
                return decided
    return "other"


def _decide(clause: By, attrs: Mapping[str, Any], name: str) -> str | None:
    if clause.key == NAME:
        return clause.decide(name)
    if clause.values is None:
        return clause.kind if clause.key in attrs else None
    value = attrs.get(clause.key)
    return None if value is None else clause.decide(value)


@lru_cache(maxsize=4096)
def _matching(prefix: str, pattern: str, keys: tuple[str, ...]) -> tuple[str, ...]:
    rx = re.compile(pattern)
    return tuple(sorted(k for k in keys if k.startswith(prefix) and rx.search(k[len(prefix) :])))


def present(key: Key, keys: tuple[str, ...], key_set: Collection[str]) -> tuple[Key, ...]:
    """The concrete keys a candidate stands for in a span with these keys: itself when present; for a prefix
    with a pattern, every key that matches, in sorted order."""
    if key.pattern is not None:
        return tuple(
            Key(k, key.path, key.envelope, None, key.regex, key.on_names)
            for k in _matching(key.name, key.pattern, keys)
        )
    return (key,) if key.name in key_set else ()
