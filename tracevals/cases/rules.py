"""What `tracevals cases extract` treats as personal: field names by kind, extra patterns, names, and
fields to keep (a rules file, `--rules`, over the defaults). Used by `pseudonyms.Desensitiser`."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

KINDS = ("name", "email", "phone", "id", "address", "url")

# JSON field names (lower case, `-` read as `_`) whose string values are personal data, by kind.
DEFAULT_FIELDS: dict[str, str] = {
    **dict.fromkeys(
        (
            "name",
            "full_name",
            "first_name",
            "last_name",
            "customer_name",
            "contact_name",
            "user_name",
            "username",
            "display_name",
            "recipient",
            "recipient_name",
        ),
        "name",
    ),
    **dict.fromkeys(("email", "email_address", "mail", "contact_email"), "email"),
    **dict.fromkeys(("phone", "phone_number", "mobile", "tel", "telephone", "contact_phone"), "phone"),
    **dict.fromkeys(
        (
            "address",
            "street",
            "street_address",
            "address_line",
            "address_line1",
            "address_line2",
            "postal_address",
            "shipping_address",
            "billing_address",
        ),
        "address",
    ),
    **dict.fromkeys(("url", "webhook", "webhook_url", "callback_url", "link"), "url"),
}
# A field named `id` or ending in `_id` / `_number` / `_no` / `_ref` holds an identifier.
_ID_FIELD = re.compile(r"^(?:id|.+_(?:id|number|no|ref|key))$")
_NOT_ID_FIELDS = frozenset({"idempotency_key", "tool_call_id", "call_id", "trace_id", "span_id"})
# Fields whose value is a credential whatever it looks like: redacted, never pseudonymised.
_SECRET_FIELD = re.compile(
    r"^(?:.*_)?(?:api_?key|secret(?:_key)?|client_secret|password|passwd|pwd|passphrase|token|access_token"
    r"|refresh_token|session_token|auth|authorization|credentials?|private_key|cookie|set_cookie|x_api_key)$"
)
MIN_NUMERIC_ID = 3  # digits: a bare 1 or 42 identifies no one, and replacing it would rewrite every count


@dataclass(frozen=True)
class Rules:
    """What to treat as personal: field names by kind, extra patterns by kind, names to find in free
    text, fields never to touch. Loaded from a rules file (`from_document`) over the defaults."""

    fields: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_FIELDS))
    patterns: tuple[tuple[str, re.Pattern[str]], ...] = ()
    names: tuple[str, ...] = ()
    keep_fields: frozenset[str] = frozenset()

    @classmethod
    def from_document(cls, doc: Mapping[str, Any], where: str) -> Rules:
        """`fields: {kind: [field, ...]}`, `patterns: {kind: [regex, ...]}`, `names: [...]`,
        `keep: [field, ...]`; raises ValueError naming `where` and the entry."""
        unknown = set(doc) - {"fields", "patterns", "names", "keep"}
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {sorted(unknown)}; use fields, patterns, names, keep")
        fields = dict(DEFAULT_FIELDS)
        for kind, names in (doc.get("fields") or {}).items():
            _check_kind(kind, f"{where}: fields")
            for name in _strings(names, f"{where}: fields.{kind}"):
                fields[_field_key(name)] = kind
        patterns = []
        for kind, regexes in (doc.get("patterns") or {}).items():
            _check_kind(kind, f"{where}: patterns")
            for regex in _strings(regexes, f"{where}: patterns.{kind}"):
                try:
                    patterns.append((kind, re.compile(regex)))
                except re.error as exc:
                    raise ValueError(
                        f"{where}: patterns.{kind}: {regex!r} is not a regular expression ({exc})"
                    ) from exc
        return cls(
            fields=fields,
            patterns=tuple(patterns),
            names=tuple(_strings(doc.get("names") or [], f"{where}: names")),
            keep_fields=frozenset(_field_key(k) for k in _strings(doc.get("keep") or [], f"{where}: keep")),
        )

    def kind_of_field(self, key: str) -> str | None:
        k = _field_key(key)
        if k in self.keep_fields or k in _NOT_ID_FIELDS:
            return None
        if _SECRET_FIELD.match(k):
            return "secret"
        if k in self.fields:
            return self.fields[k]
        return "id" if _ID_FIELD.match(k) else None


def _check_kind(kind: str, where: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"{where}: {kind!r} is not a kind; use one of {', '.join(KINDS)}")


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where}: expected a list of strings, got {json.dumps(value, default=str)[:60]}")
    return value


def _field_key(name: str) -> str:
    return name.strip().lower().replace("-", "_")
