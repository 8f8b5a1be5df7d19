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
#include <vector>

namespace goro::http {

class Header {
 public:
  struct Field {
    std::string name;  // canonical form
    std::string value;
  };

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

  void clear() noexcept { fields_.clear(); }
  bool empty() const noexcept { return fields_.empty(); }
  std::size_t size() const noexcept { return fields_.size(); }
  auto begin() const noexcept { return fields_.begin(); }
  auto end() const noexcept { return fields_.end(); }

 private:
  std::vector<Field> fields_;  // a handful of fields: a flat vector beats a map
};

}  // namespace goro::http
