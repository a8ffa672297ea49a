#include "llmload/loadgen/record_store.hpp"

#include "llmload/common/temp_file.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>

namespace llmload {

namespace {

using analysis::ChunkArrival;
using analysis::RequestRecord;

// The file's form: per record, its fields in declaration order (plain values as their bytes,
// optionals as a presence byte then the value, strings as a 32-bit length then the bytes), then
// the number of output events and the events. Only this process reads it, so the host's byte
// order and sizes are the format.
class SpillWriter {
 public:
  template <typename T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const char*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  template <typename T>
  void put(const std::optional<T>& v) {
    put<std::uint8_t>(v ? 1 : 0);
    if (v) put(*v);
  }
  void put(const std::string& s) {
    put(static_cast<std::uint32_t>(s.size()));
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void put(const std::optional<std::string>& v) {
    put<std::uint8_t>(v ? 1 : 0);
    if (v) put(*v);
  }
  void put(const std::vector<std::string>& list) {
    put(static_cast<std::uint32_t>(list.size()));
    for (const auto& s : list) put(s);
  }
  std::vector<char> bytes;
};

// Reads the file at its own offset (the appender's read_at: pread, or memory for bytes a failed
// write left), so that several passes can be open at once and appends go on at the end whatever
// was read.
class SpillReader {
 public:
  explicit SpillReader(BackgroundAppender* file) : file_(file) {}
  // The buffer usually holds the whole field: one copy of a size known where it is inlined.
  void read(void* p, std::size_t n) {
    if (n <= buf_.size() - pos_) [[likely]] {
      if (n == 0) return;  // an empty field: its destination may be null (memcpy must not see it)
      std::memcpy(p, buf_.data() + pos_, n);
      pos_ += n;
      return;
    }
    read_across(p, n);
  }
  void read_across(void* p, std::size_t n) {
    auto* out = static_cast<char*>(p);
    while (n > 0) {
      if (pos_ == buf_.size()) fill();
      const std::size_t k = std::min(n, buf_.size() - pos_);
      std::memcpy(out, buf_.data() + pos_, k);
      pos_ += k;
      out += k;
      n -= k;
    }
  }
  template <typename T>
  void get(T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    read(&v, sizeof(T));
  }
  template <typename T>
  void get(std::optional<T>& v) {
    std::uint8_t has = 0;
    get(has);
    v.reset();
    if (has != 0) {
      T x{};
      get(x);
      v = std::move(x);
    }
  }
  void get(std::string& s) {
    std::uint32_t n = 0;
    get(n);
    s.resize(n);
    read(s.data(), n);
  }
  void get(std::optional<std::string>& v) {
    std::uint8_t has = 0;
    get(has);
    if (has == 0) {
      v.reset();
      return;
    }
    if (!v) v.emplace();
    get(*v);
  }
  void get(std::vector<std::string>& list) {
    std::uint32_t n = 0;
    get(n);
    list.resize(n);
    for (auto& s : list) get(s);
  }
  void skip(std::size_t n) {
    while (n > 0) {
      if (pos_ == buf_.size()) fill();
      const std::size_t k = std::min(n, buf_.size() - pos_);
      pos_ += k;
      n -= k;
    }
  }

 private:
  void fill() {
    static constexpr std::size_t kBuffer = 256 * 1024;
    buf_.resize(kBuffer);
    const std::ptrdiff_t got = file_ != nullptr ? file_->read_at(offset_, buf_.data(), kBuffer) : 0;
    if (got <= 0) throw std::runtime_error("the run's record file was cut short");
    buf_.resize(static_cast<std::size_t>(got));
    offset_ += static_cast<std::uint64_t>(got);
    pos_ = 0;
  }
  BackgroundAppender* file_;
  std::uint64_t offset_ = 0;
  std::vector<char> buf_;
  std::size_t pos_ = 0;
};

// One list of the fields, for writing and reading alike.
template <typename Io, typename Record>
void record_store_fields(Io& io, Record& r) {
  io.put_or_get(r.index);
  io.put_or_get(r.warmup);
  io.put_or_get(r.in_window);
  io.put_or_get(r.t_intended);
  io.put_or_get(r.t_send);
  io.put_or_get(r.t_headers);
  io.put_or_get(r.t_first);
  io.put_or_get(r.t_first_output);
  io.put_or_get(r.t_last);
  io.put_or_get(r.t_done);
  io.put_or_get(r.requested_input_tokens);
  io.put_or_get(r.requested_output_tokens);
  io.put_or_get(r.input_tokens);
  io.put_or_get(r.output_tokens);
  io.put_or_get(r.tokens_from_usage);
  io.put_or_get(r.tokens_from_tokenizer);
  io.put_or_get(r.client_output_tokens);
  io.put_or_get(r.output_events);
  io.put_or_get(r.cached_tokens);
  io.put_or_get(r.reasoning_tokens);
  io.put_or_get(r.reasoning_tokens_source);
  io.put_or_get(r.model);
  io.put_or_get(r.finish_reason);
  io.put_or_get(r.ended_early);
  io.put_or_get(r.session);
  io.put_or_get(r.turn);
  io.put_or_get(r.stage);
  io.put_or_get(r.server_queue_s);
  io.put_or_get(r.server_first_token_s);
  io.put_or_get(r.server_last_token_s);
  io.put_or_get(r.grade);
  io.put_or_get(r.grader);
  io.put_or_get(r.subset);
  io.put_or_get(r.extracted);
  io.put_or_get(r.reference);
  io.put_or_get(r.output_text);
  io.put_or_get(r.server_tokens_from);
  io.put_or_get(r.server_tokens);
  io.put_or_get(r.item);
  io.put_or_get(r.structured);
  io.put_or_get(r.structured_verdict);
  io.put_or_get(r.structured_error);
  io.put_or_get(r.tool_call_names);
  io.put_or_get(r.tool_call_arguments);
  io.put_or_get(r.http_status);
  io.put_or_get(r.error);
  io.put_or_get(r.error_message);
}

struct RecordStorePut {
  SpillWriter& w;
  template <typename T>
  void put_or_get(const T& v) { w.put(v); }
};
struct RecordStoreGet {
  SpillReader& r;
  template <typename T>
  void put_or_get(T& v) { r.get(v); }
};

}  // namespace

RecordStore::RecordStore(bool keep_chunks, std::size_t batch, int spill_fd)
    : keep_chunks_(keep_chunks), batch_(std::max<std::size_t>(batch, 1)), spill_fd_(spill_fd) {}

RecordStore::~RecordStore() {
  if (file_ == nullptr && spill_fd_ >= 0) ::close(spill_fd_);
}

std::optional<std::string> RecordStore::spill_error() const {
  if (create_error_) return create_error_;
  if (file_ != nullptr && file_->error() != 0) {
    return fmt::format("the run's records no longer fit in a temporary file ({})", std::strerror(file_->error()));
  }
  return std::nullopt;
}

void RecordStore::append(const RequestRecord& r, std::span<const ChunkArrival> chunks) {
  pending_.push_back(r);
  if (keep_chunks_) pending_chunks_.emplace_back(chunks.begin(), chunks.end());
  ++count_;
  if (pending_.size() >= batch_ && !create_error_) spill();
}

void RecordStore::spill() {
  if (file_ == nullptr) {
    int fd = spill_fd_;
    spill_fd_ = -1;
    if (fd < 0) {
      // An anonymous file, on disk where there is one (temp_file.hpp's rule: $TMPDIR, else /tmp
      // or /var/tmp on disk), unlinked at once: the system removes it whatever ends the process.
      const TempDir dir = temp_dir();
      errno = 0;
      fd = open_anonymous_file(dir.path);
      if (fd < 0) {
        create_error_ = fmt::format("no temporary file in {} for the run's records ({})", dir.path,
                                    std::strerror(errno != 0 ? errno : EIO));
        return;
      }
      if (dir.in_memory) memory_dir_ = dir.path;
    }
    BackgroundAppender::Options options;
    options.keep_unwritten = true;  // a failed write keeps the records' bytes: nothing is lost
    file_ = std::make_unique<BackgroundAppender>(fd, options);
  }
  SpillWriter w;
  RecordStorePut io{w};
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    record_store_fields(io, pending_[i]);
    const auto n = keep_chunks_ ? static_cast<std::uint64_t>(pending_chunks_[i].size()) : 0;
    w.put(n);
    for (std::uint64_t k = 0; k < n; ++k) w.put(pending_chunks_[i][k]);
  }
  // Queued, not yet written: the writer thread writes it; a pass reads it back wherever it is.
  file_->append(std::string_view(w.bytes.data(), w.bytes.size()));
  spilled_ += pending_.size();
  pending_.clear();
  pending_chunks_.clear();
}

void RecordStore::finish_appending() {
  if (file_ != nullptr) file_->finish();
}

bool RecordStore::spill_writer_running() const { return file_ != nullptr && file_->writer_running(); }

// One pass: the spilled records from the file, then those still in memory, each with the
// warmup cut applied; with `with_chunks`, each record's output events too.
class RecordStore::Cursor : public analysis::RecordCursor {
 public:
  Cursor(const RecordStore& store, bool with_chunks)
      : store_(store), with_chunks_(with_chunks), reader_(store.file_.get()) {}
  bool next(RequestRecord& out) override {
    if (read_ < store_.spilled_) {
      RecordStoreGet io{reader_};
      record_store_fields(io, out);
      std::uint64_t n = 0;
      reader_.get(n);
      if (with_chunks_) {
        chunks_.resize(n);
        reader_.read(chunks_.data(), n * sizeof(ChunkArrival));
      } else {
        reader_.skip(n * sizeof(ChunkArrival));
      }
    } else {
      const std::size_t k = read_ - store_.spilled_;
      if (k >= store_.pending_.size()) return false;
      out = store_.pending_[k];
      if (with_chunks_) {
        chunks_.clear();
        if (store_.keep_chunks_) chunks_ = store_.pending_chunks_[k];
      }
    }
    ++read_;
    store_.apply_cut(out);
    return true;
  }
  std::span<const ChunkArrival> chunks() const { return chunks_; }

 private:
  const RecordStore& store_;
  bool with_chunks_;
  SpillReader reader_;
  std::size_t read_ = 0;
  std::vector<ChunkArrival> chunks_;
};

void RecordStore::apply_cut(RequestRecord& r) const {
  if (!warmup_cut_ || r.warmup || r.t_intended >= *warmup_cut_) return;
  r.warmup = true;
  r.in_window = false;
}

std::unique_ptr<analysis::RecordCursor> RecordStore::open() const {
  return std::make_unique<Cursor>(*this, /*with_chunks=*/false);
}

std::vector<RequestRecord> RecordStore::records() const {
  std::vector<RequestRecord> out;
  out.reserve(count_);
  Cursor cursor(*this, false);
  RequestRecord r;
  while (cursor.next(r)) out.push_back(r);
  return out;
}

void RecordStore::for_each_chunks(
    const std::function<void(std::size_t, const RequestRecord&, std::span<const ChunkArrival>)>& visit) const {
  Cursor cursor(*this, true);
  RequestRecord r;
  for (std::size_t i = 0; cursor.next(r); ++i) visit(i, r, cursor.chunks());
}

analysis::RecordKeeperFactory compact_record_keeper() {
  return [] { return std::make_unique<RecordStore>(/*keep_chunks=*/false); };
}

}  // namespace llmload
