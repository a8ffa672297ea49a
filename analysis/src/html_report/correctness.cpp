// The Scorecard block (id scorecard) and the Correctness section (id correctness) of a run or a
// trials artifact (docs/report.md): result.json "scorecard", "accuracy" and "consistency" as read
// into RunSummary by model.cpp; in HTML and in summary.md.
#include "html_report/internal.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace llmload::analysis::report_html {

namespace {

/// What the scorecard shows for null.
constexpr const char* kNull = "—";

// ---------------------------------------------------------------------------------------------
// The scorecard's content, shared by the page and summary.md

struct ScoreItem {
  std::string key;    // data-key
  std::string label;
  std::string value;  // kNull when the artifact has null
  std::string unit;   // after the value (not with kNull)
  std::string detail; // under the value (the 95% interval, ...)
  std::string badge;  // a verdict's badge class ("" for a plain value)
};

struct ScorePart {
  const char* key;
  const char* title;
  std::vector<ScoreItem> items;
};

ScoreItem score_number(std::string key, std::string label, double v, std::string unit) {
  if (!std::isfinite(v)) return {std::move(key), std::move(label), kNull, {}, {}, {}};
  return {std::move(key), std::move(label), format_number(v), std::move(unit), {}, {}};
}

ScoreItem score_rate(std::string key, std::string label, const RateCI& r) {
  ScoreItem it{std::move(key), std::move(label), rate_text(r), {}, {}, {}};
  if (r.known() && r.has_ci()) it.detail = "95% CI " + rate_ci_text(r);
  return it;
}

ScoreItem score_percent(std::string key, std::string label, double v) {
  return {std::move(key), std::move(label), std::isfinite(v) ? percent(v) : kNull, {}, {}, {}};
}

ScoreItem score_verdict(std::string key, std::string label, const std::string& v) {
  if (v.empty()) return {std::move(key), std::move(label), kNull, {}, {}, {}};
  return {std::move(key), std::move(label), v, {}, {}, verdict_class(v)};
}

std::string errors_by_class_text(const Scorecard& sc) {
  if (!sc.errors_by_class) return kNull;
  if (sc.errors_by_class->empty()) return "none";
  std::string o;
  for (const auto& [cls, n] : *sc.errors_by_class) o += fmt::format("{}{} {}", o.empty() ? "" : ", ", cls, format_number(n));
  return o;
}

std::vector<ScorePart> score_parts(const Scorecard& sc) {
  std::vector<ScorePart> parts;
  parts.push_back({"correctness",
                   "Correctness",
                   {score_rate("accuracy", "accuracy", sc.accuracy), score_percent("unparsed_rate", "unparsed answers", sc.unparsed_rate),
                    score_rate("exact_match_rate", "identical (exact match)", sc.exact_match)}});
  parts.push_back({"performance",
                   "Performance",
                   {score_number("request_goodput", "request goodput", sc.request_goodput, "req/s"),
                    score_number("correct_goodput", "correct goodput", sc.correct_goodput, "req/s"),
                    score_number("request_throughput", "request throughput", sc.request_throughput, "req/s"),
                    score_number("p99_ttft_ms", "p99 TTFT", sc.p99_ttft_ms, "ms"),
                    score_number("p99_tpot_ms", "p99 TPOT", sc.p99_tpot_ms, "ms"),
                    score_number("p99_e2el_ms", "p99 E2E", sc.p99_e2el_ms, "ms"), score_verdict("slo_verdict", "SLO", sc.slo_verdict)}});
  ScoreItem cost = score_number("per_million_output_tokens", "per 1M output tokens", sc.cost_per_million, "");
  if (cost.value != kNull) cost.value = "$" + cost.value;
  parts.push_back({"cost",
                   "Cost",
                   {cost, score_number("energy_per_output_token_j", "energy per output token", sc.energy_per_token_j, "J")}});
  ScoreItem valid{"valid", "validity", kNull, {}, {}, {}};
  if (sc.valid) {
    valid.value = *sc.valid ? "VALID" : "INVALID";
    valid.badge = *sc.valid ? "valid" : "invalid";
  }
  parts.push_back({"reliability",
                   "Reliability",
                   {score_percent("error_rate", "error rate", sc.error_rate),
                    {"errors_by_class", "errors by class", errors_by_class_text(sc), {}, {}, {}},
                    valid}});
  return parts;
}

std::string score_item_html(const ScoreItem& it) {
  std::string v;
  if (it.value == kNull) {
    v = std::string("<span class=\"null\" title=\"not measured (null in result.json)\">") + kNull + "</span>";
  } else if (!it.badge.empty()) {
    v = fmt::format("<span class=\"badge {}\">{}</span>", it.badge, html_escape(it.value));
  } else {
    v = html_escape(it.value);
    if (!it.unit.empty()) v += " <span class=\"u\">" + html_escape(it.unit) + "</span>";
  }
  if (!it.detail.empty()) v += "<span class=\"ci\">" + html_escape(it.detail) + "</span>";
  return fmt::format("<dt>{}</dt><dd data-key=\"{}\">{}</dd>", html_escape(it.label), html_escape(it.key), v);
}

std::string score_item_md(const ScoreItem& it) {
  std::string o = it.label + " " + it.value;
  if (it.value != kNull && !it.unit.empty()) o += " " + it.unit;
  if (!it.detail.empty()) o += " (" + it.detail + ")";
  return o;
}

}  // namespace

std::string rate_text(const RateCI& r) { return r.known() ? percent(r.rate) : kNull; }

std::string rate_ci_text(const RateCI& r) {
  if (!r.has_ci()) return {};
  return fmt::format("{:.1f}–{:.1f}%", r.lo * 100, r.hi * 100);
}

std::string scorecard_html(const RunSummary& s, const std::string& prefix, int h) {
  if (!s.scorecard.present) return {};
  std::string o = fmt::format("<h{0}>Scorecard</h{0}>\n<section class=\"scorecard\" id=\"{1}scorecard\">\n", h, prefix);
  for (const auto& part : score_parts(s.scorecard)) {
    o += fmt::format("<div data-part=\"{}\"><div class=\"sc-title\">{}</div><dl>", part.key, part.title);
    for (const auto& it : part.items) o += score_item_html(it);
    o += "</dl></div>\n";
  }
  o += "</section>\n";
  if (s.trials) {
    o += "<p class=\"chart-note\">From the trials artifact's scorecard: accuracy and identical rate pool the trials' "
         "requests, the other numbers are medians across trials; — where it has no value.</p>\n";
  }
  return o;
}

void scorecard_md(std::string& o, const RunSummary& s, const std::string& h) {
  if (!s.scorecard.present) return;
  o += fmt::format("\n{} Scorecard\n\n| part | values |\n| --- | --- |\n", h);
  for (const auto& part : score_parts(s.scorecard)) {
    std::string row;
    for (const auto& it : part.items) row += (row.empty() ? "" : "; ") + score_item_md(it);
    o += fmt::format("| **{}** | {} |\n", part.title, md_cell(row));
  }
}

namespace {

// ---------------------------------------------------------------------------------------------
// The Correctness section's pieces

/// "a reference pass at concurrency 1 (consistency-reference)" / "the saved run DIR".
std::string reference_text(const ConsistencySummary& c) {
  if (c.reference_kind == "run") return "the saved run " + (c.reference_dir.empty() ? std::string("(--reference)") : c.reference_dir);
  if (c.reference_kind == "pass") {
    std::string o = "a reference pass";
    if (!c.reference_load.empty()) o += " at " + c.reference_load;
    if (!c.reference_dir.empty()) o += " (" + c.reference_dir + ")";
    return o;
  }
  return c.reference_dir;
}

/// The unit the first divergence is counted in: "word" or "token".
std::string position_unit(const ConsistencySummary& c) { return c.method == "tokenizer" ? "token" : "word"; }

std::string first_divergence_text(const ConsistencySummary& c) {
  return fmt::format("p50 {}, p90 {} (min {}, max {}, mean {}) over {} diverged", format_number(c.div_p50),
                     format_number(c.div_p90), format_number(c.div_min), format_number(c.div_max), format_number(c.div_mean),
                     format_number(c.div_count));
}

/// The accuracy SLO's bound and verdict: "≥ 85.0%: INCONCLUSIVE".
std::string accuracy_slo_text(const AccuracySummary& a) {
  std::string o = std::isfinite(a.min_accuracy) ? "≥ " + percent(a.min_accuracy) + ": " : std::string();
  return o + (a.slo_verdict.empty() ? "no verdict" : a.slo_verdict);
}

/// The first-divergence histogram as bars.
Chart divergence_chart(const ConsistencySummary& c) {
  Chart ch;
  ch.key = "first-divergence";
  ch.title = "Where the answers diverge";
  ch.x_label = fmt::format("first divergent {} (position)", position_unit(c));
  ch.y_label = "requests";
  ch.integer_x = true;
  Series s = make_series("diverged requests", color::kPurple, false, false);
  s.bars = true;
  s.line = false;
  for (const auto& b : c.histogram) {
    if (!std::isfinite(b.from) || !std::isfinite(b.to) || !std::isfinite(b.count)) continue;
    s.x.push_back((b.from + b.to) / 2);
    s.y.push_back(b.count);
    s.x_lo.push_back(b.from - 0.5);
    s.x_hi.push_back(b.to + 0.5);
    s.tips.push_back(fmt::format("{} {}–{}: {} request{}", position_unit(c), format_number(b.from), format_number(b.to),
                                 format_number(b.count), b.count == 1 ? "" : "s"));
  }
  ch.series.push_back(std::move(s));
  ch.note = fmt::format("Each diverged answer counted at the first {} where it differs from the reference's: {}.",
                        position_unit(c), first_divergence_text(c));
  return ch;
}

std::string kv_item_html(const std::string& key, const std::string& k, const std::string& v, const std::string& u,
                         const std::string& range) {
  return fmt::format("<div data-key=\"{}\"><div class=\"k\">{}</div><div class=\"v\">{} <span class=\"u\">{}</span></div>{}</div>",
                     key, html_escape(k), html_escape(v), html_escape(u),
                     range.empty() ? "" : "<div class=\"range\">" + html_escape(range) + "</div>");
}

std::string graded_table_html(const std::vector<GradedCounts>& rows, const char* what, const std::string& id) {
  if (rows.empty()) return {};
  std::string o = fmt::format("<table class=\"graded\" id=\"{}\"><thead><tr><th class=\"l\">{}</th><th>graded</th><th>correct</th>"
                              "<th>incorrect</th><th>unparsed</th><th>accuracy</th><th>95% CI</th><th>unparsed rate</th></tr>"
                              "</thead><tbody>\n",
                              id, what);
  for (const auto& g : rows) {
    o += fmt::format("<tr data-name=\"{0}\"><td class=\"l\">{0}</td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td><td>{5}</td>"
                     "<td>{6}</td><td>{7}</td></tr>\n",
                     html_escape(g.name), format_number(g.graded), format_number(g.correct), format_number(g.incorrect),
                     format_number(g.unparsed), rate_text(g.accuracy), g.accuracy.has_ci() ? rate_ci_text(g.accuracy) : "–",
                     percent(g.unparsed_rate));
  }
  return o + "</tbody></table>\n";
}

std::string accuracy_html(const AccuracySummary& a, const std::string& prefix, int h) {
  std::string o = fmt::format("<h{0}>Accuracy</h{0}>\n", h);
  if (a.present) {
    const GradedCounts& g = a.all;
    o += fmt::format("<section class=\"kv\" id=\"{}accuracy\">", prefix);
    o += kv_item_html("accuracy", "accuracy", rate_text(g.accuracy), "graded correct",
                      g.accuracy.has_ci() ? "95% CI " + rate_ci_text(g.accuracy) : "");
    std::string counts;
    if (std::isfinite(g.correct)) {
      counts = fmt::format("{} correct · {} incorrect · {} unparsed", format_number(g.correct), format_number(g.incorrect),
                           format_number(g.unparsed));
    }
    o += kv_item_html("graded", "graded", format_number(g.graded), "requests", counts);
    if (std::isfinite(g.unparsed_rate)) o += kv_item_html("unparsed_rate", "unparsed rate", percent(g.unparsed_rate), "", "");
    if (std::isfinite(a.correct_goodput_rate)) {
      o += kv_item_html("correct_goodput", "correct goodput", format_number(a.correct_goodput_rate), "req/s",
                        std::isfinite(a.correct_goodput_requests) ? format_number(a.correct_goodput_requests) + " requests" : "");
    }
    if (std::isfinite(a.failed_requests)) {
      o += kv_item_html("failed_requests", "failed (not graded)", format_number(a.failed_requests), "requests", "");
    }
    o += "</section>\n";
  }
  if (a.has_slo()) {
    std::string why = a.slo_reason.empty() ? a.slo_method : a.slo_reason;
    o += fmt::format("<p class=\"verdict\" id=\"{}accuracy-slo\" data-verdict=\"{}\"><span class=\"badge {}\">{}</span>{}</p>\n",
                     prefix, html_escape(a.slo_verdict), verdict_class(a.slo_verdict),
                     html_escape("accuracy SLO " + accuracy_slo_text(a)), why.empty() ? "" : " " + html_escape(why));
  }
  std::string notes;
  if (!a.correct_goodput_meaning.empty()) notes += "Correct goodput: " + a.correct_goodput_meaning + ". ";
  if (!a.from.empty()) notes += "From " + a.from + ". ";
  if (!notes.empty()) o += "<p class=\"chart-note\">" + html_escape(notes) + "</p>\n";
  o += graded_table_html(a.by_grader, "grader", prefix + "accuracy-by-grader");
  o += graded_table_html(a.by_subset, "subset", prefix + "accuracy-by-subset");
  return o;
}

std::string diverged_table_html(const ConsistencySummary& c, const std::string& prefix) {
  if (c.diverged.empty()) return {};
  std::string o = fmt::format("<div class=\"scroll\"><table class=\"diverged\" id=\"{}diverged\"><thead><tr><th>item</th>"
                              "<th>position</th><th class=\"l\">reference excerpt</th><th class=\"l\">output excerpt</th></tr>"
                              "</thead><tbody>\n",
                              prefix);
  for (const auto& d : c.diverged) {
    o += fmt::format("<tr data-item=\"{0}\"><td>{0}</td><td>{1}</td><td class=\"excerpt\">{2}</td><td class=\"excerpt\">{3}</td></tr>\n",
                     format_number(d.item), format_number(d.position), html_escape(d.reference), html_escape(d.output));
  }
  o += "</tbody></table></div>\n";
  if (std::isfinite(c.div_count) && static_cast<double>(c.diverged.size()) < c.div_count) {
    o += fmt::format("<p class=\"chart-note\">The first {} of {} diverged requests; position: the first differing {}.</p>\n",
                     c.diverged.size(), format_number(c.div_count), position_unit(c));
  }
  return o;
}

std::string consistency_html(const ConsistencySummary& c, const std::string& prefix, int h) {
  std::string o = fmt::format("<h{0}>Consistency</h{0}>\n", h);
  if (std::isfinite(c.exact_match.n) && c.exact_match.n == 0) {
    return o + fmt::format("<p class=\"sub\" id=\"{}consistency\">Nothing to compare: no successful answer had a reference "
                           "answer.</p>\n",
                           prefix);
  }
  o += fmt::format("<section class=\"kv\" id=\"{}consistency\">", prefix);
  o += kv_item_html("exact_match_rate", "identical to the reference", rate_text(c.exact_match), "exact match",
                    c.exact_match.has_ci() ? "95% CI " + rate_ci_text(c.exact_match) : "");
  o += kv_item_html("compared", "compared", format_number(c.exact_match.n), "requests",
                    std::isfinite(c.identical) ? format_number(c.identical) + " identical" : "");
  if (!c.method.empty()) {
    o += kv_item_html("method", "compared by", c.method, "", c.method == "tokenizer" ? "token ids" : "whitespace-split words");
  }
  if (c.has_divergence) {
    o += kv_item_html("first_divergence", "first divergent " + position_unit(c) + ", p50", format_number(c.div_p50), "",
                      fmt::format("p90 {} · min {} · max {}", format_number(c.div_p90), format_number(c.div_min),
                                  format_number(c.div_max)));
  }
  o += "</section>\n";
  std::string note;
  if (const std::string ref = reference_text(c); !ref.empty()) note += "Reference: " + ref + ". ";
  if (!c.from.empty()) note += "From " + c.from + ". ";
  if (!note.empty()) o += "<p class=\"chart-note\">" + html_escape(note) + "</p>\n";
  if (c.has_divergence && !c.histogram.empty()) o += charts_html({divergence_chart(c)}, prefix);
  o += diverged_table_html(c, prefix);
  return o;
}

/// A trials artifact's per-trial counts (result.json "trials"[].accuracy_counts, consistency_counts).
std::string correctness_trials_html(const json& result, const std::string& prefix) {
  const json* tr = find_path(result, {"trials"});
  if (tr == nullptr || !tr->is_array()) return {};
  std::string rows;
  for (std::size_t i = 0; i < tr->size(); ++i) {
    const json& t = (*tr)[i];
    const json* ac = find_path(t, {"accuracy_counts"});
    const json* cc = find_path(t, {"consistency_counts"});
    const bool has_a = ac != nullptr && ac->is_object(), has_c = cc != nullptr && cc->is_object();
    if (!has_a && !has_c) continue;
    const double graded = has_a ? nan_at(*ac, {"graded"}) : kNaN, correct = has_a ? nan_at(*ac, {"correct"}) : kNaN;
    const double compared = has_c ? nan_at(*cc, {"compared"}) : kNaN, identical = has_c ? nan_at(*cc, {"identical"}) : kNaN;
    rows += fmt::format("<tr data-trial=\"{0}\"><td>{0}</td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td><td>{5}</td><td>{6}</td></tr>\n",
                        format_number(num_at(t, {"trial"}).value_or(static_cast<double>(i + 1))), format_number(graded),
                        format_number(correct), graded > 0 ? percent(correct / graded) : "–", format_number(compared),
                        format_number(identical), compared > 0 ? percent(identical / compared) : "–");
  }
  if (rows.empty()) return {};
  return fmt::format("<table id=\"{}correctness-trials\"><thead><tr><th>trial</th><th>graded</th><th>correct</th><th>accuracy</th>"
                     "<th>compared</th><th>identical</th><th>identical rate</th></tr></thead><tbody>\n{}</tbody></table>\n",
                     prefix, rows);
}

}  // namespace

std::string correctness_html(const RunArtifact& a, const RunSummary& s, const std::string& prefix, int h) {
  if (!s.accuracy.present && !s.accuracy.has_slo() && !s.consistency.present) return {};
  const int sub = std::min(h + 1, 4);
  std::string o = fmt::format("<h{0}>Correctness</h{0}>\n<div class=\"correctness\" id=\"{1}correctness\">\n", h, prefix);
  if (s.accuracy.present || s.accuracy.has_slo()) o += accuracy_html(s.accuracy, prefix, sub);
  if (s.consistency.present) o += consistency_html(s.consistency, prefix, sub);
  if (s.trials) {
    const std::string t = correctness_trials_html(a.result, prefix);
    if (!t.empty()) o += fmt::format("<h{0}>Each trial</h{0}>\n", sub) + t;
  }
  return o + "</div>\n";
}

// ---------------------------------------------------------------------------------------------
// summary.md

namespace {

/// Untrusted text (a model's output) for a Markdown table cell: no HTML, no emphasis, no code span.
std::string md_plain(std::string_view s) {
  std::string o;
  for (char c : md_cell(s)) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '*': case '_': case '`': case '[': case ']': case '#': case '~':
        o += '\\';
        o += c;
        break;
      default: o += c;
    }
  }
  return o;
}

void graded_table_md(std::string& o, const std::vector<GradedCounts>& rows, const char* what) {
  if (rows.empty()) return;
  o += fmt::format("\n| {} | graded | correct | incorrect | unparsed | accuracy | 95% CI | unparsed rate |\n"
                   "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
                   what);
  for (const auto& g : rows) {
    o += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", md_plain(g.name), format_number(g.graded),
                     format_number(g.correct), format_number(g.incorrect), format_number(g.unparsed), rate_text(g.accuracy),
                     g.accuracy.has_ci() ? rate_ci_text(g.accuracy) : "–", percent(g.unparsed_rate));
  }
}

void accuracy_md(std::string& o, const AccuracySummary& a) {
  if (a.present) {
    const GradedCounts& g = a.all;
    o += fmt::format("- **Accuracy**: {}{}", rate_text(g.accuracy),
                     g.accuracy.has_ci() ? " (95% CI " + rate_ci_text(g.accuracy) + ")" : "");
    if (std::isfinite(g.correct)) {
      o += fmt::format(", {} of {} graded correct, {} incorrect, {} unparsed", format_number(g.correct), format_number(g.graded),
                       format_number(g.incorrect), format_number(g.unparsed));
    } else if (std::isfinite(g.graded)) {
      o += fmt::format(", {} graded", format_number(g.graded));
    }
    if (std::isfinite(g.unparsed_rate)) o += fmt::format("; unparsed rate {}", percent(g.unparsed_rate));
    if (std::isfinite(a.failed_requests)) o += fmt::format("; {} failed requests not graded", format_number(a.failed_requests));
    if (!a.from.empty()) o += " (from " + a.from + ")";
    o += "\n";
    if (std::isfinite(a.correct_goodput_rate)) {
      o += fmt::format("- **Correct goodput**: {} req/s{}{}\n", format_number(a.correct_goodput_rate),
                       std::isfinite(a.correct_goodput_requests) ? " (" + format_number(a.correct_goodput_requests) + " requests)" : "",
                       a.correct_goodput_meaning.empty() ? "" : ": " + a.correct_goodput_meaning);
    }
  }
  if (a.has_slo()) {
    const std::string why = a.slo_reason.empty() ? a.slo_method : a.slo_reason;
    o += fmt::format("- **Accuracy SLO**: {}{}\n", accuracy_slo_text(a), why.empty() ? "" : ". " + why);
  }
  graded_table_md(o, a.by_grader, "grader");
  graded_table_md(o, a.by_subset, "subset");
}

void consistency_md(std::string& o, const ConsistencySummary& c) {
  if (std::isfinite(c.exact_match.n) && c.exact_match.n == 0) {
    o += "\n- **Consistency**: nothing to compare (no successful answer had a reference answer)\n";
    return;
  }
  o += fmt::format("\n- **Consistency**: {} identical{}", rate_text(c.exact_match),
                   c.exact_match.has_ci() ? " (95% CI " + rate_ci_text(c.exact_match) + ")" : "");
  if (std::isfinite(c.identical)) {
    o += fmt::format(", {} of {} compared", format_number(c.identical), format_number(c.exact_match.n));
  } else if (std::isfinite(c.exact_match.n)) {
    o += fmt::format(", {} compared", format_number(c.exact_match.n));
  }
  if (!c.method.empty()) o += ", by " + c.method;
  if (const std::string ref = reference_text(c); !ref.empty()) o += ", against " + ref;
  if (!c.from.empty()) o += " (from " + c.from + ")";
  o += "\n";
  if (c.has_divergence) o += fmt::format("- **First divergence** ({}s): {}\n", position_unit(c), first_divergence_text(c));
  if (!c.histogram.empty()) {
    o += fmt::format("\n| first divergent {} | requests |\n| ---: | ---: |\n", position_unit(c));
    for (const auto& b : c.histogram) {
      o += fmt::format("| {}–{} | {} |\n", format_number(b.from), format_number(b.to), format_number(b.count));
    }
  }
  if (!c.diverged.empty()) {
    o += "\n| item | position | reference excerpt | output excerpt |\n| ---: | ---: | --- | --- |\n";
    for (const auto& d : c.diverged) {
      o += fmt::format("| {} | {} | {} | {} |\n", format_number(d.item), format_number(d.position), md_plain(d.reference),
                       md_plain(d.output));
    }
  }
}

}  // namespace

void correctness_md(std::string& o, const RunSummary& s, const std::string& h) {
  if (!s.accuracy.present && !s.accuracy.has_slo() && !s.consistency.present) return;
  o += fmt::format("\n{} Correctness\n\n", h);
  if (s.accuracy.present || s.accuracy.has_slo()) accuracy_md(o, s.accuracy);
  if (s.consistency.present) consistency_md(o, s.consistency);
}

}  // namespace llmload::analysis::report_html
