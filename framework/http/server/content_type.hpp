// Content-Type by file name extension, for the file server.
#pragma once

#include <string_view>

namespace goro::http::detail {

// The media type for `filename`'s extension (case-insensitive), with
// "; charset=utf-8" on text types, as Go's mime.TypeByExtension built-in
// table plus the common web types it lacks; "" when the extension is
// unknown (the caller sniffs the content instead).
std::string_view content_type_by_extension(std::string_view filename) noexcept;

// A small subset of Go's DetectContentType over the first bytes of a body:
// text/html, text/plain (both utf-8) or application/octet-stream.
std::string_view sniff_content_type(std::string_view data) noexcept;

}  // namespace goro::http::detail
