// llmload-server's HTTP rules (http_framing.hpp): replies as bytes, what to answer a request
// that could not be read, and the checks of a request head.
// <utility> first: Boost 1.74 needs it under C++20.
#include <utility>

#include "http_framing.hpp"

#include <sstream>

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/write.hpp>
#include <fmt/format.h>

#include "llmload/common/duration.hpp"

namespace llmload::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using error_code = boost::system::error_code;

}  // namespace

bool is_http_error(const error_code& ec) {
  return &ec.category() == &http::make_error_code(http::error::bad_method).category();
}

/// The whole response (head and body) as bytes.
std::string serialize_reply(const HttpReply& reply, unsigned version, bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(reply.status), version};
  res.set(http::field::server, kServerName);
  if (!reply.content_type.empty()) res.set(http::field::content_type, reply.content_type);
  for (const auto& [name, value] : reply.headers) res.set(name, value);
  res.keep_alive(keep_alive);
  res.body() = reply.body;
  res.prepare_payload();
  std::ostringstream out;
  out << res;
  return std::move(out).str();
}

/// The error to answer a request that could not be read with, if any. `got_bytes`: some of the
/// request arrived (a connection that sent nothing and timed out is closed without an answer: a
/// 408 it did not ask for would be read as the answer to its next request).
std::optional<ApiError> read_failure_answer(const error_code& ec, bool got_bytes, ReadPhase phase,
                                            const ServerConfig& config) {
  if (ec == beast::error::timeout) {
    if (!got_bytes) return std::nullopt;
    return phase == ReadPhase::kHead
               ? ApiError{408,
                          fmt::format("Request timed out: the request head did not arrive within {} (--header-timeout)",
                                      format_duration(config.header_timeout)),
                          std::nullopt}
               : ApiError{408,
                          fmt::format("Request timed out: the request body did not arrive within {} (--body-timeout)",
                                      format_duration(config.body_timeout)),
                          std::nullopt};
  }
  if (ec == http::error::body_limit) {
    return ApiError{413, fmt::format("Request body too large: the limit is {} bytes", config.body_limit), std::nullopt};
  }
  if (ec == http::error::header_limit) {
    return ApiError{431, fmt::format("Request header too large: the limit is {} bytes", config.header_limit),
                    std::nullopt};
  }
  if (ec == http::error::buffer_overflow) {
    return ApiError{400, "Malformed HTTP request: a chunk header or a pipelined request is too long", std::nullopt};
  }
  if (is_http_error(ec) && ec != http::error::end_of_stream && ec != http::error::partial_message) {
    return ApiError{400, fmt::format("Malformed HTTP request: {}", ec.message()), std::nullopt};
  }
  return std::nullopt;  // the client went away (end of stream, reset, cut short): nobody to answer
}

/// Checks of a parsed head that Beast's parser leaves to the server: the version, the number of
/// fields, and the framing rules that guard against request smuggling (Beast itself rejects
/// Content-Length with Transfer-Encoding and differing Content-Lengths).
std::optional<ApiError> check_head(const RequestParser& parser, const ServerConfig& config) {
  const auto& req = parser.get();
  if (req.version() != 10 && req.version() != 11) {
    return ApiError{400,
                    fmt::format("Malformed HTTP request: unsupported HTTP version {}.{} (HTTP/1.0 and HTTP/1.1 are "
                                "served)",
                                req.version() / 10, req.version() % 10),
                    std::nullopt};
  }
  std::size_t fields = 0;
  for (auto it = req.begin(); it != req.end(); ++it) ++fields;
  if (fields > config.header_fields_limit) {
    return ApiError{431,
                    fmt::format("Request header too large: {} fields, the limit is {}", fields,
                                config.header_fields_limit),
                    std::nullopt};
  }
  if (req.count(http::field::host) > 1) {
    return ApiError{400, "Malformed HTTP request: more than one Host field", std::nullopt};
  }
  if (req.count(http::field::transfer_encoding) > 0) {
    // Only a lone "chunked": any other coding leaves the body length to guesswork (RFC 9112 6.3).
    const auto te = req[http::field::transfer_encoding];
    if (!parser.chunked() || req.count(http::field::transfer_encoding) > 1 || !beast::iequals(te, "chunked")) {
      return ApiError{400,
                      fmt::format("Malformed HTTP request: unsupported Transfer-Encoding \"{}\" (only \"chunked\" is "
                                  "accepted)",
                                  beast_view(te)),
                      std::nullopt};
    }
  }
  return std::nullopt;
}

std::string error_response_bytes(const ApiError& error) { return serialize_reply(error_reply(error), 11, false); }

}  // namespace llmload::server
