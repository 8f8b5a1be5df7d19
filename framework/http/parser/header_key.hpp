// Header-name helpers the response side needs: token validity (RFC 9110
// §5.6.2) and Go's textproto.CanonicalMIMEHeaderKey ("content-type" ->
// "Content-Type"), which goro uses when it writes header names so responses
// look the same as Go's.
#pragma once

#include <string>
#include <string_view>

namespace goro::http::detail {

// True if `s` is a non-empty RFC 9110 token (what a field name must be).
bool is_token(std::string_view s) noexcept;

// Go's CanonicalHeaderKey: the first letter and every letter after a hyphen
// upper-cased, the rest lower-cased. A name that is not a token is returned
// unchanged, as Go does, so invalid names are never "repaired" into valid ones.
std::string canonical_header_key(std::string_view name);

// The same, in place; returns false (and leaves `name` alone) for a non-token.
bool canonicalize_header_key(std::string& name) noexcept;
// Writes the canonical form of `name` into `out` (reusing its capacity) in
// one pass; false, and `out` unspecified, when `name` is not a token.
bool canonical_header_key_into(std::string_view name, std::string& out);

}  // namespace goro::http::detail
