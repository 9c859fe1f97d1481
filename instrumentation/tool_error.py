"""`ToolError`: a tool failure carrying the facts a retry policy needs."""

from __future__ import annotations

from typing import Any


class ToolError(Exception):
    """A tool failure with the facts a retry policy needs (raise it from a tool).

    >>> raise ToolError("rate limited", error_type="rate_limit", status_code=429,
    ...                 retryable=True, retry_after_s=0.5)
    """

    def __init__(
        self,
        message: str,
        *,
        error_type: str = "tool_error",
        status_code: int | None = None,
        retryable: bool = False,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.status_code = status_code
        self.retryable = retryable
        self.retry_after_s = retry_after_s

    def to_dict(self) -> dict[str, Any]:
        """The failure as a tool result an agent can hand back to its model."""
        out: dict[str, Any] = {"error": self.error_type, "message": str(self)}
        if self.status_code is not None:
            out["status"] = self.status_code
        if self.retry_after_s is not None:
            out["retry_after_ms"] = round(self.retry_after_s * 1000)
        out["retryable"] = self.retryable
        return out
