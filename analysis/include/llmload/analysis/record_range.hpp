#pragma once
// The requests of a run as the analysis reads them (issue 20, "flat memory"): records in memory
// (a vector, a span) or records read one at a time from where the run keeps them (the run's
// record file: loadgen's RecordStore), so that a run's memory does not grow with its number of
// requests. Every analysis pass walks a RecordRange from its start with a range-for; a pass over a
// stored source reads it again and holds one record at a time.
//
// A vector or a span converts implicitly, so the analysis is called the same way on records in
// memory (tests, merges, rebuilt artifacts) as on a run's record file.
//
// Threading: a range, and each pass over it, belongs to one thread.

#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "llmload/analysis/request_record.hpp"

namespace llmload::analysis {

/// One pass over a stored source, in order.
class RecordCursor {
 public:
  virtual ~RecordCursor() = default;
  /// Reads the next record into `out` (every field overwritten); false at the end.
  virtual bool next(RequestRecord& out) = 0;
};

/// Records kept somewhere other than memory, readable from the start any number of times.
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  virtual std::size_t size() const = 0;
  virtual std::unique_ptr<RecordCursor> open() const = 0;
};

/// Where records read from a slower source (a requests.jsonl, whose every pass parses JSON) are
/// kept once read, so that later passes read them from there (loadgen's RecordStore: compact,
/// spilled to a temporary file, so memory stays flat). keep() is called once per record, in
/// order, before the first open().
class RecordKeeper : public RecordSource {
 public:
  virtual void keep(const RequestRecord& r) = 0;
  /// Called once after the last keep(): a keeper may let go of what only filling it needed.
  virtual void kept_all() {}
  /// Why the keeper no longer keeps the records the way it should (loadgen's RecordStore: no
  /// temporary file, so its records are held in memory); the source then reads itself again.
  virtual std::optional<std::string> problem() const { return std::nullopt; }
};
/// Makes an empty keeper; an empty function: records are not kept (each pass reads the source).
using RecordKeeperFactory = std::function<std::unique_ptr<RecordKeeper>()>;

class RecordRange {
 public:
  /// One pass: an input iterator (each ++ reads the next record; the previous one is gone).
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = RequestRecord;
    using difference_type = std::ptrdiff_t;
    using pointer = const RequestRecord*;
    using reference = const RequestRecord&;

    iterator() = default;  // the end
    reference operator*() const { return *cur_; }
    pointer operator->() const { return cur_; }
    iterator& operator++();
    iterator operator++(int) {
      iterator before = *this;
      ++*this;
      return before;
    }
    friend bool operator==(const iterator& a, const iterator& b) { return a.cur_ == b.cur_; }
    friend bool operator!=(const iterator& a, const iterator& b) { return !(a == b); }

   private:
    friend class RecordRange;
    struct Pass {
      std::unique_ptr<RecordCursor> cursor;
      RequestRecord record;
    };
    std::shared_ptr<Pass> pass_;         // a stored source's pass; null for records in memory
    const RequestRecord* cur_ = nullptr;  // null at the end
    const RequestRecord* last_ = nullptr; // in memory: one past the last record
  };

  RecordRange() = default;
  // Implicit on purpose: analysis functions take a RecordRange and are called with vectors.
  RecordRange(std::span<const RequestRecord> records) : memory_(records) {}  // NOLINT
  RecordRange(const std::vector<RequestRecord>& records) : memory_(records) {}  // NOLINT
  /// A stored source; it must outlive the range.
  explicit RecordRange(const RecordSource& source) : source_(&source) {}

  iterator begin() const;
  iterator end() const { return {}; }
  std::size_t size() const { return source_ != nullptr ? source_->size() : memory_.size(); }
  /// The stored source read, or null for records in memory.
  const RecordSource* source() const { return source_; }
  bool empty() const { return size() == 0; }

 private:
  std::span<const RequestRecord> memory_;
  const RecordSource* source_ = nullptr;
};

inline RecordRange::iterator& RecordRange::iterator::operator++() {
  if (pass_) {
    cur_ = pass_->cursor->next(pass_->record) ? &pass_->record : nullptr;
  } else if (cur_ != nullptr) {
    ++cur_;
    if (cur_ == last_) cur_ = nullptr;
  }
  return *this;
}

inline RecordRange::iterator RecordRange::begin() const {
  iterator it;
  if (source_ != nullptr) {
    it.pass_ = std::make_shared<iterator::Pass>();
    it.pass_->cursor = source_->open();
    ++it;
  } else if (!memory_.empty()) {
    it.cur_ = memory_.data();
    it.last_ = memory_.data() + memory_.size();
  }
  return it;
}

/// The records in memory: for the few uses that keep pointers into them or look one up by another
/// (the consistency check's pairs of answers); memory grows with the run there.
inline std::vector<RequestRecord> to_vector(const RecordRange& records) {
  std::vector<RequestRecord> out;
  out.reserve(records.size());
  for (const auto& r : records) out.push_back(r);
  return out;
}

}  // namespace llmload::analysis
