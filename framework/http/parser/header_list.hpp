// HeaderList: the header fields of one message as they arrived — insertion
// order, repeated names kept, names compared without regard to ASCII case.
//
// Field names and values live in one byte arena owned by the list; fields are
// recorded as offsets into it and turned into views on access, so appending
// never invalidates what a caller holds by index, and clear() keeps both the
// arena and the index capacity for the next request on the connection (no
// allocation per request once a connection has warmed up).
//
// Views returned by the accessors are valid until the next add() or clear(),
// or a change made through bytes().
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace goro::http::detail {

struct HeaderField {
  std::string_view name;
  std::string_view value;
};

// ASCII case-insensitive equality (HTTP field names, tokens, schemes).
// Inline: most calls compare with a literal of a known length, a few
// instructions once the compiler sees both.
inline bool equal_fold(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto x = static_cast<unsigned char>(a[i]);
    const auto y = static_cast<unsigned char>(b[i]);
    if (x != y && ((x | 0x20U) != (y | 0x20U) || (x | 0x20U) - 'a' > unsigned{'z' - 'a'})) {
      return false;
    }
  }
  return true;
}

// Strips leading and trailing optional whitespace (SP / HTAB). Inline: the
// parser trims every field value.
inline std::string_view trim_ows(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// True if the comma-separated list `list` holds `token` (case-insensitive,
// OWS around elements ignored), as in `Connection: keep-alive, Upgrade`.
bool list_has_token(std::string_view list, std::string_view token) noexcept;

class HeaderList {
 public:
  void add(std::string_view name, std::string_view value);

  // The arena, for a parser that puts a whole header section there and
  // records the fields where they lie (add_in_place) instead of copying
  // each: the request parser's head and trailers (parser.cpp "Sections").
  std::string& bytes() noexcept { return arena_; }
  std::string_view bytes() const noexcept { return arena_; }
  // Forgets the fields, keeping bytes() as they are.
  void clear_fields() noexcept { entries_.clear(); }
  // # Borrowed bytes
  // The fields may instead be recorded where they lie in bytes the list
  // does not own (the request parser's head, taken where the caller's
  // input holds it): after borrow(base), `base` stands where the arena's
  // start would, and the caller keeps those bytes in place and unchanged
  // until clear() (parser.hpp RequestParser::borrow_input).
  void borrow(const char* base) noexcept { base_ = base; }
  bool borrowed() const noexcept { return base_ != nullptr; }
  // The bytes the offsets count from: the borrowed ones, else the arena.
  const char* base() const noexcept { return base_ != nullptr ? base_ : arena_.data(); }
  // Records a field without copying it: `name` and `value` lie as far from
  // `base` as the field's bytes do from the arena's start. `base` is
  // bytes().data(), or the start of bytes the arena is to hold a copy of
  // before the list is read.
  void add_in_place(const char* base, std::string_view name, std::string_view value) {
    entries_.push_back(Entry{
        static_cast<std::uint32_t>(name.data() - base), static_cast<std::uint32_t>(name.size()),
        static_cast<std::uint32_t>(value.data() - base), static_cast<std::uint32_t>(value.size())});
  }
  // Inline, as clear_and_shrink(): the parser clears its lists for every
  // message, mostly with nothing to free.
  void clear() noexcept {
    arena_.clear();
    entries_.clear();
    base_ = nullptr;
  }
  // clear(), and frees the storage if it grew past `keep_bytes` (a request
  // with a huge head must not pin its buffers to an idle connection).
  void clear_and_shrink(std::size_t keep_bytes) {
    clear();
    if (arena_.capacity() > keep_bytes || entries_.capacity() * sizeof(Entry) > keep_bytes)
      free_storage(keep_bytes);
  }

  std::size_t size() const noexcept { return entries_.size(); }
  bool empty() const noexcept { return entries_.empty(); }
  HeaderField operator[](std::size_t i) const noexcept;

  // First value of `name`, if present.
  std::optional<std::string_view> get(std::string_view name) const noexcept;
  // Number of lines named `name`.
  std::size_t count(std::string_view name) const noexcept;
  // True if any line named `name` lists `token` (see list_has_token).
  bool has_token(std::string_view name, std::string_view token) const noexcept;

  // Calls fn(value) for every line named `name`, in arrival order.
  template <typename Fn>
  void for_each_value(std::string_view name, Fn&& fn) const {
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      HeaderField f = (*this)[i];
      if (equal_fold(f.name, name)) fn(f.value);
    }
  }

 private:
  struct Entry {
    std::uint32_t name_offset;
    std::uint32_t name_size;
    std::uint32_t value_offset;
    std::uint32_t value_size;
  };
  void free_storage(std::size_t keep_bytes);

  std::string arena_;
  std::vector<Entry> entries_;
  const char* base_ = nullptr;  // borrowed bytes, or null: the arena's
};

}  // namespace goro::http::detail
