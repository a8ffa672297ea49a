#pragma once
// How the transport classifies an I/O failure (shared with the HTTP-response fuzz target, so the
// fuzzer checks the real rules, not a copy).

#include <utility>  // before Asio (Boost 1.74 + C++20)

#include <boost/system/error_code.hpp>

#include "llmload/analysis/request_record.hpp"

namespace llmload::net {

/// `stage` is the class of the step that failed: kProtocol while waiting for the response head,
/// kIncomplete while reading the body. A connection that ends (EOF, reset, broken pipe, or over
/// TLS a close without close_notify: stream_truncated) before the response head is complete is
/// kIncomplete; so is one that ends inside the body. An HTTP syntax error inside the body (bad
/// chunk encoding and the like) is kProtocol.
analysis::ErrorClass classify_io_error(analysis::ErrorClass stage, const boost::system::error_code& ec);

}  // namespace llmload::net
