#pragma once
// The fixture of `llmload report`'s end-to-end test: one real run and a real two-point sweep
// against llmload-server, made once, and the checks run on them (report_test.cpp; the trials
// checks in trials_report_test.cpp).

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "report_helpers.hpp"
#include "subprocess.hpp"

namespace llmload::report_test {

class Report : public ::testing::Test {
 protected:
  // One real run and a two-point sweep, made once for every check (report_test.cpp).
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override {
    if (!fs::exists(root_ / "run" / "result.json")) GTEST_FAIL() << "the artifacts could not be generated";
  }
  /// A copy of the single run's artifact in a fresh directory.
  static fs::path copy_run(const std::string& name) {
    const fs::path d = root_ / name;
    fs::remove_all(d);
    fs::copy(root_ / "run", d, fs::copy_options::recursive);
    for (const char* f : {"report.html", "summary.md", "summary.csv"}) fs::remove(d / f);
    return d;
  }
  /// A full-page screenshot of a report in headless Chromium, kept where
  /// LLMLOAD_REPORT_SCREENSHOT_DIR says (to look at it) as `name`.
  static void screenshot(const fs::path& html, const std::string& name, const std::string& size) {
    llmload::report_test::screenshot(chromium_, html, name, size);
  }
  // The checks, run by one test so that the artifacts are generated once (ctest runs each test
  // in a process of its own). The trials checks are in trials_report_test.cpp, the others in
  // report_test.cpp.
  void RunReportRendersOfflineInChromiumWithEveryChart();
  void NewResultShapesRender();
  void TrialsArtifactReport();
  void SweepOfTrialsArtifacts();
  void RealTrialsRunReports();
  void CsvAndMarkdownCarryTheNumbersOfResultJson();
  void SweepOfSubdirectoriesGetsTheSweepCharts();
  void SweepJsonListsPointsAndCapacity();
  void SweepValidityShownWithTheCapacity();
  void StagesRunGetsAStagesSection();
  void TrialsArrayGetsSpreadCharts();
  void PartialArtifactStillRendersWhatItHas();
  void MissingOrCorruptFilesAreClearErrors();
  void TheRunsOwnReportIsTheOneMadeFromItsFiles();

  static TempDir* tmp_;
  static llmload::testing::ServerHandle* server_;
  static fs::path root_;
  static std::string chromium_;
};


}  // namespace llmload::report_test
