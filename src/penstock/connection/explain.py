"""EXPLAIN and EXPLAIN ANALYZE text: the pipelines, their operators, and what each did."""

from __future__ import annotations

import re
from typing import Any

from penstock.plan.physical import (AggregateSink, BufferSource, BuildHashTable, EvalSubquery,
                                    FilterOp, LimitBuffer, MaterializeSink, PhysicalPlan, Pipeline,
                                    ProbeOp, RunPipeline, SortBuffer, TableSource,
                                    UnmatchedBuildSource, ValuesSource)


_EXPLAIN = re.compile(r"(?is)^explain\s+(\((?P<opts>[^)]*)\)\s*)?"
                      r"(?P<flags>(?:(?:analyze|analyse|verbose)\s+)*)(?P<q>.*)$")
_LEADING_COMMENTS = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.S)


def explain_request(sql: str) -> tuple[str, bool] | None:
    """(the query, whether to ANALYZE) when `sql` is an EXPLAIN statement, PostgreSQL's
    spellings: EXPLAIN [ANALYZE] [VERBOSE] q, EXPLAIN (ANALYZE [true|on|1], ...) q."""
    body = _LEADING_COMMENTS.sub("", sql, count=1).strip()
    m = _EXPLAIN.match(body)
    if m is None:
        return None
    opts = (m.group("opts") or "") + " " + (m.group("flags") or "")
    return m.group("q"), bool(re.search(r"(?i)\banaly[sz]e\b(?!\s+(?:false|off|0))", opts))


def explain_text(device: str, engine: str, planned: Any, physical: PhysicalPlan | None,
                 compiled: Any, reason: str | None, result: Any = None) -> str:
    if physical is None:
        lines = [f"engine: datafusion (fallback: {reason})", "DataFusion logical plan:"]
        lines += ["  " + line for line in planned.logical_plan.splitlines()]
        if result is not None:
            lines.append(f"rows: {result.num_rows}  time: {result.seconds * 1000:.2f} ms")
        return "\n".join(lines)
    metrics = result.metrics if result is not None else None
    lines = [f"engine: {engine}  device: {device}"]
    if metrics is not None:
        kernels = ""
        if metrics.compile_seconds and compiled is not None and compiled.kernels_total:
            quick = (f", {compiled.kernels_quick} as quick builds whose optimised builds follow in the background"
                     if compiled.kernels_quick else "")
            interpreted = (f", {compiled.kernels_interpreted} run by the plan interpreter while they compile"
                           if compiled.kernels_interpreted else "")
            kernels = (f" ({compiled.kernels_compiled} of {compiled.kernels_total} kernels compiled, "
                       f"{compiled.compile_workers} at a time{quick}{interpreted}; the rest from the kernel caches)")
        lines.append(f"plan: {metrics.plan_seconds * 1000:.2f} ms (cache {'hit' if metrics.plan_cache_hit else 'miss'})"
                     f"  compile: {metrics.compile_seconds * 1000:.1f} ms{kernels}"
                     f"  execute: {metrics.execute_seconds * 1000:.2f} ms  rows: {result.num_rows}")
        reruns = sum(p.reruns for p in metrics.pipelines.values())
        if not metrics.plan_cache_hit:  # where a first run's time went, phase by phase
            split = ""
            if compiled is not None and metrics.compile_seconds:
                split = (f" (kernel sources {compiled.generate_seconds * 1000:.1f} ms, "
                         f"{compiled.programs_translated} interpreter programs {compiled.translate_seconds * 1000:.1f} ms)")
            lines.append(f"first run: plan {metrics.plan_seconds * 1000:.1f} ms, compile "
                         f"{metrics.compile_seconds * 1000:.1f} ms{split}, execute {metrics.execute_seconds * 1000:.1f} ms"
                         f" ({reruns} batch{'es' if reruns != 1 else ''} run again to size tables and outputs)")
        lines += [f"memory: {note}" for note in metrics.memory_notes]
        if metrics.device_run:
            lines.append(f"device work: {metrics.device_run}; waited {metrics.wait_seconds * 1000:.2f} ms "
                         "for it and its read-back")
    steps = iter(metrics.steps) if metrics is not None else iter(())
    for step in physical.steps:
        if isinstance(step, RunPipeline):
            pm = metrics.pipelines.get(step.pipeline.id) if metrics is not None else None
            lines += pipeline_lines(step.pipeline, pm, device, compiled)
        else:
            lines.append(step_line(step, next(steps, None) if not isinstance(step, EvalSubquery) else None))
    return "\n".join(lines)


def pipeline_lines(p: Pipeline, pm: Any, device: str, compiled: Any) -> list[str]:
    head = f"Pipeline {p.id} ({p.label}) on {device}: one fused kernel"
    if compiled is not None and p.id in compiled.pipelines:
        kc = compiled.pipelines[p.id][1]
        head += " (kernel cached)" if kc.cached else f" (compiled in {kc.compile_seconds * 1000:.0f} ms)"
    out = [head]
    counters = pm.counters if pm is not None and pm.counters else None
    if pm is not None:
        skipped = f" ({pm.batches_skipped} skipped by statistics)" if pm.batches_skipped else ""
        out.append(f"    batches: {pm.batches}{skipped}  bytes read: {pm.bytes_read:,}  read: {pm.read_seconds * 1000:.2f} ms"
                   f"  kernels: {pm.kernel_seconds * 1000:.2f} ms" + (f"  reruns: {pm.reruns}" if pm.reruns else ""))
        if pm.read_path and pm.bytes_read:
            out.append(f"    read path: {pm.read_path}")
        if pm.scattered is not None:
            ways, rows = pm.scattered
            out.append(f"    partitioned: {pm.partitions} passes: the input read once, its {rows:,} rows scattered "
                       f"into {ways} partitions by the keys' hashes, then each partition aggregated (the hash "
                       f"table did not fit its share of memory)")
        elif pm.partitions:
            out.append(f"    partitioned: {pm.partitions} passes over the input, one per partition of the keys' hashes "
                       f"(the hash table did not fit its share of memory)")
        if pm.join_scattered:
            out.append(f"    grace join: the input read once and scattered {pm.join_partitions} ways by its probe keys' "
                       f"hash, then probed partition by partition (the join's build rows did not fit memory)")
        elif pm.join_partitions:
            out.append(f"    partitioned join: {pm.join_partitions} passes over the input, one per partition of "
                       f"the join's build keys (its hash table did not fit its share of memory)")
        if pm.cut_before_join is not None:
            out.append(f"    run as two pipelines, cut before the probe of join #{pm.cut_before_join}: "
                       f"{pm.cut_reason or 'two joins too large for memory'} (the rows before the cut written to a "
                       f"buffer the rest reads)")
        if pm.shared_table is not None:
            out.append(f"    not run: the same rows as join #{pm.shared_table[0]}'s build, whose table join "
                       f"#{pm.shared_table[1]} uses")
        if pm.streamed_from is not None:
            out.append(f"    streamed: read pipeline {pm.streamed_from}'s groups batch by batch as its aggregation "
                       f"made them (none held in a buffer)")
        if pm.spilled_host_bytes or pm.spilled_disk_bytes or pm.kept_device_bytes:
            kept = f"{pm.kept_device_bytes:,} bytes of partitions kept in device memory, " if pm.kept_device_bytes else ""
            out.append(f"    spilled: {kept}{pm.spilled_host_bytes:,} bytes to host memory, "
                       f"{pm.spilled_disk_bytes:,} bytes to spill files")
        if pm.top_k_rows is not None:
            reached, kept = pm.top_k_rows
            by = f" ({pm.top_k_words_by})" if pm.top_k_words_by else ""
            out.append(f"    top-k: one pass recorded the sort key of {reached:,} rows{by}, a second wrote the "
                       f"{kept:,} within the bound of the first {p.sink.top_k.k:,} (no full sort)")
        if pm.cache_hits:
            encoded = f"; {pm.cache_dictionaries} text dictionary-encoded" if pm.cache_dictionaries else ""
            out.append(f"    column cache: hit ({pm.cache_hits} columns, {pm.cache_bytes:,} bytes in device memory{encoded})")
    ops = [source_text(p.source)] + [op_text(op) for op in p.ops] + [sink_text(p.sink)]
    for i, text in enumerate(ops):
        rows = ""
        if counters is not None:
            if i == 0:
                rows = f"  [rows out {counters[0]:,}]"
            elif i == len(ops) - 1 and isinstance(p.sink, AggregateSink) and pm.groups is not None:
                rows = f"  [rows in {counters[i - 1]:,} out {pm.groups:,} group{'' if pm.groups == 1 else 's'}]"
            elif i < len(counters):
                rows = f"  [rows in {counters[i - 1]:,} out {counters[i]:,}]"
        out.append(f"  {'->' if i else '  '} {text}{rows}")
    return out


def source_text(s: Any) -> str:
    if isinstance(s, TableSource):
        return f"Scan {s.table} [{', '.join(s.names)}]"
    if isinstance(s, BufferSource):
        return f"Read buffer {s.buffer}"
    if isinstance(s, ValuesSource):
        return f"Values ({s.table.num_rows} rows)"
    if isinstance(s, UnmatchedBuildSource):
        return f"Unmatched build rows of join #{s.join}"
    return type(s).__name__


def op_text(op: Any) -> str:
    if isinstance(op, FilterOp):
        return f"Filter {op.condition}"
    assert isinstance(op, ProbeOp)
    keys = ", ".join(map(str, op.probe_keys)) or "(no keys: every build row)"
    extra = f" residual {op.residual}" if op.residual is not None else ""
    na = " null-aware" if op.null_aware else ""
    return f"Probe {op.kind.value}{na} join #{op.join} on {keys}{extra}"


def sink_text(s: Any) -> str:
    if isinstance(s, MaterializeSink):
        limit = f" (stop after {s.limit} rows)" if s.limit is not None else ""
        if s.top_k is not None:
            order = "DESC" if s.top_k.descending else "ASC"
            limit += f" (top {s.top_k.k} by {s.top_k.key} {order})"
        return f"Materialize -> buffer {s.buffer}{limit}"
    assert isinstance(s, AggregateSink)
    groups = ", ".join(map(str, s.groups)) or "(global)"
    return f"Aggregate by {groups}: {', '.join(map(str, s.measures))} -> buffer {s.buffer}"


def step_line(step: Any, sm: Any) -> str:
    if isinstance(step, BuildHashTable):
        text = f"Hash build join #{step.join} from buffer {step.buffer}"
    elif isinstance(step, SortBuffer):
        text = f"Sort buffer {step.source} -> {step.target}" + (f" (top {step.limit})" if step.limit else "")
    elif isinstance(step, LimitBuffer):
        text = f"Limit buffer {step.source} -> {step.target} offset {step.offset} count {step.count}"
    else:
        text = f"Scalar subquery from buffer {step.buffer} -> ${step.slot}"
    if sm is not None:
        # what the build did beyond a plain table: a direct map, partitions, a grace join
        extra = sm.label.split(", ", 1)[1].rstrip(")") + "; " if isinstance(step, BuildHashTable) and \
            ", " in sm.label else ""
        spilled = f"; spilled {sm.spilled_disk_bytes:,} bytes to spill files" if sm.spilled_disk_bytes and \
            not extra else ""  # (a grace join's build says where its rows went in `extra`)
        text += (f"  [{extra}{sm.device}; rows in {sm.rows_in:,} out {sm.rows_out:,}{spilled}; "
                 f"{sm.seconds * 1000:.2f} ms]")
    return text
