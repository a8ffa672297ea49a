// The backtracking matcher of the regex subset (regex.hpp). Matching walks the node tree with
// an explicit continuation ("what must match after this node"), which gives Perl/Oniguruma
// leftmost-first semantics: alternatives in order, greedy repeats longest first. Repeats of a
// single-character node (every repeat in the tokenizers' patterns) count their run in a loop and
// back off one character at a time, without recursion per character.
//
// A pattern from a malformed or hostile file can backtrack exponentially ("(a|a)*b") or recurse
// once per character ("(?:ab)*" on a long text), so each find_all/search has a budget: steps in
// proportion to the text and a bound on the recursion depth. The tokenizers' patterns stay far
// below both (a few steps per character, a depth of a few dozen); a search that runs out gives up,
// and the rest of the text counts as not matched (regex.hpp).
#include "regex.hpp"

#include <algorithm>

#include "regex_program.hpp"
#include "unicode.hpp"

namespace llmload::tokenizer {
namespace {

using unicode::GeneralCategory;
using unicode::category_bit;

bool is_word_char(char32_t cp) {
  using G = GeneralCategory;
  constexpr std::uint32_t kWord = category_bit(G::Lu) | category_bit(G::Ll) | category_bit(G::Lt) |
                                  category_bit(G::Lm) | category_bit(G::Lo) | category_bit(G::Mn) |
                                  category_bit(G::Mc) | category_bit(G::Me) | category_bit(G::Nd) |
                                  category_bit(G::Nl) | category_bit(G::Pc);
  return (category_bit(unicode::category(cp)) & kWord) != 0;
}

bool item_contains(const ClassItem& item, char32_t cp) {
  bool in = false;
  switch (item.kind) {
    case ClassItem::Kind::Range: in = cp >= item.lo && cp <= item.hi; break;
    case ClassItem::Kind::Categories: in = (category_bit(unicode::category(cp)) & item.categories) != 0; break;
    case ClassItem::Kind::WhiteSpace: in = unicode::is_white_space(cp); break;
    case ClassItem::Kind::Word: in = is_word_char(cp); break;
  }
  return in != item.negated;
}

// A continuation: the nodes still to match in a sequence, or the remaining iterations of a
// repeat of a multi-character node, then `next`.
struct Continuation {
  const std::unique_ptr<RegexNode>* seq = nullptr;
  std::size_t len = 0;
  const RegexNode* repeat = nullptr;  // when set: continue that repeat
  std::size_t count = 0;              // iterations done
  std::size_t iteration_start = 0;    // where the last iteration began (stops empty loops)
  const Continuation* next = nullptr;
};

// The budget of one find_all/search over n code points: kStepsPerCodePoint * (n + 1) steps (a
// step is a node visited or a character a repeat scans; the patterns of GPT-2, GPT-4o, Llama 3,
// Qwen 3 and DeepSeek V3 take 2 to 5 per code point on average, 25 at most, on the reference
// corpus and long runs of spaces, newlines, letters, digits and punctuation) and kMaxDepth nested
// node visits (each costs a few stack frames; this stays well inside a thread's stack, even under
// sanitizers).
constexpr std::size_t kStepsPerCodePoint = 256;
constexpr std::size_t kMaxDepth = 2000;

class Matcher {
 public:
  Matcher(const char32_t* text, std::size_t size)
      : s_(text), n_(size), steps_left_(kStepsPerCodePoint * (size + 1)) {}

  bool match_at(const RegexNode& root, std::size_t pos, std::size_t& end) const {
    if (pos < n_ && !root.first.can_start_with(s_[pos])) return false;
    return node(root, pos, nullptr, end);
  }

  // Whether the budget ran out: every match_at since then has failed, and the search must stop.
  bool gave_up() const { return gave_up_; }

 private:
  // Takes `steps` from the budget; false (and gave_up()) once it is spent.
  bool spend(std::size_t steps) const {
    if (steps > steps_left_) gave_up_ = true;
    if (gave_up_) return false;
    steps_left_ -= steps;
    return true;
  }

  // Matches `rest`, then whatever follows it.
  bool cont(const Continuation* k, std::size_t pos, std::size_t& end) const {
    if (k == nullptr) {
      end = pos;
      return true;
    }
    if (k->repeat != nullptr) return repeat_step(*k->repeat, k->count, k->iteration_start, pos, k->next, end);
    if (k->len == 0) return cont(k->next, pos, end);
    Continuation rest{k->seq + 1, k->len - 1, nullptr, 0, 0, k->next};
    return node(*k->seq[0], pos, &rest, end);
  }

  bool node(const RegexNode& n, std::size_t pos, const Continuation* k, std::size_t& end) const {
    if (depth_ >= kMaxDepth) gave_up_ = true;
    if (!spend(1)) return false;
    ++depth_;
    const bool matched = visit(n, pos, k, end);
    --depth_;
    return matched && !gave_up_;
  }

  bool visit(const RegexNode& n, std::size_t pos, const Continuation* k, std::size_t& end) const {
    switch (n.kind) {
      case RegexNode::Kind::Char:
      case RegexNode::Kind::Class:
      case RegexNode::Kind::AnyButNewline:
        return pos < n_ && n.matches_char(s_[pos]) && cont(k, pos + 1, end);
      case RegexNode::Kind::Sequence: {
        Continuation rest{n.children.data(), n.children.size(), nullptr, 0, 0, k};
        return cont(&rest, pos, end);
      }
      case RegexNode::Kind::Alternation:
        for (const auto& alt : n.children) {
          if (pos < n_ && !alt->first.can_start_with(s_[pos])) continue;
          if (node(*alt, pos, k, end)) return true;
        }
        return false;
      case RegexNode::Kind::Lookahead: {
        std::size_t ignored = 0;
        const bool found = node(*n.children[0], pos, nullptr, ignored);
        return found != n.negative && cont(k, pos, end);
      }
      case RegexNode::Kind::Repeat:
        if (n.children[0]->is_single_char()) return repeat_chars(n, pos, k, end);
        if (n.greed == RegexNode::Greed::Possessive) return repeat_possessive(n, pos, k, end);
        return repeat_step(n, 0, static_cast<std::size_t>(-1), pos, k, end);
    }
    return false;
  }

  bool repeat_chars(const RegexNode& n, std::size_t pos, const Continuation* k, std::size_t& end) const {
    const RegexNode& c = *n.children[0];
    const std::size_t limit = std::min(n.max, n_ - pos);
    std::size_t run = 0;
    while (run < limit && c.matches_char(s_[pos + run])) ++run;
    if (!spend(run) || run < n.min) return false;
    switch (n.greed) {
      case RegexNode::Greed::Possessive: return cont(k, pos + run, end);
      case RegexNode::Greed::Lazy:
        for (std::size_t j = n.min; j <= run; ++j) {
          if (cont(k, pos + j, end)) return true;
        }
        return false;
      case RegexNode::Greed::Greedy:
        for (std::size_t j = run + 1; j-- > n.min;) {
          if (cont(k, pos + j, end)) return true;
        }
        return false;
    }
    return false;
  }

  // A possessive repeat of a multi-character node: the child's first match, again and again,
  // with no backtracking into the iterations.
  bool repeat_possessive(const RegexNode& n, std::size_t pos, const Continuation* k, std::size_t& end) const {
    std::size_t count = 0;
    while (count < n.max) {
      std::size_t next = 0;
      if (!node(*n.children[0], pos, nullptr, next) || next == pos) break;
      pos = next, ++count;
    }
    return count >= n.min && cont(k, pos, end);
  }

  bool repeat_step(const RegexNode& n, std::size_t count, std::size_t iteration_start, std::size_t pos,
                   const Continuation* k, std::size_t& end) const {
    if (count > 0 && pos == iteration_start) return false;  // an empty iteration: no progress
    const bool may_stop = count >= n.min;
    const bool may_go_on = count < n.max;
    Continuation again{nullptr, 0, &n, count + 1, pos, k};
    if (n.greed == RegexNode::Greed::Lazy) {
      if (may_stop && cont(k, pos, end)) return true;
      return may_go_on && node(*n.children[0], pos, &again, end);
    }
    if (may_go_on && node(*n.children[0], pos, &again, end)) return true;
    return may_stop && cont(k, pos, end);
  }

  const char32_t* s_;
  std::size_t n_;
  mutable std::size_t steps_left_;
  mutable std::size_t depth_ = 0;
  mutable bool gave_up_ = false;
};

struct DecodedText {
  std::u32string cps;
  std::vector<std::size_t> offsets;  // byte offset of each code point, and of the end
  explicit DecodedText(std::string_view text) {
    cps.reserve(text.size());
    offsets.reserve(text.size() + 1);
    for (std::size_t pos = 0; pos < text.size();) {
      offsets.push_back(pos);
      cps.push_back(unicode::next_code_point(text, pos));
    }
    offsets.push_back(text.size());
  }
};

void add_first(RegexNode::FirstChars& into, const RegexNode::FirstChars& from) {
  into.ascii[0] |= from.ascii[0];
  into.ascii[1] |= from.ascii[1];
  into.non_ascii = into.non_ascii || from.non_ascii;
}

}  // namespace

void analyze_first_chars(RegexNode& n) {
  for (auto& c : n.children) analyze_first_chars(*c);
  RegexNode::FirstChars f;
  switch (n.kind) {
    case RegexNode::Kind::Char:
    case RegexNode::Kind::Class:
    case RegexNode::Kind::AnyButNewline:
      for (char32_t cp = 0; cp < 128; ++cp) {
        if (n.matches_char(cp)) f.ascii[cp >> 6] |= std::uint64_t{1} << (cp & 63);
      }
      f.non_ascii = n.kind != RegexNode::Kind::Char || n.ch >= 128;
      break;
    case RegexNode::Kind::Sequence:
      f.nullable = true;
      for (const auto& c : n.children) {
        add_first(f, c->first);
        if (!c->first.nullable) {
          f.nullable = false;
          break;
        }
      }
      break;
    case RegexNode::Kind::Alternation:
      for (const auto& c : n.children) {
        add_first(f, c->first);
        f.nullable = f.nullable || c->first.nullable;
      }
      break;
    case RegexNode::Kind::Repeat:
      f = n.children[0]->first;
      f.nullable = f.nullable || n.min == 0;
      break;
    case RegexNode::Kind::Lookahead:
      f.nullable = true;  // zero-width: whatever follows decides
      break;
  }
  n.first = f;
}

void CharClass::finish() {
  ascii = {};
  for (char32_t cp = 0; cp < 128; ++cp) {
    if (slow_contains(cp)) ascii[cp >> 6] |= std::uint64_t{1} << (cp & 63);
  }
}

bool CharClass::slow_contains(char32_t cp) const {
  bool in = std::any_of(items.begin(), items.end(), [cp](const ClassItem& i) { return item_contains(i, cp); });
  if (!in && ignore_case && cp < 128 && (cp | 0x20) >= U'a' && (cp | 0x20) <= U'z') {
    const char32_t other = cp ^ 0x20;
    in = std::any_of(items.begin(), items.end(), [other](const ClassItem& i) { return item_contains(i, other); });
  }
  return in != negated;
}

bool RegexNode::matches_char(char32_t cp) const {
  switch (kind) {
    case Kind::Char: return ignore_case ? (cp < 128 && (cp | 0x20) == ch) : cp == ch;
    case Kind::Class: return set.contains(cp);
    case Kind::AnyButNewline: return cp != U'\n';
    default: return false;
  }
}

Regex::Regex(std::string_view pattern) : pattern_(pattern), program_(std::make_unique<Program>()) {
  program_->root = parse_regex(pattern);
  analyze_first_chars(*program_->root);
}
Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

std::vector<RegexMatch> Regex::find_all(std::string_view text) const {
  std::vector<RegexMatch> out;
  const DecodedText d(text);
  const Matcher m(d.cps.data(), d.cps.size());
  for (std::size_t start = 0; start <= d.cps.size();) {
    std::size_t end = 0;
    if (m.match_at(*program_->root, start, end)) {
      out.push_back({d.offsets[start], d.offsets[end]});
      start = end > start ? end : start + 1;
    } else if (m.gave_up()) {
      break;
    } else {
      ++start;
    }
  }
  return out;
}

bool Regex::search(std::string_view text, std::size_t from, RegexMatch& match) const {
  const DecodedText d(text);
  const Matcher m(d.cps.data(), d.cps.size());
  const auto first = std::lower_bound(d.offsets.begin(), d.offsets.end(), from) - d.offsets.begin();
  for (auto start = static_cast<std::size_t>(first); start <= d.cps.size(); ++start) {
    std::size_t end = 0;
    if (m.match_at(*program_->root, start, end)) {
      match = {d.offsets[start], d.offsets[end]};
      return true;
    }
    if (m.gave_up()) break;
  }
  return false;
}

}  // namespace llmload::tokenizer
