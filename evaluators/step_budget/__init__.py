"""`step_budget`: steps, calls, retries, tokens, cost and time within budgets (evaluator.py, screen.py)."""

from tracevals.evaluators.step_budget.evaluator import StepBudget

__all__ = ["StepBudget"]
