"""`task_success`: the case's success criteria on the final output (evaluator.py, screen.py)."""

from tracevals.evaluators.task_success.evaluator import TaskSuccess

__all__ = ["TaskSuccess"]
