#pragma once
// Private to llmload-server's HTTP layer (connection.cpp, http_framing.cpp): a whole reply as
// bytes, what to answer a request that could not be read, and the checks of a request head that
// Beast's parser leaves to the server. Includes Beast; keep it out of public headers.
// <utility> first: Boost 1.74 needs it under C++20.
#include <utility>

#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/core/error.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "llmload/server/api_error.hpp"
#include "llmload/server/router.hpp"
#include "llmload/server/server_config.hpp"

namespace llmload::server {

using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

/// The Server header of every reply.
inline constexpr const char* kServerName = "llmload-server";

/// Beast 1.74 uses boost::string_view.
inline std::string_view beast_view(boost::beast::string_view s) { return {s.data(), s.size()}; }

/// Which part of a request was being read.
enum class ReadPhase { kHead, kBody };

/// Whether `ec` is one of Beast's HTTP parse errors.
bool is_http_error(const boost::system::error_code& ec);

/// The whole response (head and body) as bytes.
std::string serialize_reply(const HttpReply& reply, unsigned version, bool keep_alive);

/// The error to answer a request that could not be read with, if any. `got_bytes`: some of the
/// request arrived (a connection that sent nothing and timed out is closed without an answer: a
/// 408 it did not ask for would be read as the answer to its next request).
std::optional<ApiError> read_failure_answer(const boost::system::error_code& ec, bool got_bytes, ReadPhase phase,
                                            const ServerConfig& config);

/// Checks of a parsed head that Beast's parser leaves to the server: the version, the number of
/// fields, and the framing rules that guard against request smuggling (Beast itself rejects
/// Content-Length with Transfer-Encoding and differing Content-Lengths).
std::optional<ApiError> check_head(const RequestParser& parser, const ServerConfig& config);

}  // namespace llmload::server
