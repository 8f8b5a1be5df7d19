// write_json and read_json (goro/http/json.hpp): nlohmann-json's compact dump
// as an application/json response; a size-limited body parsed as JSON.
#include "goro/http/json.hpp"

#include <array>
#include <string>

namespace goro::http {

WriteResult write_json(ResponseWriter& w, const nlohmann::json& value, int status) {
  w.header().set("Content-Type", "application/json");
  w.write_header(status);
  return w.write(value.dump());
}

Result<nlohmann::json> read_json(Request& req, std::size_t max_bytes) {
  // A declared length past the limit fails before a byte is read.
  if (auto declared = req.body().content_length(); declared && *declared > max_bytes)
    return std::error_code(errc::body_too_large);
  std::string body;
  std::array<char, 16 * 1024> buf;
  for (;;) {
    Result<std::size_t> n = req.body().read(std::span<char>(buf));
    if (!n) return n.error();
    if (*n == 0) break;
    if (body.size() + *n > max_bytes) return std::error_code(errc::body_too_large);
    body.append(buf.data(), *n);
  }
  nlohmann::json value = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::error_code(errc::invalid_json);
  return value;
}

int json_error_status(std::error_code ec) noexcept {
  return ec == errc::body_too_large ? 413 : 400;
}

}  // namespace goro::http
