"""Request errors of the simulated server, raised anywhere below the HTTP layer.

One exception type carries what every wire format needs (status, type, message, offending parameter);
each format renders it in its own error JSON, so the validation code is shared.
"""

from __future__ import annotations


class SimulatorError(Exception):
    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        error_type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.error_type = error_type
        self.param = param
        self.code = code


class ModelNotFound(SimulatorError):
    def __init__(self, model: str, known: list[str]) -> None:
        listed = ", ".join(known) if known else "none registered"
        super().__init__(
            f"The model `{model}` does not exist. Known models: {listed}.",
            status=404,
            param="model",
            code="model_not_found",
        )
        self.known = known
