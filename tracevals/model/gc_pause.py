"""The cyclic garbage collector paused for a stretch of work that makes many small objects and keeps few."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while the block runs: a block that makes hundreds of thousands of small
    objects (a trace, a session, a score row) triggers collections of the older generations, each of which walks
    every object the process holds (10-15% of a live-scoring round's CPU). What is freed by reference counting goes
    as it would; what the block leaves as cyclic garbage goes at the next collection after it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
