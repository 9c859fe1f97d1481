"""`injection`: what became of injected faults and prompt injections.

evaluator.py (the reference), rules.py (finding the injection points, judging each), screen.py.
"""

from tracevals.evaluators.injection.evaluator import Injection

__all__ = ["Injection"]
