#pragma once
// OpenAI-shaped API errors: {"error":{"message","type","param","code"}}.
// Pure values; no I/O. Request validation throws ApiException, the router turns it into a reply.

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace llmload::server {

struct ApiError {
  int status = 400;                  ///< HTTP status, also sent as "code"
  std::string message;
  std::optional<std::string> param;  ///< the offending request field, or null
};

/// The "type" for a status, as vLLM / the OpenAI client name them: 400 BadRequestError,
/// 404 NotFoundError, 405 MethodNotAllowedError, 413 RequestEntityTooLargeError,
/// 431 RequestHeaderFieldsTooLargeError, 5xx InternalServerError, other 4xx "<Reason>Error".
std::string_view error_type_for_status(int status);

/// The JSON body for an error (always valid JSON, even for non-UTF-8 message bytes).
std::string error_body(const ApiError& error);

/// Thrown by validation code; carries the error to report.
class ApiException : public std::runtime_error {
 public:
  explicit ApiException(ApiError error) : std::runtime_error(error.message), error_(std::move(error)) {}
  const ApiError& error() const { return error_; }

 private:
  ApiError error_;
};

/// Shorthands for the common cases.
[[noreturn]] void throw_bad_request(std::string message, std::optional<std::string> param = std::nullopt);

}  // namespace llmload::server
