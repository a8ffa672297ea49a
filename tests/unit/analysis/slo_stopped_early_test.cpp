// A request canceled by a stop of the client's (stopped_early: --max-duration, an early stop, a
// second signal) in the SLO verdicts: it exceeds only a bound it had already passed when it was
// canceled, and is left out of the population of the others. Before, every one counted as an
// exceedance of every bound: three requests canceled 16 ms into a run with a 500 ms TTFT bound
// made its verdict FAIL.

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "llmload/analysis/run_metrics.hpp"
#include "llmload/analysis/slo.hpp"

namespace llmload::testing::slo_stopped_early {
namespace {

using namespace llmload::analysis;
using namespace std::chrono_literals;

RequestRecord completed(Nanos intended, Nanos ttft, Nanos e2e) {
  RequestRecord r;
  r.in_window = true;
  r.t_intended = intended;
  r.t_send = intended;
  r.t_first = intended + ttft;
  r.t_first_output = r.t_first;
  r.t_last = intended + e2e;
  r.t_done = r.t_last;
  r.output_tokens = 10;
  r.tokens_from_usage = true;
  return r;
}

// Canceled `waited` after its send, with its first token after `first` (none when nullopt).
RequestRecord canceled(Nanos intended, Nanos waited, std::optional<Nanos> first = std::nullopt) {
  RequestRecord r;
  r.in_window = true;
  r.t_intended = intended;
  r.t_send = intended;
  if (first) {
    r.t_first = intended + *first;
    r.t_first_output = r.t_first;
  }
  r.t_done = intended + waited;
  r.error = ErrorClass::kStoppedEarly;
  return r;
}

TEST(SloStoppedEarly, ABoundIsExceededOnlyOncePassedElseUnknown) {
  const SloSpec slo = parse_slo("ttft:500ms,tpot:50ms,e2e:2s");
  const SloJudgement young = judge_request(canceled(0ms, 16ms), slo, LatencyView::kService);
  EXPECT_FALSE(young.over.any());
  EXPECT_TRUE(young.unknown.ttft && young.unknown.tpot && young.unknown.e2e);

  const SloJudgement waited = judge_request(canceled(0ms, 900ms), slo, LatencyView::kService);
  EXPECT_TRUE(waited.over.ttft) << "no first token 900 ms after the send: over 500 ms whatever came next";
  EXPECT_FALSE(waited.unknown.ttft);
  EXPECT_FALSE(waited.over.e2e);
  EXPECT_TRUE(waited.unknown.e2e);

  const SloJudgement started = judge_request(canceled(0ms, 3s, 100ms), slo, LatencyView::kService);
  EXPECT_FALSE(started.over.ttft) << "its first token came at 100 ms: judged as it is";
  EXPECT_FALSE(started.unknown.ttft);
  EXPECT_TRUE(started.over.e2e) << "still running at 3 s";
  EXPECT_TRUE(started.unknown.tpot);

  // From the intended time (response view) a request that waited to be sent has waited longer.
  RequestRecord late = canceled(0ms, 100ms);
  late.t_send = 450ms;
  late.t_done = 550ms;
  EXPECT_TRUE(judge_request(late, slo, LatencyView::kResponse).over.ttft);
  EXPECT_TRUE(judge_request(late, slo, LatencyView::kService).unknown.ttft);

  // A failure of the server's is no stop of the client's: every bound exceeded, as before.
  RequestRecord failed = canceled(0ms, 16ms);
  failed.error = ErrorClass::kHttpStatus;
  const SloJudgement f = judge_request(failed, slo, LatencyView::kService);
  EXPECT_TRUE(f.over.ttft && f.over.tpot && f.over.e2e);
  EXPECT_FALSE(f.unknown.any());
}

TEST(SloStoppedEarly, CanceledRequestsDoNotFailAFastRunButAStalledOneFails) {
  const SloSpec slo = parse_slo("ttft:500ms");
  Window w;
  w.start = 0ns;
  w.end = 10s;
  w.method = "test";
  std::vector<RequestRecord> fast;
  for (int i = 0; i < 600; ++i) fast.push_back(completed(i * 10ms, 16ms, 40ms));
  for (int i = 0; i < 7; ++i) fast.push_back(canceled(6s + i * 1ms, 16ms));  // cut at the bound
  const SloResult pass = evaluate_slo(slo, LatencyView::kService, w, fast);
  ASSERT_EQ(pass.metrics.size(), 1u);
  EXPECT_EQ(pass.metrics[0].exceedances, 0);
  EXPECT_EQ(pass.metrics[0].n, 600) << "the canceled ones are in no population";
  EXPECT_EQ(pass.verdict, Verdict::kPass) << pass.metrics[0].explanation;
  EXPECT_DOUBLE_EQ(pass.attainment, 1.0) << "nor in attainment's";

  // The same run where the canceled ones had waited 3 s with no first token: a stalled server.
  std::vector<RequestRecord> stalled(fast.begin(), fast.begin() + 600);
  for (int i = 0; i < 7; ++i) stalled.push_back(canceled(6s + i * 1ms, 3s));
  const SloResult fail = evaluate_slo(slo, LatencyView::kService, w, stalled);
  EXPECT_EQ(fail.metrics[0].exceedances, 7);
  EXPECT_EQ(fail.metrics[0].n, 607);
  EXPECT_NEAR(fail.attainment, 600.0 / 607.0, 1e-12);
  EXPECT_EQ(fail.verdict, Verdict::kFail) << fail.metrics[0].explanation;
  // Its observed p99 is of the 600 that succeeded, and says so: the 7 over the bound have no value.
  ASSERT_TRUE(fail.metrics[0].observed_us.has_value());
  EXPECT_NEAR(static_cast<double>(*fail.metrics[0].observed_us), 16'000, 20);
  EXPECT_NE(fail.metrics[0].explanation.find("observed 16.0 ms over the 600 with a value"), std::string::npos)
      << fail.metrics[0].explanation;
}

// Every request over the bound and none answered (a server that stalls until --max-duration): the
// verdict FAILs with no observed value, where an empty histogram said "observed 0.0 ms".
TEST(SloStoppedEarly, NoObservedValueWhenNoRequestSucceeded) {
  const SloSpec slo = parse_slo("ttft:500ms");
  Window w;
  w.start = 0ns;
  w.end = 10s;
  w.method = "test";
  const std::vector<RequestRecord> stalled = {canceled(0ms, 2s), canceled(1ms, 2s)};
  const SloResult r = evaluate_slo(slo, LatencyView::kService, w, stalled);
  ASSERT_EQ(r.metrics.size(), 1u);
  EXPECT_EQ(r.metrics[0].verdict, Verdict::kFail);
  EXPECT_FALSE(r.metrics[0].observed_us.has_value());
  EXPECT_EQ(r.metrics[0].explanation.find("0.0 ms"), std::string::npos) << r.metrics[0].explanation;
  EXPECT_NE(r.metrics[0].explanation.find("no request had a value"), std::string::npos) << r.metrics[0].explanation;

  // Answers that reasoned and never gave an output token: they succeeded, and are over a TTFO
  // bound without a value; said so, not "none succeeded".
  std::vector<RequestRecord> reasoned;
  for (int i = 0; i < 3; ++i) {
    RequestRecord a = completed(i * 10ms, 16ms, 40ms);
    a.t_first_output.reset();
    reasoned.push_back(a);
  }
  const SloResult t = evaluate_slo(parse_slo("ttfo:1000ms"), LatencyView::kService, w, reasoned);
  ASSERT_EQ(t.metrics.size(), 1u);
  EXPECT_EQ(t.metrics[0].verdict, Verdict::kFail);
  EXPECT_NE(t.metrics[0].explanation.find("answers with no output token (reasoning only)"), std::string::npos)
      << t.metrics[0].explanation;
}

}  // namespace
}  // namespace llmload::testing::slo_stopped_early
