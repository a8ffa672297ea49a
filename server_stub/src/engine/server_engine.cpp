#include "llmload/server/engine/server_engine.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "llmload/server/gpu/power_sampler.hpp"
#include "llmload/server/gpu/step_runner.hpp"

namespace llmload::server {
namespace {

/// Steps run real kernels sized to the step (server_stub/gpu): the step takes what the GPU takes.
class GpuStepTimer final : public StepTimer {
 public:
  GpuStepTimer(std::unique_ptr<gpu::StepRunner> runner, std::unique_ptr<gpu::PowerSampler> power)
      : runner_(std::move(runner)), power_(std::move(power)) {
    if (power_) {
      if (const auto e = power_->energy_joules()) energy_at_start_ = *e;
    }
  }
  std::string_view name() const override { return "cuda"; }
  EngineClock::time_point run(const StepCost& cost, EngineClock::time_point /*start*/) override {
    (void)runner_->execute(cost);
    // Adapter loads are host-to-device copies, not kernels: the step waits for them as modelled.
    if (cost.lora_load_seconds > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(cost.lora_load_seconds, 3600.0)));
    }
    return EngineClock::now();
  }
  bool power(double& watts, double& joules) override {
    if (!power_) return false;
    const auto w = power_->power_watts();
    const auto e = power_->energy_joules();
    if (!w) return false;
    watts = *w;
    joules = e ? *e - energy_at_start_ : 0.0;
    return true;
  }

 private:
  std::unique_ptr<gpu::StepRunner> runner_;
  std::unique_ptr<gpu::PowerSampler> power_;
  double energy_at_start_ = 0;
};

std::unique_ptr<StepTimer> make_step_timer(const ServerConfig& config, const Profile& profile, std::string& device) {
  if (config.device == "cpu") {
    device = "cpu (roofline model)";
    return std::make_unique<RooflineStepTimer>();
  }
  const gpu::Availability available = gpu::probe(0);
  if (!available.usable) {
    if (config.device == "cuda") {
      throw std::runtime_error(fmt::format("--device cuda: no usable GPU ({}). Use --device auto or cpu to time "
                                           "steps with the CPU roofline model.",
                                           available.reason));
    }
    spdlog::info("--device auto: no usable GPU ({}); timing engine steps with the CPU roofline model",
                 available.reason);
    device = "cpu (roofline model; no usable GPU)";
    return std::make_unique<RooflineStepTimer>();
  }
  // The KV allowance: what the longest batch could read, capped by the runner at free memory.
  const double kv_allowance =
      static_cast<double>(profile.kv_cache_tokens()) * profile.model.kv_bytes_per_token();
  auto runner = gpu::StepRunner::create(0, profile.model.weight_bytes, kv_allowance);
  std::string why_not;
  auto power = gpu::PowerSampler::open(0, why_not, available.info ? available.info->pci_bus_id : std::string());
  if (!power) spdlog::info("GPU power and energy not reported: {}", why_not);
  const auto info = runner->info();
  device = fmt::format("cuda: {} (read buffer {:.1f} GB)", info.name, runner->buffer_bytes() / 1e9);
  return std::make_unique<GpuStepTimer>(std::move(runner), std::move(power));
}

}  // namespace

void MetricsStepObserver::on_step(const Step& step, EngineClock::time_point /*start*/, EngineClock::time_point end,
                                  const SchedulerStats& stats) {
  metrics_.set_scheduler_state(stats.running, stats.waiting, stats.kv_cache_usage());
  if (step.preemptions > 0) metrics_.add_preemptions(step.preemptions);
  if (step.prefix_queried_tokens > 0) metrics_.add_prefix_cache(step.prefix_queried_tokens, step.prefix_hit_tokens);
  if (step.prompt_tokens_computed > 0) metrics_.add_prompt_tokens(step.prompt_tokens_computed);
  std::int64_t generated = 0;
  for (const auto& e : step.events) generated += e.kind == StepEvent::Kind::kToken ? 1 : 0;
  if (generated > 0) metrics_.add_generation_tokens(generated);
  metrics_.observe_iteration_tokens(step.cost.tokens);
  if (lora_) {
    std::int64_t disk = 0;
    for (const auto& load : step.lora_loads) disk += load.from_disk ? 1 : 0;
    if (!step.lora_loads.empty()) metrics_.add_lora_loads(static_cast<std::int64_t>(step.lora_loads.size()), disk);
    note_loras(stats);
  }
  ++steps_since_sample_;
  tokens_since_sample_ += generated;
  if (!sampled_ || end - last_power_sample_ >= std::chrono::milliseconds(100)) {
    last_power_sample_ = end;
    double watts = 0;
    double joules = 0;
    if (timer_.power(watts, joules)) {
      metrics_.set_gpu_power(watts, joules);
      if (sampled_ && steps_since_sample_ > 0) {
        const double window = joules - joules_at_sample_;
        metrics_.set_gpu_energy_rates(window / static_cast<double>(steps_since_sample_),
                                      tokens_since_sample_ > 0 ? window / static_cast<double>(tokens_since_sample_)
                                                               : 0.0);
      }
      sampled_ = true;
      joules_at_sample_ = joules;
      steps_since_sample_ = 0;
      tokens_since_sample_ = 0;
    }
  }
}

void MetricsStepObserver::note_loras(const SchedulerStats& stats) {
  if (!lora_) return;
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  metrics_.set_lora_requests(lora_list(stats.running_loras), lora_list(stats.waiting_loras), now);
}

std::string MetricsStepObserver::lora_list(const std::vector<std::int32_t>& ids) const {
  std::string out;
  for (const auto id : ids) {
    if (!out.empty()) out += ',';
    const auto index = static_cast<std::size_t>(id - 1);
    out += index < lora_names_.size() ? lora_names_[index] : std::to_string(id);
  }
  return out;
}

SchedulerConfig scheduler_config(const Profile& p) {
  return SchedulerConfig{p.engine.max_num_seqs, p.engine.max_num_batched_tokens, p.engine.block_size, p.num_blocks(),
                         p.engine.enable_prefix_caching, EngineLoraConfig{}};
}

EngineLoraConfig engine_lora_config(const LoraConfig& lora, const Profile& profile) {
  EngineLoraConfig out;
  if (!lora.enabled) return out;
  out.max_loras = lora.max_loras;
  out.max_cpu_loras = lora.max_cpu_loras;
  out.adapter_parameters = lora_adapter_parameters(profile.model, lora.max_lora_rank);
  out.adapter_bytes = 2.0 * out.adapter_parameters;  // bf16
  out.load_seconds = lora.load_time ? static_cast<double>(lora.load_time->count()) / 1e9
                                    : default_lora_load_seconds(out.adapter_bytes);
  out.disk_load_seconds = lora.disk_load_time ? static_cast<double>(lora.disk_load_time->count()) / 1e9
                                              : default_lora_disk_load_seconds(out.adapter_bytes);
  for (std::size_t i = 0; i < lora.modules.size(); ++i) out.preloaded.push_back(static_cast<std::int32_t>(i + 1));
  return out;
}

ServerEngine make_server_engine(const ServerConfig& config, ServerMetrics& metrics) {
  const Profile profile = config.profile ? *config.profile : load_profile(std::string(kDefaultProfile));
  std::string device;
  auto timer = make_step_timer(config, profile, device);
  ServerEngine engine;
  std::vector<std::string> lora_names;
  for (const auto& m : config.lora.modules) lora_names.push_back(m.name);
  engine.observer = std::make_unique<MetricsStepObserver>(metrics, *timer, config.lora.enabled, lora_names);
  EngineRuntimeOptions options;
  options.scheduler = scheduler_config(profile);
  options.scheduler.lora = engine_lora_config(config.lora, profile);
  if (config.lora.enabled) metrics.enable_lora(config.lora.max_loras);
  options.max_waiting = config.max_waiting;
  engine.runtime = std::make_unique<EngineRuntime>(options, CostModel(profile), std::move(timer), engine.observer.get());
  engine.description = fmt::format(
      "profile '{}' ({}), KV cache {} tokens ({} blocks of {}), max_num_seqs {}, max_num_batched_tokens {}, "
      "prefix caching {}, steps timed on {}",
      profile.name, profile.source, profile.kv_cache_tokens(), profile.num_blocks(), profile.engine.block_size,
      profile.engine.max_num_seqs, profile.engine.max_num_batched_tokens,
      profile.engine.enable_prefix_caching ? "on" : "off", device);
  if (config.lora.enabled) {
    const auto& l = options.scheduler.lora;
    engine.description += fmt::format(
        "; LoRA: {} adapter(s), max_loras {}, max_cpu_loras {}, rank {} ({:.1f} MB each), load {:.1f} ms from CPU "
        "memory, +{:.1f} ms from disk",
        config.lora.modules.size(), l.max_loras, l.max_cpu_loras, config.lora.max_lora_rank, l.adapter_bytes / 1e6,
        l.load_seconds * 1e3, l.disk_load_seconds * 1e3);
  }
  return engine;
}

}  // namespace llmload::server
