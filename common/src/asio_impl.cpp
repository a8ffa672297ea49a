// The one translation unit that compiles Boost.Asio and Boost.Beast (separate compilation).
// <utility> first: Boost 1.74's awaitable.hpp needs it under C++20.
#include <utility>

#include <boost/asio/impl/src.hpp>
#include <boost/beast/src.hpp>
