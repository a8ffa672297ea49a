#!/usr/bin/env python3
"""Runs a command and writes its own resource usage as JSON (used by bench/client_*.sh).

Usage: rusage_run.py OUT.json LIMIT_S CMD [ARGS...]

The command is this script's direct child, so os.wait4 returns the rusage of exactly that process:
user_s + sys_s (the kernel's precise per-task runtime, microsecond resolution) and max_rss_kb, the
peak resident set at exit. Caveat: the kernel folds the RSS of the process image *before* exec
(this Python interpreter, ~10-15 MB, forked) into ru_maxrss, so for a small command it reports
Python's size. Hence a sampler thread reads /proc/PID/status every 10 ms: hwm_kb is the last
VmHWM seen (the command's own peak; exec starts a fresh one), max_sampled_rss_kb the largest
VmRSS seen. Growth in the last <= 10 ms before exit can escape both.
After LIMIT_S seconds the command gets SIGTERM, 5 s later SIGKILL.
Exits with the command's status.
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

out, limit, cmd = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
t0 = time.monotonic()
p = subprocess.Popen(cmd)
done = threading.Event()
samples = {"max_rss_kb": 0, "hwm_kb": 0, "n": 0}


def sampler():
    path = f"/proc/{p.pid}/status"
    name = os.path.basename(cmd[0])[:15]
    while not done.is_set():
        try:
            with open(path) as f:
                text = f.read()
            # Only once the child runs the command (not the forked interpreter before exec), and
            # not as a zombie (no Vm* lines).
            if text.startswith(f"Name:\t{name}\n") and "\nVmHWM:" in text:
                for line in text.splitlines():
                    if line.startswith("VmHWM:"):
                        samples["hwm_kb"] = max(samples["hwm_kb"], int(line.split()[1]))
                    elif line.startswith("VmRSS:"):
                        samples["max_rss_kb"] = max(samples["max_rss_kb"], int(line.split()[1]))
                samples["n"] += 1
        except (OSError, ValueError):
            pass
        done.wait(0.01)


def watchdog():
    if done.wait(limit):
        return
    print(f"rusage_run: {cmd[0]} ran past {limit:.0f} s: SIGTERM", file=sys.stderr)
    p.send_signal(signal.SIGTERM)
    if not done.wait(5):
        p.kill()


threads = [threading.Thread(target=sampler, daemon=True), threading.Thread(target=watchdog, daemon=True)]
for t in threads:
    t.start()
_, status, ru = os.wait4(p.pid, 0)
done.set()
p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
wall = time.monotonic() - t0
with open(out, "w") as f:
    json.dump({"user_s": ru.ru_utime, "sys_s": ru.ru_stime, "cpu_s": ru.ru_utime + ru.ru_stime,
               "max_rss_kb": ru.ru_maxrss, "hwm_kb": samples["hwm_kb"], "max_sampled_rss_kb": samples["max_rss_kb"],
               "rss_samples": samples["n"], "wall_s": wall, "minflt": ru.ru_minflt,
               "nvcsw": ru.ru_nvcsw, "nivcsw": ru.ru_nivcsw, "exit": p.returncode}, f)
sys.exit(p.returncode)
