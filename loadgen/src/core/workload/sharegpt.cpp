// The "sharegpt" dataset, sampled by vLLM's rules (vllm/benchmarks/datasets.py: ShareGPTDataset,
// and is_valid_sequence in dataset_utils.py), with estimated token counts (no tokenizer here).
//
// The file (the usual ShareGPT_V3 file is ~650 MB) is streamed through a SAX handler that keeps,
// per entry, only what the sampling needs: the turn count, the first turn's text and the second
// turn's length.

#include <algorithm>
#include <fstream>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/prompt.hpp"
#include "list_workload.hpp"
#include "llmload/loadgen/workload/sources.hpp"

namespace llmload {

namespace {

// vLLM's is_valid_sequence defaults.
constexpr std::int64_t kMinLen = 4;
constexpr std::int64_t kMaxPromptLen = 1024;
constexpr std::int64_t kMaxTotalLen = 2048;
constexpr std::uint64_t kShuffleStream = 0x5e6f708192a3b4c5ULL;

constexpr std::string_view kShape =
    "expected a JSON array of {\"conversations\": [{\"from\": \"human\", \"value\": \"...\"}, "
    "{\"from\": \"gpt\", \"value\": \"...\"}, ...]}";

enum class Verdict { kValid, kPromptTooShort, kOutputTooShort, kPromptTooLong, kTotalTooLong };

Verdict judge(std::int64_t prompt_len, std::int64_t output_len, bool skip_output_check) {
  if (prompt_len < kMinLen) return Verdict::kPromptTooShort;
  if (!skip_output_check && output_len < kMinLen) return Verdict::kOutputTooShort;
  if (prompt_len > kMaxPromptLen) return Verdict::kPromptTooLong;
  if (prompt_len + output_len > kMaxTotalLen) return Verdict::kTotalTooLong;
  return Verdict::kValid;
}

// An entry with at least two turns; `prompt` is kept only when the entry is valid.
struct Candidate {
  std::string prompt;
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  Verdict verdict = Verdict::kValid;
};

using json = nlohmann::json;

// Streams the top-level array. Contexts form a stack; `key_` is the last key seen in an entry or
// a turn object (keys of other objects are not needed).
class ShareGptReader final : public nlohmann::json_sax<json> {
 public:
  ShareGptReader(std::int64_t overhead, std::int64_t output_override)
      : overhead_(overhead), output_override_(output_override) {}

  std::vector<Candidate> candidates;  // entries with >= 2 turns, in file order
  std::uint64_t entries = 0;          // elements of the top-level array
  std::string error;                  // set when the handler stopped the parse

  bool null() override { return scalar("null"); }
  bool boolean(bool) override { return scalar("a boolean"); }
  bool number_integer(number_integer_t) override { return scalar("a number"); }
  bool number_unsigned(number_unsigned_t) override { return scalar("a number"); }
  bool number_float(number_float_t, const string_t&) override { return scalar("a number"); }
  bool binary(binary_t&) override { return scalar("binary data"); }

  bool string(string_t& val) override {
    if (top() == Ctx::kTurn && key_ == "value" && turn_ < 2) {
      if (turn_ == 0) {
        prompt_ = std::move(val);
      } else {
        completion_tokens_ = estimate_text_tokens(val);
      }
      ++values_seen_;
      return true;
    }
    return scalar("a string");
  }

  bool start_object(std::size_t) override {
    switch (top()) {
      case Ctx::kNone:
        return fail(std::string(kShape) + ", but the file holds an object");
      case Ctx::kTopArray:
        begin_entry();
        stack_.push_back(Ctx::kEntry);
        return true;
      case Ctx::kConversations:
        turn_ = turns_++;
        key_.clear();
        stack_.push_back(Ctx::kTurn);
        return true;
      default:
        return push_other();
    }
  }

  bool key(string_t& val) override {
    if (top() == Ctx::kEntry || top() == Ctx::kTurn) key_ = val;
    return true;
  }

  bool end_object() override {
    const Ctx ctx = top();
    stack_.pop_back();
    if (ctx == Ctx::kTurn && turn_ < 2 && values_seen_ < turn_ + 1) {
      return fail(fmt::format("entry {}: conversations[{}] has no string \"value\"", entries - 1, turn_));
    }
    if (ctx == Ctx::kEntry) end_entry();
    return true;
  }

  bool start_array(std::size_t) override {
    switch (top()) {
      case Ctx::kNone:
        stack_.push_back(Ctx::kTopArray);
        return true;
      case Ctx::kTopArray:
        return fail(fmt::format("entry {} is an array, not an object; {}", entries, kShape));
      case Ctx::kEntry:
        if (key_ == "conversations") {
          has_conversations_ = true;
          stack_.push_back(Ctx::kConversations);
          return true;
        }
        return push_other();
      case Ctx::kConversations:
        return fail(fmt::format("entry {}: conversations[{}] is an array, not an object", entries - 1, turns_));
      default:
        return push_other();
    }
  }

  bool end_array() override {
    stack_.pop_back();
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    error = fmt::format("not valid JSON at byte {}: {}", position, ex.what());
    return false;
  }

 private:
  enum class Ctx { kNone, kTopArray, kEntry, kConversations, kTurn, kOther };

  Ctx top() const { return stack_.empty() ? Ctx::kNone : stack_.back(); }
  bool push_other() {
    stack_.push_back(Ctx::kOther);
    return true;
  }
  bool fail(std::string message) {
    error = std::move(message);
    return false;
  }

  // A scalar value (or a string that is not a kept turn value) in the current context.
  bool scalar(std::string_view what) {
    switch (top()) {
      case Ctx::kNone:
        return fail(fmt::format("{}, but the file holds {}", kShape, what));
      case Ctx::kTopArray:
        return fail(fmt::format("entry {} is {}, not an object; {}", entries++, what, kShape));
      case Ctx::kEntry:
        if (key_ == "conversations") {
          return fail(fmt::format("entry {}: \"conversations\" is {}, not an array", entries - 1, what));
        }
        return true;
      case Ctx::kConversations:
        return fail(fmt::format("entry {}: conversations[{}] is {}, not an object", entries - 1, turns_, what));
      case Ctx::kTurn:
        if (key_ == "value" && turn_ < 2) {
          return fail(fmt::format("entry {}: conversations[{}].value is {}, not a string", entries - 1, turn_, what));
        }
        return true;
      case Ctx::kOther:
        return true;
    }
    return true;
  }

  void begin_entry() {
    ++entries;
    key_.clear();
    has_conversations_ = false;
    turns_ = 0;
    turn_ = 0;
    values_seen_ = 0;
    prompt_.clear();
    completion_tokens_ = 0;
  }

  void end_entry() {
    if (!has_conversations_ || turns_ < 2) return;  // vLLM drops these before shuffling
    Candidate c;
    c.input_tokens = overhead_ + estimate_text_tokens(prompt_);
    c.output_tokens = output_override_ > 0 ? output_override_ : completion_tokens_;
    c.verdict = judge(c.input_tokens, c.output_tokens, output_override_ > 0);
    if (c.verdict == Verdict::kValid) c.prompt = std::move(prompt_);
    candidates.push_back(std::move(c));
  }

  std::int64_t overhead_;
  std::int64_t output_override_;
  std::vector<Ctx> stack_;
  std::string key_;
  bool has_conversations_ = false;
  std::int64_t turns_ = 0;        // turns seen in the current entry
  std::int64_t turn_ = 0;         // index of the turn being read
  std::int64_t values_seen_ = 0;  // "value" strings read among turns 0 and 1
  std::string prompt_;
  std::int64_t completion_tokens_ = 0;
};

// A permutation of 0..n-1 by Fisher–Yates with the portable uniform_int (vLLM uses Python's
// random.shuffle seeded with the seed: same rule, different generator, so a different order).
std::vector<std::size_t> shuffled_indices(std::size_t n, std::uint64_t seed) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937_64 rng(mix_seed(seed ^ kShuffleStream));
  for (std::size_t i = n; i > 1; --i) {
    const auto j = static_cast<std::size_t>(uniform_int(rng, 0, static_cast<std::int64_t>(i - 1)));
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

nlohmann::json filter_counts(const std::vector<Candidate>& candidates) {
  std::int64_t counts[5] = {0, 0, 0, 0, 0};
  for (const auto& c : candidates) ++counts[static_cast<int>(c.verdict)];
  return {{"valid", counts[0]},
          {"prompt_under_4_tokens", counts[1]},
          {"output_under_4_tokens", counts[2]},
          {"prompt_over_1024_tokens", counts[3]},
          {"total_over_2048_tokens", counts[4]}};
}

}  // namespace

std::unique_ptr<Workload> make_sharegpt_workload(const WorkloadConfig& cfg, std::optional<std::uint64_t> max_items,
                                                 std::uint64_t seed, const TokenModel& tokens) {
  const std::string& path = cfg.dataset_path;
  if (path.empty()) throw ConfigError("dataset sharegpt needs a file: set --dataset-path (dataset_path) to a ShareGPT JSON file");
  if (cfg.sharegpt_output_len < 0) {
    throw ConfigError(fmt::format("sharegpt_output_len {} is negative: use 0 for the dataset's output lengths or a "
                                  "positive number of tokens", cfg.sharegpt_output_len));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("cannot read ShareGPT file \"{}\": no such file or not readable", path));

  ShareGptReader reader(tokens.overhead, cfg.sharegpt_output_len);
  const bool ok = json::sax_parse(in, &reader);
  if (!ok || !reader.error.empty()) {
    throw ConfigError(fmt::format("ShareGPT file \"{}\": {}", path, reader.error.empty() ? "not valid JSON" : reader.error));
  }
  const nlohmann::json filtered = filter_counts(reader.candidates);
  if (filtered["valid"].get<std::int64_t>() == 0) {
    throw ConfigError(fmt::format(
        "ShareGPT file \"{}\": no conversation passes vLLM's filter ({} entries, {} with at least 2 turns; by "
        "estimated tokens: {}); it needs turns 0 and 1 with 4 to 1024 prompt tokens, at least 4 output tokens and "
        "at most 2048 together", path, reader.entries, reader.candidates.size(), filtered.dump()));
  }

  std::vector<WorkItem> items;
  for (const std::size_t k : shuffled_indices(reader.candidates.size(), seed)) {
    if (max_items && items.size() >= *max_items) break;
    Candidate& c = reader.candidates[k];
    if (c.verdict != Verdict::kValid) continue;
    WorkItem w;
    w.prompt = std::move(c.prompt);
    w.input_tokens = c.input_tokens;
    w.output_tokens = c.output_tokens;
    items.push_back(std::move(w));
  }
  if (items.empty()) {
    throw ConfigError(fmt::format("ShareGPT file \"{}\": zero requests kept (the request limit is 0)", path));
  }

  nlohmann::json d;
  d["dataset"] = "sharegpt";
  d["path"] = path;
  d["entries"] = reader.entries;
  d["entries_with_2_turns"] = reader.candidates.size();
  d["filter"] = filtered;
  d["filter_rule"] =
      "vLLM is_valid_sequence: drop prompt < 4 or output < 4 tokens (output check skipped when "
      "sharegpt_output_len is set), prompt > 1024 or prompt + output > 2048";
  d["requests"] = items.size();
  d["max_items"] = max_items ? nlohmann::json(*max_items) : nlohmann::json(nullptr);
  d["order"] = "entries with >= 2 turns shuffled with the seed (Fisher-Yates on mt19937_64), then filtered";
  d["seed"] = seed;
  d["sharegpt_output_len"] = cfg.sharegpt_output_len;
  d["lengths_estimated"] = true;
  d["token_estimate"] = fmt::format("ceil(UTF-8 bytes / 4) per text, plus the token model's overhead ({}) for "
                                    "prompts; the server's usage reports the real counts", tokens.overhead);
  return std::make_unique<workload_detail::ListWorkload>(std::move(items), std::move(d));
}

}  // namespace llmload
