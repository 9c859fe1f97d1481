-- call_spans: every model (llm) and tool span, with the call it belongs to (call_span_id, call_depth:
-- see span_facts for the nesting rule). model_calls and tool_calls collapse each call to one row.
CREATE OR REPLACE VIEW call_spans AS
SELECT *
FROM span_facts
WHERE kind IN ('llm', 'tool');
