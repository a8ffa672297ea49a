#include <utility>  // before Asio (Boost 1.74 + C++20)

#include "probe_run.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "llmload/analysis/probe_metrics.hpp"
#include "llmload/analysis/report.hpp"
#include "llmload/loadgen/net/driver.hpp"
#include "llmload/loadgen/pacer.hpp"
#include "llmload/loadgen/request_builder.hpp"
#include "llmload/loadgen/run_controller.hpp"
#include "stop_signal.hpp"

namespace llmload::app {
namespace {

using nlohmann::json;

// The unloaded reference's contents: the probe stream's items from kBaselineIndex on.
class BaselineWorkload final : public Workload {
 public:
  explicit BaselineWorkload(const ProbeStream& probes) : probes_(probes) {}
  std::optional<std::uint64_t> size() const override { return std::nullopt; }
  WorkItem item(std::uint64_t index) const override { return probes_.item(ProbeStream::kBaselineIndex + index); }
  json describe() const override { return {{"dataset", "probe baseline"}}; }

 private:
  const ProbeStream& probes_;
};

}  // namespace

std::vector<analysis::RequestRecord> run_probe_baseline(boost::asio::io_context& ioc, const Clock& clock,
                                                        Transport& transport, const ProbeStream& probes,
                                                        const BaseUrl& url, std::int64_t count) {
  if (count <= 0) return {};
  ScenarioConfig cfg = probes.config();
  cfg.num_requests = count;
  BaselineWorkload items(probes);
  const RequestBuilder builder(cfg, url.path, url.host_header(), &items);
  auto pacer = make_closed_loop_pacer(1, count, std::nullopt, WarmupSpec{});
  RunController controller(cfg, clock, *pacer, transport, builder);
  net::DriveOptions d;
  d.stop_requested = [] { return stop_signal() != 0; };
  d.on_signal = note_stop_signal;
  d.drain_timeout = std::chrono::seconds(1);
  d.hard_limit = kProbeBaselineLimit;
  net::drive(ioc, controller, d);
  install_stop_handler();  // Asio put the default action back
  return analysis::to_vector(controller.records());
}

json probe_conditions(const ScenarioConfig& cfg) {
  const ProbeConfig& p = cfg.probe;
  if (!p.enabled()) return nullptr;
  return {{"rate_per_s", p.rate},
          {"process", "poisson"},
          {"input_tokens", p.input_tokens},
          {"output_tokens", p.output_tokens},
          {"baseline_probes", p.baseline},
          {"model", cfg.model},
          {"sent_by", cfg.shard.sharded() ? json("shard 0, at the whole rate") : json("this run")},
          {"window", "from the measurement window's start until the load stops; probes intended outside the window "
                     "are left out"}};
}

json probe_section(const ScenarioConfig& cfg, const ProbeStream& probes, const analysis::Window& window,
                   const std::vector<analysis::RequestRecord>& baseline) {
  json s = analysis::probe_json(probes.results().summarize(window.start, window.end));
  s["settings"] = probe_conditions(cfg);
  json base = nullptr;
  json ratio = nullptr;
  if (!baseline.empty()) {
    const analysis::ProbeSummary b = analysis::summarize_probe_records(baseline);
    base = analysis::probe_json(b);
    base.erase("itl");  // the records alone carry no output events
    base["when"] = "before the load: one at a time, nothing else sent by this client";
    const json& t = s["ttft"];
    if (t.is_object() && b.ttft.count > 0 && b.ttft.p50_us > 0) {
      ratio = t["p50_ms"].get<double>() / (static_cast<double>(b.ttft.p50_us) / 1e3);
    }
  }
  s["baseline"] = base;
  s["ttft_p50_vs_baseline"] = ratio;
  s["about"] = "single small requests sent beside the load at their own Poisson schedule, measured apart: in none "
               "of this result's other numbers; latencies from t_send (docs/metrics.md, Probe stream)";
  return s;
}

std::string write_probes_file(const std::string& dir, const ProbeStream& probes,
                              const std::vector<analysis::RequestRecord>& baseline) {
  if (dir.empty()) return "";
  const std::filesystem::path path = std::filesystem::path(dir) / "probes.jsonl";
  std::ofstream f(path);
  auto line = [&](const analysis::RequestRecord& r, const char* phase) {
    json j = analysis::record_json(r);
    j["probe"] = true;
    j["phase"] = phase;
    f << j.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
  };
  for (const auto& r : baseline) line(r, "baseline");
  for (const auto& r : probes.results().records()) line(r, "load");
  f.flush();
  return f ? "" : fmt::format("writing {} failed", path.string());
}

}  // namespace llmload::app
