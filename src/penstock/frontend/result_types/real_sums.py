"""sum(real) is real on the DataFusion engine too (issue 54, item 6).

PostgreSQL's sum(float4) is float4 (avg(float4) is float8). DataFusion coerces the argument
to double and answers double; penstock's translator keeps the double sum and rounds it to
real (frontend/substrait/rel.py). For a query DataFusion runs, each aggregate with such a
sum is wrapped, in the plan's Substrait form, in a projection that casts the sum to real,
and the fallback runs that plan (read back into its context, as fallback_repair.py's are).

Both engines sum in double and round once; PostgreSQL adds in float4 (float4pl), so a sum
of many values may differ from PostgreSQL's in its last bits (it is the more exact one).

The projection over a relation (project_over, cast_column, column) serves fallback_repair.py too:
avg()'s sum divided by its count above an aggregate, a numeric beside a double in a UNION.
"""

from __future__ import annotations

from substrait import algebra_pb2, plan_pb2, type_pb2

from penstock.frontend.fallback.fallback_check import _Walker


def real_sums(plan: plan_pb2.Plan) -> plan_pb2.Plan | None:
    """A copy of `plan` with each sum(real) cast back to real; None where it has none."""
    functions = {e.extension_function.function_anchor: e.extension_function.name
                 for e in plan.extensions if e.HasField("extension_function")}
    if "sum" not in functions.values():
        return None
    copy = plan_pb2.Plan()
    copy.CopyFrom(plan)
    changed = False
    for relation in copy.relations:
        changed |= _visit(relation.root.input if relation.HasField("root") else relation.rel, functions)
    return copy if changed else None


def _visit(rel: algebra_pb2.Rel, functions: dict[int, str]) -> bool:
    """Wrap the aggregates at and under `rel`; whether any was."""
    changed = False
    kind = rel.WhichOneof("rel_type")
    if kind is None:
        return False
    body = getattr(rel, kind)
    for field, value in body.ListFields():  # every relation below, whatever its kind
        if field.message_type is algebra_pb2.Rel.DESCRIPTOR:
            for child in ([value] if isinstance(value, algebra_pb2.Rel) else value):
                changed |= _visit(child, functions)
    if kind == "aggregate":
        changed |= _wrap_aggregate(rel, functions)
    return changed


def _wrap_aggregate(rel: algebra_pb2.Rel, functions: dict[int, str]) -> bool:
    agg = rel.aggregate
    if len(agg.groupings) > 1 or agg.common.HasField("emit"):
        return False  # grouping sets (a grouping id column) or a remapped output: left as DataFusion's
    inputs = _Walker(functions).rel(agg.input)
    keys = len(agg.groupings[0].expression_references) if agg.groupings else 0  # the key columns come first
    real: list[int] = []
    for j, m in enumerate(agg.measures):
        f = m.measure
        if functions.get(f.function_reference) != "sum" or len(f.arguments) != 1:
            continue
        value = f.arguments[0].value
        if value.WhichOneof("rex_type") != "cast" or value.cast.type.WhichOneof("kind") != "fp64":
            continue
        source = _Walker(functions).expr(value.cast.input, inputs)
        if source is not None and source.WhichOneof("kind") == "fp32":
            real.append(keys + j)
    if not real:
        return False
    width = keys + len(agg.measures)
    project_over(rel, width, width, {column: cast_column(column, "fp32") for column in real})
    return True


def project_over(rel: algebra_pb2.Rel, inputs: int, width: int, columns: dict[int, algebra_pb2.Expression]) -> None:
    """`rel` (of `inputs` columns) replaced by a projection of its first `width` columns in
    which columns[i], an expression over rel's columns, stands in place of column i."""
    project = algebra_pb2.Rel()
    project.project.input.CopyFrom(rel)
    mapping = list(range(width))
    for column, e in columns.items():
        project.project.expressions.add().CopyFrom(e)
        mapping[column] = inputs + len(project.project.expressions) - 1
    project.project.common.emit.output_mapping.extend(mapping)
    rel.CopyFrom(project)


def cast_column(i: int, kind: str) -> algebra_pb2.Expression:
    """CAST(column i AS kind), `kind` a Substrait type without parameters (fp32, fp64)."""
    e = algebra_pb2.Expression()
    getattr(e.cast.type, kind).nullability = type_pb2.Type.NULLABILITY_NULLABLE
    e.cast.input.CopyFrom(column(i))
    e.cast.failure_behavior = algebra_pb2.Expression.Cast.FAILURE_BEHAVIOR_THROW_EXCEPTION
    return e


def column(i: int) -> algebra_pb2.Expression:
    """A reference to column `i` of a relation's input."""
    e = algebra_pb2.Expression()
    e.selection.direct_reference.struct_field.field = i
    e.selection.root_reference.SetInParent()
    return e
