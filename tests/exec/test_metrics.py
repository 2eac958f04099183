"""Metrics records (exec/metrics.py): a replayed pipeline's kernel time is read from its
graph's events only when asked for, once; setting it directly drops the events."""

from __future__ import annotations

from typing import Any

from penstock.exec.metrics import PipelineMetrics, copied


class Events:
    """What a backend answers about two marks (device/base.py seconds_between)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.asked = 0

    def seconds_between(self, start: Any, end: Any) -> float | None:
        self.asked += 1
        return self.seconds


def test_kernel_time_is_read_from_the_events_once_when_asked() -> None:
    events = Events(0.0025)
    pm = PipelineMetrics(3, "scan f", "GPU", ["rows in"], kernel_time=0.0001)
    pm.timed_by = (events, "start", "end")
    assert events.asked == 0
    assert pm.kernel_seconds == 0.0025
    assert pm.kernel_seconds == 0.0025 and events.asked == 1


def test_events_that_give_no_time_leave_the_recorded_one() -> None:
    pm = PipelineMetrics(3, "scan f", "GPU", [], kernel_time=0.0001)
    pm.timed_by = (Events(None), "start", "end")
    assert pm.kernel_seconds == 0.0001


def test_setting_or_adding_a_time_drops_the_events() -> None:
    events = Events(0.5)
    pm = PipelineMetrics(3, "scan f", "GPU", [])
    pm.timed_by = (events, "start", "end")
    pm.kernel_seconds += 0.25
    assert pm.kernel_seconds == 0.75  # the events' time, then the addition
    pm.timed_by = (events, "start", "end")
    pm.kernel_seconds = 0.1
    assert pm.kernel_seconds == 0.1 and events.asked == 1


def test_a_copy_keeps_its_own_events() -> None:
    events = Events(0.002)
    pm = PipelineMetrics(3, "scan f", "GPU", [])
    pm.timed_by = (events, "start", "end")
    other = copied(pm)
    assert other.kernel_seconds == 0.002 and pm.timed_by is not None
