#include "llmload/server/response_store.hpp"

#include <algorithm>

namespace llmload::server {

void ResponseStore::put(const std::string& id, std::shared_ptr<const StoredConversation> conversation) {
  std::vector<std::shared_ptr<const StoredConversation>> dropped;  // released outside the lock
  {
    std::lock_guard lock(mutex_);
    auto [it, inserted] = entries_.try_emplace(id, conversation);
    if (!inserted) {
      dropped.push_back(std::move(it->second));
      it->second = std::move(conversation);
      return;
    }
    order_.push_back(id);
    while (entries_.size() > capacity_ && !order_.empty()) {
      auto old = entries_.find(order_.front());
      if (old != entries_.end()) {
        dropped.push_back(std::move(old->second));
        entries_.erase(old);
      }
      order_.pop_front();
    }
  }
  for (auto& c : dropped) release_conversation(c);
}

std::shared_ptr<const StoredConversation> ResponseStore::get(std::string_view id) const {
  std::lock_guard lock(mutex_);
  const auto it = entries_.find(std::string(id));
  return it == entries_.end() ? nullptr : it->second;
}

std::size_t ResponseStore::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

std::vector<const ConversationTurn*> conversation_turns(const StoredConversation& conversation) {
  std::vector<const StoredConversation*> chain;
  for (const StoredConversation* c = &conversation; c != nullptr; c = c->parent.get()) chain.push_back(c);
  std::vector<const ConversationTurn*> turns;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    for (const auto& t : (*it)->turns) turns.push_back(&t);
  }
  return turns;
}

void release_conversation(std::shared_ptr<const StoredConversation>& conversation) {
  // Unlink parents while this is their last owner, so each is destroyed with no parent left.
  std::shared_ptr<const StoredConversation> current = std::move(conversation);
  while (current && current.use_count() == 1) {
    // Sole owner: nobody else can reach it, so taking its parent pointer is safe (the object
    // itself was created non-const by make_shared).
    std::shared_ptr<const StoredConversation> parent =
        std::move(const_cast<StoredConversation&>(*current).parent);
    current = std::move(parent);
  }
}

}  // namespace llmload::server
