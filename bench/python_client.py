#!/usr/bin/env python3
"""A stand-in for the Python benchmark clients (issue 20): what vLLM's benchmark client
(benchmarks/backend_request_func.py, async_request_openai_chat_completions, driven by
benchmark_serving.py) does per request, so llmload's CPU per token and per request can be
compared with it on the same machine, against the same server, in the same run.

Per request, as vLLM's client does: one asyncio task per request (all created up front), an
asyncio.Semaphore bounding the requests in flight (--max-concurrency), one shared
aiohttp.ClientSession, a streamed chat completion ("stream": true, usage in the last chunk),
and for every SSE line: strip, skip empty lines, remove "data: ", json.loads, the first token's
time (TTFT), the gap to the previous one (ITL), the text appended. Then the summary.

Needs aiohttp (Debian: apt-get install python3-aiohttp; or pip install aiohttp).

Usage: python_client.py --base-url http://127.0.0.1:PORT --concurrency N --num-requests M
                        [--input-tokens I] [--output-tokens O] [--model NAME]
Prints one JSON line: requests, completed, failed, output tokens, wall and CPU (user, system)
of the whole process, from getrusage at the end (imports included, as for llmload's whole process).
Loopback or any URL you give it; bounded by --num-requests and --timeout.
"""
import argparse
import asyncio
import json
import resource
import sys
import time

try:
    import aiohttp
except ImportError:
    sys.exit("python_client.py needs aiohttp: apt-get install python3-aiohttp (Debian) or pip install aiohttp")


async def one_request(session, url, payload, result):
    st = time.perf_counter()
    most_recent = st
    ttft = 0.0
    itl = []
    text = ""
    tokens = None
    try:
        async with session.post(url=url, json=payload, headers={"Content-Type": "application/json"}) as response:
            if response.status != 200:
                result["failed"] += 1
                await response.read()
                return
            async for chunk_bytes in response.content:
                chunk_bytes = chunk_bytes.strip()
                if not chunk_bytes:
                    continue
                chunk = chunk_bytes.decode("utf-8").removeprefix("data: ")
                if chunk == "[DONE]":
                    continue
                timestamp = time.perf_counter()
                data = json.loads(chunk)
                if choices := data.get("choices"):
                    content = choices[0]["delta"].get("content")
                    if ttft == 0.0:
                        ttft = timestamp - st
                    else:
                        itl.append(timestamp - most_recent)
                    text += content or ""
                elif usage := data.get("usage"):
                    tokens = usage.get("completion_tokens")
                most_recent = timestamp
        result["completed"] += 1
        result["output_tokens"] += tokens or 0
        result["ttft_sum"] += ttft
        result["itl_n"] += len(itl)
    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as e:
        result["failed"] += 1
        result.setdefault("error", repr(e))


async def main(args):
    base = args.base_url.rstrip("/")
    url = base + "/v1/chat/completions"
    prompt = " ".join(["hello"] * args.input_tokens)
    timeout = aiohttp.ClientTimeout(total=args.timeout)
    connector = aiohttp.TCPConnector(limit=args.concurrency, force_close=False)
    result = {"requests": args.num_requests, "completed": 0, "failed": 0, "output_tokens": 0, "ttft_sum": 0.0,
              "itl_n": 0}
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        model = args.model
        if not model:
            async with session.get(base + "/v1/models") as r:
                model = (await r.json())["data"][0]["id"]
        semaphore = asyncio.Semaphore(args.concurrency)

        async def limited(payload):
            async with semaphore:
                await one_request(session, url, payload, result)

        payloads = [{
            "model": model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0.0,
            "max_completion_tokens": args.output_tokens,
            "max_tokens": args.output_tokens,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        } for _ in range(args.num_requests)]
        t0 = time.perf_counter()
        tasks = [asyncio.create_task(limited(p)) for p in payloads]
        await asyncio.gather(*tasks)
        result["load_wall_s"] = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    result["user_s"] = ru.ru_utime
    result["sys_s"] = ru.ru_stime
    result["mean_ttft_ms"] = result["ttft_sum"] / max(1, result["completed"]) * 1000.0
    print(json.dumps(result))
    return 0 if result["failed"] == 0 else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--num-requests", type=int, default=1)
    ap.add_argument("--input-tokens", type=int, default=16)
    ap.add_argument("--output-tokens", type=int, default=16)
    ap.add_argument("--model", default="")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds, per request (aiohttp total timeout)")
    sys.exit(asyncio.run(main(ap.parse_args())))
