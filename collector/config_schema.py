"""The small validation toolkit behind `collector/config.py`: typed value parsers that know their path.

Every parser takes `(value, path)` and returns the parsed value or raises `CollectorConfigError` naming the
path (`exporters.parquet.compression`) and, for a near miss, the intended word. Kept apart from the
config's shape so that the shape reads as a table of keys.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from tracevals.model.errors import UserError

Parser = Callable[[Any, str], Any]
T = TypeVar("T")


class CollectorConfigError(UserError, ValueError):
    """A configuration that cannot run; the message names the key path and how to fix it."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


@dataclass(frozen=True)
class Key:
    """One key of a mapping: its parser and its default (`REQUIRED` when it must be given)."""

    parse: Parser
    default: Any = None
    required: bool = False


def section(keys: Mapping[str, Key]) -> Parser:
    """A parser for a mapping with exactly these keys (unknown keys are an error, with a suggestion)."""

    def parse(value: Any, path: str) -> dict[str, Any]:
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise CollectorConfigError(f"{path}: expected a mapping of keys, got {_show(value)}")
        for name in value:
            if name not in keys:
                known = ", ".join(sorted(keys)) or "none"
                raise CollectorConfigError(
                    f"{_join(path, str(name))}: unknown key{did_you_mean(str(name), keys)} (known keys: {known})"
                )
        out: dict[str, Any] = {}
        for name, key in keys.items():
            where = _join(path, name)
            if name in value:  # `batch:` with no value means "on, with defaults", as in the OTel Collector
                out[name] = key.parse(value[name], where)
            elif key.required:
                raise CollectorConfigError(f"{where}: required")
            else:
                out[name] = key.default
        return out

    return parse


def record(cls: Callable[..., T], keys: Mapping[str, Key]) -> Callable[[Any, str], T]:
    """A parser for a mapping with exactly these keys that returns `cls(**keys)` (a settings dataclass)."""
    parse_section = section(keys)

    def parse(value: Any, path: str) -> T:
        return cls(**parse_section(value, path))

    return parse


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."


def string(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise CollectorConfigError(f"{path}: expected a non-empty string, got {_show(value)}")
    return value


def boolean(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise CollectorConfigError(f"{path}: expected true or false, got {_show(value)}")
    return value


def strings(value: Any, path: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CollectorConfigError(f"{path}: expected a list of strings, got {value!r}")
    return tuple(value)


def regexes(value: Any, path: str) -> tuple[str, ...]:
    """A list of regular expressions, each compiled once here to name the bad one."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CollectorConfigError(f"{path}: expected a list of regular expressions, got {value!r}")
    for v in value:
        try:
            re.compile(v)
        except re.error as exc:
            raise CollectorConfigError(f"{path}: {v!r} is not a regular expression ({exc})") from None
    return tuple(value)


def integer(minimum: int = 0, maximum: int | None = None) -> Parser:
    def parse(value: Any, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise CollectorConfigError(f"{path}: expected a whole number, got {_show(value)}")
        if value < minimum or (maximum is not None and value > maximum):
            upper = f" and {maximum}" if maximum is not None else ""
            raise CollectorConfigError(f"{path}: {value} is out of range; use a number between {minimum}{upper}")
        return value

    return parse


def number(minimum: float, maximum: float) -> Parser:
    def parse(value: Any, path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CollectorConfigError(f"{path}: expected a number, got {_show(value)}")
        if not minimum <= value <= maximum:
            raise CollectorConfigError(
                f"{path}: {value} is out of range; use a number between {minimum:g} and {maximum:g}"
            )
        return float(value)

    return parse


def choice(*allowed: str) -> Parser:
    def parse(value: Any, path: str) -> str:
        if value not in allowed:
            raise CollectorConfigError(
                f"{path}: {_show(value)} is not one of {', '.join(allowed)}{did_you_mean(str(value), allowed)}"
            )
        return str(value)

    return parse


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def duration(value: Any, path: str) -> float:
    """Seconds, from `200ms`, `1s`, `5m`, `1h` or a plain number of seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    match = _DURATION.match(value) if isinstance(value, str) else None
    if match is None:
        raise CollectorConfigError(f"{path}: {_show(value)} is not a duration; write e.g. 200ms, 1s, 5m")
    return float(match.group(1)) * _UNITS[match.group(2)]


_SIZE = re.compile(r"^\s*(\d+)\s*(B|KiB|MiB|GiB|KB|MB|GB)?\s*$", re.IGNORECASE)
_SIZES = {"b": 1, "kib": 1024, "mib": 1024**2, "gib": 1024**3, "kb": 1000, "mb": 1000**2, "gb": 1000**3}


def size(minimum: int = 1) -> Parser:
    """Bytes, from a plain number or `64KiB`, `20MiB`, `1GiB`."""

    def parse(value: Any, path: str) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            result = value
        else:
            match = _SIZE.match(value) if isinstance(value, str) else None
            if match is None:
                raise CollectorConfigError(f"{path}: {_show(value)} is not a size; write bytes or e.g. 64KiB, 20MiB")
            result = int(match.group(1)) * _SIZES[(match.group(2) or "b").lower()]
        if result < minimum:
            raise CollectorConfigError(f"{path}: {result} bytes is too small; use at least {minimum}")
        return result

    return parse


def endpoint(value: Any, path: str) -> tuple[str, int]:
    """`host:port`; port 0 asks the system for a free port (what tests use)."""
    text = string(value, path)
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise CollectorConfigError(f"{path}: {text!r} is not host:port (e.g. 127.0.0.1:4318)")
    return host, int(port)


def names(known: Callable[[], Iterable[str]], what: str) -> Parser:
    """A list of component names, each defined in `known()` (checked when parsed)."""

    def parse(value: Any, path: str) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise CollectorConfigError(f"{path}: expected a list of {what} names, got {_show(value)}")
        defined = list(known())
        for i, name in enumerate(value):
            if name not in defined:
                listed = ", ".join(defined) or "none"
                raise CollectorConfigError(
                    f"{path}[{i}]: {name!r} is not a defined {what}{did_you_mean(name, defined)} (defined: {listed})"
                )
        return list(value)

    return parse


_ENV = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env(value: Any, path: str = "") -> Any:
    """`${env:NAME}` / `${NAME}` / `${env:NAME:-default}` in strings, as the OTel Collector expands them."""
    if isinstance(value, str):

        def sub(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in os.environ:
                return os.environ[name]
            if default is not None:
                return default
            raise CollectorConfigError(f"{path}: environment variable {name} is not set")

        return _ENV.sub(sub, value)
    if isinstance(value, Mapping):
        return {k: expand_env(v, _join(path, str(k))) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, f"{path}[{i}]") for i, v in enumerate(value)]
    return value
