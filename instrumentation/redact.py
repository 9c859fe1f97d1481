"""Redaction of captured content: secrets always go, personal data optionally becomes pseudonyms.

Applied to every content value tracevals records (messages, system instructions, tool arguments and
results, exception messages), after serialisation to text and before it reaches a span or event.

- **Secrets** (always, whenever content is captured): API keys of OpenAI, Anthropic, AWS, GitHub,
  Google, Slack and Stripe, bearer tokens, JWTs, private-key blocks, and the value of any
  `api_key` / `secret` / `password` / `token` field. Each becomes `[REDACTED:<kind>]`.
- **Personal data** (opt-in: `tracevals.instrument(redact_pii=True, pii_names=[...])` or
  `TRACEVALS_REDACT_PII=1`, `TRACEVALS_REDACT_NAMES="Chen Jie,Li Na=customer_demo_002"`): emails,
  phone numbers and the names listed become stable pseudonyms that keep their shape, so a trace still
  reads (and still parses) the same way: `user_3f9a1c@example.invalid`, `+1 555-0142` with other
  digits, `person_001`. The same input always gets the same pseudonym (a keyed hash; set
  `TRACEVALS_REDACT_SALT` so that pseudonyms cannot be reversed by guessing), so a customer can be
  followed across the turns and sessions of one deployment without being named.

Replacements contain no quote or backslash, so redacting JSON text keeps it valid JSON.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Iterable, Mapping, Sequence

from tracevals import env

PII_ENV = env.REDACT_PII
NAMES_ENV = env.REDACT_NAMES
SALT_ENV = env.REDACT_SALT

# (kind, pattern). Order matters: specific key formats first, the generic key=value rule last.
_SECRETS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern))
    for kind, pattern in (
        ("private_key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
        ("anthropic_key", r"\bsk-ant-[A-Za-z0-9_-]{16,}"),
        ("openai_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}"),
        ("stripe_key", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),
        ("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
        ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
        ("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}"),
        ("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
        ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        ("bearer_token", r"(?i)(?<=bearer )[A-Za-z0-9._~+/=-]{12,}"),
    )
)
# `"api_key": "..."`, `password=...`, `aws_secret_access_key = ...`: keep the name, drop the value.
_SECRET_FIELD = re.compile(
    r"(?i)((?:api[_-]?key|secret(?:[_-]?access)?[_-]?key|client[_-]?secret|password|passwd|access[_-]?token"
    r"|auth[_-]?token|refresh[_-]?token|secret)(?:\\?[\"'])?\s*[:=]\s*(?:\\?[\"'])?)([^\s\"'\\,;}&]{4,})"
)
_EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
# Phone numbers: +E.164, or groups of digits with separators (so that ids, counts, dates and times,
# which have no such grouping, are left alone).
_PHONE = re.compile(
    r"(?<![\w.+/-])"
    r"(?:\+\d{8,15}|(?:\+\d{1,3}[ .-]?)?(?:\(\d{2,4}\)[ .-]?|\d{2,4}[ .-])\d{3,4}[ .-]\d{3,5})"
    r"(?![\w/-]|\.\d)"
)


def _digest(salt: str, kind: str, value: str) -> bytes:
    return hmac.new(salt.encode(), f"{kind}\x1f{value}".encode(), hashlib.sha256).digest()


class Redactor:
    """Removes secrets from text and, when `pii` is on, replaces personal data with pseudonyms."""

    def __init__(
        self, pii: bool = False, names: Sequence[str] | Mapping[str, str] = (), salt: str = "tracevals"
    ) -> None:
        self.pii = pii
        self.salt = salt
        pairs: Iterable[tuple[str, str]]
        if isinstance(names, Mapping):
            pairs = names.items()
        else:  # numbered in the order given, so the same configuration gives the same pseudonyms
            pairs = ((name, f"person_{i:03d}") for i, name in enumerate(names, 1))
        self.names = {name.strip(): alias for name, alias in pairs if name.strip()}
        longest_first = sorted(self.names, key=len, reverse=True)
        self._names = (
            re.compile(r"(?i)\b(" + "|".join(re.escape(n) for n in longest_first) + r")\b") if longest_first else None
        )
        self._folded = {n.casefold(): alias for n, alias in self.names.items()}

    @classmethod
    def from_env(cls) -> Redactor:
        pii = os.environ.get(PII_ENV, "").strip().lower() in ("1", "true", "yes", "on")
        names: dict[str, str] = {}
        for i, entry in enumerate(e for e in os.environ.get(NAMES_ENV, "").split(",") if e.strip()):
            name, _, alias = entry.partition("=")
            names[name.strip()] = alias.strip() or f"person_{i + 1:03d}"
        return cls(pii=pii or bool(names), names=names, salt=os.environ.get(SALT_ENV) or "tracevals")

    def redact(self, text: str) -> str:
        for kind, pattern in _SECRETS:
            text = pattern.sub(f"[REDACTED:{kind}]", text)
        text = _SECRET_FIELD.sub(lambda m: f"{m.group(1)}[REDACTED:secret]", text)
        if self.pii:
            text = self.pseudonymise(text)
        return text

    def pseudonymise(self, text: str) -> str:
        text = _EMAIL.sub(lambda m: self._email(m.group(0)), text)
        text = _PHONE.sub(lambda m: self._phone(m.group(0)), text)
        if self._names is not None:
            text = self._names.sub(lambda m: self._folded[m.group(0).casefold()], text)
        return text

    def _email(self, email: str) -> str:
        return f"user_{_digest(self.salt, 'email', email.lower()).hex()[:6]}@example.invalid"

    def _phone(self, phone: str) -> str:
        digits = re.sub(r"\D", "", phone)
        stream = iter(_digest(self.salt, "phone", digits) * 2)
        # Same length and punctuation, other digits: the shape survives, the number does not.
        return re.sub(r"\d", lambda _: str(next(stream) % 10), phone)


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
