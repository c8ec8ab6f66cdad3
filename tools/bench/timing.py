"""Timing shared by the Python benchmarks: the median of `runs` calls, in ms."""

import statistics
import time


def median_ms(fn, runs):
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)
