"""Reading a small YAML or JSON document (a fault profile, injections, a scoring or gate config, a
price table) with errors of one shape: `PATH:LINE:COLUMN: not valid YAML: <the parser's problem>`, one
line, where the parser said it. Every loader of such a file goes through `read_document`, so a
syntax error reads the same whichever file it is in.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from tracevals.model.errors import UserError
from tracevals.model.json_text import TooDeep, check_depth
from tracevals.model.json_text import loads as json_loads

T = TypeVar("T")


class DocumentError(UserError, ValueError):
    """A document cannot be read or parsed; the message is one line naming the file (and line)."""


def read_document(path: str | os.PathLike[str], what: str = "file") -> Any:
    """The parsed content of a `.json` file (JSON) or any other (YAML, a superset of JSON)."""
    source = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DocumentError(f"{source}: no such {what}") from None
    except OSError as exc:
        raise DocumentError(f"{source}: cannot read the {what}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise DocumentError(f"{source}: not valid UTF-8 (byte {exc.start + 1})") from None
    return parse_document(text, source)


def parse_document(text: str, source: str) -> Any:
    """The parsed content of a document's text: JSON when `source` ends in `.json`, else YAML."""
    if source.endswith(".json"):
        try:
            return json_loads(text)
        except json.JSONDecodeError as exc:
            raise DocumentError(f"{source}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
        except TooDeep as exc:
            raise DocumentError(f"{source}: not valid JSON: {exc}") from None
    try:
        return load_yaml(text)
    except YamlProblem as exc:
        where = f":{exc.line}:{exc.column}" if exc.line is not None else ""
        raise DocumentError(f"{source}{where}: not valid YAML: {exc}") from None


class YamlProblem(ValueError):
    """Why a YAML text is not read (`str()`), and where (1-based line and column, when the parser says)."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.line, self.column = line, column


def load_yaml(text: str) -> Any:
    """`yaml.safe_load(text)`, no deeper than JSON values (`json_text.check_depth`: what reads it walks it by
    recursion); `YamlProblem` for a text it does not read (a task file's and a config's one error)."""
    import yaml  # a dependency; imported here so that importing this module stays cheap

    try:
        value = yaml.safe_load(text)
        check_depth(value)
        return value
    except TooDeep as exc:
        raise YamlProblem(str(exc)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context = getattr(exc, "context", None)
        detail = " ".join(str(f"{problem} ({context})" if context else problem).split())
        raise YamlProblem(detail, *((mark.line + 1, mark.column + 1) if mark is not None else ())) from None
    except RecursionError:
        raise YamlProblem("nested deeper than the parser goes") from None


def read_items(
    path: str | os.PathLike[str],
    what: str,
    key: str,
    parse: Callable[[Any, str], T],
    error: Callable[[str], Exception],
    items: str | None = None,
) -> list[T]:
    """The items of a list document (fault rules, injections): a list, or a mapping with a `key` list,
    each read by `parse(item, "PATH: KEY[i]")`. Any reading error is raised as `error(message)`, the
    loader's own one-line error; `items` names the items in it (default: `key`)."""
    try:
        doc = read_document(path, what)
    except DocumentError as exc:
        raise error(str(exc)) from None
    found = doc.get(key) if isinstance(doc, Mapping) else doc
    if not isinstance(found, list):
        raise error(f"{path}: expected a list of {items or key} (or a mapping with '{key}:')")
    return [parse(item, f"{path}: {key}[{i}]") for i, item in enumerate(found)]
