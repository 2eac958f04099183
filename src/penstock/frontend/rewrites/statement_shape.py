"""Deep expressions: long AND/OR chains balanced, and a depth limit before any library recurses.

DataFusion's parser builds `a OR b OR c ...` as a left-deep tree, one level per operator,
and its planner, optimiser and Substrait producer walk such trees recursively, in time
that grows with the square or the cube of the depth (5,000 ORs crashed the process on an
8 MiB stack; 2,000 took 270 s). SQL's AND and OR are associative, three-valued logic
included, so a long chain is regrouped into a balanced tree, log2(n) deep, by adding
parentheses around runs of its operands: `x OR (a OR b) OR y` means `x OR a OR b OR y`.
Only operands that are plainly operands are grouped -- pieces between two operators of
the chain, at one parenthesis level, holding no clause word, comma, CASE arm or (for AND)
a BETWEEN's own AND -- so a grouping the scan is unsure of is left as written.

Every other deep shape (a chain of 500 `+`, 60 nested parentheses, 20 nested subqueries,
thousands of UNIONs or JOINs: 20,000 UNION ALLs overflowed a 64 MiB stack in DataFusion)
is measured from the tokens and refused past MAX_DEPTH (MAX_SUBQUERY_NESTING) with
PostgreSQL's error, 54001 "stack depth limit exceeded", before DataFusion sees it.
"""

from __future__ import annotations

from penstock.errors import QueryError
from penstock.frontend.sql_tokens import Token, tokens

STATEMENT_TOO_COMPLEX = "54001"
MAX_DEPTH = 256  # past it DataFusion's optimiser alone holds the GIL ~70 ms and grows as the square
SUBSTRAIT_DEPTH = 64  # past it DataFusion's Substrait producer takes tens of ms and grows as the cube
SUBSTRAIT_BYTES = 64 << 10  # longer statements run on DataFusion: Substrait and code generation grow with them
SUBSTRAIT_CONSTANTS = 1024  # so do statements with more constants (a kernel passes a few hundred)
MAX_JOINS = 64  # tables joined at one level: DataFusion's optimiser holds the GIL 70 ms at 64, 0.4 s at 128, 5 s at 256
MAX_SUBQUERY_NESTING = 12  # DataFusion's optimiser: 15 nested scalar subqueries 50 ms, 20 1.5 s, 25 ~50 s
GROUP_AT_LEAST = 8  # chains shorter than this are left as written

# Words that end an operand: clause words, CASE arms, set operations. A piece of a chain
# holding one of them is not an operand of that chain alone.
_STOPS = frozenset("""select from where group having order limit offset fetch union intersect except
    case when then else end on using join inner left right full cross natural lateral window over
    partition rows range groups returning into values with as by""".split())
# Words that combine two queries into one plan node (one level of a left-deep plan each)
_SET_OPERATIONS = frozenset(("union", "intersect", "except"))
# Words that end a FROM list (or, at the level of a WITH, its list of queries)
_LIST_ENDS = frozenset("where group having order limit offset fetch window union intersect except".split())
# Binary operators written as words (each adds a level, as `+` does)
_WORD_OPERATORS = frozenset("like ilike similar is in between not collate at".split())


def _significant(t: Token) -> bool:
    return t.kind not in ("ws", "comment")


def balance_chains(sql: str) -> str:
    """The statement with every long AND or OR chain regrouped balanced (same meaning)."""
    low = sql.lower()
    if low.count(" or ") + low.count(" and ") < GROUP_AT_LEAST:
        return sql  # the common case costs one scan of the text
    toks = tokens(sql)
    match = _matching(toks)
    groups: list[tuple[list[int], list[int]]] = []  # each run's operands: first and last tokens
    _find_runs(toks, match, 0, len(toks), groups)
    if not groups:
        return sql
    opens: dict[int, int] = {}
    closes: dict[int, int] = {}
    for starts, ends in groups:
        _mark_balanced(starts, ends, 0, len(starts) - 1, opens, closes)
    return "".join("(" * opens.get(i, 0) + t.text + ")" * closes.get(i, 0) for i, t in enumerate(toks))


def _matching(toks: list[Token]) -> list[int]:
    """For each opening parenthesis its closing one's index (len(toks) when unclosed), for
    the others -1."""
    match = [-1] * len(toks)
    stack: list[int] = []
    for i, t in enumerate(toks):
        if t.text in ("(", "["):
            stack.append(i)
        elif t.text in (")", "]") and stack:
            match[stack.pop()] = i
    for i in stack:
        match[i] = len(toks)
    return match


def _find_runs(toks: list[Token], match: list[int], start: int, stop: int,
               groups: list[tuple[list[int], list[int]]]) -> None:
    """Runs of clean operands of OR (and, within an OR operand, of AND) between start and
    stop, one parenthesis level; then the same inside each parenthesis."""
    for word in ("or", "and"):
        run_starts: list[int] = []
        run_ends: list[int] = []
        for piece in _pieces(toks, match, start, stop, word) + [None]:
            if piece is not None and piece[2]:
                run_starts.append(piece[0])
                run_ends.append(piece[1])
                continue
            if len(run_starts) >= GROUP_AT_LEAST:
                groups.append((run_starts, run_ends))
            run_starts, run_ends = [], []
    i = start
    while i < stop:
        if match[i] >= 0:
            _find_runs(toks, match, i + 1, min(match[i], stop), groups)
            i = match[i]
        i += 1


def _pieces(toks: list[Token], match: list[int], start: int, stop: int,
            word: str) -> list[tuple[int, int, bool]]:
    """The pieces between `word` operators at this level: (first, last significant token,
    clean). Only a piece with a `word` on both sides can be clean; for AND, an OR at this
    level ends the chain, and a BETWEEN's AND is not a separator."""
    out: list[tuple[int, int, bool]] = []
    first = last = -1
    clean, seen_separator, between = True, False, False
    i = start
    while i < stop:
        t = toks[i]
        if match[i] >= 0:  # a parenthesis: part of the piece, whatever is inside
            first = i if first < 0 else first
            last = i = min(match[i], stop - 1)
            i += 1
            continue
        if t.kind == "word" and t.low == word and not (word == "and" and between):
            if seen_separator and first >= 0:
                out.append((first, last, clean))
            first, last, clean, seen_separator = -1, -1, True, True
        elif _significant(t):
            if t.kind == "word" and t.low == "between":
                between = True
            elif t.kind == "word" and t.low == "and" and between:
                between = False
            if t.text in (",", ";", ")", "]") or (t.kind == "word" and (
                    t.low in _STOPS or t.low == "between" or (word == "and" and t.low == "or"))):
                clean = False
            first = i if first < 0 else first
            last = i
        i += 1
    return out


def _mark_balanced(starts: list[int], ends: list[int], lo: int, hi: int,
                   opens: dict[int, int], closes: dict[int, int]) -> None:
    """Parentheses that make operands lo..hi (inclusive) of a run one balanced group."""
    if hi - lo < 1:
        return
    opens[starts[lo]] = opens.get(starts[lo], 0) + 1
    closes[ends[hi]] = closes.get(ends[hi], 0) + 1
    mid = (lo + hi) // 2
    _mark_balanced(starts, ends, lo, mid, opens, closes)
    _mark_balanced(starts, ends, mid + 1, hi, opens, closes)


def expression_depth(sql: str) -> tuple[int, int, int, int]:
    """How deep DataFusion's trees for the statement can be, from its tokens: (expression
    depth, subquery nesting, relation depth, most joins at one level). Each level of
    parentheses adds one to the depth, and within a level each binary or prefix operator
    since the last comma or clause word adds one (AND and OR not counted: balance_chains
    regroups them); a SELECT inside parentheses is one level of subquery nesting.
    DataFusion builds joins, set operations and WITH lists as left-deep plans, one level
    each: every JOIN, UNION, INTERSECT or EXCEPT, and every comma of a FROM or WITH list,
    adds one to the relation depth (its enclosing levels' included); JOINs and FROM commas
    are also counted per level."""
    deepest, nesting, relations, most_joins = 0, 0, 0, 0
    chain, queries, joins, combined = [0], [0], [0], [0]
    listing = [""]  # "from" or "with": this level's commas join relations
    opened = False  # the last significant token was "("
    first = True
    for t in tokens(sql):
        if not _significant(t):
            continue
        word = t.low if t.kind == "word" else ""
        if opened and word in ("select", "with", "values"):
            queries[-1] = queries[-2] + 1 if len(queries) > 1 else 1
            nesting = max(nesting, queries[-1])
        starts, first = opened or first, False  # a query starts here
        opened = t.text in ("(", "[")
        if opened:
            chain.append(0)
            queries.append(queries[-1])
            joins.append(0)
            combined.append(0)
            listing.append("")
        elif t.text in (")", "]"):
            if len(chain) > 1:
                chain.pop()
                queries.pop()
                joins.pop()
                combined.pop()
                listing.pop()
        elif t.text in (",", ";") or word in _STOPS | {"and", "or"}:
            chain[-1] = 0
            if word == "join" or (t.text == "," and listing[-1] == "from"):
                joins[-1] += 1
                most_joins = max(most_joins, joins[-1])
            elif word in _SET_OPERATIONS or (t.text == "," and listing[-1] == "with"):
                combined[-1] += 1
                joins[-1] = 0  # the next query has a FROM clause of its own
            relations = max(relations, sum(joins) + sum(combined))
            if word == "from" or (word == "with" and starts):
                listing[-1] = word
            elif word in _LIST_ENDS or (word == "select" and listing[-1] == "with"):
                listing[-1] = ""
        elif t.kind in ("op", "cast") or word in _WORD_OPERATORS:
            chain[-1] += 1
        else:
            continue
        deepest = max(deepest, len(chain) + sum(chain))
    return deepest, nesting, relations, most_joins


def constants(sql: str) -> int:
    """How many literal numbers and strings the statement holds."""
    return sum(1 for t in tokens(sql) if t.kind in ("number", "string"))


def check_depth(sql: str, limit: int = MAX_DEPTH, subqueries: int = MAX_SUBQUERY_NESTING,
                joined: int = MAX_JOINS) -> int:
    """The statement's expression depth (expression_depth), or 54001 past the limits."""
    depth, nesting, relations, most_joins = expression_depth(sql)
    if most_joins > joined:
        raise QueryError(f"stack depth limit exceeded: {most_joins + 1} tables joined in one FROM clause, past "
                         f"penstock's limit of {joined + 1} (DataFusion's optimiser takes time cubic in it)",
                         STATEMENT_TOO_COMPLEX)
    if relations > limit:
        raise QueryError(f"stack depth limit exceeded: the statement joins or combines relations {relations} deep, "
                         f"past penstock's limit of {limit} (DataFusion's planner recurses through each)",
                         STATEMENT_TOO_COMPLEX)
    if depth > limit:
        raise QueryError(f"stack depth limit exceeded: the statement's expressions nest {depth} deep, "
                         f"past penstock's limit of {limit} (split the expression, or use IN (...) for "
                         "long lists)", STATEMENT_TOO_COMPLEX)
    if nesting > subqueries:
        raise QueryError(f"stack depth limit exceeded: subqueries nest {nesting} deep, past penstock's limit "
                         f"of {subqueries} (DataFusion's optimiser takes time exponential in it)",
                         STATEMENT_TOO_COMPLEX)
    return depth
