"""The planning context: DataFusion binds and optimises, Substrait carries the plan over.

One DataFusion SessionContext per penstock connection holds the registered tables. It
plans every query, and it is also the engine a query falls back to, whole, when penstock's
executor cannot run it.
"""

from __future__ import annotations

import datetime
import decimal
import os
from dataclasses import dataclass, field
from typing import Any, Sequence

import pyarrow as pa
from datafusion import RuntimeEnvBuilder, SessionConfig, SessionContext, SQLOptions
from datafusion import substrait as df_substrait
from substrait import plan_pb2

from penstock.errors import FEATURE_NOT_SUPPORTED, INTERNAL_ERROR, QueryError, Unsupported
from penstock.frontend import binary_functions, pg_functions
from penstock.frontend.rewrites.call_types import listed_argument_types, postgresql_call_types
from penstock.frontend.rewrites.clock import pin_clock
from penstock.frontend.errors.function_errors import planner_over
from penstock.frontend.errors.pg_rules import check_before_planning, check_planned
from penstock.frontend.result_types.real_sums import real_sums
from penstock.frontend.rewrites.frame_exclusion import range_offsets
from penstock.frontend.result_types.date_results import described_schema
from penstock.frontend.result_types.empty_results import TypingContext, is_empty, typed_as_written
from penstock.frontend.fallback.fallback_check import walk
from penstock.frontend.fallback.fallback_repair import for_the_fallback, repaired
from penstock.frontend.constants.literals import check_float_constants
from penstock.frontend.logical_plan_reads import null_aware_flags, refuse_multiset_set_operations
from penstock.frontend.rewrites.join_using import merged_join_columns
from penstock.frontend.rewrites.set_operation_types import coerced_schemas, common_set_types
from penstock.frontend.rewrites.named_casts import casts_as_arrow_cast, refused_for_a_duplicate_name, type_names
from penstock.frontend.statement_text import rewritten_sql
from penstock.frontend.output_names import name_select_list
from penstock.frontend.pg_functions.pg_error import marked as marked_error
from penstock.frontend.param_slots import slot_params
from penstock.frontend.errors.sql_errors import translate_error
from penstock.frontend.substrait.rel import RelTranslator
from penstock.frontend.rewrites.statement_shape import (MAX_DEPTH, SUBSTRAIT_BYTES, SUBSTRAIT_CONSTANTS, SUBSTRAIT_DEPTH,
                                               check_depth, constants)
from penstock.frontend.table_access import scanned_tables
from penstock.frontend.constants.unknown_literals import planned_types, resolve_unknown_literals
from penstock.plan import types as T
from penstock.plan.rel import Field, Rel


@dataclass
class PlannedQuery:
    sql: str
    names: list[str]
    schema: pa.Schema  # DataFusion's output schema, with PostgreSQL's types where it differs (date_results.py)
    ir: Rel | None  # penstock's IR, or None when it could not be translated
    unsupported: str | None  # why not
    logical_plan: str
    hazard: str | None = None  # why DataFusion's answer would not be PostgreSQL's (fallback_check.py)
    attempt: str = ""  # the text DataFusion planned (after penstock's rewrites); the fallback runs it
    values: Any = None  # its parameter values, as planned (bytea ones by markers: param_slots.py)
    substrait: Any = None  # the plan's Substrait form, when DataFusion could produce it
    markers: dict[bytes, int] = field(default_factory=dict)  # bytea parameters bound at run time
    tables: frozenset[str] = frozenset()  # the registered tables it reads (frontend/table_access.py)
    repaired: Any = None  # its Substrait plan with the hazards written out, which the fallback runs


class Frontend:
    def __init__(self, target_partitions: int | None = None):
        settings = {"datafusion.sql_parser.dialect": "PostgreSQL",
                    "datafusion.sql_parser.recursion_limit": str(MAX_DEPTH),
                    "datafusion.execution.time_zone": "+00:00"}
        config = SessionConfig()
        for key, value in settings.items():
            config = config.set(key, value)
        if target_partitions:
            config = config.with_target_partitions(target_partitions)
        self.ctx = SessionContext(config)
        # DataFusion folds constant expressions with wrapping arithmetic (2147483647::int + 1
        # becomes -2147483648); without this rule the kernels evaluate them, with checks.
        self.ctx.remove_optimizer_rule("simplify_expressions")
        # avg(DISTINCT bigint) is coerced to avg(DISTINCT CAST(x AS double)), and this rule
        # would make the cast a grouping key: distinct big integers that round to one double
        # merge. penstock's aggregates keep DISTINCT sets of their own (exact values).
        self.ctx.remove_optimizer_rule("single_distinct_aggregation_to_group_by")
        # It refused `SELECT x, CAST(x AS bigint) ... GROUP BY x, CAST(x AS bigint)` (it named
        # both columns alike: "Projections require unique expression names"), valid SQL that
        # PostgreSQL and DuckDB answer; without it a constant grouping key is grouped on.
        self.ctx.remove_optimizer_rule("eliminate_group_by_constant")
        # It hoists a repeated expression into a projection below, constants too: two
        # round(x, 2) became round(x, __common_expr_1), a precision penstock cannot compile
        # (integer constants are CAST(2 AS INTEGER), frontend/constants/integer_literals.py). The
        # kernels fuse each pipeline's expressions; a repeated one costs them nothing.
        self.ctx.remove_optimizer_rule("common_sub_expression_eliminate")
        # What a query penstock's kernels cannot run is run by: DataFusion with every rule
        # (without simplify_expressions it cannot execute COALESCE); Arrow IPC files as they
        # are (its reader cannot cast their dictionaries away to the plain schema).
        self.config = config
        self.fallback_ctx = SessionContext(config)
        self.typing = TypingContext(settings)  # the plan as written, for an empty result's types
        for ctx in (self.ctx, self.fallback_ctx, self.typing.ctx):
            register_functions(ctx)
        self.fields: dict[str, list[Field]] = {}
        self.version = 0  # bumps on every (de)registration; part of the plan cache key
        self._cast_names: Any = None  # SQL type -> arrow_cast's name for it (cast_type_names)

    def limit_fallback_memory(self, pool: int, spill_dir: str) -> None:
        """DataFusion's engine within `pool` bytes, spilling into `spill_dir` past it (its
        hash joins fail with 53200 instead); before any table is registered (a server's
        memory admission, server/query_runner.py)."""
        if self.fields:
            raise RuntimeError("limit_fallback_memory before registering tables")
        os.makedirs(spill_dir, exist_ok=True)
        runtime = RuntimeEnvBuilder().with_fair_spill_pool(pool).with_disk_manager_specified(spill_dir)
        self.fallback_ctx = SessionContext(self.config, runtime)
        register_functions(self.fallback_ctx)

    # -- catalog ----------------------------------------------------------------------------
    def register_files(self, name: str, fmt: str, location: str, schema: pa.Schema,
                       extension: str | None = None, csv: Any = None) -> None:
        """Table `name` (exact: already folded) over files; `csv`: io.csv.CsvOptions."""
        self.deregister(name)
        plain = plain_schema(schema)
        # DataFusion is given the file's schema only where it must be: dictionary columns
        # (Substrait has no dictionary type) and CSV (so both engines read the same types).
        given = plain if (fmt == "csv" or not plain.equals(schema)) else None
        for ctx, schema_given in ((self.ctx, given), (self.fallback_ctx, None if fmt == "arrow" else given)):
            if fmt == "parquet":
                ctx.register_parquet(quoted(name), location, file_extension=extension or ".parquet", schema=schema_given)
            elif fmt == "arrow":
                ctx.register_arrow(quoted(name), location, schema=schema_given, file_extension=extension or ".arrow")
            elif fmt == "csv":
                ctx.register_csv(quoted(name), location, schema=schema_given, file_extension=extension or ".csv",
                                 has_header=csv.header if csv is not None else True,
                                 delimiter=csv.delimiter if csv is not None else ",")
            else:
                raise ValueError(fmt)
        self._remember(name, plain)

    def register_table(self, name: str, table: pa.Table) -> None:
        self.deregister(name)
        plain = plain_schema(table.schema)
        if not plain.equals(table.schema):
            table = table.cast(plain)  # DataFusion's copy only: penstock reads the original
        batches = table.to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]
        self.ctx.register_record_batches(quoted(name), [batches])
        self.fallback_ctx.register_record_batches(quoted(name), [batches])
        self._remember(name, plain)

    def deregister(self, name: str) -> None:
        if name in self.fields:
            self.ctx.deregister_table(quoted(name))
            self.fallback_ctx.deregister_table(quoted(name))
            self.typing.deregister(quoted(name))
            del self.fields[name]
            self.version += 1

    def _remember(self, name: str, schema: pa.Schema) -> None:
        self.typing.register(quoted(name), schema)
        fields = []
        for f in schema:
            try:
                fields.append(Field(f.name, T.from_arrow(f.type, f"{name}.{f.name}"), f.nullable))
            except Unsupported:
                fields.append(Field(f.name, None))  # type: ignore[arg-type]  # only its use fails
        self.fields[name] = fields
        self.version += 1

    # -- planning ---------------------------------------------------------------------------
    def plan(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None,
             at: datetime.datetime | None = None) -> PlannedQuery:
        """Plan `sql`; `at` is the statement's instant for now() and its kin (default: now)."""
        depth = check_depth(sql)  # 54001 before DataFusion recurses through a deep tree
        check_float_constants(sql)  # 22003 for '10e400'::float8 whichever engine runs it
        check_before_planning(sql)  # what PostgreSQL rejects and DataFusion answers (pg_rules.py)
        slotted = slot_params(params)
        values = _param_values(slotted.planning)
        instant = at or datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        dataframe = lambda q: _sql(self.ctx, rewritten_sql(q), values)  # noqa: E731
        schemas, listed = coerced_schemas(dataframe, self.ctx), listed_argument_types(dataframe)  # (both texts')
        typed = lambda s: postgresql_call_types(common_set_types(  # noqa: E731 - PostgreSQL's types of set
            resolve_unknown_literals(s, planned_types(dataframe)), schemas), listed)  # operations, NULLIF, lead/lag
        resolved = typed(sql)
        text = rewritten_sql(merged_join_columns(pin_clock(resolved, instant) or resolved, self.columns_of))
        named = name_select_list(sql)  # names from the user's text (current_date is "current_date")
        if named is not None:
            named.sql = typed(named.sql)
            named.sql = rewritten_sql(merged_join_columns(pin_clock(named.sql, instant) or named.sql, self.columns_of))
        tries = [named.sql] if named is not None else []
        tries += [text] if text not in tries else []
        failure: Exception | None = None
        user_named = {named.sql} if named is not None else set()
        retried: set[str] = set()
        for attempt in tries:  # (the list grows: a statement refused over a cast's name is tried again)
            try:
                df = _sql(self.ctx, attempt, values)
                logical = df.optimized_logical_plan()
                schema = df.schema()
                break
            except Exception as e:  # DataFusion raises plain Exception subclasses
                failure = e if attempt not in retried else failure  # the statement's own error is the one to say
                again = casts_as_arrow_cast(attempt, self.cast_type_names) if refused_for_a_duplicate_name(e) else None
                if again is not None and again not in tries:
                    tries.append(again)
                    retried.add(again)
                    if attempt in user_named:
                        user_named.add(again)
        else:  # the error as the statement the user wrote gives it (positions in their text)
            if failure is not None and marked_error(str(failure)) is not None:  # a UDF's own PostgreSQL error
                raise translate_error(text, failure) from None
            try:
                original = _sql(self.ctx, sql, values)
                original.optimized_logical_plan()
            except Exception as e:
                raise translate_error(sql, e, planner_over(self.ctx, QUERIES_ONLY)) from None
            assert failure is not None
            raise translate_error(text, failure, planner_over(self.ctx, QUERIES_ONLY)) from None
        refuse_multiset_set_operations(sql, df.logical_plan())
        check_planned(sql, planner_over(self.ctx, QUERIES_ONLY))
        tables = scanned_tables(df.logical_plan().display_indent(), self.fields)
        names = list(schema.names)
        if named is not None and attempt in user_named:
            names = named.names(names)
        substrait: plan_pb2.Plan | None = None
        try:
            if depth > SUBSTRAIT_DEPTH:
                raise Unsupported(f"its expressions nest {depth} deep, past the {SUBSTRAIT_DEPTH} penstock translates "
                                  "(DataFusion's Substrait producer takes time cubic in the depth)")
            if len(sql) > SUBSTRAIT_BYTES or constants(sql) > SUBSTRAIT_CONSTANTS:
                raise Unsupported(f"the statement is {len(sql):,} characters long with {constants(sql):,} constants, "
                                  f"past the {SUBSTRAIT_BYTES:,} characters or {SUBSTRAIT_CONSTANTS:,} constants penstock "
                                  "compiles (a kernel passes a few hundred constants)")
            substrait = self.substrait(logical)
            ir = self.translate(logical, substrait, slotted.markers)
            if is_empty(ir):  # LIMIT 0, WHERE false: the types of the plan as written
                ir = typed_as_written(ir, lambda: _sql(self.typing.ctx, attempt, values).optimized_logical_plan(), self)
            reason = None
        except Unsupported as e:
            ir, reason = None, str(e)
        except Exception as e:  # a plan shape the translator does not know: say so, loudly
            ir, reason = None, f"penstock could not translate the plan ({type(e).__name__}: {e})"
        # a plan DataFusion will run: what would it answer unlike PostgreSQL?
        hazard, fixed = for_the_fallback(substrait, bool(slotted.markers), range_offsets(attempt)) \
            if ir is None and substrait is not None else (None, None)
        if ir is None and substrait is not None and hazard is None and not slotted.markers:  # sum(real) is real
            fixed = real_sums(fixed if fixed is not None else substrait) or fixed
        if ir is not None:  # PostgreSQL's types for date - date and date + interval, as the rows will have them
            schema = described_schema(schema, [f.type for f in ir.fields], None, self._schema_of)
        elif fixed is not None and walk(substrait).retyped:
            schema = described_schema(schema, None, fixed, self._schema_of)
        return PlannedQuery(sql, names, schema, ir, reason, logical.display_indent(), hazard,
                            attempt, values, substrait, slotted.markers, tables, fixed)

    def columns_of(self, query: str) -> list[str] | None:
        """The column names of a query (`SELECT * FROM <one FROM item>`), or None where
        DataFusion cannot plan it on its own (frontend/rewrites/join_using.py)."""
        try:
            return list(_sql(self.ctx, rewritten_sql(query), None).schema().names)
        except Exception:  # noqa: BLE001 - a correlated or otherwise dependent item: left as written
            return None

    def cast_type_names(self, sql_type: str) -> str | None:
        """arrow_cast's name for a SQL type (frontend/rewrites/named_casts.py), as DataFusion plans it."""
        if self._cast_names is None:
            self._cast_names = type_names(lambda t: self._planned_type(f"CAST(NULL AS {t})"),
                                          lambda name: self._planned_type(f"arrow_cast(NULL, '{name}')"))
        return self._cast_names(sql_type)

    def _planned_type(self, expression: str) -> pa.DataType | None:
        try:
            return _sql(self.ctx, f"SELECT {expression} AS x", None).schema().field("x").type
        except Exception:  # noqa: BLE001 - a type DataFusion does not take: the cast stays as written
            return None

    def fallback_dataframe(self, planned: PlannedQuery, params: Sequence[Any] | dict[str, Any] | None = None) -> Any:
        """The query as the fallback engine runs it (DataFusion with all its rules), with the
        call's own parameter values (the plan may be kept from a call with other bytes)."""
        if params is None and planned.markers:  # its values are markers: never run them
            raise QueryError("internal error: a plan kept for bytea parameters ran without them", INTERNAL_ERROR)
        values = _param_values(params) if params is not None else planned.values
        if planned.repaired is None:
            return _sql(self.fallback_ctx, planned.attempt, values)
        plan = planned.repaired
        if values != planned.values:  # the call's own parameter values, planned and repaired again
            plan, _ = repaired(self.substrait(_sql(self.ctx, planned.attempt, values).optimized_logical_plan()))
        try:
            return self._consumed(plan)
        except Exception as e:  # noqa: BLE001 - a plan DataFusion writes but cannot read back
            raise QueryError("DataFusion, which would run this query, could not take it back with PostgreSQL's "
                             f"arithmetic written in ({_first_line(e)})", FEATURE_NOT_SUPPORTED) from None

    def _consumed(self, plan: plan_pb2.Plan) -> Any:
        """A repaired Substrait plan read back into the fallback engine, as a DataFrame."""
        logical = df_substrait.Consumer.from_substrait_plan(
            self.fallback_ctx, df_substrait.Serde.deserialize_bytes(plan.SerializeToString()))
        return self.fallback_ctx.create_dataframe_from_logical_plan(logical)

    def _schema_of(self, plan: plan_pb2.Plan) -> pa.Schema:
        """The schema DataFusion answers a repaired plan with: a statement's description."""
        return self._consumed(plan).schema()

    def substrait(self, logical: Any) -> plan_pb2.Plan:
        try:
            plan_bytes = df_substrait.Producer.to_substrait_plan(logical, self.ctx).encode()
        except Exception as e:
            raise Unsupported(f"DataFusion could not express the plan in Substrait: {e}") from None
        plan = plan_pb2.Plan()
        plan.ParseFromString(plan_bytes)
        return plan

    def translate(self, logical: Any, plan: plan_pb2.Plan, markers: dict[bytes, int] | None = None) -> Rel:
        translator = RelTranslator(plan, self.table_fields, null_aware_flags(logical), markers or {})
        return translator.translate_root(plan)

    def table_fields(self, name: str) -> list[Field]:
        if name not in self.fields:
            raise Unsupported(f"table {name} is not one penstock registered")
        return self.fields[name]


def register_functions(ctx: SessionContext) -> None:
    """penstock's functions in one of DataFusion's contexts: the bytea functions of
    similarity search, and PostgreSQL's where DataFusion's own answer otherwise."""
    binary_functions.register(ctx)
    pg_functions.register(ctx)


def fold_identifier(name: str) -> str:
    """A table name as PostgreSQL folds an identifier: unquoted to lower case, a quoted one
    ("Sales") as written, without its quotes."""
    if len(name) >= 2 and name.startswith('"') and name.endswith('"'):
        return name[1:-1].replace('""', '"')
    return name.lower()


def quoted(name: str) -> str:
    """The identifier DataFusion parses back to exactly `name`."""
    return '"' + name.replace('"', '""') + '"'


# Only queries reach DataFusion: its DDL (CREATE EXTERNAL TABLE, DROP), DML (COPY TO a file,
# INSERT) and statements (SET of its options) would run as the process's user, at planning
# time, for whoever wrote the text -- EXPLAIN of them included. An allow-list: whatever is
# not a query is refused by DataFusion's own plan check before anything runs.
QUERIES_ONLY = SQLOptions().with_allow_ddl(False).with_allow_dml(False).with_allow_statements(False)


def _sql(ctx: SessionContext, text: str, values: Any) -> Any:
    """DataFusion's DataFrame for `text` (a query: QUERIES_ONLY), with its parameter values
    if it has any."""
    return ctx.sql(text, QUERIES_ONLY, param_values=values) if values else ctx.sql(text, QUERIES_ONLY)


def _first_line(error: Exception) -> str:
    return str(error).strip().split("\n")[0][:300]


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """The schema with dictionary-encoded columns as their value type."""
    return pa.schema([pa.field(f.name, f.type.value_type, f.nullable) if pa.types.is_dictionary(f.type) else f
                      for f in schema])


def _param_values(params: Sequence[Any] | dict[str, Any] | None) -> dict[str, Any] | None:
    """$1, $2 ... (a sequence) or $name (a dict) as DataFusion parameter values."""
    if params is None:
        return None
    items = params.items() if isinstance(params, dict) else ((str(i + 1), v) for i, v in enumerate(params))
    return {k: _scalar(v) for k, v in items}


def _scalar(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        exponent = value.as_tuple().exponent
        scale = max(-exponent, 0) if isinstance(exponent, int) else 0
        digits = max(len(value.as_tuple().digits), scale + 1)
        return pa.scalar(value, type=pa.decimal128(max(digits, 1), scale))
    if isinstance(value, datetime.datetime):  # an aware one is a timestamptz, as psycopg sends it
        return pa.scalar(value, type=pa.timestamp("us", tz="UTC" if value.tzinfo is not None else None))
    if isinstance(value, datetime.date):
        return pa.scalar(value, type=pa.date32())
    return value
