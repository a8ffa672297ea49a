// The pieces the progress displays of `llmload run` and `llmload run --workers N` share.
#include "progress_line.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace llmload::app::progress_line_test {

TEST(ProgressLine, ClockTextInMinutesThenHours) {
  EXPECT_EQ(clock_text(0), "00:00");
  EXPECT_EQ(clock_text(59.6), "01:00");
  EXPECT_EQ(clock_text(3599), "59:59");
  EXPECT_EQ(clock_text(3600 + 61), "1:01:01");
  EXPECT_EQ(clock_text(std::nan("")), "--:--");
  EXPECT_EQ(clock_text(-1), "--:--");
}

TEST(ProgressLine, TheRateIsOverTheLastTicksOnly) {
  RateWindow w(2);
  EXPECT_EQ(w.rate(), 0);
  w.add(0, 0);
  EXPECT_EQ(w.rate(), 0);  // one sample: no rate yet
  w.add(1, 100);
  EXPECT_DOUBLE_EQ(w.rate(), 100);
  w.add(2, 300);
  EXPECT_DOUBLE_EQ(w.rate(), 150);  // (300 - 0) / 2
  w.add(3, 310);
  EXPECT_DOUBLE_EQ(w.rate(), 105);  // the first sample has left the window: (310 - 100) / 2
  w.add(3, 320);                    // a second sample at the same time: the window is (2, 300)..(3, 320)
  EXPECT_DOUBLE_EQ(w.rate(), 20);
}

// By the completions' own times, over the span that ended `lag` ago: lines read a second late,
// in bursts, give the same rate as lines read as they completed (the --workers line jumped with
// each worker's flush).
TEST(ProgressLine, TheCompletionRateIsByTheCompletionsTimes) {
  CompletionRate r(5, 1.5, 0.1);
  EXPECT_EQ(r.rate(1.0), 0) << "no span has passed";
  // 100 completions a second, 0.005 s .. 9.995 s, added in one-second bursts, out of order within.
  for (int s = 0; s < 10; ++s) {
    for (int i = 99; i >= 0; --i) r.add(s + (i + 0.5) / 100.0);
  }
  EXPECT_NEAR(r.rate(10.0), 100, 1e-9);  // [3.5, 8.5)
  EXPECT_NEAR(r.rate(3.5), 100, 1e-9);   // the first 2 s only: [0, 2)
  // The first completion at 3 s (long requests): from it on, not a rate diluted by the time before.
  CompletionRate late(5, 1.5, 0.1);
  for (int i = 0; i < 200; ++i) late.add(3.0 + i / 100.0);
  EXPECT_EQ(late.rate(4.0), 0) << "under a second since the first completion";
  EXPECT_NEAR(late.rate(5.5), 100, 1e-9);  // [3, 4)
  // Nothing completed after 10 s (a stalled server): the rate falls to 0 once the span has passed.
  EXPECT_NEAR(r.rate(13.5), 60, 1e-9);  // [7, 12): completions in 3 s of the 5
  EXPECT_EQ(r.rate(17.0), 0);
}

TEST(ProgressLine, APrinterThatShowsNothingSaysSo) {
  EXPECT_FALSE(ProgressPrinter(false, std::nullopt).shows_anything());
  EXPECT_TRUE(ProgressPrinter(true, std::nullopt).shows_anything());
  EXPECT_TRUE(ProgressPrinter(false, std::chrono::seconds(10)).shows_anything());
}

}  // namespace llmload::app::progress_line_test
