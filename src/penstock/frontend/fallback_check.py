"""What DataFusion would answer differently from PostgreSQL, in a plan penstock hands to it.

A query penstock's kernels cannot run falls back to DataFusion, whole. Where DataFusion's
semantics differ from PostgreSQL's the fallback must not quietly give another answer. The
difference found here: a cast of a float or numeric value to an integer type, which
DataFusion truncates (CAST(2.7 AS int) is 2) and PostgreSQL rounds (3). Such a plan is
refused with the way out (round() inside the cast, which both engines agree on).

The check walks the Substrait form of DataFusion's plan, deriving each relation's column
types (read schemas, projections, aggregates, joins) so that a cast's input type is known
also when it is a column; where a type cannot be derived nothing is reported.
"""

from __future__ import annotations

from typing import Any

from substrait import algebra_pb2, plan_pb2

_INTEGERS = ("i8", "i16", "i32", "i64")
_INEXACT = ("fp32", "fp64", "decimal")
_ROUNDING = ("round", "floor", "ceil", "ceiling", "trunc")  # integral already: a cast keeps it

Type = Any  # substrait type_pb2.Type, or None where unknown


def fallback_hazard(plan: plan_pb2.Plan) -> str | None:
    """Why DataFusion's answer to this plan would not be PostgreSQL's, or None."""
    functions = {e.extension_function.function_anchor: e.extension_function.name
                 for e in plan.extensions if e.HasField("extension_function")}
    walker = _Walker(functions)
    for rel in plan.relations:
        root = rel.root.input if rel.HasField("root") else rel.rel
        walker.rel(root)
        if walker.hazard:
            return walker.hazard
    return None


class _Walker:
    def __init__(self, functions: dict[int, str]):
        self.functions = functions
        self.hazard: str | None = None

    def rel(self, rel: algebra_pb2.Rel) -> list[Type]:
        kind = rel.WhichOneof("rel_type")
        r = getattr(rel, kind) if kind else None
        if kind == "read":
            names = list(r.base_schema.struct.types)
            types: list[Type] = names
            if r.HasField("projection"):
                types = [names[i.field] for i in r.projection.select.struct_items]
            if r.HasField("filter"):
                self.expr(r.filter, types)
        elif kind in ("filter", "sort", "fetch"):
            types = self.rel(r.input)
            if kind == "filter":
                self.expr(r.condition, types)
            if kind == "sort":
                for s in r.sorts:
                    self.expr(s.expr, types)
        elif kind == "project":
            inputs = self.rel(r.input)
            types = inputs + [self.expr(e, inputs) for e in r.expressions]
        elif kind == "aggregate":
            inputs = self.rel(r.input)
            shared = [self.expr(e, inputs) for e in r.grouping_expressions]
            keys = [shared[i] for g in r.groupings for i in g.expression_references if i < len(shared)]
            measures = []
            for m in r.measures:
                for a in m.measure.arguments:
                    self.expr(a.value, inputs)
                measures.append(m.measure.output_type)
            types = keys + measures if len(r.groupings) <= 1 else []  # grouping sets: layout not derived
        elif kind in ("join", "cross"):
            left, right = self.rel(r.left), self.rel(r.right)
            semi = kind == "join" and r.type in (algebra_pb2.JoinRel.JOIN_TYPE_LEFT_SEMI,
                                                   algebra_pb2.JoinRel.JOIN_TYPE_LEFT_ANTI)
            types = left if semi else left + right
            if kind == "join" and r.HasField("expression"):
                self.expr(r.expression, left + right)
        elif kind == "set":
            outputs = [self.rel(i) for i in r.inputs]
            types = outputs[0] if outputs else []
        else:  # a relation this check does not know: its columns' types are unknown
            for field in (r.ListFields() if r is not None else []):
                if isinstance(field[1], algebra_pb2.Rel):
                    self.rel(field[1])
            return []
        common = getattr(r, "common", None)
        if common is not None and common.HasField("emit"):
            types = [types[i] if i < len(types) else None for i in common.emit.output_mapping]
        return types

    def expr(self, e: algebra_pb2.Expression, inputs: list[Type]) -> Type:
        kind = e.WhichOneof("rex_type")
        if kind == "selection":
            ref = e.selection
            if ref.HasField("direct_reference") and ref.HasField("root_reference"):
                i = ref.direct_reference.struct_field.field
                return inputs[i] if i < len(inputs) else None
            return None
        if kind == "literal":
            return _literal_type(e.literal)
        if kind == "scalar_function":
            for a in e.scalar_function.arguments:
                self.expr(a.value, inputs)
            return e.scalar_function.output_type
        if kind == "window_function":
            for a in e.window_function.arguments:
                self.expr(a.value, inputs)
            return e.window_function.output_type
        if kind == "cast":
            source = self.expr(e.cast.input, inputs)
            target = e.cast.type.WhichOneof("kind")
            inexact = source is not None and source.WhichOneof("kind") in _INEXACT and not (
                source.WhichOneof("kind") == "decimal" and source.decimal.scale == 0)
            if target in _INTEGERS and inexact and not self._integral(e.cast.input) and self.hazard is None:
                what = "numeric" if source.WhichOneof("kind") == "decimal" else "double precision"
                self.hazard = (f"DataFusion, which would run it, casts {what} to an integer type by truncating "
                               "where PostgreSQL rounds (write round() inside the cast)")
            return e.cast.type
        if kind == "if_then":
            for clause in e.if_then.ifs:
                self.expr(getattr(clause, "if"), inputs)
                self.expr(clause.then, inputs)
            return self.expr(getattr(e.if_then, "else"), inputs) if e.if_then.HasField("else") else None
        if kind == "subquery":
            for field in e.subquery.ListFields():
                for inner in field[1].ListFields():
                    if isinstance(inner[1], algebra_pb2.Rel):
                        self.rel(inner[1])
            return None
        return None

    def _integral(self, e: algebra_pb2.Expression) -> bool:
        return e.WhichOneof("rex_type") == "scalar_function" and \
            self.functions.get(e.scalar_function.function_reference, "").split(":")[0] in _ROUNDING


def _literal_type(lit: algebra_pb2.Expression.Literal) -> Type:
    from substrait import type_pb2

    kind = lit.WhichOneof("literal_type")
    t = type_pb2.Type()
    if kind in ("fp32", "fp64", "i8", "i16", "i32", "i64"):
        getattr(t, kind).SetInParent()
        return t
    if kind == "decimal":
        t.decimal.precision, t.decimal.scale = lit.decimal.precision, lit.decimal.scale
        return t
    return None
