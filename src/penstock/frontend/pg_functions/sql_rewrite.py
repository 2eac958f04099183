"""The SQL text rewrites that put this package's functions in a statement before planning.

A Python UDF has one fixed signature, while PostgreSQL's functions take optional arguments
and several types, and some of its forms are syntax DataFusion reads otherwise. So, on the
tokens of the statement (strings and comments untouched):
- to_char(x, f) -> to_char(x, f, arrow_typeof(x)) (the UDF formats x by its own type);
  to_timestamp(t, f) -> penstock_to_timestamp(t, f); format(f, a, ...) ->
  penstock_format_N(f, a, arrow_typeof(a), ...).
- regexp_* calls get every optional argument, defaults filled in; regexp_matches and
  regexp_split_to_table become unnest() of an array, one row per match.
- substring(s FROM 'pattern') and substring(s, 'pattern') -> penstock_regex_substring;
  substring(s FROM 'p' FOR 'esc') and substring(s SIMILAR 'p' ESCAPE 'esc') ->
  penstock_similar_substring (a string-literal pattern: PostgreSQL also picks the regex form
  for an untyped literal; a pattern in a text column keeps DataFusion's reading).
- x [NOT] SIMILAR TO 'p' [ESCAPE 'e'] -> x ~ 're' / x !~ 're' with PostgreSQL's translation
  of the pattern; x ~ 'are' (and ~*, !~, !~*) with the ARE translated to DataFusion's
  (Rust) regex, so that `.` matches a newline and \\m, \\y, [[:alpha:]] work as in PostgreSQL.
  A literal the translation refuses stays as written (DataFusion then raises 2201B or
  answers as PostgreSQL would).
The result columns keep PostgreSQL's names: output_names.py reads the user's own text.
"""

from __future__ import annotations

from penstock.frontend.pg_functions import number_format
from penstock.frontend.pg_functions.quoting import MAX_FORMAT_ARGS
from penstock.frontend.pg_functions.regex_functions import NTH_ABSENT
from penstock.frontend.pg_functions.pg_error import PgFunctionError
from penstock.frontend.pg_functions.regex_translate import similar_to_are, translate
from penstock.frontend.sql_tokens import Token, arguments, closing, following, literal, preceding, tokens

_PADDING: dict[str, tuple[str, ...]] = {  # the defaults of the optional arguments, in order
    "regexp_match": ("''",), "regexp_matches": ("''",), "regexp_split_to_array": ("''",),
    "regexp_split_to_table": ("''",), "regexp_like": ("''",), "regexp_count": ("1", "''"),
    "regexp_instr": ("1", "1", "0", "''", "0"), "regexp_substr": ("1", "1", "''", "0"),
}
_REQUIRED = {"regexp_match": 2, "regexp_matches": 2, "regexp_split_to_array": 2, "regexp_split_to_table": 2,
             "regexp_like": 2, "regexp_count": 2, "regexp_instr": 2, "regexp_substr": 2}
_RENAMED = {"regexp_matches": "penstock_regexp_matches", "regexp_split_to_table": "penstock_regexp_split_rows"}
_NAMES = ("to_char", "to_number", "to_timestamp", "format", "regexp_", "substring", "similar", "~")


def reads_typed_text(name: str) -> bool:
    """Whether UDF `name` takes values cast to text beside arrow_typeof() of them (to_char,
    format): DataFusion's text of a float or timestamp is exact, and the UDF writes it as
    PostgreSQL does, so fallback_check.py need not refuse those casts."""
    return name == "to_char" or name.startswith("penstock_format_")


def rewrite(sql: str) -> str:
    low = sql.lower()
    if not any(name in low for name in _NAMES):
        return sql
    return "".join(t.text for t in _rewrite(tokens(sql)))


def _text(toks: list[Token]) -> str:
    return "".join(t.text for t in toks).strip()


def _string_value(toks: list[Token]) -> str | None:
    """The value of an argument that is one string literal ('...' or E'...'), else None."""
    significant = [t for t in toks if t.kind not in ("ws", "comment")]
    if len(significant) != 1 or significant[0].kind != "string":
        return None
    t = significant[0]
    if t.text.startswith("'"):
        return t.text[1:-1].replace("''", "'")
    if t.text[:2] in ("E'", "e'"):
        body = t.text[2:-1].replace("''", "'")
        return body.encode("latin-1", "backslashreplace").decode("unicode_escape") if "\\" in body else body
    return None


def _call(name: str, args: list[str]) -> list[Token]:
    return [Token("word", f"{name}({', '.join(args)})")]


def _rewrite(toks: list[Token]) -> list[Token]:
    out: list[Token] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        after = following(toks, i + 1)
        before = preceding(toks, i)
        if (t.kind == "word" and after < len(toks) and toks[after].text == "("
                and not (before >= 0 and toks[before].text == ".")):
            end = closing(toks, after)
            if end < len(toks):
                replaced = _function(t.low, toks, after, end)
                if replaced is not None:
                    out.extend(replaced)
                    i = end + 1
                    continue
        if t.kind == "word" and t.low == "similar" and _word_at(toks, following(toks, i + 1)) == "to":
            replaced_at = _similar_to(toks, i, out)
            if replaced_at is not None:
                i = replaced_at
                continue
        if t.kind == "op" and t.text in ("~", "~*", "!~", "!~*"):
            k = following(toks, i + 1)
            value = _string_value(toks[k:k + 1]) if k < len(toks) else None
            if value is not None:
                try:
                    translated = translate(value, "rust")
                except PgFunctionError:
                    translated = None
                if translated is not None:
                    out.append(t)
                    out.append(Token("ws", " "))
                    out.append(literal(translated))
                    i = k + 1
                    continue
        out.append(t)
        i += 1
    return out


def _word_at(toks: list[Token], i: int) -> str:
    return toks[i].low if i < len(toks) else ""


def _function(name: str, toks: list[Token], open_at: int, close_at: int) -> list[Token] | None:
    if name == "substring":
        return _substring(toks, open_at, close_at)
    raw = arguments(toks, open_at, close_at)
    args = [_text(_rewrite(a)) for a in raw]
    if name == "to_char" and len(args) == 2:
        return _call("to_char", [args[0], args[1], f"arrow_typeof({args[0]})"])
    if name == "to_number" and len(args) == 2 and _string_value(raw[1]) is not None:
        scale = min(number_format.parse(_string_value(raw[1]) or "").post, 38)  # PostgreSQL's scale: the digits read
        return [Token("word", f"CAST(to_number({args[0]}, {args[1]}) AS DECIMAL(38, {scale}))")]
    if name == "to_timestamp" and len(args) == 2:
        return _call("penstock_to_timestamp", args)
    if name == "format" and 1 <= len(args) <= MAX_FORMAT_ARGS + 1:
        typed = [args[0]]
        for a in args[1:]:
            typed += [a, f"arrow_typeof({a})"]
        return _call(f"penstock_format_{len(args) - 1}", typed)
    if name == "regexp_replace" and 3 <= len(args) <= 6:
        if len(args) == 3:
            args += ["1", str(NTH_ABSENT), "''"]
        elif len(args) == 4:
            args = args[:3] + (["1", str(NTH_ABSENT), args[3]] if _string_value(raw[3]) is not None
                               else [args[3], str(NTH_ABSENT), "''"])
        elif len(args) == 5:
            args += ["''"]
        return _call("regexp_replace", args)
    if name in _PADDING and _REQUIRED[name] <= len(args) <= _REQUIRED[name] + len(_PADDING[name]):
        args += list(_PADDING[name][len(args) - _REQUIRED[name]:])
        call = _call(_RENAMED.get(name, name), args)
        if name not in _RENAMED:
            return call
        rows = [Token("word", "unnest("), *call, Token("punct", ")")]
        if _in_from(toks, open_at, close_at):  # its column named as PostgreSQL names it
            rows.append(Token("word", f" AS {name}({name})"))
        return rows
    return None


_ALIAS_FOLLOWS_NOT = {"where", "group", "order", "limit", "offset", "join", "inner", "left", "right", "full",
                      "cross", "natural", "on", "union", "intersect", "except", "window", "having", "fetch"}


def _in_from(toks: list[Token], open_at: int, close_at: int) -> bool:
    """Whether the call whose parentheses these are is a FROM item without an alias."""
    name_at = preceding(toks, open_at)
    before = preceding(toks, name_at)
    if before < 0 or toks[before].low not in ("from", "join", "lateral", ","):
        return False
    if toks[before].text == ",":  # a comma of a FROM list, not of a select list or arguments
        depth = 0
        for k in range(before, -1, -1):
            depth += toks[k].text == ")"
            depth -= toks[k].text == "("
            if depth < 0 or (depth == 0 and toks[k].low == "select"):
                return False
            if depth == 0 and toks[k].low == "from":
                break
    after = following(toks, close_at + 1)
    return after >= len(toks) or not (toks[after].low == "as" or
                                      (toks[after].kind in ("word", "ident") and toks[after].low not in _ALIAS_FOLLOWS_NOT))


def _split_keywords(toks: list[Token], open_at: int, close_at: int, words: tuple[str, ...]) -> list[list[Token]]:
    """The parts of a call's inside between the top-level keywords `words` (FROM, FOR, ...),
    each part led by its keyword's text in a Token of kind 'key'."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for t in toks[open_at + 1:close_at]:
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
        if depth == 0 and t.kind == "word" and t.low in words:
            parts.append([Token("key", t.low)])
        else:
            parts[-1].append(t)
    return parts


def _substring(toks: list[Token], open_at: int, close_at: int) -> list[Token] | None:
    parts = _split_keywords(toks, open_at, close_at, ("from", "for", "similar", "escape"))
    keys = [p[0].text for p in parts[1:]]
    if keys == ["from"] or keys == ["from", "for"] or keys == ["similar", "escape"]:
        values = [parts[0]] + [p[1:] for p in parts[1:]]
    elif not keys:
        values = arguments(toks, open_at, close_at)
        if len(values) not in (2, 3):
            return None
    else:
        return None
    if _string_value(values[1]) is None or (len(values) == 3 and _string_value(values[2]) is None):
        return None
    args = [_text(_rewrite(v)) for v in values]
    if len(args) == 2:
        return _call("penstock_regex_substring", args)
    return _call("penstock_similar_substring", args)


def _similar_to(toks: list[Token], i: int, out: list[Token]) -> int | None:
    """`[NOT] SIMILAR TO 'p' [ESCAPE 'e']` at toks[i] (SIMILAR) as `~ 're'`: the index after it."""
    to_at = following(toks, i + 1)
    pattern_at = following(toks, to_at + 1)
    if pattern_at >= len(toks):
        return None
    pattern = _string_value(toks[pattern_at:pattern_at + 1])
    if pattern is None:
        return None
    end = pattern_at + 1
    escape: str | None = "\\"
    escape_at = following(toks, end)
    if escape_at < len(toks) and toks[escape_at].low == "escape":
        value_at = following(toks, escape_at + 1)
        escape = _string_value(toks[value_at:value_at + 1]) if value_at < len(toks) else None
        if escape is None:
            return None
        escape = escape or None
        end = value_at + 1
    try:
        regex = translate(similar_to_are(pattern, escape), "rust")
    except PgFunctionError:
        return None
    negated = False
    k = len(out) - 1
    while k >= 0 and out[k].kind in ("ws", "comment"):
        k -= 1
    if k >= 0 and out[k].low == "not":
        negated = True
        del out[k:]
    out.extend([Token("ws", " "), Token("op", "!~" if negated else "~"), Token("ws", " "), literal(regex),
                Token("ws", " ")])
    return end
