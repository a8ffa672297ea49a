// The probe stream (--probe-rate): its schedule, its validation, and that probes stay out of the
// load's records, metrics and concurrency slots.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "fake_server.hpp"
#include "llmload/analysis/probe_metrics.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/pacer.hpp"
#include "llmload/loadgen/probe_stream.hpp"
#include "llmload/loadgen/request_builder.hpp"
#include "llmload/loadgen/run_controller.hpp"
#include "settings.hpp"

namespace llmload::probe_test {

using namespace std::chrono_literals;
using testing::FakeServer;
using testing::Script;

// A run with a probe stream on the fake server: probes are told apart by their max_tokens.
struct ProbeHarness {
  ProbeHarness(ScenarioConfig c, FakeServer::ScriptFn fn) : cfg(std::move(c)), server(clock, std::move(fn)) {
    cfg.model = "m";
    cfg.validate();
    pacer = make_pacer(cfg);
    builder = std::make_unique<RequestBuilder>(cfg, "", "h");
    ctl = std::make_unique<RunController>(cfg, clock, *pacer, server, *builder);
    probes = std::make_unique<ProbeStream>(cfg, "", "h", TokenModel::builtin());
    ctl->set_probe_stream(probes.get());
  }
  analysis::RunMetrics run() {
    server.run(*ctl);
    EXPECT_TRUE(ctl->finished());
    return ctl->metrics();
  }
  std::size_t probe_requests() const {
    return static_cast<std::size_t>(std::count_if(server.requests.begin(), server.requests.end(), [](const HttpRequest& r) {
      return r.body.find("\"max_tokens\":7") != std::string::npos;
    }));
  }
  ScenarioConfig cfg;
  ManualClock clock;
  FakeServer server;
  std::unique_ptr<Pacer> pacer;
  std::unique_ptr<RequestBuilder> builder;
  std::unique_ptr<RunController> ctl;
  std::unique_ptr<ProbeStream> probes;
};

ScenarioConfig closed_loop_with_probes(std::int64_t concurrency, Nanos duration, double probe_rate) {
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kConcurrency;
  cfg.concurrency = concurrency;
  cfg.duration = duration;
  cfg.probe.rate = probe_rate;
  cfg.probe.output_tokens = 7;
  cfg.probe.input_tokens = 5;
  return cfg;
}

std::string config_error(ScenarioConfig cfg) {
  try {
    cfg.validate();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string setting_error(const std::string& name, const std::string& value) {
  ScenarioConfig cfg;
  try {
    app::apply_setting(name, value, "--" + name, cfg);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace llmload::probe_test

namespace llmload {
using namespace probe_test;

TEST(ProbeSchedule, SeededPoissonAtTheRate) {
  ProbeSchedule a(2.0, 42), b(2.0, 42), c(2.0, 43);
  const TimePoint t0(std::chrono::seconds(100));
  a.begin(t0);
  b.begin(t0);
  c.begin(t0);
  bool differs = false;
  for (int i = 0; i < 5000; ++i) {
    EXPECT_EQ(a.next(), b.next());
    differs = differs || a.next() != c.next();
    EXPECT_GT(a.next(), t0);
    a.advance();
    b.advance();
    c.advance();
  }
  EXPECT_TRUE(differs);
  // 5,000 exponential gaps of mean 0.5 s: their mean is within 5% (about 3.5 standard errors).
  const double mean_gap = std::chrono::duration<double>(a.next() - t0).count() / 5000;
  EXPECT_NEAR(mean_gap, 0.5, 0.025);
}

TEST(ProbeStream, ProbesAreOwnPromptsOfTheProbeLengthsToTheFirstModel) {
  ScenarioConfig cfg;
  cfg.model = "first";
  cfg.models = {"first", "second"};
  cfg.probe.rate = 1;
  cfg.probe.input_tokens = 6;
  cfg.probe.output_tokens = 3;
  ProbeStream p(cfg, "", "h", TokenModel::builtin());
  const ProbeRelease a = p.make(0, 0ns);
  const ProbeRelease b = p.make(1, 0ns);
  EXPECT_NE(a.http.body, b.http.body);
  EXPECT_NE(a.http.body.find("\"max_tokens\":3"), std::string::npos);
  EXPECT_NE(a.http.body.find("\"model\":\"first\""), std::string::npos);
  EXPECT_EQ(a.record.requested_input_tokens, 6);
  EXPECT_EQ(p.item(0).prompt, ProbeStream(cfg, "", "h", TokenModel::builtin()).item(0).prompt);  // seeded
  EXPECT_NE(p.item(0).prompt, p.item(ProbeStream::kBaselineIndex).prompt);
}

TEST(ProbeStream, ProbesStayOutOfTheLoadAndItsSlots) {
  ProbeHarness h(closed_loop_with_probes(2, 20s, 2.0), [](std::uint64_t, TimePoint) {
    Script s;
    s.ttft = 40ms;
    s.itl = 10ms;
    s.tokens = 4;
    return s;
  });
  const analysis::RunMetrics m = h.run();
  const std::size_t probes = h.probe_requests();
  EXPECT_GT(probes, 20u);  // about 40 in 20 s
  EXPECT_LT(probes, 70u);
  // Every record is the load's: the probes are in the probe stream's results only.
  for (const auto& r : h.ctl->records()) EXPECT_EQ(r.requested_output_tokens, h.cfg.output_tokens);
  EXPECT_EQ(h.ctl->records().size() + probes, h.server.requests.size());
  EXPECT_EQ(static_cast<std::size_t>(m.requests), h.ctl->records().size());
  EXPECT_EQ(h.probes->results().records().size(), probes);
  // The load kept its 2 slots: no probe took one (and the load's own count never saw them).
  EXPECT_EQ(h.ctl->max_in_flight(), 2u);
  EXPECT_GT(h.server.max_in_flight, 2);
  const analysis::ProbeSummary s = h.probes->results().summarize(m.window.start, m.window.end);
  EXPECT_GT(s.measured, 0);
  EXPECT_EQ(s.failed, 0);
  EXPECT_EQ(s.ttft.count, s.completed);
  EXPECT_NEAR(static_cast<double>(s.ttft.p50_us), 40'000, 100);
  EXPECT_GT(s.itl.count, 0);
}

TEST(ProbeStream, ProbesGoOutOnlyInTheMeasurementWindow) {
  ScenarioConfig cfg = closed_loop_with_probes(1, 10s, 5.0);
  cfg.warmup.duration = 3s;
  ProbeHarness h(cfg, [](std::uint64_t, TimePoint) { return Script{}; });
  const analysis::RunMetrics m = h.run();
  ASSERT_FALSE(h.probes->results().records().empty());
  for (const auto& r : h.probes->results().records()) {
    EXPECT_GE(r.t_intended, m.window.start);
    EXPECT_LE(r.t_intended, m.window.end);
  }
  EXPECT_GE(m.window.start, 3s);
}

TEST(ProbeStream, ANumberOfRequestsRunStopsItsProbesWithTheLoad) {
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kSingleStream;
  cfg.num_requests = 20;
  cfg.probe.rate = 10;
  cfg.probe.output_tokens = 7;
  ProbeHarness h(cfg, [](std::uint64_t, TimePoint) { return Script{}; });
  h.run();
  EXPECT_EQ(h.ctl->records().size(), 20u);
  // The load lasts about 20 x 80 ms: about 16 probes, and none once it is over.
  const auto load = analysis::to_vector(h.ctl->records());
  const Nanos load_end = std::max_element(load.begin(), load.end(), [](const auto& a, const auto& b) {
                           return *a.t_done < *b.t_done;
                         })->t_done.value();
  for (const auto& r : h.probes->results().records()) EXPECT_LE(r.t_intended, load_end);
}

TEST(ProbeSummary, CountsOutcomesAndKeepsTheWindow) {
  analysis::ProbeAccumulator acc;
  auto rec = [](Nanos intended, analysis::ErrorClass e) {
    analysis::RequestRecord r;
    r.t_intended = intended;
    r.t_send = intended;
    r.t_first = intended + 30ms;
    r.t_last = intended + 60ms;
    r.output_tokens = 4;
    r.error = e;
    return r;
  };
  acc.add(rec(1s, analysis::ErrorClass::kNone), {});
  acc.add(rec(2s, analysis::ErrorClass::kHttpStatus), {});
  acc.add(rec(3s, analysis::ErrorClass::kStoppedEarly), {});
  acc.add(rec(9s, analysis::ErrorClass::kNone), {});  // outside the window
  const analysis::ProbeSummary s = acc.summarize(500ms, 5s);
  EXPECT_EQ(s.sent, 4);
  EXPECT_EQ(s.measured, 3);
  EXPECT_EQ(s.completed, 1);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.stopped_early, 1);
  EXPECT_EQ(s.errors_by_class.at("http_status"), 1);
  EXPECT_EQ(s.ttft.count, 1);
  EXPECT_NEAR(static_cast<double>(s.tpot.p50_us), 10'000, 10);  // HdrHistogram: 3 significant digits
  const nlohmann::json j = analysis::probe_json(s);
  EXPECT_NEAR(j["ttft"]["p50_ms"].get<double>(), 30.0, 0.03);
  EXPECT_TRUE(j["itl"].is_null());
}

TEST(ProbeValidation, BadRatesAndSizesNameTheFlagAndTheFix) {
  EXPECT_NE(setting_error("probe-rate", "0").find("above 0"), std::string::npos);
  EXPECT_NE(setting_error("probe-rate", "-1").find("--probe-rate"), std::string::npos);
  EXPECT_NE(setting_error("probe-rate", "fast").find("--probe-rate"), std::string::npos);
  EXPECT_NE(setting_error("probe-input-tokens", "0").find("--probe-input-tokens"), std::string::npos);

  ScenarioConfig too_high;
  too_high.num_requests = 10;
  too_high.probe.rate = 50;
  EXPECT_NE(config_error(too_high).find("at most 10"), std::string::npos);

  ScenarioConfig over_load;
  over_load.kind = ScenarioKind::kServer;
  over_load.request_rate = 1;
  over_load.num_requests = 10;
  over_load.probe.rate = 0.8;
  EXPECT_NE(config_error(over_load).find("--probe-rate 0.5 or less"), std::string::npos);
  over_load.probe.rate = 0.5;
  EXPECT_EQ(config_error(over_load), "");

  ScenarioConfig short_run;
  short_run.duration = 10s;
  short_run.probe.rate = 0.05;
  EXPECT_NE(config_error(short_run).find("fewer than one probe"), std::string::npos);

  ScenarioConfig sizes_alone;
  sizes_alone.num_requests = 10;
  sizes_alone.probe.sizes_given = true;
  EXPECT_NE(config_error(sizes_alone).find("go with --probe-rate"), std::string::npos);
}

}  // namespace llmload
