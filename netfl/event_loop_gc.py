"""Python's cyclic garbage collector tuned for the event loop (issue 27).

A run keeps thousands of medium-lived objects (a round's client processes, their
generators, flows and events: about a dozen per client in flight) that outlive the
collector's youngest generation (700 allocations by default) and are promoted, so the
collector's full passes, which walk every tracked object of the process (the built world,
the imported modules: about 75,000 objects, 40-50 ms a pass on the 2-core development
machine), came every few rounds: a quarter of the million-update run's CPU time
(``docs/benchmarks.md``, "A million client updates"). Those objects die by reference
counting; the engine leaves no reference cycles per transfer. During the event loop the
youngest generation is collected every :data:`EVENT_LOOP_THRESHOLD` ``[0]`` allocations
and the middle one every ``[1]`` young passes, so fewer of them are promoted; the
default thresholds are restored when the loop ends. Nothing simulated depends on when the
collector runs: the outputs are byte-identical.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

#: ``gc.set_threshold`` during the event loop (CPython's default: 700, 10, 10).
EVENT_LOOP_THRESHOLD = (10_000, 50, 10)


@contextlib.contextmanager
def event_loop_gc() -> Iterator[None]:
    """Run the body with :data:`EVENT_LOOP_THRESHOLD`, restoring the thresholds after."""
    before = gc.get_threshold()
    gc.set_threshold(*EVENT_LOOP_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*before)
