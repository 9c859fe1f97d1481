"""Lake files that cannot be read: named in one warning line per process, or a failure with --strict.

A command lists and opens a lake many times (and `tracevals ui` for as long as it serves), so a file is
named once per process, whoever finds it: the listing of span, log and score files (`skip_unreadable`), a
damaged derived frame file (`queries.derived`) or folder (`queries.frames_or_views`).
"""

from __future__ import annotations

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
