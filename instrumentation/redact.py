"""The instrumentation's redactor: every content value it records passes through `current_redactor()`.

The rule itself (which secrets, which personal data, which pseudonyms) is `tracevals.lake.redaction`,
shared with the collector's `redaction` processor and `tracevals cases extract`.
"""

from __future__ import annotations

from tracevals.lake.redaction import NAMES_ENV, PII_ENV, SALT_ENV, Redactor

__all__ = ["NAMES_ENV", "PII_ENV", "SALT_ENV", "Redactor", "current_redactor", "set_redactor"]

_redactor: Redactor | None = None


def set_redactor(redactor: Redactor | None) -> None:
    """Use `redactor` for all captured content; None goes back to the one the environment configures."""
    global _redactor
    _redactor = redactor


def current_redactor() -> Redactor:
    global _redactor
    if _redactor is None:
        _redactor = Redactor.from_env()
    return _redactor
