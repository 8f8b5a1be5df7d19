// goro::http::Header: the header fields of a response (Go's http.Header).
//
// Names are compared without regard to ASCII case and written in Go's
// canonical form ("content-type" is sent as "Content-Type"); a name may carry
// several values, kept in the order they were added and sent as separate
// lines. A name must be a token (RFC 9110 §5.6.2: letters, digits and
// !#$%&'*+-.^_`|~) and a value must not contain CR or LF: set()/add() drop
// such a field (a name with a space, colon or line break, or a value with a
// line break, would let a caller's input split the response). NUL bytes are
// removed from values (RFC 9110 §5.5: a recipient may reject them).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace goro::http {

class Header {
 public:
  struct Field {
    std::string name;  // canonical form
    std::string value;
  };

  Header() = default;
  Header(const Header&) = default;
  Header& operator=(const Header&) = default;
  // A moved-from Header is empty and usable.
  Header(Header&& o) noexcept : fields_(std::move(o.fields_)), size_(o.size_) {
    o.fields_.clear();
    o.size_ = 0;
  }
  Header& operator=(Header&& o) noexcept {
    if (this != &o) {
      fields_ = std::move(o.fields_);
      size_ = o.size_;
      o.fields_.clear();
      o.size_ = 0;
    }
    return *this;
  }
  ~Header() = default;

  // Replaces every value of `name` with `value`.
  void set(std::string_view name, std::string_view value);
  // Adds one more value for `name`.
  void add(std::string_view name, std::string_view value);
  // Removes every value of `name`.
  void del(std::string_view name);
  // The first value of `name`, or "" (Go's Header.Get); has() tells absent
  // from empty.
  std::string_view get(std::string_view name) const;
  bool has(std::string_view name) const;
  std::vector<std::string_view> values(std::string_view name) const;

  void clear() noexcept { size_ = 0; }
  bool empty() const noexcept { return size_ == 0; }
  std::size_t size() const noexcept { return size_; }
  auto begin() const noexcept { return fields_.begin(); }
  auto end() const noexcept { return fields_.begin() + static_cast<std::ptrdiff_t>(size_); }
  // clear() and del() keep removed fields' memory for the next fields; this
  // gives it back when it is over `max_kept_bytes` (a connection at rest
  // after a response with a huge header keeps nothing of it).
  void trim(std::size_t max_kept_bytes);

 private:
  // add() for a field that is not the kept one at size_ (header.cpp).
  void add_new(std::string_view name, std::string_view value);

  // A handful of fields: a flat vector beats a map. fields_[0, size_) are
  // the header; the rest are cleared or deleted fields kept with their
  // strings' capacity, so a connection's next response sets its fields
  // without allocating.
  std::vector<Field> fields_;
  std::size_t size_ = 0;
};

}  // namespace goro::http
