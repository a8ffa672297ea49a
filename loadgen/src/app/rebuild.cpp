#include "rebuild.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "file_write.hpp"
#include "run_result.hpp"
#include "llmload/analysis/artifact_merge.hpp"
#include "llmload/analysis/html_report.hpp"
#include "llmload/analysis/jsonl_records.hpp"
#include "llmload/analysis/report.hpp"
#include "llmload/analysis/steady_state.hpp"
#include "llmload/analysis/token_accounting.hpp"
#include "llmload/common/duration.hpp"
#include "llmload/common/version.hpp"
#include "llmload/loadgen/record_store.hpp"
#include "run_command.hpp"
#include "run_journal.hpp"

namespace llmload::app {
namespace {

using analysis::ReportError;
using analysis::RequestRecord;
using nlohmann::json;
namespace fs = std::filesystem;

json seconds_or_null(std::optional<Nanos> d) { return d ? json(to_seconds(*d)) : json(nullptr); }

std::optional<Nanos> seconds_at(const json& j, const char* key) {
  const json& v = j.value(key, json());
  if (!v.is_number()) return std::nullopt;
  return std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(v.get<double>()));
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ReportError(fmt::format("{}: cannot be read", path.string()));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The judging rules back from run-in-progress.json.
struct Judging {
  analysis::ValidityOptions validity;
  analysis::LatencyView view = analysis::LatencyView::kService;
  std::optional<analysis::SloSpec> slo;
  std::string warmup_method = "none";
  std::int64_t warmup_requests = 0;
  Nanos warmup_duration{0};
  std::optional<Nanos> duration;
};

Judging judging_from(const json& j, const fs::path& path) {
  if (!j.is_object()) throw ReportError(fmt::format("{}: no \"judging\" object", path.string()));
  Judging g;
  try {
    g.view = j.value("view", std::string("service")) == "response" ? analysis::LatencyView::kResponse
                                                                    : analysis::LatencyView::kService;
    if (const json& s = j.value("slo", json()); s.is_string()) g.slo = analysis::parse_slo(s.get<std::string>());
    const json& v = j.value("validity", json::object());
    g.validity.max_error_rate = v.value("max_error_rate", g.validity.max_error_rate);
    g.validity.percentiles = v.value("percentiles", std::vector<double>{});
    g.validity.min_duration = seconds_at(v, "min_duration_s");
    if (const json& m = v.value("min_requests", json()); m.is_number_integer()) g.validity.min_requests = m.get<std::int64_t>();
    g.validity.max_duration = seconds_at(v, "max_duration_s");
    g.validity.check_samples = v.value("check_samples", true);
    if (const json& m = v.value("max_inflight", json()); m.is_number_integer()) g.validity.max_inflight = m.get<std::int64_t>();
    const json& w = j.value("warmup", json::object());
    g.warmup_method = w.value("method", std::string("none"));
    g.warmup_requests = w.value("requests", std::int64_t{0});
    g.warmup_duration = seconds_at(w, "duration_s").value_or(Nanos(0));
    g.duration = seconds_at(j, "duration_s");
  } catch (const std::exception& e) {
    throw ReportError(fmt::format("{}: \"judging\" cannot be read: {}", path.string(), e.what()));
  }
  return g;
}

// requests.jsonl of a run that did not finish, read a record at a time (the file of a long run
// need not fit in memory): every record not warmup is measured, and once --warmup auto has found
// the steady state, those released before it are warmup.
class RebuiltRecords : public analysis::RecordSource {
 public:
  explicit RebuiltRecords(const analysis::JsonlRecordSource& file) : file_(file) {}
  void cut_before(Nanos t) { cut_ = t; }
  std::size_t size() const override { return file_.size(); }
  std::unique_ptr<analysis::RecordCursor> open() const override {
    return std::make_unique<Cursor>(file_.open(), cut_);
  }

 private:
  class Cursor : public analysis::RecordCursor {
   public:
    Cursor(std::unique_ptr<analysis::RecordCursor> in, std::optional<Nanos> cut) : in_(std::move(in)), cut_(cut) {}
    bool next(RequestRecord& r) override {
      if (!in_->next(r)) return false;
      if (cut_ && !r.warmup && r.t_intended < *cut_) r.warmup = true;
      r.in_window = !r.warmup;
      return true;
    }

   private:
    std::unique_ptr<analysis::RecordCursor> in_;
    std::optional<Nanos> cut_;
  };
  const analysis::JsonlRecordSource& file_;
  std::optional<Nanos> cut_;
};

// The window of a run that never finished: from the first measured request's intended time to
// the last completion recorded (at most --duration after its start); --warmup auto is detected
// over it as a finished run would, and the records before the steady state relabeled.
analysis::Window rebuilt_window(RebuiltRecords& records, const Judging& g) {
  analysis::Window w;
  w.warmup_method = g.warmup_method;
  w.warmup_requests = g.warmup_requests;
  w.warmup_duration = g.warmup_duration;
  std::optional<Nanos> start;
  std::optional<Nanos> last_done;
  for (const auto& r : analysis::RecordRange(records)) {
    if (r.warmup) continue;
    start = start ? std::min(*start, r.t_intended) : r.t_intended;
    if (r.t_done) last_done = last_done ? std::max(*last_done, *r.t_done) : *r.t_done;
  }
  if (!start) {
    w.method = "rebuilt from requests.jsonl: no measured request was recorded";
    return w;
  }
  w.start = *start;
  w.end = std::max(*start, last_done.value_or(*start));
  w.drain_end = last_done;
  w.method = "rebuilt from requests.jsonl of a run that did not finish: from the first measured request to the last "
             "completion recorded";
  if (g.duration && w.end > w.start + *g.duration) {
    w.end = w.start + *g.duration;
    w.method += " (at most --duration)";
  }
  if (g.warmup_method == "auto") {
    analysis::WarmupDetection d = analysis::detect_warmup(analysis::RecordRange(records), w.end);
    if (d.found && d.start > w.start) {
      const Nanos cut = std::min(d.start, w.end);
      records.cut_before(cut);
      w.start = cut;
      w.method += fmt::format("; warmup auto: from the start of steady state at {:.3f} s", to_seconds(cut));
    }
    w.detection = std::move(d);
  }
  return w;
}

// The output events' times are not in requests.jsonl: a record's output tokens are spread evenly
// over its output events from the first to the last. Enough for the tokens that arrived in the
// window (throughput); no inter-token latency is taken from them.
std::vector<analysis::ChunkArrival> spread_output(const RequestRecord& r) {
  std::vector<analysis::ChunkArrival> out;
  if (!r.t_first || r.output_tokens <= 0) return out;
  const Nanos last = r.t_last.value_or(*r.t_first);
  const std::int64_t events = std::clamp<std::int64_t>(r.output_events, 1, r.output_tokens);
  for (std::int64_t k = 0; k < events; ++k) {
    const Nanos t = events == 1 ? last : *r.t_first + (last - *r.t_first) * k / (events - 1);
    const std::int64_t tokens = r.output_tokens * (k + 1) / events - r.output_tokens * k / events;
    out.push_back({t, tokens});
  }
  return out;
}

void write_or_throw(const fs::path& path, const std::string& content) {
  if (auto e = write_file_atomically(path, content)) throw analysis::ReportWriteError(*e);
}

}  // namespace

json judging_json(const analysis::ValidityOptions& v, analysis::LatencyView view,
                  const std::optional<analysis::SloSpec>& slo, const WarmupSpec& warmup, std::optional<Nanos> duration) {
  return {
      {"view", std::string(to_string(view))},
      {"slo", slo && !slo->empty() ? json(slo->to_string()) : json(nullptr)},
      {"duration_s", seconds_or_null(duration)},
      {"warmup",
       {{"method", warmup.automatic ? "auto" : warmup.by_time() ? "time" : warmup.requests > 0 ? "requests" : "none"},
        {"requests", warmup.requests},
        {"duration_s", to_seconds(warmup.duration)}}},
      {"validity",
       {{"max_error_rate", v.max_error_rate},
        {"percentiles", v.percentiles},
        {"min_duration_s", seconds_or_null(v.min_duration)},
        {"min_requests", v.min_requests ? json(*v.min_requests) : json(nullptr)},
        {"max_duration_s", seconds_or_null(v.max_duration)},
        {"check_samples", v.check_samples},
        {"max_inflight", v.max_inflight ? json(*v.max_inflight) : json(nullptr)}}},
  };
}

std::optional<RebuildOutcome> rebuild_unfinished_run(const std::string& dir) {
  const fs::path root(dir);
  std::error_code ec;
  const fs::path marker = root / kInProgressFile;
  if (!fs::exists(marker, ec) || fs::exists(root / "result.json", ec)) return std::nullopt;
  const json in_progress = json::parse(read_text(marker), nullptr, false);
  if (!in_progress.is_object()) throw ReportError(fmt::format("{}: not a JSON object", marker.string()));
  const Judging g = judging_from(in_progress.value("judging", json()), marker);
  if (!fs::exists(root / "requests.jsonl", ec)) {
    throw ReportError(fmt::format("'{}' holds {} but no requests.jsonl: the run ended before any request completed, "
                                  "and there is nothing to rebuild",
                                  dir, kInProgressFile));
  }
  std::optional<analysis::JsonlRecordSource> file;
  try {
    // Parsed once, kept compact: the window, the metrics and their passes read the store.
    file.emplace((root / "requests.jsonl").string(), compact_record_keeper());
  } catch (const analysis::MergeError& e) {
    throw ReportError(fmt::format("{}: {}", (root / "requests.jsonl").string(), e.what()));
  } catch (const analysis::RecordFileError& e) {
    throw ReportError(e.what());
  }
  RebuiltRecords source(*file);
  const analysis::RecordRange records(source);
  const analysis::Window window = rebuilt_window(source, g);
  analysis::MetricsAccumulator acc;
  for (const auto& r : records) acc.add(r, spread_output(r), /*itl=*/false);
  const analysis::RunMetrics metrics =
      acc.finalize(window, g.view == analysis::LatencyView::kResponse, g.slo, g.view, records, g.validity);

  json result = analysis::metrics_json(metrics);
  // No inter-token latency without the events' times: null, not a 0 that reads as a measurement.
  for (auto& [key, value] : result.items()) {
    if (key.size() > 7 && key.compare(key.size() - 7, 7, "_itl_ms") == 0) value = nullptr;
  }
  if (result.contains("latency") && result["latency"].is_object()) {
    for (const char* key : {"itl", "itl_event"}) {
      if (result["latency"].contains(key)) result["latency"][key] = nullptr;
    }
  }
  result["schema_version"] = kSchemaVersion;
  result["artifact"] = "run";
  result["conditions"] = in_progress.value("conditions", json::object());
  result["tokens"].update(analysis::token_accounting(records));
  const json& load = in_progress.value("load", json::object());
  result["load"]["offered_rate"] = load.value("offered_rate", json());
  result["load"]["offered_concurrency"] = load.value("offered_concurrency", json());
  result["interrupted"] = true;
  result["incomplete_files"] = nullptr;
  for (const char* key : {"sequential", "stages", "max_in_flight", "client_cpu", "connections_opened", "server_metrics",
                          "overload", "cost"}) {
    result[key] = nullptr;
  }
  const json& scenario = result["conditions"].value("scenario", json::object());
  result["non_streaming_note"] =
      scenario.value("stream", true) ? json(nullptr) : json(kNonStreamingNote);
  result["rebuilt"] = {
      {"from", json::array({"requests.jsonl", kInProgressFile})},
      {"reason", "the run did not finish (killed, crashed, or its machine was lost): result.json was rebuilt from the "
                 "requests it recorded"},
      {"requests", records.size()},
      {"cut_off_line", file->cut_line() ? json(*file->cut_line()) : json(nullptr)},
      {"not_rebuilt",
       {"inter-token latency (ITL): requests.jsonl has no per-event times", "sequential looks", "per-stage results",
        "max_in_flight", "client_cpu", "connections_opened", "server_metrics", "overload", "cost"}},
  };

  const double start_epoch_s = result["conditions"].value("start_epoch_s", 0.0);
  std::ostringstream hlog;
  analysis::write_latency_hlog(hlog, metrics, start_epoch_s, fmt::format("llmload {} (rebuilt)", kVersion));
  write_or_throw(root / "latency.hlog", hlog.str());
  write_or_throw(root / "result.json", result.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  fs::remove(marker, ec);
  return RebuildOutcome{records.size(), file->cut_line(), window.method};
}

}  // namespace llmload::app
