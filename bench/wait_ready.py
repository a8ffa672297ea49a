#!/usr/bin/env python3
"""Waits until an llmload-server (or any OpenAI-compatible server) on loopback answers GET /v1/models.

Usage: wait_ready.py PORT [SECONDS]   (default 10 s). Exits 0 once it answers, 1 if it never did.
Loopback only: it asks http://127.0.0.1:PORT.
"""
import sys
import time
import urllib.request

port = int(sys.argv[1])
deadline = time.monotonic() + (float(sys.argv[2]) if len(sys.argv) > 2 else 10.0)
while time.monotonic() < deadline:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1).read()
        sys.exit(0)
    except Exception:
        time.sleep(0.1)
sys.exit(1)
