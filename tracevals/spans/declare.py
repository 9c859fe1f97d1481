"""The shape of a dialect declaration: what one instrumentation's spans say, and where.

A `Dialect` is data (see `dialects.py` for the declarations): how to recognise its spans, how to read their
kind, which attributes hold the canonical columns, where its model calls' messages live and how their parts
name tool calls and results, which wrapper objects around a tool's arguments or result to unwrap, and which
values are placeholders that mean "no value". The normalizer (`normalize.py`), the collector's columnar path
and the views (`views.py` renders the SQL) all read these declarations and nothing else, so adding a dialect
is adding one declaration (docs/dialects.md).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal

from tracevals.model.json_text import loads as json_loads

NAME = "<span name>"  # a kind clause on the span's name instead of an attribute


@dataclass(frozen=True)
class Key:
    """Where a canonical column's value is: an attribute, or a path into the JSON an attribute holds.

    `path`: keys (and list indexes) into the attribute's value once parsed as JSON (e.g. the token counts inside
    Haystack's `haystack.agent.step.llm.output`). `envelope`: the attribute is a framework's generic input or
    output of a tool (`input.value`, `traceloop.entity.output` ...), whose wrapper objects are unwrapped by rule
    (`Unwrap`); the conventions' own `gen_ai.tool.call.*` hold the value itself. `pattern`: `name` is a prefix and
    the key's last part must match this regular expression (Vercel's `ai.telemetry.metadata.<anything>`).
    `regex`: the value is the first group of this regular expression's first match in the attribute's text
    (LlamaIndex's agent name, only in the reprs of its workflow events: `current_agent_name='x'`). `on_names`:
    the key is read only on spans whose name matches this regular expression (from its start), so that a
    costly read (a regular expression over a large value) runs only where the value can be.
    """

    name: str
    path: tuple[str | int, ...] = ()
    envelope: bool = False
    pattern: str | None = None
    regex: str | None = None
    on_names: str | None = None


Source = Key | str  # a plain attribute key, or a Key


def key_of(source: Source) -> Key:
    return source if isinstance(source, Key) else Key(source)


@dataclass(frozen=True)
class By:
    """One clause of a kind rule: an attribute (or the span's name, `NAME`) that decides a span's kind.

    With `values`, the attribute's value decides (folded to upper or lower case first, when `fold` says so);
    a value not listed gives `otherwise`, or leaves the decision to the next clause when `otherwise` is None.
    Without `values`, the attribute's presence gives `kind`."""

    key: str
    values: Mapping[str, str] | None = None
    kind: str = "other"
    otherwise: str | None = "other"
    fold: Literal["upper", "lower", "json"] | None = None

    def decide(self, value: object) -> str | None:
        """The kind this clause gives for the key's value (the key present), or None: not decided here.

        A value is compared as text: a string as it is (a string holding a quoted JSON string, as MLflow writes
        its attributes, as the string it holds), any other value as its JSON text (`fold="json"`: every value
        as its JSON text, so that `true` and `"true"` differ)."""
        if self.values is None:
            return self.kind
        if self.fold == "json" or not isinstance(value, str):
            text = json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
        else:
            text = value
            if len(text) > 1 and text[0] == text[-1] == '"':
                try:
                    decoded = json_loads(text)
                except ValueError:
                    decoded = None
                text = decoded if isinstance(decoded, str) else text
        if self.fold == "upper":
            text = text.upper()
        elif self.fold == "lower":
            text = text.lower()
        return self.values.get(text, self.otherwise)


@dataclass(frozen=True)
class Messages:
    """Where a model call's messages are: an attribute of the model span (`on="llm"`) or of the agent span
    above it (`on="agent"`: the agent's input stands for its trace's first model call's input, its output for
    the last call's output).

    `paths`: JSON paths into the attribute's (parsed) value, the first that exists wins ("$": the value itself):
    an array of messages, one message object, or a text (an assistant's, with `direction="output"`).
    `tool_calls`: another attribute holding the tool calls the same output asked for (Vercel's
    `ai.response.toolCalls` beside `ai.response.text`): both become one assistant message.
    `priority`: when a call's messages are recorded in several places, the lowest wins (see
    queries/views/22_message_sources.sql for the conventions' own places, 1 to 4)."""

    key: str
    direction: Literal["input", "output"]
    priority: int
    paths: tuple[str, ...] = ("$",)
    on: Literal["llm", "agent"] = "llm"
    tool_calls: str | None = None


# Where a provider's own request and response, recorded whole as a framework's input and output of a model call
# (MLflow's span inputs and outputs, Langfuse's generations), hold the messages, the first path that exists: Chat
# Completions' `messages` and first choice, the Responses API's `input` (items, or a text) and `output` items,
# Gemini's `contents` and first candidate, Anthropic's `messages` and its answer, which is the message itself. A
# dialect's `Messages(paths=...)` for such an attribute.
REQUEST_MESSAGES = ("$.messages", "$.input", "$.contents")
RESPONSE_MESSAGES = ("$.choices[0].message", "$.output", "$.candidates[0].content", "$")


@dataclass(frozen=True)
class Parts:
    """How a dialect's message parts name a tool call and a tool result (beyond the shapes of the GenAI
    conventions, OpenAI, Gemini and Bedrock that the view reads anyway). JSON paths are relative to the part.

    `call_types` / `result_types`: values of a part's `type`; `call_objects` / `result_objects`: a part that is
    `{"<key>": {...}}`; `call_keys`: a part without a `type` that has this key is a call (Vercel's
    `ai.response.toolCalls` items); `args` / `results` / `ids` / `names`: where each lives; `error_types`: values
    of the result's type (`$.output.type`) that say the tool failed. `message_texts` / `message_calls`: where a
    message that is neither GenAI parts nor OpenAI's shape holds its text and its list of tool calls (relative to
    the message: Mastra's model step output `{"text": ..., "toolCalls": [...]}`)."""

    call_types: tuple[str, ...] = ()
    result_types: tuple[str, ...] = ()
    call_objects: tuple[str, ...] = ()
    result_objects: tuple[str, ...] = ()
    call_keys: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    results: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    message_texts: tuple[str, ...] = ()
    message_calls: tuple[str, ...] = ()


@dataclass(frozen=True)
class Unwrap:
    """A wrapper object around a tool's arguments or result: an object with exactly the keys `keys` (or at
    least them, with `exact=False`), whose value is at `take` (a path). `empty`: a key that must hold an empty
    list or object for the rule to apply (Traceloop JS's `{"args": [], "kwargs": {...}}`). `when`: keys that
    must hold these values (LangChain's serialised ToolMessage `{"type": "tool", "data": ...}`)."""

    keys: frozenset[str]
    take: tuple[str | int, ...]
    exact: bool = True
    empty: str | None = None
    when: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class Dialect:
    """One span dialect: an instrumentation convention or a framework's own attribute family.

    - `recognise_keys` / `recognise_prefixes`: a span that has one of these keys (or a key with one of these
      prefixes) is of this dialect; a dialect with neither recognises nothing (its rules apply to every span).
    - `kind`: its clauses, tried after those of the dialects before it (by `precedence`) that also recognise the
      span.
    - `columns`: canonical column -> where its value is (tried after the keys of the dialects declared before);
      `tool_columns`: the same, read on tool spans only. `not_calls`: tool names of bookkeeping spans (or of a
      tool that gives the answer itself) that are no tool call.
    - `messages`, `parts`, `unwrap`: where its model calls' messages are, how their parts name tool calls and
      results, the wrappers around a tool's arguments or result.
    - `placeholders` / `placeholder_prefixes`: values that mean "no value" (redacted, scrubbed, not captured):
      never an id, a name or content, whichever dialect the span is of.
    - `error_flags`: attributes whose true value says the span failed where its status does not (Haystack's
      `haystack.tool.error`); `error_levels`: an attribute and its value that says so (Langfuse's level
      `ERROR`); `error_outputs`: an attribute whose text says so where it matches the key's regular expression
      (a tool's output that is a failed result object: Agno's `status='failure'` under OpenLLMetry);
      `error_messages`: where such a failure's message is (the class it names is the error type);
      `no_error_types`: `error.type` values that name no type (Mastra's `unknown`); `error_results`: a failed
      tool's result, where neither its spans nor the conversation record one, is its span's status message (the
      framework hands the model the message as the tool's result: the AI SDK, Mastra; read by the turns view).
    - `agent_inputs` / `agent_outputs`: attributes whose plain text (no JSON) is what an agent span's run was asked
      and answered: a turn's user text and answer where its trace records no model call (an instrumentation that
      writes agent and tool spans only: OpenLLMetry's Agno); read by the turns view and the scoring loader alike.
    - `agent_span_names`: regular expressions on the name of an agent span that no attribute names, whose first
      group is the agent (`invoke_agent (.+)`); `user_texts`: regular expressions on the user message of a
      turn's first model call whose first group is the user's own text (a framework's prompt around it).
    - `precedence`: the order dialects are tried in to recognise a span and read its kind (the lowest first: a
      framework before the conventions it also writes); the order of the declarations is the order their
      column keys are read in.
    - `since`: the normalizer version from which rows read this declaration as it is now: a new or changed
      declaration raises it past every other (`normalize.NORMALIZER_VERSION` is the highest).
    """

    name: str
    about: str
    recognise_keys: tuple[str, ...] = ()
    recognise_prefixes: tuple[str, ...] = ()
    kind: tuple[By, ...] = ()
    columns: Mapping[str, tuple[Source, ...]] = field(default_factory=dict)
    tool_columns: Mapping[str, tuple[Source, ...]] = field(default_factory=dict)
    not_calls: tuple[str, ...] = ()
    messages: tuple[Messages, ...] = ()
    parts: Parts = field(default_factory=Parts)
    unwrap: tuple[Unwrap, ...] = ()
    placeholders: tuple[str, ...] = ()
    placeholder_prefixes: tuple[str, ...] = ()
    error_flags: tuple[str, ...] = ()
    error_levels: Mapping[str, str] = field(default_factory=dict)
    error_outputs: tuple[Key, ...] = ()
    error_messages: tuple[Source, ...] = ()
    no_error_types: tuple[str, ...] = ()
    error_results: bool = False
    agent_inputs: tuple[str, ...] = ()
    agent_outputs: tuple[str, ...] = ()
    agent_span_names: tuple[str, ...] = ()
    user_texts: tuple[str, ...] = ()
    precedence: int = 100
    since: int = 8

    def recognises(self, keys: Collection[str]) -> bool:
        """Whether a span with these attribute keys is of this dialect (their presence decides, not values)."""
        if any(k in keys for k in self.recognise_keys):
            return True
        return bool(self.recognise_prefixes) and any(k.startswith(self.recognise_prefixes) for k in keys)
