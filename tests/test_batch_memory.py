"""What a batch's trajectories parse stays with the batch: a worker of the nightly job builds the Python objects
of group after group (the traces a screen flags), and what it held from one must not outlive it. A cache of the
process kept the argument texts of every batch a worker had scored (65,536 of them: ~30 MiB and a fragmented heap
at 10^7 spans)."""

from __future__ import annotations

import gc
import sys

from tracevals.evaluators.testing import call, trajectory
from tracevals.model.batch import Batch


def _batch(first: int, traces: int) -> Batch:
    """`traces` traces of two calls each, every call's arguments a text of its own but the second's, which all
    traces share."""
    return Batch.from_trajectories(
        trajectory(
            call("get_order", {"order_id": f"order-{first + i:07d}", "note": "a note of some length " * 3}),
            call("list_orders", {"status": "open"}),
            trace_id=f"trace-{first + i:07d}",
        )
        for i in range(traces)
    )


def test_equal_argument_texts_share_one_parse_within_a_batch() -> None:
    built = _batch(0, 3).trajectories()
    shared = [t.tool_calls[1].args for t in built]
    assert shared[0] == {"status": "open"}
    assert shared[0] is shared[1] is shared[2]  # each distinct text parsed once
    own = [t.tool_calls[0].args for t in built]
    assert own[0] is not None and own[0]["order_id"] == "order-0000000"
    assert len({id(a) for a in own}) == 3


def test_a_batchs_parsed_arguments_do_not_outlive_it() -> None:
    _batch(0, 10).trajectories()  # what the first call imports or sets up once is not counted
    gc.collect()
    before = sys.getallocatedblocks()
    for first in range(0, 20_000, 5_000):
        built = _batch(1_000_000 + first, 5_000).trajectories()
        assert len(built) == 5_000
        del built
    gc.collect()
    left = sys.getallocatedblocks() - before
    # 20,000 distinct texts, each a string and a dict of two more: kept by a cache, > 60,000 blocks
    assert left < 2_000, f"{left} Python objects outlived the batches that parsed them"
