"""codegen/sort_gen.py's small sort as an interpreter program: a table of the arrays it moves
and of the keys it compares, run by kernels/interpret_sort.h's rank sort. So the ORDER BY of
a grouped query's small result, shaped by the query's types, compiles nothing either.

The program's extra words: the parts (how many; then per part its bytes a row, source and
destination parameters), then the keys (how many; then per key its storage, descending,
nulls first, values, validity (-1: none), and for text its starts, lengths and bytes).
"""

from __future__ import annotations

from penstock.codegen.interpret.program import SORT, Header, Program
from penstock.codegen.kernel import ParamTable
from penstock.plan.types import DataType, Kind

# how a sorted column's values are loaded (kernels/interpret_steps.h: load_value's storage
# codes; the sink writes booleans as bytes and decimals of up to 18 digits as int64)
KEY_STORAGE = {Kind.INT8: 0, Kind.BOOL: 0, Kind.INT16: 1, Kind.INT32: 2, Kind.DATE: 2, Kind.INT64: 3,
               Kind.DECIMAL: 3, Kind.TIMESTAMP: 3, Kind.FLOAT32: 4, Kind.FLOAT64: 5}
WIDE, TEXT = 8, 9
ROW_BYTES = {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "int32_t": 4, "float": 4, "int64_t": 8, "double": 8}


def sort_program(params: ParamTable, types: list[DataType], parts: list[tuple[str, int]],
                 keys: list[tuple[int, bool, bool]], part_cpp: dict[tuple[str, int], str]) -> bytes:
    """The program of generate_small_sort's kernel with these parameters (named as it names them)."""
    index = {param.name: k for k, param in enumerate(params.params)}
    p = Program(params, kind=SORT)
    p.header.update({Header.N: index["count"], Header.ROW0: index["capacity"]})
    p.extra.append(len(parts))
    for part, j in parts:
        t = types[j]
        if part == "values" and t.is_wide_decimal:
            size = 16
        elif part == "values" and t.kind is Kind.BINARY:
            size = t.width
        else:
            size = ROW_BYTES[part_cpp[(part, j)]]
        p.extra += [size, index[f"s_{part}_{j}"], index[f"d_{part}_{j}"]]
    compared = [(c, ascending, nulls_first) for c, ascending, nulls_first in keys if types[c].kind is not Kind.NULL]
    p.extra.append(len(compared))
    have = set(parts)
    for c, ascending, nulls_first in compared:
        t = types[c]
        validity = index[f"s_validity_{c}"] if ("validity", c) in have else -1
        if t.kind is Kind.STRING:
            p.extra += [TEXT, 0 if ascending else 1, 1 if nulls_first else 0, -1, validity,
                        index[f"s_text_start_{c}"], index[f"s_text_len_{c}"], index[f"bytes_{c}"]]
        else:
            storage = WIDE if t.is_wide_decimal else KEY_STORAGE[t.kind]
            p.extra += [storage, 0 if ascending else 1, 1 if nulls_first else 0, index[f"s_values_{c}"], validity,
                        -1, -1, -1]
    return p.encode()
