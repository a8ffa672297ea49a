#!/usr/bin/env python3
"""Splits a `perf record --call-graph dwarf` profile of llmload into the client's cost centres.

Usage: perf script -i perf.data -F comm,ip,sym | perf_buckets.py [COMM] [--units N] [--top K]

Each sample (only those of process COMM, default llmload) goes to the specific bucket whose frame
is nearest the leaf of its call stack (so "sse framing" excludes the JSON decode that SseParser
calls back into), else to the first generic bucket that one of its frames matches (kernel recv,
epoll_wait, asio dispatch, malloc: samples whose stack was cut at a libc syscall wrapper). Prints each
bucket's share of the samples and, with --units N (tokens or requests in the run) and the run's
CPU seconds (--cpu-s), the microseconds per unit. --top K also lists the K hottest leaf
functions of every bucket. Used by bench/client_profile.sh.
"""
import collections
import re
import sys

# Specific cost centres: a sample goes to the one whose frame is nearest the leaf (so the JSON
# decode that SseParser calls back into counts as decode, and a request started from a completion
# handler counts as the request's start, not the completion).
SPECIFIC = [
    ("json decode: OpenAiStreamDecoder::decode (nlohmann DOM)", re.compile(r"OpenAiStreamDecoder::decode|decode_whole_response|error_message_from_body")),
    ("sse framing: SseParser::feed/process_line", re.compile(r"SseParser::")),
    ("tracker: RequestTracker (chunks, record)", re.compile(r"RequestTracker::")),
    ("request body: RequestBuilder::build", re.compile(r"RequestBuilder::")),
    ("completion: RunController::complete (records, histograms)", re.compile(r"RunController::complete|MetricsAccumulator|Accumulator::add|redact")),
    ("poll/pacer: RunController::poll, drive's pump, timer re-arm", re.compile(r"RunController::poll|Pacer::|pacer")),
    ("connect", re.compile(r"connect_op|async_connect|range_connect|__connect|tcp_v4_connect")),
    ("http request write (beast serializer, send)", re.compile(r"write_op|write_some_op|serializer<true|sendmsg|__libc_send|writev")),
    ("http response parse (beast basic_parser, chunked)", re.compile(r"basic_parser<|parser<false")),
    ("exchange setup/teardown (Exchange, request copy, close)", re.compile(r"Exchange::Exchange|Exchange::begin|Exchange::finish|Exchange::acquire|still_open|~Exchange|__close|tcp_close|sock_close|basic_fields<")),
    ("timers (tcp_stream expiry, steady_timer, timerfd)", re.compile(r"timer_queue|timerfd|timeout_handler|basic_waitable_timer|expires_|deadline_timer_service|hrtimer_start")),
]
# Generic ones, for samples with no specific frame (e.g. libc or kernel stacks cut at the syscall).
GENERIC = [
    ("kernel recv (recvmsg)", re.compile(r"recvmsg|__libc_recv|tcp_recvmsg|sock_read|__sys_recvfrom")),
    ("epoll_wait (incl. sleep/wake context switches)", re.compile(r"epoll_wait")),
    ("asio dispatch (scheduler, executors, handler memory)", re.compile(r"boost::asio::|boost::beast::")),
    ("malloc/free (other)", re.compile(r"malloc|_int_free|cfree|operator new|operator delete|tcache")),
]
STARTUP = "startup + result files (outside the event loop)"
BUCKETS = [(STARTUP, None)] + SPECIFIC + GENERIC
OTHER = "other"


def main():
    args = sys.argv[1:]
    comm = "llmload"
    units = None
    cpu_s = None
    top = 0
    i = 0
    while i < len(args):
        if args[i] == "--units":
            units = float(args[i + 1]); i += 2
        elif args[i] == "--cpu-s":
            cpu_s = float(args[i + 1]); i += 2
        elif args[i] == "--top":
            top = int(args[i + 1]); i += 2
        else:
            comm = args[i]; i += 1
    counts = collections.Counter()
    leaves = collections.defaultdict(collections.Counter)
    total = 0
    sample = []
    header = None

    def flush():
        nonlocal total
        if header is None or header != comm or not sample:
            return
        total += 1
        frames = sample
        name = OTHER
        unwound = any(f == "main" or f.startswith("__libc_start") for f in frames)
        if unwound and not any("llmload::net::drive" in f for f in frames):
            name = BUCKETS[0][0]  # a full stack outside the event loop (samples in libc whose
            # stack could not be unwound past the syscall wrapper go by their kernel frames)
        else:
            found = False
            for f in frames:  # leaf first
                for b, rx in SPECIFIC:
                    if rx.search(f):
                        name, found = b, True
                        break
                if found:
                    break
            if not found:
                for b, rx in GENERIC:
                    if any(rx.search(f) for f in frames):
                        name = b
                        break
        counts[name] += 1
        leaf = re.sub(r"\(.*", "", frames[0])[:90]
        leaves[name][leaf] += 1

    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line.strip():
            flush()
            sample, header = [], None
            continue
        if header is None and not line.startswith(("\t", " " * 8)):
            header = line.strip().split()[0] if line.strip() else None
            continue
        if header is None:
            header = line.strip()
            continue
        sym = line.strip()
        sym = re.sub(r"^[0-9a-f]+ ", "", sym)
        sample.append(sym)
    flush()
    if total == 0:
        print(f"no samples of {comm}")
        return
    order = [b for b, _ in BUCKETS] + [OTHER]
    print(f"{'bucket':<62} {'share':>7}" + (f" {'us/unit':>9}" if units and cpu_s else ""))
    for b in order:
        if counts[b] == 0:
            continue
        share = counts[b] / total
        extra = f" {share * cpu_s / units * 1e6:>9.2f}" if units and cpu_s else ""
        print(f"{b:<62} {share * 100:>6.1f}%{extra}")
        if top:
            for leaf, n in leaves[b].most_common(top):
                print(f"      {n / total * 100:5.1f}%  {leaf}")
    print(f"{'total samples':<62} {total:>7}")


if __name__ == "__main__":
    main()
