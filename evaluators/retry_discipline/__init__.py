"""`retry_discipline`: bounded, patient retries; no blind replay, duplicate side effect or loop.

evaluator.py (the reference), rules.py (one function per rule), screen.py (the set-at-a-time screen).
"""

from tracevals.evaluators.retry_discipline.evaluator import RetryDiscipline

__all__ = ["RetryDiscipline"]
