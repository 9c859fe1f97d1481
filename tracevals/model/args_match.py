"""How the arguments of an actual tool call are compared with the arguments a case expects.

Modes (direction stated once, here): `exact` — the same arguments; `ignore` — arguments not compared;
`superset` — the actual arguments contain every expected key with an equal value (extra actual keys are
fine); `subset` — every actual key appears among the expected ones with an equal value (keys the agent
left out are fine). Nested objects are compared the same way, key by key. An override for one tool may
pick another mode and/or restrict the comparison to some dotted key paths (`"keys": ["filter.status"]`),
or replace the comparison with a function (`"compare": "my_checks:same_query"`, called as
`f(expected_args, actual_args) -> bool`). A comparison function that cannot be loaded or raises makes
`ArgsRule.matches` raise `ComparisonError` (one line naming it): every caller (trajectory_match, the
per-step statistics) counts the step as not matching and reports the error once, never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tracevals.model.callables import CallableError, load_callable
from tracevals.model.case import Case

ARGS_MODES = ("exact", "ignore", "superset", "subset")

ArgsComparator = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
"""A custom comparison for one tool: `(expected_args, actual_args) -> bool`."""

_ABSENT = object()


class ComparisonError(Exception):
    """A case's `compare` function could not be loaded, or raised; `str()` is one line naming it."""

    def __init__(self, reference: str, why: str) -> None:
        self.reference = reference
        self.why = why
        super().__init__(f"comparison {reference} {why}")


@dataclass(frozen=True)
class ArgsRule:
    """How one tool's arguments are compared: a mode, optionally only some dotted key paths."""

    mode: str = "ignore"
    keys: tuple[str, ...] | None = None
    compare: str | None = None  # "module:function" replacing the comparison

    def matches(self, expected: Mapping[str, Any] | None, actual: Mapping[str, Any] | None) -> bool:
        """Whether `actual` satisfies `expected`; expected None accepts anything, actual None (not
        captured) satisfies nothing that has to be compared."""
        if expected is None or self.mode == "ignore":
            return True
        if actual is None:
            return False
        if self.compare is not None:
            return _call_comparison(self.compare, expected, actual)
        if self.keys is not None:
            expected, actual = _project(expected, self.keys), _project(actual, self.keys)
        if self.mode == "exact":
            return json_equal(expected, actual)
        if self.mode == "superset":
            return contains(actual, expected)
        return contains(expected, actual)  # subset


def _call_comparison(reference: str, expected: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
    try:
        fn = load_callable(reference)
    except CallableError as exc:
        raise ComparisonError(reference, f"not loaded: {exc}") from None
    try:
        return bool(fn(expected, actual))
    except Exception as exc:  # user code: its failure is a finding on the cases it touches, never a crash
        raise ComparisonError(reference, f"raised {type(exc).__name__}: {exc}") from None


def args_rule(case: Case, tool: str) -> ArgsRule:
    """The rule for `tool` in `case`: its override from `match.overrides`, else the case's args mode.

    An override that only lists `keys` compares those keys exactly; one with `compare` calls it.
    """
    override = normalized_override(case.raw.get("match", {}).get("overrides", {}).get(tool, {}))
    keys = override.get("keys")
    compare = override.get("compare")
    mode = override.get("args") or ("exact" if keys or compare else case.args_mode)
    return ArgsRule(mode=mode, keys=tuple(keys) if keys else None, compare=compare)


def normalized_override(override: Any) -> dict[str, Any]:
    """An override in its object form: a mode alone (`"ignore"`) is `{"args": mode}`, a list of key paths
    (`["customer_id"]`) is `{"keys": paths}`."""
    if isinstance(override, str):
        return {"args": override}
    if isinstance(override, list):
        return {"keys": override}
    return dict(override)


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: `true` is not `1` (Python's `True == 1` is), `1` is `1.0`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def contains(big: Mapping[str, Any], small: Mapping[str, Any]) -> bool:
    """Every key of `small` is in `big` with an equal value; nested objects compared the same way."""
    for key, want in small.items():
        have = big.get(key, _ABSENT)
        if isinstance(want, Mapping) and isinstance(have, Mapping):
            if not contains(have, want):
                return False
        elif have is _ABSENT or not json_equal(have, want):
            return False
    return True


def _project(args: Mapping[str, Any], paths: tuple[str, ...]) -> dict[str, Any]:
    """`{path: value}` for each dotted path present in `args`."""
    out: dict[str, Any] = {}
    for path in paths:
        value: Any = args
        for part in path.split("."):
            value = value.get(part, _ABSENT) if isinstance(value, Mapping) else _ABSENT
        if value is not _ABSENT:
            out[path] = value
    return out
