// The extension table and the content sniffer (content_type.hpp).
#include "framework/http/server/content_type.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "framework/http/parser/header_list.hpp"

namespace goro::http::detail {

namespace {

// Sorted by extension for a binary search; lower case.
constexpr std::array<std::pair<std::string_view, std::string_view>, 38> kTypes = {{
    {".avif", "image/avif"},
    {".bmp", "image/bmp"},
    {".css", "text/css; charset=utf-8"},
    {".csv", "text/csv; charset=utf-8"},
    {".gif", "image/gif"},
    {".gz", "application/gzip"},
    {".htm", "text/html; charset=utf-8"},
    {".html", "text/html; charset=utf-8"},
    {".ico", "image/vnd.microsoft.icon"},
    {".jpeg", "image/jpeg"},
    {".jpg", "image/jpeg"},
    {".js", "text/javascript; charset=utf-8"},
    {".json", "application/json"},
    {".map", "application/json"},
    {".md", "text/markdown; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".mp3", "audio/mpeg"},
    {".mp4", "video/mp4"},
    {".oga", "audio/ogg"},
    {".ogg", "audio/ogg"},
    {".ogv", "video/ogg"},
    {".otf", "font/otf"},
    {".pdf", "application/pdf"},
    {".png", "image/png"},
    {".svg", "image/svg+xml"},
    {".tar", "application/x-tar"},
    {".ttf", "font/ttf"},
    {".txt", "text/plain; charset=utf-8"},
    {".wasm", "application/wasm"},
    {".wav", "audio/wav"},
    {".webm", "video/webm"},
    {".webmanifest", "application/manifest+json"},
    {".webp", "image/webp"},
    {".woff", "font/woff"},
    {".woff2", "font/woff2"},
    {".xml", "text/xml; charset=utf-8"},
    {".zip", "application/zip"},
    {".zst", "application/zstd"},
}};

constexpr bool table_sorted() {
  for (std::size_t i = 1; i < kTypes.size(); ++i) {
    if (!(kTypes[i - 1].first < kTypes[i].first)) return false;
  }
  return true;
}
static_assert(table_sorted(), "content_type.cpp: kTypes must stay sorted");

}  // namespace

std::string_view content_type_by_extension(std::string_view filename) noexcept {
  const std::size_t slash = filename.rfind('/');
  if (slash != std::string_view::npos) filename.remove_prefix(slash + 1);
  const std::size_t dot = filename.rfind('.');
  if (dot == std::string_view::npos || filename.size() - dot > 16) return {};
  char lower[16];
  const std::string_view ext = filename.substr(dot);
  for (std::size_t i = 0; i < ext.size(); ++i) {
    const char c = ext[i];
    lower[i] = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  }
  const std::string_view key(lower, ext.size());
  auto it = std::lower_bound(kTypes.begin(), kTypes.end(), key,
                             [](const auto& entry, std::string_view k) { return entry.first < k; });
  if (it == kTypes.end() || it->first != key) return {};
  return it->second;
}

std::string_view sniff_content_type(std::string_view data) noexcept {
  std::string_view head = data.substr(0, 512);
  std::size_t i = head.find_first_not_of(" \t\r\n");
  if (i != std::string_view::npos && head[i] == '<') {
    std::string_view rest = head.substr(i);
    for (std::string_view tag : {"<!doctype html", "<html", "<head", "<body", "<p", "<div"}) {
      if (rest.size() >= tag.size() && equal_fold(rest.substr(0, tag.size()), tag))
        return "text/html; charset=utf-8";
    }
  }
  for (char c : head) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != 0x1b)
      return "application/octet-stream";
  }
  return "text/plain; charset=utf-8";
}

}  // namespace goro::http::detail
