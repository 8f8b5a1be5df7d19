// goro::http::Header: response and request header fields, names compared
// case-insensitively and stored canonical (Go's CanonicalHeaderKey).
#include "goro/http/header.hpp"

#include <algorithm>

#include "framework/http/parser/header_key.hpp"
#include "framework/http/parser/header_list.hpp"

namespace goro::http {

namespace {

bool has_line_break(std::string_view v) {
  return v.find_first_of("\r\n") != std::string_view::npos;
}

}  // namespace

void Header::set(std::string_view name, std::string_view value) {
  del(name);
  add(name, value);
}

void Header::add(std::string_view name, std::string_view value) {
  if (has_line_break(value)) return;
  std::string key(name);
  if (!detail::canonicalize_header_key(key)) return;  // not a token
  std::string v(value);
  if (v.find('\0') != std::string::npos) std::erase(v, '\0');
  fields_.push_back({std::move(key), std::move(v)});
}

void Header::del(std::string_view name) {
  std::erase_if(fields_, [&](const Field& f) { return detail::equal_fold(f.name, name); });
}

std::string_view Header::get(std::string_view name) const {
  for (const Field& f : fields_) {
    if (detail::equal_fold(f.name, name)) return f.value;
  }
  return {};
}

bool Header::has(std::string_view name) const {
  return std::any_of(fields_.begin(), fields_.end(),
                     [&](const Field& f) { return detail::equal_fold(f.name, name); });
}

std::vector<std::string_view> Header::values(std::string_view name) const {
  std::vector<std::string_view> out;
  for (const Field& f : fields_) {
    if (detail::equal_fold(f.name, name)) out.push_back(f.value);
  }
  return out;
}

}  // namespace goro::http
