#pragma once
// A workload of items read up front (the dataset files): item(i) is the i-th, size() their count.

#include <utility>
#include <vector>

#include "llmload/loadgen/workload.hpp"

namespace llmload::workload_detail {

class ListWorkload final : public Workload {
 public:
  ListWorkload(std::vector<WorkItem> items, nlohmann::json description)
      : items_(std::move(items)), description_(std::move(description)) {}
  std::optional<std::uint64_t> size() const override { return items_.size(); }
  WorkItem item(std::uint64_t index) const override { return items_.at(index); }
  nlohmann::json describe() const override { return description_; }

 private:
  std::vector<WorkItem> items_;
  nlohmann::json description_;
};

}  // namespace llmload::workload_detail
