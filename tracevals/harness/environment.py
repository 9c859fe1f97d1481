"""What makes runs differ by construction, recorded with every attempt and frozen where it can be.

The commit and the lock file say which code and which dependencies ran; the attempt context freezes
the clock, the locale and the session id; `subprocess_env` pins `PYTHONHASHSEED`, `TZ` and the locale
for agents that run in a child process (dict iteration order changes tool routing in some agents).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from tracevals import env

LOCK_FILES = ("requirements.lock", "uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock", "requirements.txt")


def commit_hash(cwd: Path | None = None) -> str:
    """The current git commit (with `-dirty` when tracked files have changes), or `unknown`."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head}-dirty" if dirty else head


def lock_hash(cwd: Path | None = None) -> str:
    """`<lock file>:<first 16 hex digits of its sha256>` for the first lock file found, or `none`."""
    base = cwd or Path.cwd()
    for name in LOCK_FILES:
        path = base / name
        if path.is_file():
            return f"{name}:{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}"
    return "none"


def subprocess_env(
    seed: int, locale: str = "C.UTF-8", tz: str = "UTC", base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """An environment for a subprocess agent with hash seed, time zone and locale pinned."""
    env = dict(os.environ if base is None else base)
    env["PYTHONHASHSEED"] = str(seed % 4294967296)
    env["TZ"] = tz
    env["LC_ALL"] = locale
    env["LANG"] = locale
    return env


def harness_capture(asked: bool | None) -> bool | None:
    """Whether a harness run records message content: as asked, else as the environment says
    (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`: None lets it decide), else on: a test run's
    attempts are test data, and checking their arguments needs them."""
    if asked is not None:
        return asked
    return None if os.environ.get(env.CAPTURE_MESSAGE_CONTENT) else True
