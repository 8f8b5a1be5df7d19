// The goro error category behind goro::errc (include/goro/result.hpp): the
// I/O conditions no syscall reports (timeout, closed, eof, no_address).
#include <string>
#include <system_error>

#include "goro/result.hpp"

namespace goro {

namespace {

class GoroCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "goro"; }
  std::string message(int c) const override {
    switch (static_cast<errc>(c)) {
      case errc::timeout:
        return "i/o timeout";
      case errc::closed:
        return "use of closed network connection";
      case errc::eof:
        return "unexpected end of stream";
      case errc::no_address:
        return "no suitable address found";
    }
    return "unknown goro error";
  }
  std::error_condition default_error_condition(int c) const noexcept override {
    if (static_cast<errc>(c) == errc::timeout) return std::errc::timed_out;
    return {c, *this};
  }
};

}  // namespace

const std::error_category& goro_category() noexcept {
  static const GoroCategory category;
  return category;
}

}  // namespace goro
