"""`tool_policy`: forbidden and allowed tools, argument schemas, confirmation, no automatic choice.

evaluator.py (the reference), screen.py (the set-at-a-time screen), candidates.py (the automatic-choice rule).
"""

from tracevals.evaluators.tool_policy.evaluator import ToolPolicy

__all__ = ["ToolPolicy"]
