#include "merge.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmload/analysis/hdr_codec.hpp"
#include "llmload/analysis/html_report.hpp"
#include "llmload/analysis/report.hpp"
#include "llmload/analysis/slo.hpp"
#include "llmload/common/process_limits.hpp"
#include "llmload/common/temp_file.hpp"
#include "llmload/common/version.hpp"
#include "llmload/loadgen/record_store.hpp"
#include "correctness.hpp"
#include "probe_summary.hpp"
#include "run_command.hpp"

namespace llmload::app {
namespace {

namespace fs = std::filesystem;
using analysis::MergeError;
using nlohmann::json;

std::ifstream open_in(const fs::path& file, const std::string& dir) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw MergeError(fmt::format("'{}' has no readable {}: give the directory a shard wrote with `llmload run "
                                 "--shard-count N --output DIR`{}",
                                 dir, file.filename().string(),
                                 fs::exists(dir) ? "" : " (the directory does not exist)"));
  }
  return in;
}

// A shard's result.json, its latency.hlog, and that its requests.jsonl opens: what the check of
// the set needs, read before any record is.
analysis::ShardArtifact read_shard_files(const std::string& dir) {
  analysis::ShardArtifact a;
  a.name = dir;
  const fs::path root(dir);
  {
    auto in = open_in(root / "result.json", dir);
    std::stringstream ss;
    ss << in.rdbuf();
    a.result = json::parse(ss.str(), nullptr, false);
    if (a.result.is_discarded()) throw MergeError(fmt::format("'{}': result.json is not valid JSON", dir));
  }
  open_in(root / "requests.jsonl", dir);
  a.records_file = (root / "requests.jsonl").string();
  {
    auto in = open_in(root / "latency.hlog", dir);
    try {
      a.hlog = analysis::read_hlog(in);
    } catch (const analysis::HdrCodecError& e) {
      throw MergeError(fmt::format("'{}': latency.hlog: {}", dir, e.what()));
    }
  }
  return a;
}

// requests.jsonl's JSON is parsed once, a line at a time, into a compact store (a RecordStore:
// spilled to a temporary file, so memory stays flat in the run's length); the merge's passes over
// the records (the metrics, the per-shard breakdown, correctness, the report) read the store.
// A store that can no longer keep them as it should (no temporary file can be written, or the
// disk is full: it would hold them in memory) is let go at once, and every pass parses the file
// instead (ShardArtifact::loaded unset): slower, but memory stays flat.
void load_shard_records(analysis::ShardArtifact& a) {
  auto store = std::make_shared<RecordStore>(/*keep_chunks=*/false);
  bool named = true;
  analysis::for_each_shard_record(a, [&](const analysis::RequestRecord& r, bool names_shard) {
    if (store != nullptr) {
      store->append(r, {});
      if (store->problem()) store.reset();
    }
    named = named && names_shard;
  });
  if (store != nullptr) store->finish_appending();  // filled: no writer thread per shard while the merge reads
  if (store != nullptr && !store->problem()) a.loaded = std::move(store);
  a.lines_name_shard = named;
}

// Runs `work(i)` for i in [0, n) on up to one thread per usable core; the first i (in order) that threw
// is rethrown, whatever the threads' order.
void for_each_in_parallel(std::size_t n, const std::function<void(std::size_t)>& work) {
  std::vector<std::exception_ptr> failed(n);
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        work(i);
      } catch (...) {
        failed[i] = std::current_exception();
      }
    }
  };
  const std::size_t threads = std::min<std::size_t>(n, static_cast<std::size_t>(usable_cores()));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  for (const auto& e : failed) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace

std::vector<analysis::ShardArtifact> read_shard_artifacts(const std::vector<std::string>& dirs) {
  // First every shard's small files, and whether the shards are one run's complete set: a wrong
  // or missing shard is reported before any record is parsed. Then the records, each shard on a
  // thread of its own (as many at once as there are cores): parsing the lines is most of a
  // merge's time, and a shard's store is its own.
  std::vector<analysis::ShardArtifact> out(dirs.size());
  for_each_in_parallel(dirs.size(), [&](std::size_t i) { out[i] = read_shard_files(dirs[i]); });
  analysis::check_shard_set(out);
  for_each_in_parallel(out.size(), [&](std::size_t i) { load_shard_records(out[i]); });
  return out;
}

// Graded shards (issue 18): the accuracy of every shard's graded records together, with the
// --slo accuracy verdict folded into the merged verdict, and the scorecard.
void add_merged_correctness(analysis::MergedArtifact& m, const analysis::MergedRecords& all) {
  const analysis::RecordRange records(all);
  if (std::none_of(records.begin(), records.end(), [](const analysis::RequestRecord& r) { return !r.grader.empty(); })) {
    return;
  }
  ScenarioConfig cfg;
  if (const json& spec = m.result.value("slo", json()); spec.is_object() && spec.value("spec", json()).is_string()) {
    cfg.slo = analysis::parse_slo(spec["spec"].get<std::string>());
    // An SLO of accuracy only has no latency verdict to fold the accuracy's into.
    if (cfg.slo->empty()) m.result.erase("slo");
  }
  add_accuracy(m.result, cfg, records, m.metrics);
  m.result["scorecard"] = scorecard(m.result);
  m.console += correctness_report(m.result);
}

int merge_command(const std::vector<std::string>& dirs, const std::string& output, bool print_report,
                  bool fail_on_slo, const MergeExtras& extras) {
  raise_open_file_limit();  // each shard's store holds a temporary file while the merge runs
  if (!temp_dir().usable) {
    fmt::print(stderr, "llmload: note: no temporary directory can be written ($TMPDIR, /tmp, /var/tmp): every pass "
                       "parses the shards' requests.jsonl again (slower; memory stays flat); set TMPDIR to a "
                       "writable directory on disk to parse them once\n");
  }
  analysis::MergedArtifact merged;
  std::vector<analysis::ShardArtifact> shards;
  std::string probe_dir;  // shard 0's, when it sent a probe stream
  try {
    if (!output.empty()) {
      for (const auto& d : dirs) {
        std::error_code ec;
        if (fs::exists(output) && fs::equivalent(fs::path(d), fs::path(output), ec)) {
          throw MergeError(fmt::format("--output '{}' is one of the shard directories: the merge would overwrite that "
                                       "shard; choose another directory (e.g. the shards' parent)",
                                       output));
        }
      }
    }
    if (!output.empty() && extras.keep_existing_results) {
      for (const char* f : {"result.json", "requests.jsonl", "latency.hlog"}) {
        std::error_code ec;
        if (fs::exists(fs::path(output) / f, ec)) {
          throw MergeError(fmt::format("--output '{}' already holds a run's {}: the merge would replace it; choose "
                                       "another directory, or add --overwrite",
                                       output, f));
        }
      }
    }
    shards = read_shard_artifacts(dirs);
    merged = analysis::merge_artifacts(shards);
    add_merged_correctness(merged, analysis::MergedRecords(shards));
    probe_dir = merge_probe_section(merged, shards, dirs);
    if (fail_on_slo && !(merged.result.contains("slo") && merged.result["slo"].is_object())) {
      throw MergeError("--fail-on-slo needs an SLO to gate on, and the shards were run without --slo: run them "
                       "with --slo (e.g. --slo ttft:500ms,tpot:50ms), or merge without --fail-on-slo");
    }
  } catch (const MergeError& e) {
    fmt::print(stderr, "llmload merge: error: {}\n", e.what());
    return kExitConfig;
  }
  if (extras.amend) extras.amend(merged.result);
  if (print_report) {
    fmt::print("{}", merged.console);
    std::fflush(stdout);
  }
  // What the merged run says: measured nothing (6), then the SLO gate (3-5).
  auto verdict_code = [&] { return slo_gate(fail_on_slo, merged.result, nothing_measured_gate(merged.result, kExitOk)); };
  if (output.empty()) return verdict_code();
  std::error_code ec;
  fs::create_directories(output, ec);
  if (ec) {
    fmt::print(stderr, "llmload merge: error: cannot create --output directory '{}': {}\n", output, ec.message());
    return kExitFailure;
  }
  const fs::path dir(output);
  bool ok = true;
  {
    std::ofstream f(dir / "result.json");
    f << merged.result.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
    ok = ok && static_cast<bool>(f);
  }
  {
    std::ofstream f(dir / "requests.jsonl");
    try {
      analysis::MergedRecords(shards).write_jsonl(f);
    } catch (const MergeError& e) {
      fmt::print(stderr, "llmload merge: error: {}\n", e.what());
      ok = false;
    }
    ok = ok && static_cast<bool>(f);
  }
  {
    std::ofstream f(dir / "latency.hlog");
    analysis::write_latency_hlog(f, merged.metrics, merged.start_epoch_s,
                                 fmt::format("llmload {} (merged {} shards)", kVersion, dirs.size()));
    ok = ok && static_cast<bool>(f);
  }
  if (!probe_dir.empty()) ok = copy_probes_file(probe_dir, output) && ok;
  if (!ok) {
    fmt::print(stderr, "llmload merge: error: writing the merged results to '{}' failed (disk full?)\n", output);
    return kExitFailure;
  }
  if (extras.notes) {
    fmt::print(stderr, "llmload merge: {} shards merged into {}/{{result.json,requests.jsonl,latency.hlog}}\n",
               dirs.size(), output);
  }
  // The report (report.html, summary.md, summary.csv) of the merged artifact; a failure here loses
  // nothing measured, so it is a warning.
  try {
    // The merged requests.jsonl holds the shards' records in shard order: the report reads them
    // from the shards' stores instead of parsing the file it was just written to.
    const analysis::MergedRecords records(shards);
    analysis::HtmlReportOptions report_options;
    report_options.run_records = &records;
    analysis::write_report(output, report_options);
    if (extras.notes) fmt::print(stderr, "llmload merge: report written to {}/{{report.html,summary.md,summary.csv}}\n", output);
  } catch (const std::exception& e) {
    fmt::print(stderr, "llmload merge: warning: report not written: {}\n", e.what());
  }
  return verdict_code();
}

}  // namespace llmload::app
