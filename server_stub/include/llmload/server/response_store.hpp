#pragma once
// The Responses API's memory of recent responses, for `previous_response_id`: response id ->
// the conversation it ended (its input turns and its output, after those of the response it
// continued). Bounded: the oldest entries are forgotten first (FIFO) beyond `capacity`; a
// conversation still continued by a remembered one stays alive through it (each entry holds only
// its own turns and a pointer to its parent, so a chain of follow-ups takes linear memory).
// Thread-safe (a mutex); shared by the router (lookups) and the connections (which remember a
// response once it completed).

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "llmload/server/generation_request.hpp"

namespace llmload::server {

class ResponseStore {
 public:
  static constexpr std::size_t kDefaultCapacity = 4096;
  explicit ResponseStore(std::size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  /// Remembers `conversation` as response `id` (replacing an entry of the same id).
  void put(const std::string& id, std::shared_ptr<const StoredConversation> conversation);
  /// The conversation response `id` ended; null when unknown or forgotten.
  std::shared_ptr<const StoredConversation> get(std::string_view id) const;
  std::size_t size() const;

 private:
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const StoredConversation>> entries_;
  std::deque<std::string> order_;  ///< insertion order, for eviction
};

/// Every turn of a conversation from its first, in order.
std::vector<const ConversationTurn*> conversation_turns(const StoredConversation& conversation);

/// Releases a chain of parents without recursion (a long chain would otherwise unwind one
/// destructor per link). Call from StoredConversation's owner before dropping it; the store does.
void release_conversation(std::shared_ptr<const StoredConversation>& conversation);

}  // namespace llmload::server
