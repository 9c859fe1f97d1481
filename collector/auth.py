"""The bearer-token check both receivers share (RFC 6750 over RFC 7235: the scheme is case-insensitive)."""

from __future__ import annotations

import hmac


def bearer_matches(header: str, token: str) -> bool:
    """Whether an `Authorization` value carries `token` as a bearer credential: `Bearer`, `bearer` or
    any other casing, one or more spaces, then the token compared in constant time."""
    scheme, _, credential = header.strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(credential.strip().encode(), token.encode())
