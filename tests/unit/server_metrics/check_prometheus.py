#!/usr/bin/env python3
"""Third-party check of llmload-server's /metrics text: the official Prometheus Python client
(Debian package python3-prometheus-client) must parse the exposition printed by
llmload_metrics_sample and see the right families, types, label sets, buckets and values.

Usage: check_prometheus.py PATH/TO/llmload_metrics_sample
Fails (never skips) when python3-prometheus-client is missing.
"""
import math
import os
import subprocess
import sys

PACKAGE_HINT = ("the Prometheus Python client is missing: install the Debian package "
                "python3-prometheus-client (scripts/setup.sh installs it)")

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    # Debian's package is only visible to the system interpreter; a pyenv/venv python3 first on
    # PATH does not see it. Retry once with /usr/bin/python3 before failing.
    system = "/usr/bin/python3"
    if (os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system)
            and not os.environ.get("LLMLOAD_CHECK_PROMETHEUS_REEXEC")):
        os.environ["LLMLOAD_CHECK_PROMETHEUS_REEXEC"] = "1"
        os.execv(system, [system] + sys.argv)
    sys.exit("FAIL: " + PACKAGE_HINT)

MODEL = 'mock "q" \\ x\nline2'  # what metrics_sample.cpp names the model, unescaped

EXPECTED_TYPES = {
    "vllm:num_requests_running": "gauge",
    "vllm:num_requests_waiting": "gauge",
    "vllm:kv_cache_usage_perc": "gauge",
    "vllm:gpu_cache_usage_perc": "gauge",
    "vllm:cache_config_info": "gauge",
    # The parser names counter families without "_total" (OpenMetrics style).
    "vllm:prefix_cache_queries": "counter",
    "vllm:prefix_cache_hits": "counter",
    "vllm:num_preemptions": "counter",
    "vllm:prompt_tokens": "counter",
    "vllm:generation_tokens": "counter",
    "vllm:request_success": "counter",
    "vllm:request_prompt_tokens": "histogram",
    "vllm:request_generation_tokens": "histogram",
    "vllm:iteration_tokens_total": "histogram",
    "vllm:request_params_max_tokens": "histogram",
    "vllm:time_to_first_token_seconds": "histogram",
    "vllm:inter_token_latency_seconds": "histogram",
    "vllm:time_per_output_token_seconds": "histogram",
    "vllm:request_time_per_output_token_seconds": "histogram",
    "vllm:e2e_request_latency_seconds": "histogram",
    "vllm:request_queue_time_seconds": "histogram",
    "vllm:request_inference_time_seconds": "histogram",
    "vllm:request_prefill_time_seconds": "histogram",
    "vllm:request_decode_time_seconds": "histogram",
    "llmload:gpu_power_watts": "gauge",
    "llmload:gpu_energy_joules": "counter",
}

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_prometheus.py PATH/TO/llmload_metrics_sample")
    text = subprocess.run([sys.argv[1]], check=True, capture_output=True, text=True).stdout
    families = {f.name: f for f in text_string_to_metric_families(text)}

    # Families and types; nothing the parser could not attach to a declared family.
    for name, typ in EXPECTED_TYPES.items():
        check(name in families, f"family {name} missing")
        if name in families:
            check(families[name].type == typ, f"{name}: type {families[name].type}, want {typ}")
            check(families[name].documentation, f"{name}: no HELP text")
    for name, fam in families.items():
        check(name in EXPECTED_TYPES, f"unexpected family {name} ({fam.type})")

    # Every sample carries model_name (unescaped back to the original) and engine="0".
    for fam in families.values():
        for s in fam.samples:
            check(s.labels.get("model_name") == MODEL, f"{s.name}: model_name {s.labels!r}")
            check(s.labels.get("engine") == "0", f"{s.name}: engine {s.labels!r}")

    # Histograms: cumulative, increasing le ending in +Inf, +Inf == _count, one _sum.
    for name, fam in families.items():
        if fam.type != "histogram":
            continue
        buckets = [s for s in fam.samples if s.name == name + "_bucket"]
        counts = [s for s in fam.samples if s.name == name + "_count"]
        sums = [s for s in fam.samples if s.name == name + "_sum"]
        check(len(counts) == 1 and len(sums) == 1, f"{name}: needs one _count and one _sum")
        check(buckets and buckets[-1].labels["le"] == "+Inf", f"{name}: last bucket not +Inf")
        les = [float(s.labels["le"]) for s in buckets]
        check(les == sorted(les) and len(set(les)) == len(les), f"{name}: le not increasing")
        values = [s.value for s in buckets]
        check(all(a <= b for a, b in zip(values, values[1:])), f"{name}: buckets not cumulative")
        if counts and buckets:
            check(buckets[-1].value == counts[0].value, f"{name}: +Inf != _count")

    def value(family, sample, **labels):
        for s in families[family].samples:
            if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
        failures.append(f"sample {sample} {labels} missing")
        return math.nan

    def close(a, b):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)

    # A few known values (see metrics_sample.cpp).
    expect = [
        (value("vllm:num_requests_running", "vllm:num_requests_running"), 3),
        (value("vllm:num_requests_waiting", "vllm:num_requests_waiting"), 2),
        (value("vllm:kv_cache_usage_perc", "vllm:kv_cache_usage_perc"), 0.25),
        (value("vllm:gpu_cache_usage_perc", "vllm:gpu_cache_usage_perc"), 0.25),
        (value("vllm:cache_config_info", "vllm:cache_config_info",
               block_size="16", num_gpu_blocks="1000"), 1),
        (value("vllm:num_preemptions", "vllm:num_preemptions_total"), 4),
        (value("vllm:prefix_cache_queries", "vllm:prefix_cache_queries_total"), 100),
        (value("vllm:prefix_cache_hits", "vllm:prefix_cache_hits_total"), 40),
        (value("vllm:prompt_tokens", "vllm:prompt_tokens_total"), 300),
        (value("vllm:generation_tokens", "vllm:generation_tokens_total"), 50),
        (value("vllm:request_success", "vllm:request_success_total", finished_reason="stop"), 1),
        (value("vllm:request_success", "vllm:request_success_total", finished_reason="length"), 1),
        (value("vllm:request_success", "vllm:request_success_total", finished_reason="abort"), 1),
        (value("vllm:iteration_tokens_total", "vllm:iteration_tokens_total_bucket", le="8.0"), 2),
        (value("vllm:iteration_tokens_total", "vllm:iteration_tokens_total_bucket", le="+Inf"), 4),
        (value("vllm:iteration_tokens_total", "vllm:iteration_tokens_total_sum"), 20018),
        (value("vllm:inter_token_latency_seconds", "vllm:inter_token_latency_seconds_bucket",
               le="0.01"), 1),
        (value("vllm:inter_token_latency_seconds", "vllm:inter_token_latency_seconds_sum"), 100.53),
        (value("vllm:time_per_output_token_seconds", "vllm:time_per_output_token_seconds_count"), 4),
        (value("vllm:time_to_first_token_seconds", "vllm:time_to_first_token_seconds_count"), 2),
        (value("vllm:time_to_first_token_seconds", "vllm:time_to_first_token_seconds_sum"), 0.25),
        (value("vllm:e2e_request_latency_seconds", "vllm:e2e_request_latency_seconds_count"), 3),
        (value("vllm:e2e_request_latency_seconds", "vllm:e2e_request_latency_seconds_bucket",
               le="0.3"), 1),
        (value("vllm:e2e_request_latency_seconds", "vllm:e2e_request_latency_seconds_sum"), 3.75),
        (value("vllm:request_time_per_output_token_seconds",
               "vllm:request_time_per_output_token_seconds_sum"), 0.125),
        (value("vllm:request_prompt_tokens", "vllm:request_prompt_tokens_bucket", le="5000.0"), 3),
        (value("vllm:request_prompt_tokens", "vllm:request_prompt_tokens_sum"), 117),
        (value("vllm:request_params_max_tokens", "vllm:request_params_max_tokens_count"), 2),
        (value("llmload:gpu_power_watts", "llmload:gpu_power_watts"), 350.5),
        (value("llmload:gpu_energy_joules", "llmload:gpu_energy_joules_total"), 12345.25),
    ]
    for i, (got, want) in enumerate(expect):
        check(close(got, want), f"value #{i}: got {got}, want {want}")

    # vLLM's 1-2-5 buckets for max_model_len 8192, and its TTFT layout.
    les = [s.labels["le"] for s in families["vllm:request_prompt_tokens"].samples
           if s.name.endswith("_bucket")]
    check(les == ["1.0", "2.0", "5.0", "10.0", "20.0", "50.0", "100.0", "200.0", "500.0",
                  "1000.0", "2000.0", "5000.0", "+Inf"], f"1-2-5 buckets: {les}")
    les = [float(s.labels["le"]) for s in families["vllm:time_to_first_token_seconds"].samples
           if s.name.endswith("_bucket")]
    check(les[:-1] == [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
                       2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0],
          f"TTFT buckets: {les}")

    if failures:
        print("prometheus_client parsed the exposition but found problems:")
        for f in failures:
            print("  - " + f)
        print("--- exposition ---")
        print(text)
        return 1
    print(f"OK: prometheus_client parsed {len(families)} families, "
          f"{sum(len(f.samples) for f in families.values())} samples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
