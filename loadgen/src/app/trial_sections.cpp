#include "trial_sections.hpp"

#include <algorithm>
#include <map>
#include <string>

namespace llmload::app {

using nlohmann::json;

namespace {

constexpr const char* kSections[] = {"reasoning", "structured_output", "prefix_cache", "by_model"};

json median_of(std::vector<double> v) {
  if (v.empty()) return nullptr;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

json rate(double k, double n) { return n > 0 ? json(k / n) : json(nullptr); }

// The present sections of one kind, in trial order.
std::vector<const json*> sections_of(const std::vector<json>& entries, const char* key) {
  std::vector<const json*> out;
  for (const auto& e : entries) {
    // Pointers into the entries themselves (json::value returns a copy: its address would dangle).
    const auto s = e.find("sections");
    if (s == e.end() || !s->is_object()) continue;
    const auto part = s->find(key);
    if (part != s->end() && part->is_object()) out.push_back(&*part);
  }
  return out;
}

// Sums the integer counts named `keys` (and the count maps named `maps`) over the sections.
json sum_counts(const std::vector<const json*>& parts, std::initializer_list<const char*> keys,
                std::initializer_list<const char*> maps = {}) {
  json out = json::object();
  for (const char* k : keys) {
    std::int64_t total = 0;
    for (const json* p : parts) {
      const auto it = p->find(k);  // null where a trial had none (prefix_cache from the server only)
      if (it != p->end() && it->is_number_integer()) total += it->get<std::int64_t>();
    }
    out[k] = total;
  }
  for (const char* m : maps) {
    std::map<std::string, std::int64_t> total;
    for (const json* p : parts) {
      const json& x = p->value(m, json());
      if (!x.is_object()) continue;
      for (const auto& [name, n] : x.items()) {
        if (n.is_number_integer()) total[name] += n.get<std::int64_t>();
      }
    }
    out[m] = total;
  }
  return out;
}

json pool_structured(const std::vector<const json*>& parts) {
  json s = sum_counts(parts, {"requests", "judged", "valid", "invalid", "text_answers", "tool_call_requests", "tool_calls"},
                      {"by_verdict"});
  s["invalid_rate"] = rate(s["invalid"].get<double>(), s["valid"].get<double>() + s["invalid"].get<double>());
  json examples = json::array();
  for (const json* p : parts) {
    for (const auto& e : p->value("examples", json::array())) {
      if (examples.size() < 5) examples.push_back(e);
    }
  }
  s["examples"] = examples;
  s["from"] = "the trials' judged requests pooled";
  return s;
}

json pool_prefix_cache(const std::vector<const json*>& parts) {
  json s = sum_counts(parts, {"cached_tokens", "prompt_tokens", "requests", "requests_reporting"});
  s["hit_rate"] = s["requests_reporting"].get<std::int64_t>() > 0
                      ? rate(s["cached_tokens"].get<double>(), s["prompt_tokens"].get<double>())
                      : json(nullptr);
  std::vector<double> server;
  for (const json* p : parts) {
    if (p->value("server_hit_rate", json()).is_number()) server.push_back((*p)["server_hit_rate"].get<double>());
  }
  s["server_hit_rate"] = median_of(server);
  s["source"] = s["hit_rate"].is_number() ? "usage" : "server_metrics";
  s["from"] = "cached and prompt tokens summed over the trials; server_hit_rate: the median across trials";
  return s;
}

json pool_reasoning(const std::vector<const json*>& parts) {
  json s = sum_counts(parts, {"requests", "reasoning_first", "reasoning_only", "reasoning_tokens", "output_tokens"},
                      {"sources"});
  s["share_of_output_tokens"] = rate(s["reasoning_tokens"].get<double>(), s["output_tokens"].get<double>());
  std::vector<double> duration, answer_tpot;
  for (const json* p : parts) {
    const json& d = p->value("duration", json());
    if (d.is_object() && d.value("p50_ms", json()).is_number()) duration.push_back(d["p50_ms"].get<double>());
    const json& a = p->value("answer_tpot", json());
    if (a.is_object() && a.value("p50_ms", json()).is_number()) answer_tpot.push_back(a["p50_ms"].get<double>());
  }
  s["duration"] = {{"p50_ms", median_of(duration)}, {"from", "the median across trials of each trial's p50"}};
  s["answer_tpot"] = {{"p50_ms", median_of(answer_tpot)}, {"from", "the median across trials of each trial's p50"}};
  s["from"] = "token counts summed over the trials";
  return s;
}

// Per model: request counts summed; throughput and p99 latencies the median across trials.
json pool_by_model(const std::vector<const json*>& parts) {
  std::map<std::string, std::vector<const json*>> models;
  for (const json* p : parts) {
    for (const auto& [model, m] : p->items()) {
      if (m.is_object()) models[model].push_back(&m);
    }
  }
  json out = json::object();
  for (const auto& [model, ms] : models) {
    json m = sum_counts(ms, {"requests", "completed", "failed"});
    std::map<std::string, std::vector<double>> values;
    for (const json* x : ms) {
      for (const char* k : {"request_throughput", "output_throughput"}) {
        if (x->value(k, json()).is_number()) values[k].push_back((*x)[k].get<double>());
      }
      const json& lat = x->value("latency", json());
      for (const char* metric : {"ttft", "ttfo", "tpot", "e2e"}) {
        const json& l = lat.is_object() ? lat.value(metric, json()) : json();
        if (l.is_object() && l.value("p99_ms", json()).is_number()) values[metric].push_back(l["p99_ms"].get<double>());
      }
    }
    m["request_throughput"] = median_of(values["request_throughput"]);
    m["output_throughput"] = median_of(values["output_throughput"]);
    json latency = json::object();
    for (const char* metric : {"ttft", "ttfo", "tpot", "e2e"}) latency[metric] = {{"p99_ms", median_of(values[metric])}};
    m["latency"] = latency;
    m["from"] = "counts summed; throughput and p99 latencies the median across trials";
    out[model] = m;
  }
  return out;
}

}  // namespace

json trial_sections(const json& result) {
  json s = json::object();
  for (const char* k : kSections) s[k] = result.value(k, json(nullptr));
  return s;
}

void pool_trial_sections(json& aggregate, const std::vector<json>& entries) {
  const auto pool = [&](const char* key, json (*f)(const std::vector<const json*>&)) {
    const auto parts = sections_of(entries, key);
    aggregate[key] = parts.empty() ? json(nullptr) : f(parts);
  };
  pool("reasoning", pool_reasoning);
  pool("structured_output", pool_structured);
  pool("prefix_cache", pool_prefix_cache);
  pool("by_model", pool_by_model);
}

}  // namespace llmload::app
