"""How long work says how far it is, one shape for every stage that does it: a `Told` is called with the phase
under way (words a person reads: "scoring 1,204 attempts"), how much of it is done and how much there is (None:
not known, or not counted). The commands draw it as a bar on a terminal (`cli.shared.output.phase_bar`);
elsewhere it is `quiet`. A stage calls it on the calling thread, between pieces of work, never per row."""

from __future__ import annotations

from collections.abc import Callable

Told = Callable[[str, int, "int | None"], None]


def quiet(phase: str, done: int, total: int | None) -> None:
    """The `Told` of work nobody watches."""
