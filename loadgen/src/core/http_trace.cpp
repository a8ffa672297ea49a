#include "llmload/loadgen/http_trace.hpp"

#include <fcntl.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace llmload {

using nlohmann::json;

namespace {

bool trace_is_authorization(std::string_view name) {
  constexpr std::string_view kAuth = "authorization";
  if (name.size() != kAuth.size()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i] >= 'A' && name[i] <= 'Z' ? static_cast<char>(name[i] - 'A' + 'a') : name[i];
    if (c != kAuth[i]) return false;
  }
  return true;
}

// Text as JSON can carry it: valid UTF-8 stays as it is; other bytes become U+FFFD (the
// dump's replace handler), so a trace of a binary body still parses.
json trace_text(const Secrets& secrets, std::string s) { return json(secrets.redact(std::move(s))); }

}  // namespace

HttpExchangeTrace::HttpExchangeTrace(std::uint64_t index, const HttpRequest& request, TimePoint run_start)
    : index_(index), run_start_(run_start), request_(request) {}

double HttpExchangeTrace::at(TimePoint t) const { return std::chrono::duration<double>(t - run_start_).count(); }

void HttpExchangeTrace::sent(TimePoint t) { sent_s_ = at(t); }

void HttpExchangeTrace::head(std::string_view raw_head) { head_.assign(raw_head.substr(0, 64 * 1024)); }

void HttpExchangeTrace::headers(TimePoint t, int status, std::string_view content_type) {
  headers_s_ = at(t);
  status_ = status;
  content_type_.assign(content_type);
}

void HttpExchangeTrace::body(TimePoint t, std::string_view bytes) {
  body_bytes_ += bytes.size();
  if (kept_bytes_ >= kMaxTracedBody) return;
  const std::string_view kept = bytes.substr(0, kMaxTracedBody - kept_bytes_);
  kept_bytes_ += kept.size();
  pieces_.push_back({at(t), std::string(kept)});
}

void HttpExchangeTrace::complete(TimePoint t, const TransportError& error) {
  complete_s_ = at(t);
  if (!error.ok()) error_ = error.message;
}

json HttpExchangeTrace::to_json(const Secrets& secrets) const {
  json headers = json::array();
  for (const auto& [name, value] : request_.headers) {
    headers.push_back({name, trace_is_authorization(name) ? json("[redacted]") : trace_text(secrets, value)});
  }
  json pieces = json::array();
  for (const auto& p : pieces_) pieces.push_back({{"t_s", p.t_s}, {"bytes", trace_text(secrets, p.bytes)}});
  const auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  return {{"request_index", index_},
          {"request",
           {{"sent_s", opt(sent_s_)},
            {"method", request_.method},
            {"target", trace_text(secrets, request_.target)},
            {"headers", std::move(headers)},
            {"body", trace_text(secrets, request_.body)}}},
          {"response",
           {{"headers_s", opt(headers_s_)},
            {"status", status_ == 0 ? json(nullptr) : json(status_)},
            {"content_type", trace_text(secrets, content_type_)},
            {"head", trace_text(secrets, head_)},
            {"body_pieces", std::move(pieces)},
            {"body_bytes", body_bytes_},
            {"body_bytes_kept", kept_bytes_},
            {"complete_s", opt(complete_s_)},
            {"transport_error", error_.empty() ? json(nullptr) : trace_text(secrets, error_)}}}};
}

HttpTraceLog::HttpTraceLog(std::filesystem::path path, std::size_t max_exchanges, Secrets secrets)
    : path_(std::move(path)), max_(max_exchanges), secrets_(std::move(secrets)) {}

HttpTraceLog::~HttpTraceLog() { close(); }

bool HttpTraceLog::take() {
  if (taken_ >= max_ || error_) return false;
  ++taken_;
  return true;
}

void HttpTraceLog::write(const HttpExchangeTrace& exchange) {
  if (error_) return;
  if (file_ == nullptr) {
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
      error_ = fmt::format("cannot write the HTTP trace {}: {}", path_.string(), std::strerror(errno));
      return;
    }
    file_ = std::make_unique<BackgroundAppender>(fd, BackgroundAppender::Options{});
  }
  const std::string line =
      exchange.to_json(secrets_).dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  if (!file_->append(line)) {
    error_ = fmt::format("writing the HTTP trace {} failed: {}", path_.string(), std::strerror(file_->error()));
    return;
  }
  ++written_;
}

void HttpTraceLog::close() {
  if (file_ == nullptr) return;
  const int e = file_->close();
  file_.reset();
  if (e != 0 && !error_) {
    error_ = fmt::format("writing the HTTP trace {} failed: {}", path_.string(), std::strerror(e));
  }
}

}  // namespace llmload
