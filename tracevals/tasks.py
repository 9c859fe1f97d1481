"""Task cases: `load_cases("tasks.jsonl")`, the public name of `tracevals.model.tasks` (see there)."""

from tracevals.model.tasks import TaskFileError, case_from_dict, load_cases, task_case_schema

__all__ = ["TaskFileError", "case_from_dict", "load_cases", "task_case_schema"]
