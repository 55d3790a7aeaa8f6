"""Run `python -m sglang.bench_serving` (its cli_main, unchanged) and
measure the send lag of its Mooncake trace replay, which it does not
report itself.

How bench_serving replays (sglang/benchmark/datasets/mooncake.py and
serving.py `benchmark`): `get_mooncake_request_over_time` sleeps with
asyncio.sleep to each `timestamp` (relative to its first), builds and
tokenizes the prompt, then yields the row; `benchmark()` creates the
request's task, which calls the backend's request function
(`ASYNC_REQUEST_FUNCS[backend]`, looked up when `benchmark()` starts).

The lag is taken where loadgen takes its own: when the request's task
starts, i.e. when the request function is entered (loadgen stamps `sent`
as its request task starts), against the time the trace gives it after
the replay's start. Tasks start in the order they are created, so the
i-th call after the replay began is the i-th row. The lag at the yield
(the scheduler's own lateness: sleep overshoot plus tokenizing) is kept
beside it.

Usage:
    LAG_OUT=FILE python bench/sglang_mooncake_lag.py BENCH_SERVING_ARGS...
writes {"n", "p50_ms", "p99_ms", "max_ms", "yield_p50_ms", "yield_p99_ms",
"scheduled_ms"} to FILE; scheduled_ms are the trace times bench_serving
loaded (after its first), for the caller to check against the file.
"""

import json
import os
import time

import sglang.benchmark.serving as serving

_original = serving.get_mooncake_request_over_time
_state = {"start": None, "targets": [], "yield_lags": [], "starts": []}


async def _timed(input_requests, tokenizer, slowdown_factor, num_rounds):
    times = sorted(r["timestamp"] for r in input_requests)
    targets = [(t - times[0]) / 1000.0 * slowdown_factor for t in times for _ in range(num_rounds)]
    _state["targets"] = targets
    _state["scheduled_ms"] = [t - times[0] for t in times]
    # The original takes its start_time on its first step, right after ours.
    _state["start"] = start = time.perf_counter()
    i = 0
    async for row in _original(input_requests, tokenizer, slowdown_factor, num_rounds):
        _state["yield_lags"].append(time.perf_counter() - start - targets[i])
        i += 1
        yield row


def _stamped(request_func):
    async def call(request_func_input, pbar=None):
        # Before the replay began: the warm-up request.
        if _state["start"] is not None:
            _state["starts"].append(time.perf_counter())
        return await request_func(request_func_input=request_func_input, pbar=pbar)

    return call


def _pct(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def _write(path):
    start, targets = _state["start"], _state["targets"]
    lags = [(t - start - targets[i]) * 1000.0 for i, t in enumerate(_state["starts"])]
    ylags = [x * 1000.0 for x in _state["yield_lags"]]
    out = {"n": len(lags), "scheduled_ms": _state.get("scheduled_ms", [])}
    if lags:
        out.update(p50_ms=_pct(lags, 50), p99_ms=_pct(lags, 99), max_ms=max(lags))
    if ylags:
        out.update(yield_p50_ms=_pct(ylags, 50), yield_p99_ms=_pct(ylags, 99))
    with open(path, "w") as f:
        json.dump(out, f)


serving.get_mooncake_request_over_time = _timed
for _name in list(serving.ASYNC_REQUEST_FUNCS):
    serving.ASYNC_REQUEST_FUNCS[_name] = _stamped(serving.ASYNC_REQUEST_FUNCS[_name])
try:
    serving.cli_main()
finally:
    _write(os.environ["LAG_OUT"])
