#!/usr/bin/env python3
"""A stand-in GPU server for the --gpu check on a real NVIDIA machine.

The leader holds 1 GiB of GPU memory and answers /health and /v1/models;
it starts a worker (as vLLM's EngineCore or SGLang's scheduler run beside
their API server) that holds 2 GiB and, on SIGTERM, keeps it for LINGER
seconds before it exits: the case in which a new server started as soon as
the leader is gone finds the old memory still taken. Not a benchmark.
Usage: gpu_server.py --port P --tag N [--linger S]
"""
import argparse
import http.server
import os
import signal
import subprocess
import sys
import time

WORKER = r"""
import signal, sys, time, torch
x = torch.empty(2 << 30, dtype=torch.uint8, device="cuda"); x.fill_(1)
torch.cuda.synchronize()
linger = float(sys.argv[1])
def term(*_):
    time.sleep(linger)
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
print("worker", flush=True)
while True:
    time.sleep(0.1)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--tag", default="0")
    ap.add_argument("--linger", type=float, default=4.0)
    a = ap.parse_args()
    import torch

    held = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    held.fill_(1)
    torch.cuda.synchronize()
    w = subprocess.Popen([sys.executable, "-c", WORKER, str(a.linger)])

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b'{"status":"ok","tag":"%s"}' % a.tag.encode()
            code = 200 if self.path in ("/health", "/v1/models") else 404
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", a.port), H)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print(f"leader {os.getpid()} worker {w.pid} tag {a.tag}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
