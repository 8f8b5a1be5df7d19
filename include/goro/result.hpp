// goro::Result<T>: the one result type of goro's I/O paths (docs/DESIGN.md "Layers":
// errors on I/O paths are values, not exceptions).
//
// A Result holds either a T or a std::error_code, never both. It is
// deliberately small, a C++20 stand-in for std::expected<T, std::error_code>:
//
// Example:
//   auto read_some = [](goro::net::Conn& conn, std::span<char> buf) -> goro::Result<std::string> {
//     goro::Result<std::size_t> n = conn.read(buf);
//     if (!n) return n.error();          // or: if (n.error() == goro::errc::timeout)
//     return std::string(buf.data(), *n);
//   };
//   (void)read_some;
//
// - ok() / explicit operator bool: true when it holds a value.
// - error(): the error, or a default (success) std::error_code when ok.
// - value(), operator*, operator->: the value. value() on an error throws
//   std::system_error (a programming error surfaced loudly, like
//   std::expected's bad_expected_access); operator* on an error is undefined.
// - Result<void> carries only the error. As with std::error_code's own
//   bool, a code of value 0 is success in any category: ok(), and error()
//   returns that code (a default Result<void>: std::error_code{}). A
//   Result<T> made from a code is an error whatever its value.
//
// Errors are plain std::error_codes: the errno of the failed syscall in
// std::system_category() (compare with std::errc::connection_reset ...), or one
// of goro::errc below for conditions that have no errno.
#pragma once

#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

namespace goro {

// Conditions goro's I/O layers report that no syscall returns. No value is
// 0, which is success for an error code (netpoll's PollStatus takes errc{}
// for "no error").
enum class errc {
  // A deadline passed (Conn::set_deadline, dial's timeout). Compares equal to
  // std::errc::timed_out, so `ec == std::errc::timed_out` also works.
  timeout = 1,
  // The socket was closed by this process (close() while another goroutine
  // was blocked in it, or use after close). Go's net.ErrClosed.
  closed,
  // read_full reached end of stream before filling the buffer.
  eof,
  // Name resolution found no usable address.
  no_address,
};

const std::error_category& goro_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), goro_category()};
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(const T& v) : v_(std::in_place_index<0>, v) {}
  Result(T&& v) : v_(std::in_place_index<0>, std::move(v)) {}
  Result(std::error_code ec) : v_(std::in_place_index<1>, ec) {}
  Result(errc e) : Result(make_error_code(e)) {}

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  std::error_code error() const noexcept { return ok() ? std::error_code{} : std::get<1>(v_); }

  T& value() & {
    check();
    return std::get<0>(v_);
  }
  const T& value() const& {
    check();
    return std::get<0>(v_);
  }
  T&& value() && {
    check();
    return std::get<0>(std::move(v_));
  }
  template <class U>
  T value_or(U&& fallback) const& {
    return ok() ? std::get<0>(v_) : static_cast<T>(std::forward<U>(fallback));
  }

  T& operator*() & noexcept { return *std::get_if<0>(&v_); }
  const T& operator*() const& noexcept { return *std::get_if<0>(&v_); }
  T&& operator*() && noexcept { return std::move(*std::get_if<0>(&v_)); }
  T* operator->() noexcept { return std::get_if<0>(&v_); }
  const T* operator->() const noexcept { return std::get_if<0>(&v_); }

 private:
  void check() const {
    if (!ok()) throw std::system_error(std::get<1>(v_));
  }
  std::variant<T, std::error_code> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(std::error_code ec) : value_(ec.value()), cat_(&ec.category()) {}
  Result(errc e) : Result(make_error_code(e)) {}

  bool ok() const noexcept { return value_ == 0; }
  explicit operator bool() const noexcept { return ok(); }
  std::error_code error() const noexcept {
    return cat_ == nullptr ? std::error_code{} : std::error_code(value_, *cat_);
  }
  void value() const {
    if (!ok()) throw std::system_error(error());
  }

 private:
  // The error_code's two parts, and no category for a default (successful)
  // Result: std::error_code's own default constructor calls
  // std::system_category(), out of line in libstdc++, and a success is
  // made several times a request on the server's paths.
  int value_ = 0;
  const std::error_category* cat_ = nullptr;
};

}  // namespace goro

template <>
struct std::is_error_code_enum<goro::errc> : std::true_type {};
