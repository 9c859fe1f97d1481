"""Small shared pieces of the report writers: number formatting, NaN cleaning, atomic files."""

from __future__ import annotations

import html
import math
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from tracevals.model.display import visible
from tracevals.model.json_text import strict
from tracevals.model.signals import held_off

PathArg = str | os.PathLike[str]
P = ParamSpec("P")
T = TypeVar("T")


#: The `VariantSummary` figures every data writer (CSV, JSON) reports as they are, in this order.
VARIANT_FIGURES: tuple[str, ...] = (
    "final_success_rate",
    "avg_retries",
    "handoffs",
    "handoffs_correct",
    "handoffs_wrong",
    "handoffs_missed",
    "errors",
    "latency_n",
    "p50_latency_ms",
    "p95_latency_ms",
    "avg_cost",
    "total_cost",
    "tokens",
)


def variant_figures(summary: Any) -> dict[str, Any]:
    """`VARIANT_FIGURES` of one variant's summary."""
    return {name: getattr(summary, name) for name in VARIANT_FIGURES}


clean = strict  # NaN/inf -> None, recursively, so JSON stays strict and CSV cells stay empty (`model.json_text`)


def num(x: float, digits: int = 3) -> str:
    """A fixed-point number, or ``n/a`` for NaN (a missing figure must look missing, not zero)."""
    return "n/a" if not math.isfinite(x) else f"{x:.{digits}f}"


def signed(x: float) -> str:
    """A delta with its sign (``+0.250``), or ``n/a``."""
    return "n/a" if not math.isfinite(x) else f"{x:+.3f}"


def interval(ci: tuple[float, float]) -> str:
    """``[0.138, 0.609]``."""
    return f"[{num(ci[0])}, {num(ci[1])}]"


def markdown_cell(text: str) -> str:
    """`text` as one cell of a Markdown table: a pipe or a line break (a task id, a span value) would
    otherwise end the cell or the row; what a reader would not see (an escape sequence, a bidi override) is
    written as its code point (`visible`)."""
    return visible(text).replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def html_text(value: object) -> str:
    """`value` as text in a report's HTML (an element's text or an attribute's value): escaped, and what a
    reader would not see written as its code point (`visible`), as the UI's pages show it."""
    return html.escape(visible(str(value)))


def markdown_code(text: str) -> str:
    """`text` as inline code in a table cell, whatever backticks it holds (a fence one longer than its
    longest run of them)."""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text[:1] == "`" or text[-1:] == "`" else ""
    return f"{fence}{pad}{markdown_cell(text)}{pad}{fence}"


def file_writer(build: Callable[P, T], text: Callable[[T], str]) -> Callable[Concatenate[PathArg, P], Path]:
    """`write(path, *args)`: what `build(*args)` makes, as `text` writes it, written to `path` at once
    (`atomic_write`); returns the path. One writer per report format, with its builder's parameters."""

    def write(path: PathArg, /, *args: P.args, **kwargs: P.kwargs) -> Path:
        return atomic_write(path, text(build(*args, **kwargs)))

    write.__doc__ = f"Write :func:`{build.__name__}` to `path`; returns the path."
    return write


def atomic_write(path: PathArg, text: str) -> Path:
    """Write to a temporary name beside ``path`` and rename, so a reader never sees half a report. The file
    gets the mode any new file of the user gets (0666 less the umask), not the private 0600 of a
    temporary file: a report is made to be shared."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with held_off() as release:  # a stop that falls as the file is made waits for the `try` that removes it
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:  # closed however the block ends
                release()
                os.fchmod(fh.fileno(), 0o666 & ~umask())
                fh.write(text)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return target


def umask() -> int:
    """The process's umask (what mode new files get)."""
    mask = os.umask(0o022)  # the only way to read it is to set it; put it straight back
    os.umask(mask)
    return mask
