"""Redaction of content: secrets always go, personal data optionally becomes pseudonyms.

One rule for every writer: the instrumentation applies it to every content value it records
(messages, system instructions, tool arguments and results, exception messages, hand-off fields),
after serialisation to text and before it reaches a span or event (`tracevals.instrumentation.redact`);
the collector's `redaction` processor applies it to the content columns of whatever any SDK sends
(`redact_table`); `tracevals cases extract` applies it to the sets it writes.

- **Secrets** (always, whenever content is captured): API keys and tokens of OpenAI, Anthropic, AWS
  (access keys, and bare 40-character secret keys), GitHub, GitLab, Google, Slack (tokens and
  webhooks), Stripe, Hugging Face, npm, PyPI, SendGrid, Twilio and Databricks; bearer, basic and
  `Authorization: token` credentials (any spacing); passwords in URLs (`postgres://u:PASS@h`); Azure
  `AccountKey=` / `SharedAccessSignature=` and SAS `sig=`; JWTs; private-key blocks; and the value of
  any `api_key` / `secret` / `password` / `token` / `credentials` field, its quotes escaped or not.
  Each becomes `[REDACTED:<kind>]`.
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

import pyarrow as pa
import pyarrow.compute as pc

from tracevals import env
from tracevals.lake.schema import string_array

PII_ENV = env.REDACT_PII
NAMES_ENV = env.REDACT_NAMES
SALT_ENV = env.REDACT_SALT

# (kind, pattern). Order matters: specific key formats first, the generic key=value rule last. A
# pattern with a group named `keep` keeps that part (a scheme, a user name, a header name) and
# replaces the rest of the match.
_SECRETS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern))
    for kind, pattern in (
        ("private_key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
        ("anthropic_key", r"\bsk-ant-[A-Za-z0-9_-]{16,}"),
        ("openai_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}"),
        ("stripe_key", r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}"),
        ("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
        ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
        ("gitlab_token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
        ("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}"),
        ("google_oauth_token", r"\bya29\.[0-9A-Za-z_-]{20,}"),
        ("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
        ("slack_webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/]{20,}"),
        ("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}"),
        ("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b"),
        ("pypi_token", r"\bpypi-[A-Za-z0-9_-]{50,}"),
        ("sendgrid_key", r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),
        ("twilio_key", r"\bSK[0-9a-f]{32}\b"),
        ("databricks_token", r"\bdapi[0-9a-f]{32}\b"),
        ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        # user:password@ in any URL (postgres://, https://, amqp://, ...): the user stays, the password goes
        ("url_password", r"(?P<keep>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@\"'\\]+:)[^\s@/\"'\\]+(?=@)"),
        # the space may be any whitespace, or a JSON escape of one (`Bearer\\tabc...` inside JSON text)
        ("bearer_token", r"(?i)(?P<keep>\bbearer(?:\s|\\+[tnr])+)[A-Za-z0-9._~+/=-]{12,}"),
        ("basic_auth", r"(?i)(?P<keep>\bbasic(?:\s|\\+[tnr])+)[A-Za-z0-9+/]{12,}={0,2}"),
        (
            "token_auth",
            r"(?i)(?P<keep>\bauthorization[\"']?\s*[:=]\s*[\"']?(?:token|apikey|key)\s+)[A-Za-z0-9._~+/=-]{12,}",
        ),
        ("azure_key", r"(?i)(?P<keep>\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)=)[^;&\s\"'\\]{8,}"),
        ("sas_signature", r"(?P<keep>[?&]sig=)[A-Za-z0-9%+/=]{16,}"),
        # a bare AWS secret access key: 40 characters of base64 with upper case, lower case and a digit
        # (never a git sha: those are 40 lower-case hex digits)
        (
            "aws_secret_key",
            r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z0-9/+]*[0-9])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
        ),
    )
)
# Substrings (lower case) without which a pattern cannot match: most text skips most patterns.
_HINTS: dict[str, tuple[str, ...]] = {
    "private_key": ("private key",),
    "anthropic_key": ("sk-ant-",),
    "openai_key": ("sk-",),
    "stripe_key": ("k_live_", "k_test_"),
    "aws_access_key": ("akia", "asia", "abia", "acca"),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab_token": ("glpat-",),
    "google_api_key": ("aiza",),
    "google_oauth_token": ("ya29.",),
    "slack_token": ("xox",),
    "slack_webhook": ("hooks.slack.com",),
    "huggingface_token": ("hf_",),
    "npm_token": ("npm_",),
    "pypi_token": ("pypi-",),
    "sendgrid_key": ("sg.",),
    "twilio_key": ("sk",),
    "databricks_token": ("dapi",),
    "jwt": ("eyj",),
    "url_password": ("://",),
    "bearer_token": ("bearer",),
    "basic_auth": ("basic",),
    "token_auth": ("authorization",),
    "azure_key": ("accountkey", "sharedaccess"),
    "sas_signature": ("sig=",),
}
_BASE64_RUN = re.compile(r"[A-Za-z0-9/+]{40}")  # what a bare AWS secret key needs before its costly pattern
_FIELD_HINTS = ("key", "secret", "passw", "pwd", "passphrase", "token", "credential")

# `"api_key": "..."`, `password=...`, `aws_secret_access_key = ...`: keep the name, drop the value;
# also with the quotes escaped once or more (JSON inside JSON: `\\\"password\\\": \\\"...`).
_SECRET_FIELD = re.compile(
    r"(?i)((?:api[_-]?key|secret(?:[_-]?access)?[_-]?key|client[_-]?secret|password|passwd|pwd|passphrase"
    r"|access[_-]?token|auth[_-]?token|refresh[_-]?token|session[_-]?token|secret|credentials?)"
    r"(?:\\*[\"'])?\s*[:=]\s*(?:\\*[\"'])?)([^\s\"'\\,;}&]{4,})"
)
EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
# Phone numbers: +E.164, or groups of digits with separators (so that ids, counts, dates and times,
# which have no such grouping, are left alone).
PHONE = re.compile(
    r"(?<![\w.+/-])"
    r"(?:\+\d{8,15}|(?:\+\d{1,3}[ .-]?)?(?:\(\d{2,4}\)[ .-]?|\d{2,4}[ .-])\d{3,4}[ .-]\d{3,5})"
    r"(?![\w/-]|\.\d)"
)


def _digest(salt: str, kind: str, value: str) -> bytes:
    return hmac.new(salt.encode(), f"{kind}\x1f{value}".encode(), hashlib.sha256).digest()


class Redactor:
    """Removes secrets from text and, when `pii` is on, replaces personal data with pseudonyms."""

    def __init__(
        self,
        pii: bool = False,
        names: Sequence[str] | Mapping[str, str] = (),
        salt: str = "tracevals",
        extra: Sequence[str] = (),
    ) -> None:
        self.pii = pii
        self.extra = tuple(re.compile(e) for e in extra)  # more patterns whose matches are secrets
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
        low = text.lower()
        for kind, pattern in _SECRETS:
            hints = _HINTS.get(kind)
            if hints is not None and not any(h in low for h in hints):
                continue
            if hints is None and not _BASE64_RUN.search(text):
                continue
            if "keep" in pattern.groupindex:  # the scheme, user or header name stays
                text = pattern.sub(rf"\g<keep>[REDACTED:{kind}]", text)
            else:
                text = pattern.sub(f"[REDACTED:{kind}]", text)
        if any(h in low for h in _FIELD_HINTS):
            text = _SECRET_FIELD.sub(lambda m: f"{m.group(1)}[REDACTED:secret]", text)
        for pattern in self.extra:
            text = pattern.sub("[REDACTED:blocked]", text)
        if self.pii:
            text = self.pseudonymise(text)
        return text

    def pseudonymise(self, text: str) -> str:
        text = EMAIL.sub(lambda m: self._email(m.group(0)), text)
        text = PHONE.sub(lambda m: self._phone(m.group(0)), text)
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


# What may hold content, per lake table: never ids, times, names of spans or the columns the normalizer
# derives from attributes it also redacts.
SPAN_CONTENT_COLUMNS = (
    "status_message", "attributes", "resource_attributes", "events", "links", "tool_args", "tool_result",
    "attempt_output", "attempt_error",
)  # fmt: skip
LOG_CONTENT_COLUMNS = ("body", "attributes", "resource_attributes")
# A cheap first pass (RE2, in Arrow): a value that matches none of these holds no secret any pattern finds.
_TRIGGER = (
    r"(?i)\b(?:sk-|[rsp]k_(?:live|test)_|akia|asia|abia|acca|gh[pousr]_|github_pat_|glpat-|aiza|ya29\.|xox|hf_|npm_"
    r"|pypi-|sg\.|sk[0-9a-f]{32}|dapi|eyj|bearer|basic|authorization|accountkey|sharedaccess)"
    r"|hooks\.slack|://[^\s/@]+:[^\s/@]+@|[?&]sig=|-----begin"
    # the fields of `_SECRET_FIELD`, never a bare "token": every span's attributes hold `input_tokens`
    r"|api.?key|secret|passw|pwd|passphrase|(?:access|auth|refresh|session).?token|credential"
    r"|[a-z0-9/+]{40}"
)


def redact_table(table: pa.Table, columns: Sequence[str], redactor: Redactor) -> pa.Table:
    """`table` with `redactor` applied to every value of the content `columns` it has (string columns);
    values the RE2 first pass rules out are not touched (the common case costs one Arrow scan)."""
    if not table.num_rows:  # nothing to redact (and combining no chunk would convert Python values)
        return table
    for name in columns:
        index = table.schema.get_field_index(name)
        if index < 0 or not pa.types.is_string(table.schema.field(index).type):
            continue
        column = table.column(index).combine_chunks()
        if redactor.pii or redactor.extra:  # their patterns are not in the first pass: every value
            hit = pc.is_valid(column)
        else:
            hit = pc.and_kleene(pc.match_substring_regex(column, _TRIGGER), pc.is_valid(column))  # null: no hit
        if not pc.any(hit).as_py():
            continue
        values = pc.filter(column, hit).to_pylist()
        redacted = string_array([redactor.redact(v) for v in values])  # `hit` holds no null
        table = table.set_column(index, table.schema.field(index), pc.replace_with_mask(column, hit, redacted))
    return table
