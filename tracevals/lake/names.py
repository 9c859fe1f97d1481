"""Names that users and spans choose and that become parts of paths: run ids, variants, task ids, service
names. One place checks them and one place encodes them, so that nothing is ever written outside the lake
(or `--out`), whatever the name.

- `check_name(kind, value)`: a name a command is given (`--run-id`, `--variant`) is refused in one line,
  before anything runs, when it is empty, longer than `MAX_NAME_CHARS`, or holds a control character (a
  newline would forge lines of the output, an escape sequence would rewrite the terminal).
- `path_segment(name)`: the one file or folder name a name becomes: the name itself when it is a plain,
  short file name (`nightly-42`), else a readable prefix and a digest of the whole name (`.._.._x-1f2e…`),
  so `../../x`, `/etc/x`, `a/b` and a 10 kB id are each one segment inside their folder, two names never
  share one, and no segment exceeds the file-name limit.
- `under(root, *names)`: `root` joined with the segments of `names`, checked to stay under `root`.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from pathlib import Path

# Longer than any run id, variant or task id a person types or a CI system makes (a commit sha, a branch
# and a timestamp fit several times over), short enough to print in one line of an error.
MAX_NAME_CHARS = 256
_PLAIN = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}")


class BadName(ValueError):
    """A name that cannot be used; the message is one line saying which and why."""


def _shown(value: str, limit: int = 40) -> str:
    text = value if len(value) <= limit else value[:limit] + "…"
    return repr(text)


def check_name(kind: str, value: str, max_chars: int = MAX_NAME_CHARS) -> str:
    """`value` when it can name a `kind` (e.g. "--run-id"); `BadName` (one line) otherwise."""
    if not value.strip():
        raise BadName(f"{kind} is empty; give it a name such as nightly-42")
    if len(value) > max_chars:
        raise BadName(f"{kind} is {len(value):,} characters long ({_shown(value)}); use at most {max_chars}")
    for index, char in enumerate(value):
        if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
            raise BadName(
                f"{kind} {_shown(value)} holds a control character ({char!r} at position {index}); "
                "use letters, digits and punctuation"
            )
    return value


def path_segment(name: str) -> str:
    """The file or folder name `name` becomes (see the module): itself when plain and short, else a readable
    prefix and 12 hex digits of its sha256."""
    if _PLAIN.fullmatch(name):
        return name
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:80].lstrip(".")
    return f"{safe}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"


def under(root: str | os.PathLike[str], *names: str) -> Path:
    """`root / path_segment(n) / …`: a path that stays under `root` whatever the names (checked, not only
    built so: a `ValueError` would mean this module has a bug)."""
    base = Path(root)
    path = base.joinpath(*(path_segment(n) for n in names))
    resolved, top = path.resolve(), base.resolve()
    if resolved != top and top not in resolved.parents:
        raise ValueError(f"{path} is not under {base}")
    return path
