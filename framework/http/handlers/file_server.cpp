// http::file_server: the contract is in include/goro/http/file_server.hpp.
//
// # From URL to file
// The escaped request path is decoded once, stripped of the mount prefix and
// split into segments; empty and "." segments fall away and a ".." segment
// ends the request with 404 before the filesystem is asked anything. What is
// left is a relative path handed to fs::File::open_beneath against the root
// directory's descriptor, so the kernel (openat2 RESOLVE_BENEATH) refuses
// every symlink that would lead out, at whatever step it appears. Checking
// ".." here as well is not redundant: RESOLVE_BENEATH allows "a/../b" (it
// stays inside), but a URL with ".." is never one a well-behaved client sends
// (clients and the Router clean them), so refusing it keeps the rule simple.
//
// # Why 404 and not 403 for escapes
// A 403 would confirm that the path names something the server refuses to
// show, which is a probe of the filesystem outside the root. 404 reads the
// same as "no such file". Permission errors on files inside the root are the
// operator's business and answer 403, as Go's FileServer does.
//
// # Conditional and range requests
// Only what RFC 9110 needs without entity tags: Last-Modified with
// If-Modified-Since / If-Unmodified-Since, and If-Range by date. Range
// parsing is byte_range.cpp. The order of evaluation is RFC 9110 §13.2.2's:
// If-Unmodified-Since (412), If-Modified-Since (304), then Range with If-Range.
#include <fcntl.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

#include "framework/http/handlers/byte_range.hpp"
#include "framework/http/parser/http_date.hpp"
#include "framework/http/server/content_type.hpp"
#include "framework/http/server/exchange.hpp"
#include "goro/fs.hpp"
#include "goro/http/file_server.hpp"

namespace goro::http {

namespace {

using Clock = std::chrono::system_clock;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decoding of a path ('+' stays '+'); nullopt on a malformed escape.
std::optional<std::string> decode_path(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const int hi = hex_digit(s[i + 1]);
    const int lo = hex_digit(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

// The relative path under the root for a decoded URL path: "" for the root
// itself; nullopt if the path must not be served (a ".." segment or a NUL).
std::optional<std::string> relative_path(std::string_view decoded) {
  if (decoded.find('\0') != std::string_view::npos) return std::nullopt;
  std::string rel;
  while (!decoded.empty()) {
    const std::size_t slash = decoded.find('/');
    const std::string_view seg = decoded.substr(0, slash);
    decoded = slash == std::string_view::npos ? std::string_view{} : decoded.substr(slash + 1);
    if (seg.empty() || seg == ".") continue;
    if (seg == "..") return std::nullopt;
    if (!rel.empty()) rel.push_back('/');
    rel.append(seg);
  }
  return rel;
}

// The status for a failed open: missing, refused and odd paths read as 404.
int open_error_status(std::error_code ec) {
  if (ec == std::errc::permission_denied || ec == std::errc::operation_not_permitted) return 403;
  if (ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory ||
      ec == std::errc::cross_device_link || ec == std::errc::too_many_symbolic_link_levels ||
      ec == std::errc::filename_too_long || ec == std::errc::no_such_device_or_address ||
      ec == std::errc::is_a_directory) {
    return 404;
  }
  return 500;
}

void answer_status(ResponseWriter& w, int status) {
  error(w, fmt::format("{} {}", status, status_text(status)), status);
}

// The body through a writer that wraps the server's (a middleware's, which
// may transform it): read and written in pieces instead of sendfile(2).
void copy_file_body(ResponseWriter& w, fs::File& file, std::uint64_t offset, std::uint64_t length) {
  std::string buf(static_cast<std::size_t>(std::min<std::uint64_t>(length, 64 << 10)), '\0');
  while (length > 0) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(length, buf.size()));
    auto n = file.pread(std::span<char>(buf.data(), want), offset);
    if (!n || *n == 0) {
      w.abort();  // the file shrank or failed: cut the response visibly
      return;
    }
    if (!w.write(std::string_view(buf.data(), *n))) return;
    offset += *n;
    length -= *n;
  }
}

std::chrono::sys_seconds to_seconds(Clock::time_point t) {
  return std::chrono::floor<std::chrono::seconds>(t);
}

struct FileServer {
  std::shared_ptr<fs::File> root;
  FileServerOptions opts;

  void operator()(Request& req, ResponseWriter& w) const;
  void serve_file(Request& req, ResponseWriter& w, fs::File& file, const fs::FileInfo& info,
                  std::string_view name) const;
};

void FileServer::operator()(Request& req, ResponseWriter& w) const {
  if (req.method() != "GET" && req.method() != "HEAD") {
    w.header().set("Allow", "GET, HEAD");
    return answer_status(w, 405);
  }
  std::optional<std::string> decoded = decode_path(req.path());
  if (!decoded) return error(w, "400 Bad Request: invalid URL escape", 400);
  std::string_view path = *decoded;
  if (!opts.strip_prefix.empty()) {
    if (path.substr(0, opts.strip_prefix.size()) != opts.strip_prefix) return answer_status(w, 404);
    path.remove_prefix(opts.strip_prefix.size());
    // "/static" strips from "/static/x", not from "/staticx".
    if (!path.empty() && path.front() != '/' && opts.strip_prefix.back() != '/')
      return answer_status(w, 404);
  }
  std::optional<std::string> rel = relative_path(path);
  if (!rel) return answer_status(w, 404);

  constexpr int kOpenFlags = O_RDONLY | O_NONBLOCK | O_NOCTTY;
  Result<fs::File> file = fs::File::open_beneath(*root, rel->empty() ? "." : *rel, kOpenFlags);
  if (!file) return answer_status(w, open_error_status(file.error()));
  Result<fs::FileInfo> info = file->stat();
  if (!info) return answer_status(w, 500);
  // "/a.txt/" (or "/a.txt%2f") names a directory that is not there: 404, as
  // the kernel's ENOTDIR and nginx have it, never the file.
  if (!info->is_dir() && !path.empty() && path.back() == '/') return answer_status(w, 404);
  std::string_view name = *rel;
  if (info->is_dir()) {
    if (!opts.index) return answer_status(w, 404);
    if (path.empty() || path.back() != '/') {
      // Go's rule: a directory's URL ends in '/', so relative links in its
      // index resolve inside it. The Location is relative to the request.
      std::string_view escaped = req.path();
      std::string_view last = escaped.substr(escaped.rfind('/') + 1);
      // "./" keeps a segment with a ':' from reading as a URL scheme.
      const bool needs_dot = last.find(':') != std::string_view::npos;
      std::string location =
          last.empty() ? std::string("./") : fmt::format("{}{}/", needs_dot ? "./" : "", last);
      if (!req.raw_query().empty())
        fmt::format_to(std::back_inserter(location), "?{}", req.raw_query());
      w.header().set("Location", location);
      return answer_status(w, 301);
    }
    const std::string index = rel->empty() ? "index.html" : *rel + "/index.html";
    file = fs::File::open_beneath(*root, index, kOpenFlags);
    if (!file) return answer_status(w, open_error_status(file.error()));
    info = file->stat();
    if (!info) return answer_status(w, 500);
    name = "index.html";
  }
  if (!info->is_regular()) return answer_status(w, 404);
  serve_file(req, w, *file, *info, name);
}

void FileServer::serve_file(Request& req, ResponseWriter& w, fs::File& file,
                            const fs::FileInfo& info, std::string_view name) const {
  const auto mtime = to_seconds(info.mtime);
  const detail::HttpDate last_modified = detail::format_http_date(mtime);
  const bool has_mtime = mtime > std::chrono::sys_seconds{};  // 1970: unknown, as Go
  w.header().set("Accept-Ranges", "bytes");
  if (has_mtime) w.header().set("Last-Modified", last_modified.view());

  // RFC 9110 §13.2.2: If-Unmodified-Since, then If-Modified-Since.
  if (has_mtime && req.has_header("If-Unmodified-Since")) {
    auto since = detail::parse_http_date(req.header("If-Unmodified-Since"));
    if (since && mtime > to_seconds(*since)) return answer_status(w, 412);
  }
  // RFC 9110 §13.1.2: "If-None-Match: *" is false when the resource exists,
  // so a GET or HEAD gets 304. (No ETag is sent, so no other entity tag can
  // match and any other If-None-Match is true.)
  if (detail::trim_ows(req.header("If-None-Match")) == "*") {
    w.write_header(304);
    return;
  }
  if (has_mtime && !req.has_header("If-None-Match") && req.has_header("If-Modified-Since")) {
    auto since = detail::parse_http_date(req.header("If-Modified-Since"));
    if (since && mtime <= to_seconds(*since)) {
      w.write_header(304);
      return;
    }
  }

  detail::ByteRange range;
  if (req.method() == "GET" && req.has_header("Range")) {
    bool use_range = true;
    if (req.has_header("If-Range")) {
      auto when = detail::parse_http_date(req.header("If-Range"));
      use_range = has_mtime && when && to_seconds(*when) == mtime;
    }
    if (use_range) range = detail::parse_byte_range(req.header("Range"), info.size);
  }
  if (range.kind == detail::ByteRange::Kind::kUnsatisfiable) {
    w.header().set("Content-Range", fmt::format("bytes */{}", info.size));
    return answer_status(w, 416);
  }

  std::string_view type = detail::content_type_by_extension(name);
  std::string sniffed_from;
  if (type.empty()) {
    sniffed_from.resize(512);
    auto n = file.pread(std::span<char>(sniffed_from), 0);
    sniffed_from.resize(n ? *n : 0);
    type = detail::sniff_content_type(sniffed_from);
  }
  w.header().set("Content-Type", type);

  std::uint64_t offset = 0;
  std::uint64_t length = info.size;
  int status = 200;
  if (range.kind == detail::ByteRange::Kind::kPartial) {
    offset = range.first;
    length = range.length;
    status = 206;
    w.header().set("Content-Range", fmt::format("bytes {}-{}/{}", range.first,
                                                range.first + range.length - 1, info.size));
  }
  w.header().set("Content-Length", fmt::format("{}", length));
  w.write_header(status);
  if (detail::Exchange* x = detail::ExchangeAccess::direct(w)) {
    (void)detail::send_file_body(*x, file, offset, length);
  } else if (req.method() != "HEAD") {
    copy_file_body(w, file, offset, length);
  }
}

}  // namespace

Handler file_server(const std::filesystem::path& root, FileServerOptions opts) {
  Result<fs::File> dir = fs::File::open(root, O_PATH | O_DIRECTORY);
  if (!dir) {
    throw std::system_error(dir.error(), fmt::format("http::file_server: root {}", root.string()));
  }
  return FileServer{std::make_shared<fs::File>(std::move(*dir)), std::move(opts)};
}

}  // namespace goro::http
