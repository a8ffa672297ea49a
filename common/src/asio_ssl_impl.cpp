// The one translation unit that compiles Boost.Asio's SSL support (separate compilation), apart
// from asio_impl.cpp so that only the code that speaks TLS (the load generator's transport)
// links OpenSSL; the mock server does not.
// <utility> first: Boost 1.74's awaitable.hpp needs it under C++20.
#include <utility>

#include <boost/asio/ssl/impl/src.hpp>
