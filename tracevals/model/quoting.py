"""How a value is written into text another program reads: SQL text (`sql_string`), and a command line that a
message or a report suggests and a user pastes into a shell (`command_line`). A value here is the user's or
the lake's (a run id, a lake's path, a trace id): no character of it may end the literal or the word."""

from __future__ import annotations

import re
import shlex

# What a POSIX shell reads as itself outside quotes (shlex's own set), and what it still acts on inside double
# quotes: outside them, a word in double quotes reads as a person would write it.
_BARE = re.compile(r"[\w@%+=:,./-]+", re.ASCII)
_ACTIVE_IN_DOUBLE_QUOTES = re.compile(r'["$`\\!]')


def sql_string(text: str) -> str:
    """`text` as an SQL string literal (a quote doubled). Every value written into SQL text goes through
    here."""
    return "'" + text.replace("'", "''") + "'"


def shell_word(word: str) -> str:
    """`word` as one word of a POSIX shell's command line: as it is when the shell reads it so, else in
    double quotes when nothing in it acts there (`"select * from runs"`), else `shlex.quote`'s single
    quotes."""
    if _BARE.fullmatch(word):
        return word
    if not _ACTIVE_IN_DOUBLE_QUOTES.search(word):
        return f'"{word}"'
    return shlex.quote(word)


def command_line(*words: str) -> str:
    """A command a user can paste into a shell: `command_line("tracevals", "sql", "--lake", lake, query)`."""
    return " ".join(shell_word(w) for w in words)
