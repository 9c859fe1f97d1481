"""From production traffic to a replay test set: `tracevals cases extract` and `tracevals cases review`.

Stages: `groups` (the four groups a session falls in, and the seeded, diverse choice), `drafts` (pass
criteria and cassettes from what a session did), `pseudonyms` (desensitisation that keeps structure),
`rules` (what counts as personal), `extract` (reading a lake and writing the set), `review` (a person
confirms, edits or drops drafts). See docs/cases.md.
"""

from tracevals.cases.extract import DEFAULT_PER_GROUP, ExtractError, Extraction, extract_cases

__all__ = ["DEFAULT_PER_GROUP", "ExtractError", "Extraction", "extract_cases"]
