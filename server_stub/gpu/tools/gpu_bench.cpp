// llmload-gpu-bench: checks the CUDA step runner against the GPU and against a roofline.
//
// Prints one JSON object (stdout):
//   - the read kernel's bandwidth next to a device-to-device cudaMemcpy's (the practical ceiling),
//   - the tensor kernel's flop/s next to the bf16 peak given,
//   - for decode-only steps of T tokens (ctx tokens of KV each) the measured step time next to the
//     roofline t = max((W + kv)/(eta_bw*BW), 2*N*T/(eta_f*F)) (defaults: Llama-3-8B on an H100 SXM;
//     docs/gpu.md and the timing reference, section 4),
//   - with NVML, the energy per step (over steps of that size run back to back for 1 s).
// Exit status: 0 done, 1 error, 2 no usable GPU (a message on stderr, {"usable": false, ...} on
// stdout).

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "llmload/server/gpu/power_sampler.hpp"
#include "llmload/server/gpu/step_runner.hpp"

namespace {

using llmload::server::StepCost;
namespace gpu = llmload::server::gpu;
using Json = nlohmann::ordered_json;

struct Options {
  int device = 0;
  // Roofline of the model being imitated (defaults: Llama-3-8B, bf16, on one H100 SXM).
  double weight_bytes = 16.06e9;
  double params = 8.03e9;
  double hbm_bandwidth = 3.35e12;
  double peak_flops = 989e12;
  double eta_bw = 0.72;
  double eta_f = 0.68;
  std::int64_t ctx = 1024;                 ///< context tokens per decode
  double kv_bytes_per_token = 131072;      ///< Llama-3-8B: 2 x 32 layers x 8 kv heads x 128 x 2 B
  std::vector<std::int64_t> tokens{1, 16, 64, 128, 256, 512, 1024, 2048};
  int repeats = 5;
  double bandwidth_bytes = 4.0 * 1024 * 1024 * 1024;
  double tensor_flops = 1e14;
  double kv_allowance_bytes = -1;          ///< < 0: the largest step's KV
};

double predict_seconds(const Options& o, double bytes, double flops) {
  return std::max(bytes / (o.eta_bw * o.hbm_bandwidth), flops / (o.eta_f * o.peak_flops));
}

StepCost decode_step(const Options& o, std::int64_t tokens) {
  StepCost c;
  c.tokens = tokens;
  c.decode_tokens = tokens;
  c.weight_bytes = o.weight_bytes;
  c.kv_bytes = static_cast<double>(tokens) * static_cast<double>(o.ctx) * o.kv_bytes_per_token;
  c.linear_flops = 2.0 * o.params * static_cast<double>(tokens);
  c.attention_flops = 0;  // as in the roofline formula compared against (about 3% at ctx 1024 for 8B)
  c.predicted_seconds = predict_seconds(o, c.weight_bytes + c.kv_bytes, c.linear_flops + c.attention_flops);
  return c;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

/// How long the steps of one size run back to back between two energy readings.
constexpr double kEnergyWindowSeconds = 1.0;

/// Steps of `step_seconds` each that fill kEnergyWindowSeconds (at least 10, at most 100,000).
int energy_steps(double step_seconds) {
  const double n = step_seconds > 0 ? std::ceil(kEnergyWindowSeconds / step_seconds) : 100000.0;
  return static_cast<int>(std::clamp(n, 10.0, 100000.0));
}

Json gpu_json(const gpu::GpuInfo& i) {
  return Json{{"device", i.device},
              {"name", i.name},
              {"pci_bus_id", i.pci_bus_id},
              {"compute_capability", std::to_string(i.cc_major) + "." + std::to_string(i.cc_minor)},
              {"sm_count", i.sm_count},
              {"total_memory_bytes", i.total_memory_bytes},
              {"free_memory_bytes", i.free_memory_bytes}};
}

Json run(const Options& o) {
  double max_kv = 0;
  for (const auto t : o.tokens) max_kv = std::max(max_kv, decode_step(o, t).kv_bytes);
  const double allowance = o.kv_allowance_bytes >= 0 ? o.kv_allowance_bytes : max_kv;
  auto runner = gpu::StepRunner::create(o.device, o.weight_bytes, allowance);
  const gpu::GpuInfo info = runner->info();

  std::string why_not;
  auto power = gpu::PowerSampler::open(o.device, why_not, info.pci_bus_id);

  Json out;
  out["usable"] = true;
  out["gpu"] = gpu_json(info);
  out["buffer_bytes"] = runner->buffer_bytes();

  const double copy_bw = runner->measure_copy_bandwidth(o.bandwidth_bytes, o.repeats);
  const double read_bw = runner->measure_read_bandwidth(o.bandwidth_bytes, o.repeats);
  out["bandwidth"] = Json{{"bytes", o.bandwidth_bytes},
                          {"d2d_copy_bytes_per_s", copy_bw},
                          {"read_kernel_bytes_per_s", read_bw},
                          {"read_over_copy", copy_bw > 0 ? read_bw / copy_bw : 0.0},
                          {"read_over_hbm_peak", read_bw / o.hbm_bandwidth}};

  const double tensor = runner->measure_tensor_flops(o.tensor_flops, o.repeats);
  out["tensor"] = Json{{"flops", o.tensor_flops},
                       {"flops_per_s", tensor},
                       {"fraction_of_peak", tensor / o.peak_flops}};

  Json steps = Json::array();
  for (const auto t : o.tokens) {
    const StepCost cost = decode_step(o, t);
    (void)runner->execute(cost);  // warm-up
    std::vector<double> gpu_s, wall_s;
    gpu::StepResult last;
    for (int k = 0; k < std::max(o.repeats, 1); ++k) {
      last = runner->execute(cost);
      gpu_s.push_back(last.gpu_seconds);
      wall_s.push_back(last.wall_seconds);
    }
    const double measured = median(gpu_s);
    // Energy over steps run back to back for kEnergyWindow: NVML's energy counter advances in
    // coarse steps (a few ms of steps read 0 J or several times the board's power limit: seen on
    // an H200), so the difference of two readings means something only over a long interval.
    std::optional<double> energy_per_step;
    if (power) {
      const int n = energy_steps(median(wall_s));
      const auto e0 = power->energy_joules();
      for (int k = 0; k < n; ++k) (void)runner->execute(cost);
      const auto e1 = power->energy_joules();
      if (e0 && e1 && *e1 > *e0) energy_per_step = (*e1 - *e0) / n;
    }
    const double memory_seconds = (cost.weight_bytes + cost.kv_bytes) / (o.eta_bw * o.hbm_bandwidth);
    const double compute_seconds = (cost.linear_flops + cost.attention_flops) / (o.eta_f * o.peak_flops);
    Json step{{"tokens", t},
              {"bytes", last.bytes_read},
              {"flops", last.flops},
              {"bound", memory_seconds >= compute_seconds ? "memory" : "compute"},
              {"predicted_s", cost.predicted_seconds},
              {"measured_gpu_s", measured},
              {"measured_gpu_min_s", *std::min_element(gpu_s.begin(), gpu_s.end())},
              {"measured_gpu_max_s", *std::max_element(gpu_s.begin(), gpu_s.end())},
              {"measured_wall_s", median(wall_s)},
              {"measured_over_predicted", cost.predicted_seconds > 0 ? measured / cost.predicted_seconds : 0.0}};
    if (energy_per_step) step["energy_joules_per_step"] = *energy_per_step;
    steps.push_back(step);
  }
  out["roofline"] = Json{{"model",
                          Json{{"weight_bytes", o.weight_bytes},
                               {"params", o.params},
                               {"hbm_bandwidth_bytes_per_s", o.hbm_bandwidth},
                               {"peak_flops_per_s", o.peak_flops},
                               {"eta_bw", o.eta_bw},
                               {"eta_f", o.eta_f},
                               {"ctx_per_decode", o.ctx},
                               {"kv_bytes_per_token", o.kv_bytes_per_token}}},
                         {"repeats", o.repeats},
                         {"steps", steps}};
  if (power) {
    const auto w = power->power_watts();
    out["power"] = Json{{"available", true}, {"watts_at_end", w ? Json(*w) : Json(nullptr)}};
  } else {
    out["power"] = Json{{"available", false}, {"why_not", why_not}};
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Measures llmload-server's CUDA step runner: kernel bandwidth and flop/s, and decode "
               "step times against a roofline (prints JSON). Exit status 2 when no GPU is usable.",
               "llmload-gpu-bench"};
  app.add_option("--device", o.device, "CUDA device ordinal")->capture_default_str();
  app.add_option("--weight-bytes", o.weight_bytes, "W: weight bytes read per step")->capture_default_str();
  app.add_option("--params", o.params, "N: parameters (2*N flops per token)")->capture_default_str();
  app.add_option("--hbm-bandwidth", o.hbm_bandwidth, "BW: peak memory bandwidth, bytes/s")->capture_default_str();
  app.add_option("--peak-flops", o.peak_flops, "F: peak dense bf16 flop/s")->capture_default_str();
  app.add_option("--eta-bw", o.eta_bw, "achieved fraction of BW")->capture_default_str()->check(CLI::Range(1e-6, 1.0));
  app.add_option("--eta-f", o.eta_f, "achieved fraction of F")->capture_default_str()->check(CLI::Range(1e-6, 1.0));
  app.add_option("--ctx", o.ctx, "context tokens per decode (KV read per decode)")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--kv-bytes-per-token", o.kv_bytes_per_token, "KV bytes per context token")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--tokens", o.tokens, "decode tokens per step, comma-separated")->delimiter(',')->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--repeats", o.repeats, "timed runs per measurement (after one warm-up)")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--bandwidth-bytes", o.bandwidth_bytes, "bytes per bandwidth measurement")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--tensor-flops", o.tensor_flops, "flops per tensor measurement")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--kv-allowance-bytes", o.kv_allowance_bytes, "read buffer beyond W (default: the largest step's KV; capped at 80% of free memory)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  const gpu::Availability a = gpu::probe(o.device);
  if (!a.usable) {
    std::cerr << "llmload-gpu-bench: no usable GPU: " << a.reason << "\n";
    std::cout << Json{{"usable", false}, {"reason", a.reason}}.dump(2) << "\n";
    return 2;
  }
  try {
    std::cout << run(o).dump(2) << "\n";
  } catch (const std::exception& e) {
    std::cerr << "llmload-gpu-bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
