"""`failure_handling`: every tool failure that was not injected is made good, handed off, or admitted.

evaluator.py (the reference), screen.py (the set-at-a-time screen); the rule is `evaluators/failures.py`.
"""

from tracevals.evaluators.failure_handling.evaluator import FailureHandling

__all__ = ["FailureHandling"]
