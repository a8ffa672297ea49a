// The parser of the regex subset (regex.hpp): recursive descent over the pattern's code points.
#include <algorithm>
#include <initializer_list>
#include <string>

#include "regex_program.hpp"
#include "unicode.hpp"

namespace llmload::tokenizer {
namespace {

using unicode::GeneralCategory;
using unicode::category_bit;
using Node = RegexNode;

constexpr std::uint32_t kAllCategories = (std::uint32_t{1} << 30) - 1;
// The parser, the matcher and the node tree's destructor recurse once per level of nesting, so a
// malformed file's "((((..." or "a*****..." must not nest deeper than the stack allows; real
// patterns nest a few levels.
constexpr std::size_t kMaxGroupNesting = 64;
constexpr std::size_t kMaxQuantifiersInARow = 4;

std::uint32_t category_mask_for(std::string_view name) {
  struct Named {
    std::string_view short_name, long_name;
    std::uint32_t mask;
  };
  auto bits = [](std::initializer_list<GeneralCategory> cs) {
    std::uint32_t m = 0;
    for (auto c : cs) m |= category_bit(c);
    return m;
  };
  using G = GeneralCategory;
  static const Named kNames[] = {
      {"L", "Letter", bits({G::Lu, G::Ll, G::Lt, G::Lm, G::Lo})},
      {"LC", "Cased_Letter", bits({G::Lu, G::Ll, G::Lt})},
      {"Lu", "Uppercase_Letter", bits({G::Lu})}, {"Ll", "Lowercase_Letter", bits({G::Ll})},
      {"Lt", "Titlecase_Letter", bits({G::Lt})}, {"Lm", "Modifier_Letter", bits({G::Lm})},
      {"Lo", "Other_Letter", bits({G::Lo})},
      {"M", "Mark", bits({G::Mn, G::Mc, G::Me})}, {"Mn", "Nonspacing_Mark", bits({G::Mn})},
      {"Mc", "Spacing_Mark", bits({G::Mc})}, {"Me", "Enclosing_Mark", bits({G::Me})},
      {"N", "Number", bits({G::Nd, G::Nl, G::No})}, {"Nd", "Decimal_Number", bits({G::Nd})},
      {"Nl", "Letter_Number", bits({G::Nl})}, {"No", "Other_Number", bits({G::No})},
      {"P", "Punctuation", bits({G::Pc, G::Pd, G::Ps, G::Pe, G::Pi, G::Pf, G::Po})},
      {"Pc", "Connector_Punctuation", bits({G::Pc})}, {"Pd", "Dash_Punctuation", bits({G::Pd})},
      {"Ps", "Open_Punctuation", bits({G::Ps})}, {"Pe", "Close_Punctuation", bits({G::Pe})},
      {"Pi", "Initial_Punctuation", bits({G::Pi})}, {"Pf", "Final_Punctuation", bits({G::Pf})},
      {"Po", "Other_Punctuation", bits({G::Po})},
      {"S", "Symbol", bits({G::Sm, G::Sc, G::Sk, G::So})}, {"Sm", "Math_Symbol", bits({G::Sm})},
      {"Sc", "Currency_Symbol", bits({G::Sc})}, {"Sk", "Modifier_Symbol", bits({G::Sk})},
      {"So", "Other_Symbol", bits({G::So})},
      {"Z", "Separator", bits({G::Zs, G::Zl, G::Zp})}, {"Zs", "Space_Separator", bits({G::Zs})},
      {"Zl", "Line_Separator", bits({G::Zl})}, {"Zp", "Paragraph_Separator", bits({G::Zp})},
      {"C", "Other", bits({G::Cc, G::Cf, G::Cs, G::Co, G::Cn})}, {"Cc", "Control", bits({G::Cc})},
      {"Cf", "Format", bits({G::Cf})}, {"Cs", "Surrogate", bits({G::Cs})},
      {"Co", "Private_Use", bits({G::Co})}, {"Cn", "Unassigned", bits({G::Cn})},
      {"Any", "Any", kAllCategories},
  };
  for (const auto& n : kNames) {
    if (name == n.short_name || name == n.long_name) return n.mask;
  }
  return 0;
}

class Parser {
 public:
  explicit Parser(std::string_view pattern) : pattern_(pattern) {
    for (std::size_t pos = 0; pos < pattern.size();) {
      offsets_.push_back(pos);
      cps_.push_back(unicode::next_code_point(pattern, pos));
    }
    offsets_.push_back(pattern.size());
  }

  std::unique_ptr<Node> parse() {
    auto root = parse_alternation();
    if (!at_end()) fail("an unmatched ')'", "remove it or escape it as \\)");
    return root;
  }

 private:
  bool at_end() const { return i_ >= cps_.size(); }
  char32_t peek(std::size_t ahead = 0) const { return i_ + ahead < cps_.size() ? cps_[i_ + ahead] : 0; }
  char32_t take() { return cps_[i_++]; }

  [[noreturn]] void fail(const std::string& what, const std::string& fix = "") const {
    const std::size_t at = offsets_[std::min(i_, offsets_.size() - 1)];
    std::string msg = "regex pattern \"" + std::string(pattern_) + "\": " + what + " at byte " +
                      std::to_string(at) + " is not supported by llmload's tokenizer regex engine";
    if (!fix.empty()) msg += " (" + fix + ")";
    msg += "; it supports literals, classes with \\p{..}/\\s/\\d/\\w, alternation, (?:..), (?i:..), "
           "(?=..), (?!..) and the quantifiers ? * + {m,n} (greedy, lazy, possessive)";
    throw RegexError(msg);
  }

  std::unique_ptr<Node> parse_alternation() {
    auto first = parse_sequence();
    if (peek() != U'|' || at_end()) return first;
    auto alt = std::make_unique<Node>();
    alt->kind = Node::Kind::Alternation;
    alt->children.push_back(std::move(first));
    while (!at_end() && peek() == U'|') {
      take();
      alt->children.push_back(parse_sequence());
    }
    return alt;
  }

  std::unique_ptr<Node> parse_sequence() {
    auto seq = std::make_unique<Node>();
    seq->kind = Node::Kind::Sequence;
    while (!at_end() && peek() != U'|' && peek() != U')') {
      auto atom = parse_atom();
      seq->children.push_back(parse_quantifiers(std::move(atom)));
    }
    if (seq->children.size() == 1) return std::move(seq->children[0]);
    return seq;
  }

  bool parse_count(std::size_t& value) {
    if (peek() < U'0' || peek() > U'9') return false;
    value = 0;
    while (peek() >= U'0' && peek() <= U'9') {
      value = value * 10 + (take() - U'0');
      if (value > 100000) fail("a repetition count over 100000");
    }
    return true;
  }

  // {n} {n,} {n,m} {,m}; false (and nothing consumed) when the brace is not a quantifier.
  bool parse_braces(std::size_t& min, std::size_t& max) {
    const std::size_t saved = i_;
    take();  // {
    std::size_t lo = 0, hi = 0;
    const bool has_lo = parse_count(lo);
    if (peek() == U',') {
      take();
      const bool has_hi = parse_count(hi);
      if (!has_lo && !has_hi) return (i_ = saved), false;
      if (!has_hi) hi = Node::kUnbounded;
    } else {
      if (!has_lo) return (i_ = saved), false;
      hi = lo;
    }
    if (peek() != U'}') return (i_ = saved), false;
    take();
    if (hi < lo) fail("a repetition {n,m} with m < n");
    min = lo, max = hi;
    return true;
  }

  std::unique_ptr<Node> parse_quantifiers(std::unique_ptr<Node> atom) {
    std::size_t quantifiers = 0;
    while (!at_end()) {
      const char32_t c = peek();
      std::size_t min = 0, max = 0;
      bool braces = false;
      if (c == U'?') take(), min = 0, max = 1;
      else if (c == U'*') take(), min = 0, max = Node::kUnbounded;
      else if (c == U'+') take(), min = 1, max = Node::kUnbounded;
      else if (c == U'{' && parse_braces(min, max)) braces = true;
      else break;
      if (atom->kind == Node::Kind::Lookahead) fail("a quantified lookahead");
      if (++quantifiers > kMaxQuantifiersInARow) {
        fail("more than " + std::to_string(kMaxQuantifiersInARow) + " quantifiers in a row on one atom");
      }
      auto rep = std::make_unique<Node>();
      rep->kind = Node::Kind::Repeat;
      rep->min = min, rep->max = max;
      if (peek() == U'?') take(), rep->greed = Node::Greed::Lazy;
      // Oniguruma (Ruby syntax): X?+ X*+ X++ are possessive, but X{n,m}+ is (X{n,m})+.
      else if (!braces && peek() == U'+') take(), rep->greed = Node::Greed::Possessive;
      rep->children.push_back(std::move(atom));
      atom = std::move(rep);
    }
    return atom;
  }

  std::unique_ptr<Node> parse_group() {
    if (group_depth_ >= kMaxGroupNesting) {
      fail("groups nested more than " + std::to_string(kMaxGroupNesting) + " deep");
    }
    take();  // (
    bool ignore_case = false, lookahead = false, negative = false;
    if (peek() == U'?') {
      take();
      const char32_t c = at_end() ? 0 : take();
      if (c == U':') {
      } else if (c == U'=' || c == U'!') {
        lookahead = true, negative = c == U'!';
      } else if (c == U'i' && peek() == U':') {
        take(), ignore_case = true;
      } else if (c == U'<' && (peek() == U'=' || peek() == U'!')) {
        fail("a lookbehind (?<= or (?<!");
      } else if (c == U'>') {
        fail("an atomic group (?>");
      } else if (c == U'<' || c == U'P') {
        fail("a named group");
      } else {
        fail("an inline option group (?" + std::string(1, static_cast<char>(c & 0x7F)) + "...", "only (?i:...) is");
      }
    }
    const bool saved_case = ignore_case_;
    ignore_case_ = ignore_case_ || ignore_case;
    ++group_depth_;
    auto inner = parse_alternation();
    --group_depth_;
    ignore_case_ = saved_case;
    if (at_end() || take() != U')') fail("a group without its ')'");
    if (!lookahead) return inner;
    auto look = std::make_unique<Node>();
    look->kind = Node::Kind::Lookahead;
    look->negative = negative;
    look->children.push_back(std::move(inner));
    return look;
  }

  std::unique_ptr<Node> parse_atom() {
    const char32_t c = peek();
    if (c == U'(') return parse_group();
    if (c == U'[') return class_node(parse_class());
    if (c == U'^' || c == U'$') fail(std::string("the anchor ") + static_cast<char>(c));
    if (c == U'*' || c == U'+' || c == U'?') fail("a quantifier with nothing to repeat");
    take();
    if (c == U'.') {
      auto any = std::make_unique<Node>();
      any->kind = Node::Kind::AnyButNewline;
      return any;
    }
    if (c != U'\\') return char_node(c);
    ClassItem item;
    char32_t literal = 0;
    if (parse_escape(item, literal, false)) {
      CharClass set;
      set.items.push_back(item);
      return class_node(std::move(set));
    }
    return char_node(literal);
  }

  std::unique_ptr<Node> char_node(char32_t c) {
    auto n = std::make_unique<Node>();
    n->kind = Node::Kind::Char;
    n->ignore_case = ignore_case_ && c < 128 && ((c | 0x20) >= U'a' && (c | 0x20) <= U'z');
    n->ch = n->ignore_case ? (c | 0x20) : c;
    return n;
  }

  std::unique_ptr<Node> class_node(CharClass set) {
    auto n = std::make_unique<Node>();
    n->kind = Node::Kind::Class;
    n->set = std::move(set);
    n->set.ignore_case = ignore_case_;
    n->set.finish();
    return n;
  }

  std::uint32_t hex_digits(std::size_t count) {
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < count; ++k) {
      const char32_t h = at_end() ? 0 : take();
      int d = -1;
      if (h >= U'0' && h <= U'9') d = static_cast<int>(h - U'0');
      else if ((h | 0x20) >= U'a' && (h | 0x20) <= U'f') d = static_cast<int>((h | 0x20) - U'a' + 10);
      if (d < 0) fail("a malformed hexadecimal escape");
      v = v * 16 + static_cast<std::uint32_t>(d);
    }
    return v;
  }

  std::uint32_t braced_hex() {
    take();  // {
    std::size_t n = 0;
    while (peek(n) != U'}' && peek(n) != 0) ++n;
    if (n == 0 || n > 6) fail("a malformed \\x{...} escape");
    const auto v = hex_digits(n);
    take();  // }
    return v;
  }

  void parse_property(ClassItem& item, bool negated) {
    if (peek() != U'{') fail("a \\p or \\P without {name}");
    take();
    if (peek() == U'^') take(), negated = !negated;
    std::string name;
    while (!at_end() && peek() != U'}') name.push_back(static_cast<char>(take() & 0x7F));
    if (at_end()) fail("an unterminated \\p{...}");
    take();
    const auto mask = category_mask_for(name);
    if (mask == 0) fail("the property \\p{" + name + "}", "only general categories such as \\p{L} or \\p{Nd} are");
    item.kind = ClassItem::Kind::Categories;
    item.categories = mask;
    item.negated = negated;
  }

  // After a backslash. Returns true with `item` for a class escape, false with `literal`.
  bool parse_escape(ClassItem& item, char32_t& literal, bool in_class) {
    if (at_end()) fail("a trailing backslash");
    const char32_t e = take();
    switch (e) {
      case U's': case U'S': item.kind = ClassItem::Kind::WhiteSpace; item.negated = e == U'S'; return true;
      case U'w': case U'W': item.kind = ClassItem::Kind::Word; item.negated = e == U'W'; return true;
      case U'd': case U'D':
        item.kind = ClassItem::Kind::Categories;
        item.categories = category_bit(GeneralCategory::Nd);
        item.negated = e == U'D';
        return true;
      case U'p': case U'P': parse_property(item, e == U'P'); return true;
      case U't': literal = U'\t'; return false;
      case U'n': literal = U'\n'; return false;
      case U'r': literal = U'\r'; return false;
      case U'f': literal = U'\f'; return false;
      case U'v': literal = U'\v'; return false;
      case U'a': literal = 0x07; return false;
      case U'e': literal = 0x1B; return false;
      case U'0': literal = 0; return false;
      case U'x': literal = peek() == U'{' ? braced_hex() : hex_digits(2); return false;
      case U'u': literal = hex_digits(4); return false;
      default: break;
    }
    if (e == U'b' && in_class) return literal = 0x08, false;
    if ((e >= U'a' && e <= U'z') || (e >= U'A' && e <= U'Z') || (e >= U'1' && e <= U'9')) {
      fail("the escape \\" + std::string(1, static_cast<char>(e)) +
           " (an anchor, word boundary, backreference or other Oniguruma escape)");
    }
    literal = e;  // escaped punctuation or any other symbol stands for itself
    return false;
  }

  CharClass parse_class() {
    take();  // [
    CharClass set;
    if (peek() == U'^') take(), set.negated = true;
    bool first = true;
    while (true) {
      if (at_end()) fail("a character class without its ']'");
      char32_t c = take();
      if (c == U']' && !first) break;
      first = false;
      if (c == U'[') fail("a nested class or POSIX bracket [[:name:]]", "write the members out");
      if (c == U'&' && peek() == U'&') fail("a class intersection &&");
      ClassItem item;
      char32_t lo = c;
      if (c == U'\\' && parse_escape(item, lo, true)) {
        set.items.push_back(item);
        continue;
      }
      char32_t hi = lo;
      if (peek() == U'-' && peek(1) != U']' && peek(1) != 0) {
        take();
        hi = take();
        ClassItem ignored;
        if (hi == U'\\' && parse_escape(ignored, hi, true)) fail("a range ending in a class escape");
        if (hi < lo) fail("a reversed range in a class");
      }
      item.kind = ClassItem::Kind::Range;
      item.lo = lo, item.hi = hi;
      set.items.push_back(item);
    }
    return set;
  }

  std::string_view pattern_;
  std::u32string cps_;
  std::vector<std::size_t> offsets_;
  std::size_t i_ = 0;
  bool ignore_case_ = false;
  std::size_t group_depth_ = 0;
};

}  // namespace

std::unique_ptr<RegexNode> parse_regex(std::string_view pattern) { return Parser(pattern).parse(); }

}  // namespace llmload::tokenizer
