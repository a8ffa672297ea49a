#pragma once
// The points of `llmload sweep`: each offered load run with its trials (run_trials), the point's
// numbers gathered from its trials, and the sweep's artifact (sweep.json) and table. The capacity
// search (sweep_command.cpp, CapacityDriver) runs its probes as points of a Sweep.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/loadgen/scenario.hpp"
#include "probe_summary.hpp"

namespace llmload::app {

/// A load as the sweep's directories and tables write it ("8", "12.5").
std::string load_text(double v);

struct Point {
  double load = 0;
  std::string dir;
  nlohmann::json first;                   // the first trial's result (conditions)
  std::vector<nlohmann::json> entries;    // trial entries over every probe of this load
  nlohmann::json aggregate;               // the point's trials artifact
  ProbeColumn probe;            // --probe-rate: each trial's probe numbers
  // Per trial (issue 19), from its result.json: p99 TTFO when its requests reasoned first, and the
  // prefix-cache hit rate (usage, else the server's); the point shows their medians.
  std::vector<double> p99_ttfo_ms;
  std::vector<double> prefix_cache_hit_rate;
  std::vector<double> structured_invalid_rate;  // tool-call / structured-output invalid rate
};

class Sweep {
 public:
  Sweep(ScenarioConfig base, bool concurrency, const std::vector<std::string>& argv, nlohmann::json env)
      : base_(std::move(base)), concurrency_(concurrency), argv_(argv), env_(std::move(env)) {}

  /// Runs `trials` more trials at `load`; returns the new trials' entries (none when the run was
  /// stopped before its load: *exit_code says why).
  std::vector<nlohmann::json> run_point(double load, std::int64_t trials, int* exit_code,
                                        const std::function<void(ScenarioConfig&)>& adjust = {});
  /// sweep.json: every point, and the capacity answer (null without --find-capacity).
  nlohmann::json sweep_json(const nlohmann::json& capacity) const;
  /// Writes sweep.json into the output directory; whether it was written.
  bool write(const nlohmann::json& capacity) const;
  /// The table of the points (and the capacity) on stdout.
  void print_table(const nlohmann::json& capacity) const;

 private:
  void print_capacity(const nlohmann::json& c, const std::function<void(const std::string&)>& line) const;
  void print_point(const Point& p) const;

  ScenarioConfig base_;
  bool concurrency_;
  std::vector<std::string> argv_;
  nlohmann::json env_;
  std::map<double, Point> points_;
  std::string shared_reference_;  // --consistency: the reference pass every point is compared with
};

}  // namespace llmload::app
