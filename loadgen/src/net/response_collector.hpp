#pragma once
// A ResponseObserver that keeps one whole small response: the endpoint probes and the metrics
// scraper read theirs through it.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "llmload/loadgen/transport.hpp"

namespace llmload::net {

/// Collects one small response (a probe, a scrape): status, body up to `max_body` (a longer one
/// is abandoned: `overflow`), the transport's end; calls `done` at the end when set.
class ResponseCollector final : public ResponseObserver {
 public:
  explicit ResponseCollector(std::size_t max_body = 4u << 20) : max_body_(max_body) {}
  void reset() {
    status = 0;
    body.clear();
    error = {};
    complete = false;
    overflow = false;
    t_sent.reset();
    t_headers.reset();
    location.clear();
    content_encoding.clear();
  }
  void on_sent(TimePoint t) override { t_sent = t; }
  void on_header_field(std::string_view name, std::string_view value) override {
    if (name == "Location") location.assign(value);
    if (name == "Content-Encoding") content_encoding.assign(value);
  }
  void on_headers(TimePoint t, int s, std::string_view) override {
    t_headers = t;
    status = s;
  }
  bool on_body(TimePoint, std::string_view bytes) override {
    if (body.size() + bytes.size() > max_body_) {
      overflow = true;
      return false;
    }
    body.append(bytes);
    return true;
  }
  void on_complete(TimePoint, const TransportError& e) override {
    error = e;
    complete = true;
    if (done) done();
  }

  std::function<void()> done;
  int status = 0;
  std::string body;
  TransportError error;
  bool complete = false;
  bool overflow = false;
  std::optional<TimePoint> t_sent;
  std::optional<TimePoint> t_headers;
  std::string location;          // a redirect's target
  std::string content_encoding;  // a compressed body's coding

 private:
  std::size_t max_body_;
};

}  // namespace llmload::net
