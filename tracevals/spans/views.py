"""The SQL the views read from the dialect declarations: where messages live, how message parts name tool calls
and results, which values are placeholders. A view file marks each place with a comment, `/*@ name @*/` or
`/*@ name(sql expression) @*/`, which `render` replaces with the SQL generated from `reading` (the declarations);
the files stay plain SQL, and a declaration added is read by the views with no SQL written.

    /*@ attribute_sources @*/        the message_sources rows of every declared attribute on a model span
    /*@ agent_sources @*/            the agent_messages rows of every declared attribute on an agent span
    /*@ placeholder(expr) @*/        whether a text is a placeholder (a declared value or prefix)
    /*@ error_results(dialect) @*/   whether a dialect hands the model a failed tool's error message as its result
    /*@ one_text_block(expr) @*/     the text of content blocks of one text block, else NULL
    /*@ python_literal(expr) @*/     a dict or list recorded as its Python repr, as JSON text (`rules.python_literal`)
    /*@ agent_input(attrs) @*/ /*@ agent_output(attrs) @*/
                                     the plain text an agent span records as its run's input / output (declared)
    /*@ call_type(part) @*/          whether a message part is a tool call by its declared shapes
    /*@ result_type(part) @*/        ... a tool result
    /*@ args(part) @*/ /*@ results(part) @*/ /*@ ids(part) @*/ /*@ names(part) @*/
                                     the declared paths of a part's arguments, result, call id, tool name, as
                                     the leading arguments of a coalesce(...)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from tracevals.model.quoting import sql_string
from tracevals.spans import reading, rules
from tracevals.spans.declare import Messages
from tracevals.spans.normalize import UNKNOWN_ERROR_TYPE

_MARKER = re.compile(r"/\*@\s*(\w+)(?:\((.*?)\))?\s*@\*/", re.S)


def _path(key: str) -> str:
    return sql_string(f'$."{key}"')


def _like(key: str) -> str:
    return sql_string(f'%"{key}"%')


def _value(source: Messages) -> str:
    """The JSON a declared source holds: the attribute's value (text holding JSON is parsed by the view, text that
    is no JSON is one message's content), or the first of its paths that exists inside the parsed value."""
    whole = f"json_extract(attributes, {_path(source.key)})"
    if source.paths == ("$",):
        return whole
    doc = f"try_cast(json_extract_string(attributes, {_path(source.key)}) AS JSON)"
    found = [whole if p == "$" else f"json_extract({doc}, {sql_string(p)})" for p in source.paths]
    return found[0] if len(found) == 1 else f"coalesce({', '.join(found)})"


def attribute_sources() -> str:
    """UNION ALL branches of message_sources' `found`: every declared attribute on a model span (`llm`)."""
    out = []
    for source in (m for m in reading.MESSAGES if m.on == "llm"):
        role = "'assistant'" if source.direction == "output" else "NULL"
        where = f"list_contains(attr_keys, {sql_string(source.key)})"  # `llm`'s keys, parsed once
        value = _value(source)
        if source.tool_calls is not None:  # a text beside the tool calls the same answer asked for: one message
            calls = f"try_cast(json_extract_string(attributes, {_path(source.tool_calls)}) AS JSON)"
            value = (
                f"json_object('role', 'assistant', 'content', json_extract_string(attributes, {_path(source.key)}), "
                f"'tool_calls', {calls})"
            )
            where = f"({where} OR list_contains(attr_keys, {sql_string(source.tool_calls)}))"
        out.append(
            f"    UNION ALL\n    SELECT trace_id, span_id, {sql_string('span:' + source.key)} AS source, "
            f"{source.priority} AS priority, {sql_string(source.direction)} AS direction,\n"
            f"           CAST({role} AS VARCHAR) AS role_hint, {value} AS value, 0 AS seq\n"
            f"    FROM llm\n    WHERE {where}"
        )
    return "\n".join(out).removeprefix("    UNION ALL\n").strip()


def agent_sources() -> str:
    """agent_messages' rows: per trace and declared agent attribute, the first agent span's input or the last
    one's output."""
    out = []
    for source in (m for m in reading.MESSAGES if m.on == "agent"):
        pick, order = ("arg_min", "start_time") if source.direction == "input" else ("arg_max", "end_time")
        out.append(
            f"SELECT trace_id, {sql_string('agent:' + source.key)} AS source, {source.priority} AS priority, "
            f"{sql_string(source.direction)} AS direction,\n"
            f"           {pick}({_value(source)}, ({order}, span_id)) AS value\n"
            f"    FROM agent_spans\n    WHERE attributes LIKE {_like(source.key)}\n"
            "    GROUP BY trace_id"
        )
    return "\n    UNION ALL\n    ".join(out)


def placeholder(expr: str) -> str:
    values = ", ".join(sql_string(v) for v in sorted(reading.PLACEHOLDERS))
    prefixes = "".join(f" OR starts_with({expr}, {sql_string(p)})" for p in reading.PLACEHOLDER_PREFIXES)
    return f"({expr} IN ({values}){prefixes})"


def python_literal(expr: str) -> str:
    """`rules.python_literal` in SQL, by the same constants: the text as JSON text when it is a Python repr of a
    dict or list, else as it is (tests/test_dialects.py checks both give the same value)."""
    words = "s"
    for word, json_word in rules.PY_WORDS.items():
        pattern = sql_string(r"\b" + word + r"\b")
        words = f"regexp_replace({words}, {pattern}, {sql_string(json_word)}, 'g')"
    outside = f"regexp_full_match({words}, {sql_string(rules.PY_OUTSIDE)})"
    trailing = f"regexp_matches({words}, {sql_string(rules.PY_TRAILING_COMMA)})"
    control = f"regexp_matches(s, {sql_string(rules.PY_CONTROL)})"
    pieces = (
        f"list_transform(string_split({expr}, ''''), lambda s, i: CASE WHEN i % 2 = 1 THEN CASE WHEN {outside} "
        f"AND NOT {trailing} THEN {words} END WHEN NOT {control} THEN s END)"
    )
    gate = f"regexp_matches({expr}, '^[\\[{{]') AND NOT contains({expr}, '\"') AND NOT contains({expr}, '\\')"
    return (
        f"(CASE WHEN {gate} AND list_bool_and(list_transform({pieces}, lambda p: p IS NOT NULL))\n"
        f"     THEN coalesce(CAST(try_cast(array_to_string({pieces}, '\"') AS JSON) AS VARCHAR), {expr}) "
        f"ELSE {expr} END)"
    )


def _parts(attribute: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for dialect in reading.DIALECTS:
        seen.update(dict.fromkeys(getattr(dialect.parts, attribute)))
    return tuple(seen)


def _typed(part: str, types: str, objects: str, keys: str = "") -> str:
    tests = [f"json_extract_string({part}, '$.type') IN ({_listed(types)()})"]
    if _parts(objects):
        tests.append(f"list_contains({_at('json_type', part, ['$.' + o for o in _parts(objects)])}, 'OBJECT')")
    if keys and _parts(keys):
        found = _at("json_type", part, ["$." + k for k in _parts(keys)])
        present = f"list_bool_or(list_transform({found}, lambda t: t IS NOT NULL))"
        tests.append(f"(json_type({part}, '$.type') IS NULL AND {present})")
    return "(" + "\n                OR ".join(tests) + ")"


def _at(function: str, part: str, paths: Sequence[str]) -> str:
    """`function` (json_type, json_extract, json_extract_string) of `part` at every one of `paths`, a list (NULL
    where a path is absent): one parse of `part` for all of them, where a call per path parses it once each (a
    message part's JSON, the views' costliest work)."""
    return f"{function}({part}, [{', '.join(sql_string(p) for p in paths)}])"


def call_type(part: str) -> str:
    return _typed(part, "call_types", "call_objects", "call_keys")


def result_type(part: str) -> str:
    return _typed(part, "result_types", "result_objects")


def _listed(types: str) -> Callable[[], str]:
    """The declared values of a part's `type` that say it is a call (`call_types`) or a result (`result_types`),
    as the items of an SQL `IN` list."""
    return lambda: ", ".join(sql_string(t) for t in _parts(types))


def args_key(expr: str) -> str:
    """A call's arguments as the request views compare them: the JSON minified, else (no JSON: a value cut short,
    two objects run together) the text as written, never an error."""
    return f"coalesce(CAST(try(json({expr})) AS VARCHAR), {expr})"


def _paths(attribute: str, extract: str) -> Callable[[str], str]:
    """The value at the first of the declared paths `attribute` that `part` has (NULL: none). The paths are
    extracted in one call, which parses `part` once, not once a path."""

    def paths(part: str) -> str:
        if not _parts(attribute):  # nothing declared: no value
            return "NULL"
        return f"list_filter({_at(extract, part, _parts(attribute))}, lambda v: v IS NOT NULL)[1]"

    return paths


def message_parts(message: str) -> str:
    """The list elements of a message's parts in the declared message shapes: a text (when the message has no
    `content`), each item of a list of tool calls."""
    out = []
    for path in _parts("message_texts"):
        out.append(
            f"CASE WHEN json_type({message}, {sql_string(path)}) = 'VARCHAR' AND json_type({message}, '$.content') "
            f"IS NULL THEN [json_extract({message}, {sql_string(path)})] ELSE [] END"
        )
    for path in _parts("message_calls"):
        out.append(
            f"CASE WHEN json_type({message}, {sql_string(path)}) = 'ARRAY' THEN json_extract({message}, "
            f"{sql_string(path + '[*]')}) ELSE [] END"
        )
    return ",\n             ".join(out) or "[]"


def one_text_block(expr: str) -> str:
    """The text of a value that is content blocks of one text block (`[{"text": ...}]`: Strands, MCP), else NULL:
    a tool's result, from its span or from the tool message answering it."""
    doc = f"try_cast({expr} AS JSON)"
    return (
        f"(CASE WHEN {expr} LIKE '[{{%\"text\"%' AND json_array_length({doc}) = 1 "
        f"AND json_type({doc}, '$[0].text') = 'VARCHAR' THEN json_extract_string({doc}, '$[0].text') END)"
    )


def answer_failed(expr: str) -> str:
    """`rules.answer_failed` in SQL, by the same patterns: whether a tool message's text says its call failed."""
    doc = f"try_cast({expr} AS JSON)"
    return (
        f"(regexp_matches({expr}, {sql_string(rules.FAILED_ANSWER)}) "
        f"OR regexp_matches({expr}, {sql_string(rules.ERROR_CLASS)}) "
        f"OR coalesce(json_type({doc}) = 'OBJECT' AND json_keys({doc}) = ['error'] "
        f"AND json_type({doc}, '$.error') <> 'NULL', FALSE))"
    )


def answer_error_type(expr: str) -> str:
    """The error type of a failed call known from its answer alone: the class the text starts with, else `_OTHER`
    (as the normalizer gives a failed span that names none)."""
    return (
        f"coalesce(nullif(regexp_extract({expr}, {sql_string(rules.ERROR_CLASS)}, 1), ''), "
        f"{sql_string(UNKNOWN_ERROR_TYPE)})"
    )


def error_results(dialect: str) -> str:
    """Whether a span's dialect hands the model a failed tool's error message as its result (`error_results`)."""
    names = ", ".join(sql_string(n) for n in sorted(reading.ERROR_RESULTS)) or "NULL"
    return f"({dialect} IN ({names}))"


def not_call(name: str) -> str:
    """Whether a tool name is one a framework declares no call (`not_calls`)."""
    names = ", ".join(sql_string(n) for n in sorted(reading.NOT_CALLS)) or "NULL"
    return f"({name} IN ({names}))"


def user_text(text: str) -> str:
    """A user message's text out of the prompts frameworks wrap it in (`user_texts`, the first that matches)."""
    patterns = [p for d in reading.DIALECTS for p in d.user_texts]
    found = [f"nullif(regexp_extract({text}, {sql_string(p)}, 1), '')" for p in patterns]
    return f"coalesce({', '.join([*found, text])})"


def _agent_text(attribute: str) -> Callable[[str], str]:
    """`/*@ agent_input(attrs) @*/`, `/*@ agent_output(attrs) @*/`: the first declared key (`Dialect.agent_inputs` /
    `agent_outputs`) whose value in `attrs` (an attributes JSON text) is plain text: not empty, no JSON object or
    array, no placeholder."""

    def render(attrs: str) -> str:
        keys = [k for d in reading.DIALECTS for k in getattr(d, attribute)]
        texts = []
        for key in keys:
            value = f"json_extract_string({attrs}, {_path(key)})"
            # `{` and `[` by their code points: a loader's query with this marker may be filled by str.format
            plain = f"{value} <> '' AND left(ltrim({value}), 1) NOT IN (chr(123), chr(91)) AND NOT {placeholder(value)}"
            texts.append(f"CASE WHEN {plain} THEN {value} END")
        return f"coalesce({', '.join(texts)})" if texts else "CAST(NULL AS VARCHAR)"

    return render


def agent_from_span_name(name: str) -> str:
    """An agent span's name with the declared patterns applied (the first that matches gives the agent)."""
    patterns = [p for d in reading.DIALECTS for p in d.agent_span_names]
    found = [f"nullif(regexp_extract({name}, {sql_string(p)}, 1), '')" for p in patterns]
    return f"coalesce({', '.join([*found, name])})"


GENERATED: dict[str, Callable[..., str]] = {
    "agent_from_span_name": agent_from_span_name,
    "agent_input": _agent_text("agent_inputs"),
    "agent_output": _agent_text("agent_outputs"),
    "message_parts": message_parts,
    "not_call": not_call,
    "error_results": error_results,
    "answer_failed": answer_failed,
    "answer_error_type": answer_error_type,
    "one_text_block": one_text_block,
    "user_text": user_text,
    "attribute_sources": attribute_sources,
    "agent_sources": agent_sources,
    "placeholder": placeholder,
    "python_literal": python_literal,
    "call_type": call_type,
    "result_type": result_type,
    "args_key": args_key,
    "call_types": _listed("call_types"),
    "result_types": _listed("result_types"),
    "args": _paths("args", "json_extract"),
    "results": _paths("results", "json_extract"),
    "ids": _paths("ids", "json_extract_string"),
    "names": _paths("names", "json_extract_string"),
}


def render(sql: str, file_name: str = "") -> str:
    """A view file with its markers replaced by the SQL the declarations give (unchanged if it has none)."""

    def replace(match: re.Match[str]) -> str:
        name, argument = match.group(1), match.group(2)
        if name not in GENERATED:
            raise ValueError(f"view file {file_name}: unknown marker /*@ {name} @*/ (known: {', '.join(GENERATED)})")
        return GENERATED[name]() if argument is None else GENERATED[name](argument.strip())

    return _MARKER.sub(replace, sql)
