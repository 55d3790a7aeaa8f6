#!/usr/bin/env python3
"""Record a real vLLM or SGLang server's responses as a fixture for llm-sim.

Starts the command after `--` in its own session, polls the status of the
read-only endpoints from the moment of the spawn until the server has served
(a timeline of status changes with seconds since spawn), then takes one
streamed completion and one streamed chat transcript (every SSE line as
sent), /server_info (the API key redacted wherever it appears), /version,
/v1/models and /metrics text; then SIGTERMs the process group and records how
long the exit took. Writes one JSON file (tests/fixtures/real/<kind>/...).
Standard library only.

Usage: record-real.py --kind vllm|sglang --port P --out FILE
                      [--api-key KEY] [--model NAME] -- COMMAND...
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

ENDPOINTS = ["/health", "/health_generate", "/v1/models", "/server_info", "/version", "/metrics"]
# Distinct from SGLang's own "<redacted>" (its watermark fields).
REDACTED = "<redacted:api-key>"


def request(port, path, key=None, body=None, timeout=30):
    """(status, headers, body bytes); status 0 when the connection fails."""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()
    except (OSError, urllib.error.URLError) as e:
        return 0, {}, str(e).encode()


def redact(value, key):
    """Every string that contains the key loses it (keys reported back too)."""
    if isinstance(value, dict):
        return {k: redact(v, key) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, key) for v in value]
    if key and isinstance(value, str) and key in value:
        return value.replace(key, REDACTED)
    return value


def poll(port, key, t0, proc, limit_s):
    """Status changes per endpoint (without, and with the key) until all the
    health endpoints have answered 200 for two seconds, or the server dies."""
    timeline, last, ready_at = [], {}, None
    while time.time() - t0 < limit_s:
        if proc.poll() is not None:
            timeline.append({"t_s": round(time.time() - t0, 2), "exited": proc.returncode})
            return timeline, None
        for path in ENDPOINTS:
            for auth in ([False, True] if key else [False]):
                st = request(port, path, key if auth else None, timeout=10)[0]
                name = path + (" +key" if auth else "")
                if last.get(name) != st:
                    last[name] = st
                    timeline.append({"t_s": round(time.time() - t0, 2), "endpoint": name, "status": st})
        if last.get("/health") == 200 and ready_at is None:
            ready_at = time.time()
        if ready_at and time.time() - ready_at > 2 and last.get("/health_generate") in (200, 404):
            return timeline, ready_at - t0
        time.sleep(0.25)
    return timeline, None


def sse(port, key, path, body):
    """Every line of a streamed response, with its arrival in ms."""
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(), headers=headers
    )
    t0, lines = time.time(), []
    with urllib.request.urlopen(req, timeout=120) as r:
        status, ctype = r.status, r.headers.get("Content-Type")
        for raw in r:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if line:
                lines.append({"ms": round((time.time() - t0) * 1000, 1), "line": line})
    return {"request": {"path": path, "body": body}, "status": status, "content_type": ctype, "lines": lines}


def served(port, key, model):
    """Transcripts and the info endpoints of a ready server."""
    out = {}
    prompt = {"model": model, "max_tokens": 16, "stream": True, "ignore_eos": True,
              "stream_options": {"include_usage": True}}
    out["completion_sse"] = sse(port, key, "/v1/completions", dict(prompt, prompt="The licence says"))
    out["chat_sse"] = sse(port, key, "/v1/chat/completions",
                          dict(prompt, messages=[{"role": "user", "content": "Hello there"}]))
    for path in ["/v1/models", "/version", "/server_info", "/metrics"]:
        st, hdr, body = request(port, path, key)
        text = body.decode("utf-8", "replace")
        try:
            val = json.loads(text)
        except ValueError:
            val = text
        out[path] = {"status": st, "content_type": hdr.get("Content-Type"), "body": redact(val, key)}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", required=True, choices=["vllm", "sglang"])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--api-key")
    ap.add_argument("--model", default=None)
    ap.add_argument("--version", default="")
    ap.add_argument("--limit-s", type=float, default=900)
    ap.add_argument("cmd", nargs="+")
    a = ap.parse_args()
    t0 = time.time()
    proc = subprocess.Popen(a.cmd, start_new_session=True, stdin=subprocess.DEVNULL,
                            stdout=sys.stderr, stderr=sys.stderr)
    rec = {"kind": a.kind, "version": a.version, "python": sys.version.split()[0],
           "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "command": [REDACTED if a.api_key and a.api_key in w else w for w in a.cmd]}
    try:
        rec["timeline"], rec["ready_s"] = poll(a.port, a.api_key, t0, proc, a.limit_s)
        if rec["ready_s"] is not None:
            rec["served"] = served(a.port, a.api_key, a.model or a.cmd[-1])
            rec["timeline_after_serving"] = poll(a.port, a.api_key, time.time(), proc, 1)[0]
    finally:
        t1 = time.time()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        rec["sigterm_exit"] = {"code": proc.returncode, "seconds": round(time.time() - t1, 2)}
    text = json.dumps(redact(rec, a.api_key), indent=1, sort_keys=True)
    if a.api_key and a.api_key in text:
        sys.exit("record-real: error: the API key survived redaction")
    with open(a.out, "w") as f:
        f.write(text + "\n")
    print(f"record-real: wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
