#include "llmload/loadgen/record_store.hpp"

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

class SpillReader {
 public:
  explicit SpillReader(std::FILE* f) : f_(f) {}
  void read(void* p, std::size_t n) {
    if (n > 0 && std::fread(p, 1, n, f_) != n) throw std::runtime_error("the run's record file was cut short");
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
    v.reset();
    if (has != 0) {
      std::string s;
      get(s);
      v = std::move(s);
    }
  }
  void get(std::vector<std::string>& list) {
    std::uint32_t n = 0;
    get(n);
    list.clear();
    for (std::uint32_t i = 0; i < n; ++i) {
      std::string s;
      get(s);
      list.push_back(std::move(s));
    }
  }
  void skip(std::size_t n) {
    if (n > 0 && std::fseek(f_, static_cast<long>(n), SEEK_CUR) != 0) {
      throw std::runtime_error("the run's record file was cut short");
    }
  }

 private:
  std::FILE* f_;
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

RecordStore::RecordStore(bool keep_chunks, std::size_t batch) : keep_chunks_(keep_chunks), batch_(std::max<std::size_t>(batch, 1)) {}

RecordStore::~RecordStore() {
  if (file_ != nullptr) std::fclose(file_);
}

void RecordStore::append(const RequestRecord& r, std::span<const ChunkArrival> chunks) {
  pending_.push_back(r);
  if (keep_chunks_) pending_chunks_.emplace_back(chunks.begin(), chunks.end());
  ++count_;
  if (pending_.size() >= batch_ && !spill_error_) spill();
}

void RecordStore::spill() {
  if (file_ == nullptr) {
    errno = 0;
    file_ = std::tmpfile();
    if (file_ == nullptr) {
      spill_error_ = fmt::format("no temporary file for the run's records ({})", std::strerror(errno != 0 ? errno : EIO));
      return;
    }
  }
  SpillWriter w;
  RecordStorePut io{w};
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    record_store_fields(io, pending_[i]);
    const auto n = keep_chunks_ ? static_cast<std::uint64_t>(pending_chunks_[i].size()) : 0;
    w.put(n);
    for (std::uint64_t k = 0; k < n; ++k) w.put(pending_chunks_[i][k]);
  }
  errno = 0;
  if (std::fwrite(w.bytes.data(), 1, w.bytes.size(), file_) != w.bytes.size() || std::fflush(file_) != 0) {
    // Nothing of this batch counts as spilled (its bytes past the spilled records are never
    // read: read_back reads spilled_ records), and everything stays in memory from now on.
    spill_error_ = fmt::format("the run's records no longer fit in a temporary file ({})",
                               std::strerror(errno != 0 ? errno : EIO));
    return;
  }
  spilled_ += pending_.size();
  pending_.clear();
  pending_chunks_.clear();
}

void RecordStore::read_back(const std::function<void(RequestRecord&&, std::vector<ChunkArrival>&&)>& fn,
                            bool with_chunks) const {
  if (file_ == nullptr || spilled_ == 0) return;
  std::fflush(file_);
  std::rewind(file_);
  SpillReader reader(file_);
  RecordStoreGet io{reader};
  for (std::size_t i = 0; i < spilled_; ++i) {
    RequestRecord r;
    record_store_fields(io, r);
    std::uint64_t n = 0;
    reader.get(n);
    std::vector<ChunkArrival> chunks;
    if (with_chunks) {
      chunks.resize(n);
      reader.read(chunks.data(), n * sizeof(ChunkArrival));
    } else {
      reader.skip(n * sizeof(ChunkArrival));
    }
    fn(std::move(r), std::move(chunks));
  }
  // Appends go on at the end (a batch written after a read-back).
  std::fseek(file_, 0, SEEK_END);
}

std::vector<RequestRecord> RecordStore::records() const {
  std::vector<RequestRecord> out;
  out.reserve(count_);
  read_back([&](RequestRecord&& r, std::vector<ChunkArrival>&&) { out.push_back(std::move(r)); }, false);
  out.insert(out.end(), pending_.begin(), pending_.end());
  return out;
}

void RecordStore::for_each_chunks(const std::function<void(std::size_t, std::span<const ChunkArrival>)>& visit) const {
  std::size_t i = 0;
  read_back([&](RequestRecord&&, std::vector<ChunkArrival>&& c) { visit(i++, c); }, true);
  for (std::size_t k = 0; k < pending_.size(); ++k) {
    visit(i++, keep_chunks_ ? std::span<const ChunkArrival>(pending_chunks_[k]) : std::span<const ChunkArrival>());
  }
}

}  // namespace llmload
