"""The reference order-support agent, its world, its 20 task cases, and the simulated model behind it.

Importing this package registers the two behaviour profiles the demo compares,
`order-support-baseline` and `order-support-candidate`, in the simulator's default registry, so a
`SimulatedModelServer()` started afterwards serves them.
"""

from importlib import resources
from pathlib import Path

from tracevals.demo.agent import order_support_agent, run_agent
from tracevals.demo.profiles import BASELINE, CANDIDATE, make_profile, register_order_support_profiles
from tracevals.demo.rates import BASELINE_RATES, CANDIDATE_RATES, FailureRates
from tracevals.demo.world import TOOL_EFFECTS, OrderWorld

register_order_support_profiles()


def tasks_path() -> Path:
    """The bundled task file (20 cases in four groups of five)."""
    return Path(str(resources.files(__name__).joinpath("tasks.jsonl")))


__all__ = [
    "BASELINE",
    "BASELINE_RATES",
    "CANDIDATE",
    "CANDIDATE_RATES",
    "TOOL_EFFECTS",
    "FailureRates",
    "OrderWorld",
    "make_profile",
    "order_support_agent",
    "register_order_support_profiles",
    "run_agent",
    "tasks_path",
]
