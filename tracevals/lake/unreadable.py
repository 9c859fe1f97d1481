"""Lake files that cannot be read: named in one warning line per process, or a failure with --strict.

A command lists and opens a lake many times (and `tracevals ui` for as long as it serves), so a file is
named once per process, whoever finds it: the listing of span, log and score files (`skip_unreadable`), a
damaged derived frame file (`queries.derived`) or folder (`queries.frames_or_views`). And a file that was listed
and is gone when it is read (`vanished_file`, `error_line`: the one line every command and page shows for it).
"""

from __future__ import annotations

import re
import sys

from tracevals.lake.paths import LakeError, strict

_warned: set[str] = set()  # files already named in a warning by this process (a command opens a lake often)


def named_files(bad: dict[str, str]) -> str:
    """`path (why); ...` for the first five of `bad` (path -> what is wrong), and how many more."""
    named = "; ".join(f"{path} ({why})" for path, why in sorted(bad.items())[:5])
    return named + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")


def warn_once(bad: dict[str, str], line: str) -> None:
    """`tracevals: warning: {line}` on stderr, unless every file (or folder) of `bad` was named in a warning
    before by this process: a command, or `tracevals ui`, opens a lake many times."""
    if set(bad) - _warned:
        _warned.update(bad)
        print(f"tracevals: warning: {line}", file=sys.stderr)


def skip_unreadable(bad: dict[str, str]) -> None:
    """The rule for unreadable files, local and remote alike: a `LakeError` with --strict (TRACEVALS_STRICT),
    else one warning line naming them (once per process)."""
    if strict():
        raise LakeError(
            f"{len(bad)} unreadable lake files: {named_files(bad)}; move them away, or drop --strict to skip them"
        )
    warn_once(bad, f"skipped {len(bad)} unreadable lake files: {named_files(bad)} (--strict fails instead)")


def duckdb_error(exc: Exception, name: str) -> bool:
    """Whether `exc` is DuckDB's exception `name`, known by its class, so that an error handler need not import
    duckdb."""
    return type(exc).__name__ == name and "duckdb" in type(exc).__module__


# A file of a lake's partitions (`lake.paths`): spans/ or logs/, date=/hour=, as DuckDB quotes it in an error.
_LAKE_FILE = re.compile(r'"([^"]*/(?:spans|logs)/date=[^"/]+/hour=\d+/[^"/]+\.parquet)"')


def vanished_file(exc: Exception) -> str | None:
    """One line for DuckDB's error on a lake file that was there when the command listed the lake and is gone
    when it reads it: a `tracevals compact` merged its hour and, its `--retention` over (0: at once), deleted
    it. None for any other error (a file a query names itself that is not there is DuckDB's own error).
    Known by class name and message, so that the error handler does not import duckdb."""
    if not duckdb_error(exc, "IOException"):
        return None
    text = str(exc)
    found = _LAKE_FILE.search(text)
    if found is None or not ("No files found" in text or "No such file" in text):
        return None
    return (
        f"{found.group(1)}: not found; a file of the lake this command listed was removed while it ran (a "
        "`tracevals compact` merges an hour's files and deletes them after its --retention): run the command "
        "again; a reader that takes longer needs a longer `tracevals compact --retention`"
    )


def error_line(exc: Exception) -> str:
    """The one line a command (or a page) shows for a DuckDB error it catches itself: `vanished_file`'s for a lake
    file removed while it ran, else the error's first line."""
    return vanished_file(exc) or (str(exc).splitlines() or [type(exc).__name__])[0]
