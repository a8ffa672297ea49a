#pragma once
// The transport seam: sends one HTTP request and reports the response as it arrives.
// The real one is Boost.Beast over TCP (net/); tests script a fake one on a manual clock.

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llmload/analysis/request_record.hpp"
#include "llmload/loadgen/clock.hpp"

namespace llmload {

using HeaderFields = std::vector<std::pair<std::string, std::string>>;

/// HTTP field names compare without regard to case (RFC 9110).
inline bool same_field_name(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

/// `user` after `own`, each of `own` unless a field of `user` has its name: one field per name.
inline HeaderFields merge_fields(HeaderFields own, const HeaderFields& user) {
  HeaderFields out;
  out.reserve(own.size() + user.size());
  for (auto& field : own) {
    const bool replaced =
        std::any_of(user.begin(), user.end(), [&](const auto& u) { return same_field_name(u.first, field.first); });
    if (!replaced) out.push_back(std::move(field));
  }
  out.insert(out.end(), user.begin(), user.end());
  return out;
}

struct HttpRequest {
  std::string method = "POST";
  std::string target;  // path and query, e.g. "/v1/completions"
  HeaderFields headers;
  std::string body;

  /// The one rule for a request's fields: Host, then llmload's own (`own`, and Authorization:
  /// Bearer `api_key` when a key is set), each unless a user field (--header) of the same name,
  /// in any case, replaces it, then the user's fields. One field of each name goes on the wire.
  void set_headers(const std::string& host, HeaderFields own, const std::string& api_key, const HeaderFields& user) {
    if (!api_key.empty()) own.emplace_back("Authorization", "Bearer " + api_key);
    headers.clear();
    headers.emplace_back("Host", host);
    for (auto& field : merge_fields(std::move(own), user)) headers.push_back(std::move(field));
  }
};

/// An I/O-level failure: its class and a message naming the operation ("connect: refused").
struct TransportError {
  analysis::ErrorClass cls = analysis::ErrorClass::kNone;
  std::string message;
  bool ok() const { return cls == analysis::ErrorClass::kNone; }
};

/// Receives the progress of one request. Calls arrive in this order: on_sent (at most once),
/// on_headers (at most once), on_body (any number), on_complete (exactly once, last).
/// Each carries the monotonic time at which the transport observed it.
class ResponseObserver {
 public:
  virtual ~ResponseObserver() = default;
  virtual void on_sent(TimePoint t) = 0;
  /// Response header fields the recorder may want, delivered before on_headers: Retry-After,
  /// Location and Content-Encoding. Default: ignored.
  virtual void on_header_field(std::string_view name, std::string_view value) {
    (void)name;
    (void)value;
  }
  /// The whole response head as received (status line and every field), delivered before
  /// on_headers, only to an observer that wants it (--trace-http). Default: not wanted.
  virtual bool wants_raw_head() const { return false; }
  virtual void on_raw_head(std::string_view head) { (void)head; }
  virtual void on_headers(TimePoint t, int status, std::string_view content_type) = 0;
  /// Body bytes (de-chunked). Return false to abort the request (the observer has seen enough,
  /// e.g. an oversized event); the transport then completes with kCanceled.
  virtual bool on_body(TimePoint t, std::string_view bytes) = 0;
  virtual void on_complete(TimePoint t, const TransportError& error) = 0;

  /// Progress deadlines the transport enforces for the observer (first token, gap between
  /// tokens): the moment by which the observer needs more progress, or nullopt for none. The
  /// transport asks after on_sent and after every on_body; when the moment passes before the
  /// request completes, it calls on_deadline and completes the request with the error returned.
  virtual std::optional<TimePoint> deadline() const { return std::nullopt; }
  virtual TransportError on_deadline(TimePoint now) {
    (void)now;
    return TransportError{analysis::ErrorClass::kTimeout, "deadline passed"};
  }
};

/// Contract: start() returns at once; the observer must outlive the request (until
/// on_complete). Threading: all calls, and all observer callbacks, happen on the driver thread.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual void start(const HttpRequest& request, ResponseObserver& observer) = 0;
  /// Aborts every request in flight; each completes with kCanceled.
  virtual void cancel_all() = 0;
};

}  // namespace llmload
