"""Syntax errors in the user's words: what was expected, where (line:col), never parser
internals.

sqlglot reports a failed parse with its own vocabulary (``Required keyword: 'expression'
missing for <class 'sqlglot.expressions.core.Add'>``, ``Error tokenizing '...'``, a
``SENTINEL`` token at the end of input). These functions find the spot themselves and say
what a reader of the SQL can act on:

- :func:`unclosed_text_error`: a string, quoted identifier or block comment left open
  (the tokenizer's failure), located at its opening quote;
- :func:`unbalanced_parenthesis_error`: a ``(`` never closed or a ``)`` never opened,
  checked on the tokens before parsing, located at that parenthesis;
- :func:`parse_error`: every other parse failure, translated from sqlglot's first error:
  "expected an expression after '+'", "expected ')' but got 'FROM'", "unexpected 'x'".

Each returns a :class:`SqlSyntaxError` whose position is 1-based line:col of ``text`` (the
whole script, so the caret excerpt shows the user's line).
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from sqlglot.tokens import Token, TokenType

from flowsql.errors import SqlSyntaxError

#: the words a statement may start with, for "expected a statement" errors
STATEMENT_WORDS = ("SELECT", "WITH", "VALUES", "INSERT", "CREATE", "DROP", "EXPLAIN", "SET",
                   "RESET", "SHOW", "DESCRIBE")

#: clause keywords a misspelt word is compared with ("FORM" -> "FROM")
_CLAUSE_WORDS = ("SELECT", "FROM", "WHERE", "GROUP", "ORDER", "HAVING", "LIMIT", "JOIN",
                 "UNION", "EXCEPT", "INTERSECT", "VALUES", "DISTINCT", "BETWEEN", "WINDOW")

_TOKEN_REPR = re.compile(r"<Token token_type: TokenType\.(\w+), text: ([^,]*),.*?>")
_REQUIRED = re.compile(r"^Required keyword: '(\w+)' missing for <class '[\w.]+'>")
#: sqlglot's names of what it expected, as a reader would say them
_WANTED = {"TYPE": "a type", ")": "')'", "(": "'('", "table name": "a table name"}
_CLOSING = re.compile(r"^(\w+) after (\w+)$")
_EXPECTED = re.compile(r"^Expect(?:ed|ing) (.+?)(?: but got (.+))?$", re.DOTALL)


def position(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, col) of the character at ``offset`` of ``text``."""
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def unclosed_text_error(text: str, start: int = 0) -> SqlSyntaxError:
    """The error for text the tokenizer could not read from ``start`` on: the opening quote
    of the string, quoted identifier or comment left open; failing that, a generic error at
    ``start``."""
    opened = _unclosed_opening(text, start)
    if opened is None:
        line, col = position(text, start)
        return SqlSyntaxError("syntax error: cannot read the text from here", line, col, text)
    offset, what = opened
    line, col = position(text, offset)
    return SqlSyntaxError(f"syntax error: unclosed {what} (opened here, never closed)",
                          line, col, text)


def _unclosed_opening(text: str, start: int) -> tuple[int, str] | None:
    """(offset, description) of a string, quoted identifier or comment opened at or after
    ``start`` and not closed before the end of ``text``; None when all are closed."""
    closers = {"'": ("'", "string '...'"), '"': ('"', 'quoted identifier "..."'),
               "`": ("`", "quoted identifier `...`"), "/*": ("*/", "comment /* ... */")}
    i = start
    while i < len(text):
        if text.startswith("--", i):
            newline = text.find("\n", i)
            if newline < 0:
                return None
            i = newline + 1
            continue
        opener = "/*" if text.startswith("/*", i) else text[i]
        if opener in closers:
            closer, what = closers[opener]
            j = i + len(opener)
            while True:
                j = text.find(closer, j)
                if j < 0:
                    return i, what
                if len(closer) == 1 and text.startswith(closer * 2, j):
                    j += 2  # a doubled quote is an escaped quote
                    continue
                break
            i = j + len(closer)
            continue
        i += 1
    return None


def unbalanced_parenthesis_error(tokens: list[Token], text: str) -> SqlSyntaxError | None:
    """The error for the first ``)`` without a ``(`` or the innermost ``(`` never closed,
    None when parentheses (and brackets) balance."""
    pairs = {TokenType.R_PAREN: TokenType.L_PAREN, TokenType.R_BRACKET: TokenType.L_BRACKET}
    stack: list[Token] = []
    for token in tokens:
        if token.token_type in (TokenType.L_PAREN, TokenType.L_BRACKET):
            stack.append(token)
        elif token.token_type in pairs:
            if not stack or stack[-1].token_type != pairs[token.token_type]:
                line, col = position(text, token.start)
                return SqlSyntaxError(f"syntax error: '{token.text}' without a matching "
                                      "opening one", line, col, text)
            stack.pop()
    if not stack:
        return None
    opened = stack[-1]
    closer = ")" if opened.token_type == TokenType.L_PAREN else "]"
    line, col = position(text, opened.start)
    return SqlSyntaxError(f"syntax error: unclosed '{opened.text}': expected '{closer}' "
                          "before the end of the statement", line, col, text)


#: words no statement can end with, and what must follow each (sqlglot accepts some of
#: them at the end: an empty ``GROUP BY``, an empty ``JOIN ... ON`` read as a cross join,
#: ``ORDER`` read as a table alias)
_NEEDS_FOLLOWER = {
    **dict.fromkeys(("WHERE", "HAVING", "ON", "AND", "OR", "NOT", "LIMIT", "OFFSET", "IN",
                     "LIKE", "BETWEEN", "IS", "WHEN", "THEN", "ELSE", "CASE", "GROUP BY",
                     "ORDER BY", "BY", "PARTITION BY", "SELECT", "DISTINCT"),
                    "an expression"),
    **dict.fromkeys(("FROM", "JOIN", "INTO", "TABLE"), "a table name"),
    **dict.fromkeys(("GROUP", "ORDER"), "BY"),
    **dict.fromkeys(("UNION", "INTERSECT", "EXCEPT", "ALL", "WITH"), "a query"),
    "AS": "a name", "USING": "'(' and column names", "OVER": "a window", "VALUES": "'('",
}

#: words after which the last word is a name, not a keyword
_NAME_BEFORE = frozenset({"FROM", "JOIN", "INTO", "TABLE", "AS", "."})


def dangling_keyword_error(tokens: list[Token], text: str) -> SqlSyntaxError | None:
    """The error for a statement ending in a keyword that needs something after it
    (``... GROUP BY``, ``... JOIN u ON``); None otherwise."""
    if not tokens:
        return None
    last = tokens[-1]
    if last.token_type in (TokenType.STRING, TokenType.IDENTIFIER):
        return None
    if len(tokens) > 1 and tokens[-2].text.upper() in _NAME_BEFORE:
        return None  # a name that is also a keyword (``FROM order``) is for the parser
    wanted = _NEEDS_FOLLOWER.get(" ".join(last.text.upper().split()))
    if wanted is None:
        return None
    line, col = position(text, last.end + 1)
    return SqlSyntaxError(f"syntax error: expected {wanted} after '{last.text}' (the "
                          "statement ends here)", line, col, text)


def parse_error(error: dict[str, Any], text: str, start: int, end: int,
                tokens: list[Token]) -> SqlSyntaxError:
    """Translate sqlglot's first error of a statement spanning ``text[start:end]``.

    sqlglot locates an error at a token (its ``highlight``, ``line`` and end ``col``): the
    token it could not use, or the last token when the input ended too early."""
    description = str(error.get("description") or "")
    highlight = str(error.get("highlight") or "")
    line, col = error.get("line"), error.get("col")
    if line is None or col is None or not highlight:
        return SqlSyntaxError(f"syntax error: {_plain(description)}", None, None, text)
    token_start = _offset(text, line, col) - len(highlight) + 1
    token_end = token_start + len(highlight)
    at_end = not text[token_end:end].strip()
    after = position(text, token_end) if at_end else position(text, token_start)
    here = position(text, token_start)

    if tokens and tokens[0].token_type == TokenType.VAR and \
            tokens[0].text.upper() not in STATEMENT_WORDS:
        first = position(text, tokens[0].start)
        return SqlSyntaxError(f"syntax error: expected a statement ({', '.join(STATEMENT_WORDS)})"
                              f" but got '{tokens[0].text}'{_misspelt(tokens[0].text)}",
                              *first, text)
    required = _REQUIRED.match(description)
    expected = _EXPECTED.match(description)
    if required or expected:
        wanted = "an expression" if required else _plain(expected.group(1)) if expected \
            else ""
        context = _CLOSING.match(wanted)
        if context:
            wanted = f"{_WANTED.get(context.group(1), context.group(1))} in {context.group(2)}"
        wanted = _WANTED.get(wanted, wanted)
        case_at = text.upper().rfind("CASE", start, token_end)
        if wanted == "END in CASE" and case_at >= 0 and \
                "WHEN" not in text[case_at:token_end].upper():
            return SqlSyntaxError("syntax error: expected WHEN after 'CASE'",
                                  *position(text, case_at + len("CASE")), text)
        if expected and expected.group(2):
            # sqlglot says what it got: the end of input, or the highlighted token
            at_end = "SENTINEL" in expected.group(2)
        if at_end and highlight not in (")", "]"):
            return SqlSyntaxError(f"syntax error: expected {wanted} after '{highlight}' "
                                  "(the statement ends here)", *after, text)
        return SqlSyntaxError(f"syntax error: expected {wanted} but got '{highlight}'",
                              *here, text)
    if "Unexpected token" in description or "Invalid expression" in description:
        before = text[start:token_start].split()
        hint = _misspelt(before[-1]) if before else ""
        if hint:
            word_start = text.rfind(before[-1], start, token_start)
            return SqlSyntaxError(f"syntax error: unexpected '{highlight}' after "
                                  f"'{before[-1]}'{hint}", *position(text, word_start), text)
        return SqlSyntaxError(f"syntax error: unexpected '{highlight}'", *here, text)
    if "following CTE" in description:
        return SqlSyntaxError("syntax error: expected a query (SELECT ...) after the WITH "
                              "clause", *after, text)
    return SqlSyntaxError(f"syntax error: {_plain(description)}", *here, text)


def _plain(description: str) -> str:
    """sqlglot's wording without token reprs: the end of input is said as such."""
    def token(match: re.Match[str]) -> str:
        return "the end of the statement" if match.group(1) == "SENTINEL" \
            else f"'{match.group(2)}'"
    text = _TOKEN_REPR.sub(token, description)
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def _misspelt(word: str) -> str:
    """`` (did you mean FROM?)`` when ``word`` is a near miss of a clause keyword."""
    upper = word.upper()
    if upper in _CLAUSE_WORDS or upper in STATEMENT_WORDS or not word.isalpha():
        return ""
    close = difflib.get_close_matches(upper, _CLAUSE_WORDS + STATEMENT_WORDS, n=1,
                                      cutoff=0.75)
    return f" (did you mean {close[0]}?)" if close else ""


def _offset(text: str, line: int, col: int) -> int:
    """0-based offset of 1-based (line, col)."""
    offset = 0
    for _ in range(line - 1):
        offset = text.index("\n", offset) + 1
    return offset + col - 1
