"""`session_completeness`: root present and ended, no orphans or open spans, a terminal state.

evaluator.py (the reference), screen.py (the set-at-a-time screen).
"""

from tracevals.evaluators.session_completeness.evaluator import SessionCompleteness

__all__ = ["SessionCompleteness"]
