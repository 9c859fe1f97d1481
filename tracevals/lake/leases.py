"""Leases: one process at a time holds a name in a lake (a run id, the lake's compaction), on local disk and
on object storage alike, with nothing but what every store has: write a whole object, list a folder with
modification times, read, delete. No lock server, no conditional write (pyarrow's S3 filesystem sends no
`If-None-Match`, and boto3 is no dependency of tracevals).

A lease is a folder, `LAKE/leases/<kind>/<name>/`, of claims: one small JSON object per process that wants
it, named uniquely (`<time>-<random>.json`), saying who (host, pid, since when) and whether it is `pending`
or `held`. To take the lease a process

1. writes its own claim, `pending`;
2. lists the folder: if any other claim is live (not expired), it deletes its own and either refuses (one
   of them is `held`: the lease is taken) or backs off a random moment and tries again (both `pending`);
3. else it rewrites its claim as `held` and holds the lease, rewriting it every `ttl / 3` (the heartbeat).

Why two never both hold it: a holder's claim exists from step 1 on, without a gap. Of two contenders, the
one whose step-1 write completed second lists after both writes completed, sees the other's claim and
does not proceed, whatever the clocks. (Both may back off; they then retry with random delays.) This
needs the store to list what was written before the listing started: local filesystems do, and so does
S3 since December 2020 (strong read-after-write and list consistency); an S3-compatible store without it
(some old gateways) gives no guarantee.

Expiry: a claim is live while its modification time is less than `ttl` older than the newest claim in
the same listing, the contender's own, just written: both times are the store's clock, so no host's clock
matters. A holder that crashed stops its heartbeat and its lease expires `ttl` later (default 30 s,
`TRACEVALS_LEASE_TTL`); one that died on this very host (same host name and pid namespace, its pid gone)
has expired at once. A holder that was paused longer than `ttl` (a suspended laptop) may find another
process holding its lease: its heartbeat sees that and sets `lost`, and whoever runs under the lease
(`tracevals run`) stops launching work. That is the one limit of a lease without a fencing token: the
work already in flight when the pause began can overlap another holder's.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

import pyarrow.fs as pafs

from tracevals import env
from tracevals.lake.lake import Lake
from tracevals.lake.names import path_segment
from tracevals.lake.paths import LakeError
from tracevals.model.json_text import loads as json_loads

LEASES_DIR = "leases"
TTL_S = 30.0
_ROUNDS = 40  # contended rounds (both pending) before giving up; each backs off up to ~0.5 s


@dataclass(frozen=True)
class Holder:
    """Who holds (or wants) a lease, as its claim says."""

    host: str
    pid: int
    since: datetime  # when it took the lease (UTC, its own clock: said, never compared)
    what: str  # the command, e.g. "tracevals run"
    state: str  # pending | held

    def describe(self) -> str:
        return f"host {_printable(self.host)} (pid {self.pid}) since {self.since:%Y-%m-%d %H:%M:%S} UTC"


class LeaseBusy(Exception):
    """Another live process holds the lease (`holder`), or contends for it without end (`holder` None)."""

    def __init__(self, holder: Holder | None, name: str) -> None:
        self.holder = holder
        self.name = name
        where = holder.describe() if holder else "another process"
        super().__init__(f"{name} is held by {where}")


class LeaseError(LakeError):
    """The lease's folder cannot be written or listed (a read-only lake, missing permissions)."""


def ttl_seconds() -> float:
    text = os.environ.get(env.LEASE_TTL, "").strip()
    if not text:
        return TTL_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise LakeError(f"{env.LEASE_TTL}={text!r} is not a positive number of seconds; unset it or set e.g. 30")
    return value


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)[:200]


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, another user's
    return True


@dataclass(frozen=True)
class _Claim:
    path: str
    mtime: float  # the store's clock, seconds
    doc: dict[str, object]

    def _number(self, key: str) -> float:
        value = self.doc.get(key)
        return float(value) if isinstance(value, (int, float)) else 0.0

    @property
    def holder(self) -> Holder:
        since = datetime.fromtimestamp(self._number("since"), timezone.utc)
        return Holder(str(self.doc.get("host", "?")), int(self._number("pid")), since, str(self.doc.get("what", "")),
                      str(self.doc.get("state", "pending")))  # fmt: skip

    def dead_here(self) -> bool:
        """Its process is gone, on this host (same host name and pid namespace): expired at once."""
        pid = int(self._number("pid"))
        return (
            pid > 0
            and self.doc.get("host") == socket.gethostname()
            and self.doc.get("pidns") == _pid_namespace()
            and not _alive(pid)
        )


class Lease:
    """The lease `kind/name` of `lake` (see the module). `acquire()` takes it or raises `LeaseBusy`;
    `release()` (or leaving the `with` block) gives it back; `lost` is set when a heartbeat found it gone."""

    def __init__(self, lake: Lake, kind: str, name: str, what: str, ttl: float | None = None) -> None:
        self.lake = lake
        self.name = name
        self.what = what
        self.ttl = ttl_seconds() if ttl is None else ttl
        self.fs = lake.filesystem
        self.folder = lake.path(LEASES_DIR, kind, path_segment(name))
        self.lost = threading.Event()
        self.lost_reason = ""
        self.on_lost: Callable[[str], object] | None = None  # called (from the heartbeat) when it is lost
        self._mine: str | None = None
        self._since = 0.0
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    # -- the store ------------------------------------------------------------------------------------

    def _put(self, state: str) -> None:
        assert self._mine is not None
        doc = {"lease": self.name, "host": socket.gethostname(), "pid": os.getpid(), "pidns": _pid_namespace(),
               "since": self._since, "what": self.what, "state": state}  # fmt: skip
        data = json.dumps(doc).encode()
        try:
            self.lake.put(self._mine, data)
        except OSError as exc:
            raise self._error(exc, "writing a lease claim in") from None

    def _error(self, exc: OSError, doing: str) -> LeaseError:
        return LeaseError(str(self.lake.error(exc, doing)))

    def _claims(self) -> list[_Claim]:
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self.folder, allow_not_found=True))
        except OSError as exc:
            raise self._error(exc, "listing the lease claims in") from None
        claims = []
        for info in infos:
            if info.type != pafs.FileType.File or not info.base_name.endswith(".json") or info.base_name[0] == ".":
                continue
            mtime = info.mtime.timestamp() if info.mtime is not None else 0.0
            doc: dict[str, object] = {}
            if info.path != self._mine:
                try:
                    with self.fs.open_input_stream(info.path) as fh:
                        doc = json_loads(bytes(fh.read()).decode("utf-8"))
                except (OSError, ValueError):
                    # listed but not read (deleted meanwhile, rewritten at this instant, a store's hiccup): a
                    # claim of unknown state all the same, so that this round backs off and lists again; a
                    # claim skipped here could be a holder's, and two would hold the lease
                    doc = {"state": "unknown"}
            claims.append(_Claim(info.path, mtime, doc))
        return claims

    def _delete(self, path: str) -> None:
        with contextlib.suppress(OSError):  # gone already, or not ours to delete: an expired claim is ignored anyway
            self.fs.delete_file(path)

    def _others(self, claims: list[_Claim] | None = None) -> list[_Claim]:
        """The live claims besides this process's own (expired ones are deleted on the way); `claims`: a
        listing already made. Live is judged on the store's clock: against this process's own claim."""
        claims = self._claims() if claims is None else claims
        now = max((c.mtime for c in claims if c.path == self._mine), default=time.time())
        live = []
        for claim in claims:
            if claim.path == self._mine:
                continue
            if now - claim.mtime > self.ttl or claim.dead_here():
                self._delete(claim.path)
                continue
            live.append(claim)
        return live

    # -- taking, keeping, giving back ----------------------------------------------------------------

    def acquire(self, wait: float = 0.0, on_wait: Callable[[Holder], None] | None = None) -> Lease:
        """Take the lease; if it is held, wait up to `wait` seconds for it (calling `on_wait(holder)` once),
        else raise `LeaseBusy`."""
        deadline = time.monotonic() + wait
        told = False
        rounds = 0
        while True:
            self._mine = f"{self.folder}/{time.time_ns():020d}-{uuid.uuid4().hex[:12]}.json"
            self._since = time.time()
            self._put("pending")
            others = self._others()
            if not others:
                self._put("held")
                self._start_heartbeat()
                return self
            self._delete(self._mine)
            self._mine = None
            held = [c for c in others if c.holder.state == "held"]
            if held:
                if time.monotonic() >= deadline:
                    raise LeaseBusy(held[0].holder, self.name)
                if on_wait is not None and not told:
                    on_wait(held[0].holder)
                    told = True
                time.sleep(min(max(self.ttl / 10, 0.2), 2.0, max(0.05, deadline - time.monotonic())))
                continue
            rounds += 1
            if rounds >= _ROUNDS:
                raise LeaseBusy(others[0].holder, self.name)
            time.sleep(random.uniform(0.01, 0.05) * min(2**rounds, 10))

    def _start_heartbeat(self) -> None:
        self._stop.clear()
        self._beat = threading.Thread(target=self._heartbeat, name=f"tracevals-lease-{self.name[:20]}", daemon=True)
        self._beat.start()

    def _heartbeat(self) -> None:
        last_ok = time.monotonic()
        while not self._stop.wait(self.ttl / 3):
            try:
                mine = self._mine
                if mine is None:
                    return
                claims = self._claims()  # one LIST and one PUT a beat
                if not any(c.path == mine for c in claims):
                    self._lose("its claim was taken away (this process was paused longer than the lease's ttl)")
                    return
                held = [c for c in self._others(claims) if c.holder.state == "held"]
                if held:
                    self._lose(f"{held[0].holder.describe()} holds it too (this process was paused?)")
                    return
                self._put("held")
                last_ok = time.monotonic()
            except LakeError as exc:
                if time.monotonic() - last_ok > self.ttl:
                    self._lose(f"it could not be renewed for {self.ttl:.0f} s: {exc}")
                    return

    def _lose(self, why: str) -> None:
        self.lost_reason = f"lost the lease on {self.name}: {why}"
        self.lost.set()
        if self.on_lost is not None:
            self.on_lost(self.lost_reason)

    def release(self) -> None:
        """Give the lease back (idempotent): stop the heartbeat, delete the claim."""
        self._stop.set()
        if self._beat is not None and self._beat is not threading.current_thread():
            self._beat.join(timeout=5)
        if self._mine is not None:
            self._delete(self._mine)
            self._mine = None

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
