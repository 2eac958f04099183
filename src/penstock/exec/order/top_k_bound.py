"""A bounded top-k's host side (plan/top_k.py): per batch, the scan kernel records each
row's sort-key word (mode 0; a Hamming distance's by its own kernel, top_k_hamming.py), the
bound is found among the words, and the kernel runs again writing only the rows within it
(mode 1).

The bound is the k-th smallest word, found by radix selection: one pass for the count, least
and greatest word, then passes counting words by 8 bits at a time from the highest bit in
which the least and greatest differ, among the words that share the digits chosen so far.
It stops at the first digit whose words are few (STOP_ROWS past k): the bound is then that
digit's greatest possible word, so every row that ties with the k-th is written. Hamming
distances over random 2048-bit signatures span a few hundred values: one counting pass.

Across batches the bound only tightens: a batch with k rows within its bound proves that the
k best rows overall lie within it too.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from penstock.codegen.fixed_kernels import word_histogram, word_range
from penstock.device.base import Backend
from penstock.exec.kernels import compile_kernel
from penstock.exec.metrics import PipelineMetrics
from penstock.exec.order.top_k_hamming import HammingWords
from penstock.io.device_batch import Batch
from penstock.plan.physical import TopKBound

if TYPE_CHECKING:
    from penstock.exec.pipeline.materialize_state import MaterializeState
    from penstock.exec.pipeline.runner import PipelineRunner

NO_WORD = 2**64 - 1  # a row the pipeline dropped
ALL_ROWS = NO_WORD - 1  # a bound every kept row is within
STOP_ROWS = 1024  # a digit whose words are at most k plus this many ends the selection


def kth_word(backend: Backend, words: Any, k: int,
             known: tuple[int, int, int] | None = None) -> tuple[int | None, int]:
    """(bound, rows): a word at least the k-th smallest of `words` (NO_WORD ones left out)
    that leaves few more than k within it, and how many words there are; bound None when
    there are none, ALL_ROWS when there are at most k. `known`: (count, least, greatest)
    when the caller knows how many words there are and a range holding them all (a Hamming
    distance's, without NULLs): the pass that measures them, and its wait, are skipped. A
    range wider than the words' own still holds every word, and every word shares its ends'
    bits above the highest bit in which they differ, so the selection stays exact; its digits
    may fall elsewhere, so the bound may keep a few more rows than the measured range's."""
    n = int(words.shape[0])
    if known is not None:
        count, least, greatest = known
    else:
        stats = backend.to_device_queued(np.array([0, NO_WORD, 0], np.uint64))  # one wait: the read below
        backend.launch(compile_kernel(backend, word_range()), n, [n, words, stats])
        count, least, greatest = (int(x) for x in backend.to_host(stats))
    if count == 0:
        return None, 0
    if count <= k:
        return ALL_ROWS, count
    if least == greatest:
        return least, count
    shift = max((least ^ greatest).bit_length() - 8, 0)
    width = (least ^ greatest).bit_length() - shift
    prefix = least >> (shift + width) if shift + width < 64 else 0
    wanted = k  # the rank of the k-th word among those sharing `prefix`
    histogram = compile_kernel(backend, word_histogram())
    while True:
        counts = backend.zeros(256, np.uint64)
        backend.launch(histogram, n, [n, words, shift, width, prefix, counts])
        bins = backend.to_host(counts)
        below = np.cumsum(bins, dtype=np.int64)
        digit = int(np.searchsorted(below, wanted))  # the first digit whose cumulative count reaches it
        wanted -= int(below[digit - 1]) if digit else 0
        prefix = (prefix << width) | digit
        if shift == 0 or int(bins[digit]) <= k + STOP_ROWS:
            return (prefix << shift) | ((1 << shift) - 1), count
        width = min(8, shift)
        shift -= width


class TopKRun:
    """One run of a bounded pipeline: the running bound, and what the bound kept."""

    def __init__(self, top_k: TopKBound) -> None:
        self.k = top_k.k
        self.hamming = HammingWords(top_k)
        self.bound = ALL_ROWS
        self.rows_in = 0
        self.rows_kept = 0
        self.batch_rows = 0  # rows of the last batch that reached the sink
        self.counted: list[int] = []  # the operators' counts after the last batch's words' run

    def bound_batch(self, runner: "PipelineRunner", state: "MaterializeState", batch: Batch) -> bool:
        """Record the batch's words and set the bound its rewrite is held to; False when no
        row of the batch passed the pipeline's filter (nothing to write)."""
        backend = runner.be
        state.write_nothing(runner.fresh_status(state.status_words))
        words = self.hamming.record(runner, batch)  # a Hamming key's own kernel writes every row's word
        scanned = words is None
        if scanned:  # the scan's kernel writes the words of the rows its filters pass
            words = backend.xp.full(batch.length, NO_WORD, dtype=np.uint64)
        state.top_k_mode, state.top_k_words = 0, words
        if scanned:
            code, _ = runner.launch(batch, state, None)
            if code:
                runner.fail(code)
        known = None if scanned else self.hamming.known_range(batch)
        self.counted = list(runner.metrics.counters)
        started = time.perf_counter()
        bound, rows = kth_word(backend, words, self.k, known)  # its waits include the words' own kernel's
        runner.metrics.kernel_seconds += time.perf_counter() - started
        self.rows_in += rows
        self.batch_rows = rows
        if bound is None:
            return False
        if bound != ALL_ROWS:
            self.bound = min(self.bound, bound)
        state.top_k_mode, state.top_k_bound = 1, min(bound, self.bound)
        return True

    def end_batch(self, metrics: PipelineMetrics, kept: int) -> None:
        """After the batch's rewrite (`kept` rows written): the operators' counts are the
        words' run's (the rewrite skips rows), the sink's the rows written."""
        self.rows_kept += kept
        metrics.counters = self.counted
        if metrics.counters:
            metrics.counters[-1] -= self.batch_rows - kept
        metrics.top_k_rows = (self.rows_in, self.rows_kept)
