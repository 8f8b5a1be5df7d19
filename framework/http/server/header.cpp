// goro::http::Header: a flat list of fields; names matched
// case-insensitively and stored canonical (Go's CanonicalHeaderKey).
#include "goro/http/header.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "framework/http/parser/header_key.hpp"
#include "framework/http/parser/header_list.hpp"
#include "framework/http/server/short_bytes.hpp"

namespace goro::http {

void Header::set(std::string_view name, std::string_view value) {
  if (size_ != 0) del(name);  // a handler's first set() finds nothing to delete
  add(name, value);
}

void Header::add(std::string_view name, std::string_view value) {
  // A handler sets the same fields in the same order on every request, so
  // the kept field at size_ usually holds this very name and value already.
  // A kept name went through canonicalisation, which leaves its own output
  // as it is, and a kept value has no CR, LF or NUL: equal bytes need
  // neither step again (Content-Type on every response: ~350 instructions ->
  // ~40). A kept name is canonical or empty (a refused name leaves it
  // empty).
  if (size_ < fields_.size()) {
    const Field& f = fields_[size_];
    // Compared inline: two memcmp calls were a third of this path.
    if (!f.name.empty() && detail::same_bytes(f.name, name) && detail::same_bytes(f.value, value)) {
      ++size_;
      return;
    }
  }
  add_new(name, value);
}

void Header::add_new(std::string_view name, std::string_view value) {
  if (size_ == fields_.size()) fields_.emplace_back();
  Field& f = fields_[size_];  // a kept field: its strings' capacity is reused
  // One pass for what makes a value unsendable or unwanted.
  bool nul = false;
  for (const char c : value) {
    if (c == '\r' || c == '\n') return;  // would split the response
    nul |= c == '\0';
  }
  if (!detail::canonical_header_key_into(name, f.name)) {  // not a token
    f.name.clear();                                        // not a kept name for the shortcut above
    return;
  }
  f.value.assign(value);
  if (nul) std::erase(f.value, '\0');
  ++size_;
}

void Header::del(std::string_view name) {
  // Compacts [0, size_) in place; a removed field moves past size_ with its
  // strings, kept for reuse.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < size_; ++i) {
    if (detail::equal_fold(fields_[i].name, name)) continue;
    if (kept != i) std::swap(fields_[kept], fields_[i]);
    ++kept;
  }
  size_ = kept;
}

namespace {

// Header::trim's giving back, out of line: the count that decides it runs
// on every connection's every request (release_buffers), and inlined, this
// part's frame was most of its cost.
[[gnu::noinline]] void drop_kept(std::vector<Header::Field>& fields, std::size_t size) {
  fields.resize(size);
  fields.shrink_to_fit();
}

}  // namespace

void Header::trim(std::size_t max_kept_bytes) {
  std::size_t kept = 0;
  for (std::size_t i = size_; i < fields_.size(); ++i)
    kept += fields_[i].name.capacity() + fields_[i].value.capacity() + sizeof(Field);
  if (kept > max_kept_bytes) drop_kept(fields_, size_);
}

std::string_view Header::get(std::string_view name) const {
  for (std::size_t i = 0; i < size_; ++i) {
    if (detail::equal_fold(fields_[i].name, name)) return fields_[i].value;
  }
  return {};
}

bool Header::has(std::string_view name) const {
  return std::any_of(begin(), end(),
                     [&](const Field& f) { return detail::equal_fold(f.name, name); });
}

std::vector<std::string_view> Header::values(std::string_view name) const {
  std::vector<std::string_view> out;
  for (std::size_t i = 0; i < size_; ++i) {
    if (detail::equal_fold(fields_[i].name, name)) out.push_back(fields_[i].value);
  }
  return out;
}

}  // namespace goro::http
