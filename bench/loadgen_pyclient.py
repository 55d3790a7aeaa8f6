#!/usr/bin/env python3
"""A minimal aiohttp streaming client, the Python peer for loadgen's bench.

Closed loop at a fixed concurrency against /v1/completions, streaming, the
way vLLM's and SGLang's Python bench clients read SSE (aiohttp, one JSON
parse per data line, time.perf_counter per chunk). Prints one JSON line:
completed and failed requests, output tokens, wall seconds.
"""
import argparse
import asyncio
import json
import time

import aiohttp


async def one(session, url, body, stats):
    t0 = time.perf_counter()
    first = None
    tokens = 0
    async with session.post(url, json=body) as resp:
        async for raw in resp.content:
            line = raw.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                break
            chunk = json.loads(data)
            now = time.perf_counter()
            choices = chunk.get("choices") or []
            if choices and choices[0].get("text"):
                if first is None:
                    first = now - t0
                tokens += 1
            usage = chunk.get("usage")
            if usage:
                tokens = usage.get("completion_tokens", tokens)
    stats["ok"] += 1
    stats["tokens"] += tokens


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", default="sim-llama-8b")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--max-tokens", type=int, default=64)
    a = ap.parse_args()
    body = {"model": a.model, "prompt": "hello " * 64, "max_tokens": a.max_tokens,
            "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True}}
    stats = {"ok": 0, "tokens": 0, "failed": 0}
    left = [a.requests]
    conn = aiohttp.TCPConnector(limit=a.concurrency)
    timeout = aiohttp.ClientTimeout(total=None)
    url = a.url.rstrip("/") + "/v1/completions"
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as s:
        async def worker():
            while left[0] > 0:
                left[0] -= 1
                try:
                    await one(s, url, body, stats)
                except (aiohttp.ClientError, OSError, asyncio.TimeoutError):
                    stats["failed"] += 1
        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(a.concurrency)))
        wall = time.perf_counter() - t0
    print(json.dumps({"requests": stats["ok"], "failed": stats["failed"], "tokens": stats["tokens"],
                      "wall_s": wall}))


asyncio.run(main())
