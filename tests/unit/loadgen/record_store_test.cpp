// RecordStore (issue 16: memory flat however long the run): records spilled to the temporary file
// come back exactly as appended, in order, with their output events.
#include <gtest/gtest.h>

#include <fcntl.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include <fmt/format.h>

#include "llmload/analysis/html_report.hpp"
#include "llmload/analysis/report.hpp"
#include "llmload/common/temp_file.hpp"
#include "llmload/loadgen/record_store.hpp"
#include "scoped_env.hpp"
#include "subprocess.hpp"

namespace llmload {
namespace {

using namespace std::chrono_literals;
using analysis::ChunkArrival;
using analysis::RequestRecord;
using analysis::Nanos;

// Every field set, and the optional ones present or not by turns.
RequestRecord record_store_sample(std::uint64_t i) {
  RequestRecord r;
  r.index = i;
  r.warmup = i % 3 == 0;
  r.in_window = !r.warmup;
  r.t_intended = Nanos(static_cast<std::int64_t>(i) * 1'000'003);
  if (i % 2 == 0) r.t_send = r.t_intended + 7us;
  if (i % 4 != 1) r.t_headers = r.t_intended + 1ms;
  if (i % 5 != 2) r.t_first = r.t_intended + 20ms;
  if (i % 5 == 3) r.t_first_output = r.t_intended + 40ms;
  if (i % 5 == 3) {
    r.reasoning_tokens = 7;
    r.reasoning_tokens_source = "usage";
  }
  if (i % 6 == 1) r.model = "adapter-" + std::to_string(i % 3);
  r.t_last = r.t_intended + 90ms;
  r.t_done = r.t_intended + 91ms;
  r.requested_input_tokens = 100 + static_cast<std::int64_t>(i);
  r.requested_output_tokens = 64;
  r.input_tokens = 99;
  r.output_tokens = static_cast<std::int64_t>(i % 64);
  r.tokens_from_usage = i % 2 == 1;
  r.tokens_from_tokenizer = i % 4 == 2;
  if (i % 4 == 3) r.client_output_tokens = static_cast<std::int64_t>(i % 70);
  r.output_events = 12;
  if (i % 7 == 0) r.cached_tokens = 32;
  if (i % 2 == 0) r.finish_reason = i % 4 == 0 ? "stop" : "a finish reason longer than any small-string buffer";
  r.ended_early = i % 11 == 0;
  r.session = i % 6 == 0 ? static_cast<std::int64_t>(i / 6) : -1;
  r.turn = static_cast<std::int64_t>(i % 3);
  r.stage = static_cast<std::int32_t>(i % 4) - 1;
  if (i % 3 == 1) r.server_queue_s = 0.25 * static_cast<double>(i);
  if (i % 3 == 2) r.server_first_token_s = 0.5;
  r.server_last_token_s = 1.5;
  if (i % 4 == 1) {
    r.output_text = " a b";
    r.server_tokens_from = i % 8 == 1 ? "token_ids" : "logprobs";
    r.server_tokens = i % 8 == 1 ? std::vector<std::string>{"17", "4"} : std::vector<std::string>{" a", " b"};
  }
  r.http_status = i % 9 == 0 ? 500 : 200;
  r.error = i % 9 == 0 ? analysis::ErrorClass::kHttpStatus : analysis::ErrorClass::kNone;
  if (i % 9 == 0) r.error_message = std::string(static_cast<std::size_t>(i % 300), 'x') + " \"quoted\"\n";
  return r;
}

std::vector<ChunkArrival> record_store_chunks(std::uint64_t i) {
  std::vector<ChunkArrival> c;
  for (std::uint64_t k = 0; k < i % 5; ++k) c.push_back({Nanos(static_cast<std::int64_t>(i * 100 + k)), static_cast<std::int64_t>(k + 1)});
  return c;
}

void expect_same_record(const RequestRecord& a, const RequestRecord& b) {
  EXPECT_EQ(analysis::record_json(a).dump(), analysis::record_json(b).dump());
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.warmup, b.warmup);
  EXPECT_EQ(a.in_window, b.in_window);
  EXPECT_EQ(a.t_intended, b.t_intended);
  EXPECT_EQ(a.t_send, b.t_send);
  EXPECT_EQ(a.t_headers, b.t_headers);
  EXPECT_EQ(a.t_first, b.t_first);
  EXPECT_EQ(a.t_last, b.t_last);
  EXPECT_EQ(a.t_done, b.t_done);
  EXPECT_EQ(a.cached_tokens, b.cached_tokens);
  EXPECT_EQ(a.tokens_from_tokenizer, b.tokens_from_tokenizer);
  EXPECT_EQ(a.client_output_tokens, b.client_output_tokens);
  EXPECT_EQ(a.finish_reason, b.finish_reason);
  EXPECT_EQ(a.session, b.session);
  EXPECT_EQ(a.stage, b.stage);
  EXPECT_EQ(a.server_queue_s, b.server_queue_s);
  EXPECT_EQ(a.server_first_token_s, b.server_first_token_s);
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.error_message, b.error_message);
}

TEST(RecordStore, SpilledRecordsComeBackAsAppendedWithTheirEvents) {
  RecordStore store(/*keep_chunks=*/true, /*batch=*/16);
  const std::uint64_t n = 1000;  // 62 batches spilled, 8 records still in memory
  for (std::uint64_t i = 0; i < n; ++i) store.append(record_store_sample(i), record_store_chunks(i));
  ASSERT_FALSE(store.spill_error()) << *store.spill_error();
  EXPECT_EQ(store.size(), n);
  EXPECT_EQ(store.spilled(), 992u);
  const auto back = store.records();
  ASSERT_EQ(back.size(), n);
  for (std::uint64_t i = 0; i < n; ++i) expect_same_record(back[i], record_store_sample(i));
  std::uint64_t visited = 0;
  store.for_each_chunks([&](std::size_t i, const RequestRecord& r, std::span<const ChunkArrival> c) {
    EXPECT_EQ(i, visited++);
    EXPECT_EQ(r.index, i);
    const auto want = record_store_chunks(i);
    ASSERT_EQ(c.size(), want.size()) << i;
    for (std::size_t k = 0; k < c.size(); ++k) {
      EXPECT_EQ(c[k].t, want[k].t);
      EXPECT_EQ(c[k].tokens, want[k].tokens);
    }
  });
  EXPECT_EQ(visited, n);
  // Appending after a read-back goes on at the end; a second read sees everything.
  store.append(record_store_sample(n), record_store_chunks(n));
  for (std::uint64_t i = n + 1; i < n + 40; ++i) store.append(record_store_sample(i), record_store_chunks(i));
  const auto again = store.records();
  ASSERT_EQ(again.size(), n + 40);
  for (std::uint64_t i = 0; i < n + 40; ++i) expect_same_record(again[i], record_store_sample(i));
}

// $TMPDIR (or a directory on disk) holds the spill, not glibc's tmpfile()'s fixed /tmp, which is
// memory on a tmpfs /tmp; a spill that is held in memory says where.
TEST(RecordStore, TheSpillIsAnUnnamedFileInTmpdirAndSaysWhenThatIsMemory) {
  const testing::TempDir tmp;
  const auto dir = std::filesystem::canonical(tmp.path());  // as /proc/self/fd shows it
  const testing::ScopedEnv tmpdir("TMPDIR");
  const auto files_in = [](const std::filesystem::path& d) {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
      std::error_code ec;
      const auto target = std::filesystem::read_symlink(e.path(), ec).string();
      if (!ec && target.rfind(d.string() + "/", 0) == 0 && target.find("(deleted)") != std::string::npos) ++n;
    }
    return n;
  };
  tmpdir.set(dir.string());
  {
    RecordStore store(/*keep_chunks=*/true, /*batch=*/4);
    for (std::uint64_t i = 0; i < 10; ++i) store.append(record_store_sample(i), record_store_chunks(i));
    ASSERT_FALSE(store.spill_error()) << *store.spill_error();
    EXPECT_EQ(store.spilled(), 8u);
    EXPECT_EQ(files_in(dir), 1);
    EXPECT_TRUE(std::filesystem::is_empty(dir));  // no name: nothing left behind
    EXPECT_EQ(store.spill_memory_dir().has_value(), probe_dir(dir.string()) == DirKind::memory);
    const auto back = store.records();
    ASSERT_EQ(back.size(), 10u);
    for (std::uint64_t i = 0; i < 10; ++i) expect_same_record(back[i], record_store_sample(i));
  }
  EXPECT_EQ(files_in(dir), 0);  // closed with the store
  if (probe_dir("/dev/shm") == DirKind::memory) {
    tmpdir.set("/dev/shm");
    RecordStore store(/*keep_chunks=*/false, /*batch=*/2);
    for (std::uint64_t i = 0; i < 3; ++i) store.append(record_store_sample(i), {});
    ASSERT_TRUE(store.spill_memory_dir().has_value());
    EXPECT_EQ(*store.spill_memory_dir(), "/dev/shm");
  }
}

// A write to the temporary file fails (here every write: /dev/full, "no space"): the records'
// bytes stay in memory in the same form and read back as if they had been written; nothing is
// lost, and spill_error says why memory grows.
TEST(RecordStore, AFailedSpillWriteLosesNoRecord) {
  const int full = ::open("/dev/full", O_RDWR | O_CLOEXEC);
  ASSERT_GE(full, 0);
  RecordStore store(/*keep_chunks=*/true, /*batch=*/16, full);
  const std::uint64_t n = 5000;  // ~1.5 MB of records: many writes fail
  for (std::uint64_t i = 0; i < n; ++i) store.append(record_store_sample(i), record_store_chunks(i));
  std::vector<RequestRecord> back = store.records();
  ASSERT_TRUE(store.spill_error());
  EXPECT_NE(store.spill_error()->find("No space left on device"), std::string::npos) << *store.spill_error();
  ASSERT_EQ(back.size(), n);
  for (std::uint64_t i = 0; i < n; i += 7) expect_same_record(back[i], record_store_sample(i));
  expect_same_record(back[n - 1], record_store_sample(n - 1));
  std::uint64_t events = 0;
  std::uint64_t want_events = 0;
  store.for_each_chunks([&](std::size_t i, const RequestRecord&, std::span<const ChunkArrival> c) {
    events += c.size();
    want_events += record_store_chunks(i).size();
  });
  EXPECT_EQ(events, want_events);
  EXPECT_GT(events, 0u);
}

TEST(RecordStore, WithoutEventsTheVisitGetsNone) {
  RecordStore store(/*keep_chunks=*/false, /*batch=*/4);
  for (std::uint64_t i = 0; i < 10; ++i) store.append(record_store_sample(i), record_store_chunks(i));
  EXPECT_EQ(store.spilled(), 8u);
  std::size_t visited = 0;
  store.for_each_chunks([&](std::size_t, const RequestRecord&, std::span<const ChunkArrival> c) {
    EXPECT_TRUE(c.empty());
    ++visited;
  });
  EXPECT_EQ(visited, 10u);
  EXPECT_EQ(store.records().size(), 10u);
}

// Issue 20: the analysis reads the store through RecordRange, one record at a time and as many
// passes as it needs (two at once when one pass nests in another), with --warmup auto's cut applied
// on the way; nothing is kept in memory but the batch not yet spilled.
TEST(RecordStore, PassesReadEveryRecordOneAtATimeAndMayNest) {
  RecordStore store(/*keep_chunks=*/false, /*batch=*/8);
  const std::uint64_t n = 100;  // 12 batches spilled, 4 records in memory
  for (std::uint64_t i = 0; i < n; ++i) store.append(record_store_sample(i), record_store_chunks(i));
  ASSERT_EQ(store.spilled(), 96u);
  const analysis::RecordRange range(store);
  EXPECT_EQ(range.size(), n);
  std::uint64_t outer = 0;
  for (const auto& r : range) {
    expect_same_record(r, record_store_sample(outer));
    if (outer == 50) {  // a second pass while the first is half-way
      std::uint64_t inner = 0;
      for (const auto& q : range) expect_same_record(q, record_store_sample(inner++));
      EXPECT_EQ(inner, n);
    }
    ++outer;
  }
  EXPECT_EQ(outer, n);
  EXPECT_EQ(std::count_if(range.begin(), range.end(), [](const RequestRecord& r) { return r.index % 2 == 0; }), 50);
  // Appending after a pass goes on at the end.
  store.append(record_store_sample(n), record_store_chunks(n));
  EXPECT_EQ(analysis::to_vector(range).size(), n + 1);
}

TEST(RecordStore, TheWarmupCutReadsBackAsWarmupOutOfTheWindow) {
  RecordStore store(/*keep_chunks=*/true, /*batch=*/4);
  for (std::uint64_t i = 0; i < 10; ++i) {
    RequestRecord r = record_store_sample(i);
    r.warmup = false;
    r.in_window = true;
    r.t_intended = Nanos(static_cast<std::int64_t>(i) * 1'000'000);
    store.append(r, record_store_chunks(i));
  }
  EXPECT_FALSE(store.relabeled());  // every record reads back as appended: a journal of them is final
  store.mark_warmup_before(Nanos(5'000'000));
  EXPECT_TRUE(store.relabeled());
  std::uint64_t i = 0;
  for (const auto& r : analysis::RecordRange(store)) {
    EXPECT_EQ(r.warmup, i < 5) << i;
    EXPECT_EQ(r.in_window, i >= 5) << i;
    ++i;
  }
  EXPECT_EQ(i, 10u);
  std::size_t warm = 0;
  store.for_each_chunks([&](std::size_t, const RequestRecord& r, std::span<const ChunkArrival>) { warm += r.warmup; });
  EXPECT_EQ(warm, 5u);
}

// `llmload report` keeps each requests.jsonl in a store once parsed (compact_record_keeper): a
// file of every kind of record, more than a batch (so spilled), reads back and renders exactly
// as the file parsed on every pass does.
TEST(RecordStore, AsAReportsKeeperItRendersWhatTheParsedFileRenders) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("llmload-store-keeper-{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  struct RemovedAtTheEnd {
    fs::path p;
    ~RemovedAtTheEnd() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } removed{dir};
  {
    std::ofstream out(dir / "requests.jsonl", std::ios::binary);
    for (std::uint64_t i = 0; i < 1100; ++i) {
      RequestRecord r = record_store_sample(i);
      r.error_message.erase(std::remove(r.error_message.begin(), r.error_message.end(), '\n'), r.error_message.end());
      out << analysis::record_json(r).dump() << "\n";
    }
  }
  const analysis::ReportInput parsed = analysis::read_report_input(dir.string());
  const RecordStore* store = nullptr;
  const auto keeper = [&store, make = compact_record_keeper()] {
    auto k = make();
    store = dynamic_cast<const RecordStore*>(k.get());
    return k;
  };
  const analysis::ReportInput kept = analysis::read_report_input(dir.string(), nullptr, keeper);
  ASSERT_EQ(kept.runs.size(), 1U);
  const auto& records = kept.runs.front().records();
  ASSERT_EQ(records.size(), 1100U);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->size(), 1100U);
  EXPECT_EQ(store->spilled(), 1024U);  // a batch in the temporary file, the rest in memory
  EXPECT_FALSE(store->spill_writer_running());  // filled: its writer thread is stopped (kept_all)
  const std::string html = analysis::render_html(parsed);
  EXPECT_EQ(analysis::render_html(kept), html);
  EXPECT_EQ(analysis::render_markdown(kept), analysis::render_markdown(parsed));
  EXPECT_EQ(analysis::render_csv(kept), analysis::render_csv(parsed));
  std::vector<std::string> parsed_lines;
  for (const auto& r : parsed.runs.front().records()) parsed_lines.push_back(analysis::record_json(r).dump());
  fs::remove(dir / "requests.jsonl");  // the store, not the file, is read from here on
  std::vector<std::string> kept_lines;
  for (const auto& r : records) kept_lines.push_back(analysis::record_json(r).dump());
  EXPECT_EQ(kept_lines, parsed_lines);
  EXPECT_EQ(analysis::render_html(kept), html);
}

}  // namespace
}  // namespace llmload
