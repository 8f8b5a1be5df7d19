#include "framework/http/parser/header_list.hpp"

namespace goro::http::detail {

bool list_has_token(std::string_view list, std::string_view token) noexcept {
  while (!list.empty()) {
    std::size_t comma = list.find(',');
    std::string_view element = list.substr(0, comma);
    if (equal_fold(trim_ows(element), token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

void HeaderList::add(std::string_view name, std::string_view value) {
  // The parser bounds a head at HttpLimits::max_header_bytes, far below 4 GiB,
  // so 32-bit offsets cannot wrap for parsed messages.
  Entry e;
  e.name_offset = static_cast<std::uint32_t>(arena_.size());
  e.name_size = static_cast<std::uint32_t>(name.size());
  arena_.append(name);
  e.value_offset = static_cast<std::uint32_t>(arena_.size());
  e.value_size = static_cast<std::uint32_t>(value.size());
  arena_.append(value);
  entries_.push_back(e);
}

void HeaderList::free_storage(std::size_t keep_bytes) {
  if (arena_.capacity() > keep_bytes) std::string().swap(arena_);
  if (entries_.capacity() * sizeof(Entry) > keep_bytes) std::vector<Entry>().swap(entries_);
}

HeaderField HeaderList::operator[](std::size_t i) const noexcept {
  const Entry& e = entries_[i];
  const char* const b = base();
  return {std::string_view(b + e.name_offset, e.name_size),
          std::string_view(b + e.value_offset, e.value_size)};
}

std::optional<std::string_view> HeaderList::get(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    HeaderField f = (*this)[i];
    if (equal_fold(f.name, name)) return f.value;
  }
  return std::nullopt;
}

std::size_t HeaderList::count(std::string_view name) const noexcept {
  std::size_t n = 0;
  for_each_value(name, [&n](std::string_view) { ++n; });
  return n;
}

bool HeaderList::has_token(std::string_view name, std::string_view token) const noexcept {
  bool found = false;
  for_each_value(name, [&](std::string_view v) { found = found || list_has_token(v, token); });
  return found;
}

}  // namespace goro::http::detail
