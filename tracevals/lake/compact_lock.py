"""The lock that keeps compactions of a local lake apart, and the sweep of what killed ones left.

One compaction of a local lake at a time: an exclusive `flock` on `LAKE/.compact.lock` (object storage
takes a lease instead: `lake.compact_remote`). With the lock held no compaction is writing, so every
temporary file a compaction writes (a merge's `.compact-*.parquet.tmp`, a derived table's `.*.tmp` under
`derived/`) is a killed run's leftover and is deleted, whatever its age.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tracevals.lake.schema import DERIVED_DIR
from tracevals.model.errors import UserError

# The start of a merge's temporary file name (`.compact-<name>.parquet.tmp`).
TMP_PREFIX = ".compact-"


class CompactError(UserError):
    """The lake cannot be compacted (not a lake, another compaction holds its lock)."""


@contextmanager
def locked(root: Path, dry_run: bool, wait_s: float = 0.0) -> Iterator[None]:
    """Hold the lake's compaction lock (none on a dry run), waiting up to `wait_s` for another compaction."""
    if dry_run:
        yield
        return
    try:
        fd = os.open(root / ".compact.lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise CompactError(
            f"cannot compact {root}: {exc.strerror or exc}; the lake must be writable by this user"
        ) from None
    deadline = time.monotonic() + wait_s
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise CompactError(f"another compaction of {root} is running; wait for it to finish") from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)  # releases the lock


def remove_stale(root: Path, tables: tuple[str, ...]) -> int:
    """Delete every compaction's temporary file (a merge's, a derived table's): called with the lock held, so
    no compaction is writing one and each is a killed run's leftover, whatever its age."""
    removed = 0
    patterns = [(root / table, f"{TMP_PREFIX}*.parquet.tmp") for table in tables]
    for folder, pattern in [*patterns, (root / DERIVED_DIR, ".*.tmp")]:
        for path in folder.rglob(pattern):
            try:
                path.unlink()
                removed += 1
            except FileNotFoundError:
                continue
    return removed
