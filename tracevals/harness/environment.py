"""What makes runs differ by construction, recorded with every attempt and frozen where it can be.

The commit and the lock file say which code and which dependencies ran; the attempt context freezes
the clock, the locale and the session id; `subprocess_env` pins `PYTHONHASHSEED`, `TZ` and the locale
for agents that run in a child process (dict iteration order changes tool routing in some agents).
`attempt_environment` is everything an attempt's root records about where it ran (`tracevals.env.*`,
read back by the `environments` view).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from tracevals import env

ENV_PREFIX = "tracevals.env."
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


def case_digest(raw: Mapping[str, object]) -> str:
    """`sha256:<16 hex>` of a case's canonical JSON: an edited case is another environment."""
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return f"sha256:{hashlib.sha256(canonical.encode()).hexdigest()[:16]}"


def _settings_text(settings: Mapping[str, object]) -> str:
    """The attempt's settings as JSON, secrets redacted (a key named like one, or a value that looks like one)."""
    from tracevals.lake.redaction import Redactor

    redactor = Redactor()
    shown = {
        str(k): "[REDACTED]" if _SECRET_NAME.search(str(k)) else redactor.redact(str(v))
        for k, v in sorted(settings.items())
    }
    return json.dumps(shown, sort_keys=True, ensure_ascii=False)


_SECRET_NAME = re.compile(r"key|token|secret|password|credential|auth", re.IGNORECASE)


def attempt_environment(
    case_raw: Mapping[str, object],
    now: datetime,
    locale: str,
    settings: Mapping[str, object],
    run_environment: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The `tracevals.env.*` attributes of one attempt's root: the run's (task file, profiles) and the
    attempt's own (case digest, frozen clock, locale, PYTHONHASHSEED, Python, settings)."""
    out = {f"{ENV_PREFIX}{k}": v for k, v in (run_environment or {}).items() if v}
    out[f"{ENV_PREFIX}case_sha256"] = case_digest(case_raw)
    out[f"{ENV_PREFIX}clock"] = now.isoformat()
    out[f"{ENV_PREFIX}locale"] = locale
    out[f"{ENV_PREFIX}python_hash_seed"] = os.environ.get("PYTHONHASHSEED") or "random"
    out[f"{ENV_PREFIX}python"] = platform.python_version()
    if settings:
        out[f"{ENV_PREFIX}settings"] = _settings_text(settings)
    return out


def file_digest(path: Path | None) -> str | None:
    """`sha256:<16 hex>` of a file, None without one."""
    return None if path is None else f"sha256:{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}"


def folder_digest(path: Path | None) -> str | None:
    """`sha256:<16 hex>` over the names and contents of a folder's files (a cassette set), `empty` for
    a folder that does not exist yet."""
    if path is None:
        return None
    if not path.is_dir():
        return "empty"
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(file.relative_to(path).as_posix().encode() + b"\0" + file.read_bytes() + b"\0")
    return f"sha256:{digest.hexdigest()[:16]}"
