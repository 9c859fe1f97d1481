"""JSON text read from spans, scores and task files, parsed without trusting its shape.

`json.loads` raises `RecursionError` for a document nested past what the parser recurses into (a few
thousand `[` do it), and a `RecursionError` is no `ValueError`: a caller that reads "not JSON" as a
`ValueError` (most of them) would let one hostile span value end a whole command with a traceback. `loads`
raises `TooDeep`, a `ValueError`, for it, so every caller's "not JSON" covers it. The one definition for
span values: no parse catches `RecursionError` itself (`json.dumps` of a deep value and a schema check
still do, where nothing is parsed).
"""

from __future__ import annotations

import json
from typing import Any


class TooDeep(ValueError):
    """The JSON text nests deeper than the parser goes: read as text that is not JSON."""


def loads(text: str | bytes, **kwargs: Any) -> Any:
    """`json.loads(text, **kwargs)`; `TooDeep` (a `ValueError`) instead of a `RecursionError`."""
    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        raise TooDeep("JSON nested deeper than the parser goes") from None
