// http::file_server: static files from a directory (Go's http.FileServer),
// through goro::fs and sendfile(2).
//
// Example:
//   goro::http::Router r;
//   r.handle("GET /static/", goro::http::file_server("/srv/www", {.strip_prefix = "/static"}));
//   r.handle("GET /", goro::http::file_server("/srv/www", {.index = true}));
//
// What it answers (the handler also works without a Router):
//   - GET and HEAD; anything else 405 with "Allow: GET, HEAD".
//   - The request path, percent-decoded (a malformed escape: 400), minus
//     `strip_prefix` (a path outside it: 404), names a file under `root`.
//   - Confinement: a ".." segment (encoded or not), an absolute symlink, or a
//     symlink whose target leads out of `root` answers 404 Not Found — the same
//     as a missing file, so a client learns nothing about what lies outside.
//     Files are opened with fs::File::open_beneath (openat2 RESOLVE_BENEATH,
//     checked by the kernel at every step; a realpath check on kernels
//     before 5.6). Symlinks that stay inside are followed. Dotfiles are
//     served like any file (as Go and nginx do); keep secrets out of `root`.
//   - Only regular files are served; FIFOs, sockets and devices answer 404
//     (opened non-blocking, so a FIFO never stalls the open). A file the
//     server may not read answers 403.
//   - Directories: 404, no listings, ever. With `index` on, a directory
//     request ending in "/" serves its index.html (404 if there is none), and
//     one without the slash is redirected (301) to it, as Go does.
//   - Content-Type from the extension (a built-in table of web types), else
//     sniffed from the first 512 bytes (text/plain, text/html or
//     application/octet-stream).
//   - Last-Modified (the mtime, to the second); If-Modified-Since answers
//     304 when the file is not newer (ignored when If-None-Match is present,
//     RFC 9110 §13.1.3; goro sends no ETag, so such requests get the file);
//     If-Unmodified-Since answers 412 when it is.
//   - Accept-Ranges: bytes. A single "Range: bytes=" range on GET answers 206
//     with Content-Range; a range starting past the end answers 416 with
//     "Content-Range: bytes */<size>". Several ranges answer 200 with the
//     whole file (no multipart/byteranges; RFC 9110 allows ignoring Range),
//     as do malformed ones, HEAD, and an If-Range that is not the file's
//     Last-Modified date. An empty file ignores Range (200).
//   - The body goes from the page cache to the socket with sendfile(2): no
//     copy through the process, the file side handed off like other fs calls.
#pragma once

#include <filesystem>
#include <string>

#include "goro/http/handler.hpp"

namespace goro::http {

struct FileServerOptions {
  // Removed from the front of the (decoded) request path before the lookup,
  // e.g. "/static" when mounted at "GET /static/". "" removes nothing.
  std::string strip_prefix = {};
  // Serve <directory>/index.html for a directory request; off by default.
  bool index = false;
};

// A handler serving the files under `root`. `root` is opened once, here: a
// root that is missing or not a directory throws std::system_error (a setup
// error, before any request). The handler keeps the directory open (renaming
// it does not move what is served) and is safe to copy and share.
Handler file_server(const std::filesystem::path& root, FileServerOptions opts = {});

}  // namespace goro::http
