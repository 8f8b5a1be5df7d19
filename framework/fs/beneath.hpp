// The white-box doorway of File::open_beneath (beneath.cpp) for tests.
// Internal to goro::fs.
#pragma once

namespace goro::fs::detail {

// Makes File::open_beneath skip openat2 and take the realpath fallback, so
// tests can cover the path older kernels take. Process-wide.
void force_open_beneath_fallback(bool on) noexcept;

}  // namespace goro::fs::detail
