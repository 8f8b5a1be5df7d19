// Reason phrases for status lines, as Go's http.StatusText spells them
// (IANA registry names; "Request Entity Too Large" became "Content Too Large"
// in RFC 9110 and Go 1.x still writes "Request Entity Too Large").
#pragma once

#include <string_view>

namespace goro::http::detail {

// The reason phrase for `code`, or "" for a code without one (Go writes the
// status line as "HTTP/1.1 599 " then, and so should the response writer).
std::string_view status_text(int code) noexcept;

}  // namespace goro::http::detail
