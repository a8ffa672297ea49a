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

TEST(ProgressLine, APrinterThatShowsNothingSaysSo) {
  EXPECT_FALSE(ProgressPrinter(false, std::nullopt).shows_anything());
  EXPECT_TRUE(ProgressPrinter(true, std::nullopt).shows_anything());
  EXPECT_TRUE(ProgressPrinter(false, std::chrono::seconds(10)).shows_anything());
}

}  // namespace llmload::app::progress_line_test
