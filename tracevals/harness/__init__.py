"""The harness: run a task set k times, every attempt one trace in the lake, none discarded."""

from tracevals.harness.agents import AgentLoadError, load_agent
from tracevals.harness.attempts import AgentFn, AttemptKey, AttemptResult, plan_attempts, run_attempt, run_cases
from tracevals.harness.environment import commit_hash, lock_hash, subprocess_env

__all__ = [
    "AgentFn",
    "AgentLoadError",
    "AttemptKey",
    "AttemptResult",
    "commit_hash",
    "load_agent",
    "lock_hash",
    "plan_attempts",
    "run_attempt",
    "run_cases",
    "subprocess_env",
]
