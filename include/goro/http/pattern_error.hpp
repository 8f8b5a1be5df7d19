// goro::http::PatternError: a route pattern that is invalid or conflicts with
// one already registered. Like Go's panic in ServeMux.Handle, it is a
// programming error found at startup; what() names the pattern(s) and why:
//   goro/http: invalid pattern "/a/{x": bad wildcard segment (must end with '}')
#pragma once

#include <stdexcept>

namespace goro::http {

class PatternError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace goro::http
