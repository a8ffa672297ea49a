#include "llmload/server/api_error.hpp"

#include "llmload/server/json.hpp"

namespace llmload::server {

std::string_view error_type_for_status(int status) {
  switch (status) {
    case 400: return "BadRequestError";
    case 401: return "AuthenticationError";
    case 403: return "PermissionDeniedError";
    case 404: return "NotFoundError";
    case 405: return "MethodNotAllowedError";
    case 408: return "RequestTimeoutError";
    case 409: return "ConflictError";
    case 413: return "RequestEntityTooLargeError";
    case 422: return "UnprocessableEntityError";
    case 429: return "RateLimitError";
    case 431: return "RequestHeaderFieldsTooLargeError";
    default: break;
  }
  return status >= 500 ? "InternalServerError" : "BadRequestError";
}

std::string error_body(const ApiError& error) {
  nlohmann::ordered_json inner;
  inner["message"] = error.message;
  inner["type"] = error_type_for_status(error.status);
  inner["param"] = error.param ? nlohmann::ordered_json(*error.param) : nlohmann::ordered_json(nullptr);
  inner["code"] = error.status;
  nlohmann::ordered_json body;
  body["error"] = std::move(inner);
  // `replace`: a message that echoes client bytes must not make dump() throw.
  return body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string sglang_error_body(const ApiError& error) {
  nlohmann::ordered_json body;
  body["error"]["message"] = error.message;
  return body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string_view anthropic_error_type(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 402: return "billing_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 529: return "overloaded_error";
    default: break;
  }
  return status >= 500 ? "api_error" : "invalid_request_error";
}

std::string anthropic_error_body(const ApiError& error) {
  nlohmann::ordered_json body;
  body["type"] = "error";
  body["error"]["type"] = anthropic_error_type(error.status);
  body["error"]["message"] = error.message;
  return body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

void throw_bad_request(std::string message, std::optional<std::string> param) {
  throw ApiException(ApiError{400, std::move(message), std::move(param)});
}

}  // namespace llmload::server
