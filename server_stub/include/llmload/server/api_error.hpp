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
/// 401 AuthenticationError, 403 PermissionDeniedError, 404 NotFoundError,
/// 405 MethodNotAllowedError, 408 RequestTimeoutError, 409 ConflictError,
/// 413 RequestEntityTooLargeError, 422 UnprocessableEntityError, 429 RateLimitError,
/// 431 RequestHeaderFieldsTooLargeError, every 5xx InternalServerError (the class the OpenAI
/// SDKs raise for >= 500, and llm-d's type), any other 4xx BadRequestError.
std::string_view error_type_for_status(int status);

/// The JSON body for an error in the OpenAI / vLLM shape
/// {"error":{"message","type","param","code"}} (always valid JSON, even for non-UTF-8 bytes).
std::string error_body(const ApiError& error);

/// The JSON body for an error in SGLang's native shape {"error":{"message"}} (/generate).
std::string sglang_error_body(const ApiError& error);

/// Anthropic's error type for a status: 400 (and other 4xx) invalid_request_error, 401
/// authentication_error, 402 billing_error, 403 permission_error, 404 not_found_error, 413
/// request_too_large, 429 rate_limit_error, 529 overloaded_error, other 5xx api_error.
std::string_view anthropic_error_type(int status);

/// The JSON body for an error in the Anthropic Messages API's shape
/// {"type":"error","error":{"type","message"}} (/v1/messages; the status stays the HTTP status).
std::string anthropic_error_body(const ApiError& error);

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
