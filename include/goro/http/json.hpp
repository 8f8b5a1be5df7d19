// JSON in and out through nlohmann-json: include <goro/http/json.hpp> where
// a handler needs it (<goro/http.hpp> does not pull nlohmann-json in).
//
// Example:
//   goro::http::Handler create = [](goro::http::Request& req, goro::http::ResponseWriter& w) {
//     goro::Result<nlohmann::json> in = goro::http::read_json(req, 64 * 1024);
//     if (!in) {
//       goro::http::error(w, in.error().message(), goro::http::json_error_status(in.error()));
//       return;
//     }
//     goro::http::write_json(w, {{"created", (*in)["name"]}}, 201);
//   };
#pragma once

#include <cstddef>
#include <system_error>

#include <nlohmann/json.hpp>

#include "goro/http/request.hpp"
#include "goro/http/response.hpp"
#include "goro/result.hpp"

namespace goro::http {

// Sets Content-Type: application/json, writes `status` and the compact dump
// of `value`. Returns the write's result.
WriteResult write_json(ResponseWriter& w, const nlohmann::json& value, int status = 200);

// Reads the whole request body and parses it as one JSON value. The body may
// hold at most `max_bytes` (and the server's max_body_bytes); the
// Content-Type is not checked. Errors: errc::body_too_large past either
// limit, errc::invalid_json for a body that is not JSON (an empty one
// included), errc::bad_request for malformed framing, or the connection's
// error when the client went away mid-body.
Result<nlohmann::json> read_json(Request& req, std::size_t max_bytes = std::size_t{1} << 20);

// The status to answer a read_json error with: 413 for body_too_large, 400
// for the rest (a client that went away reads no answer either way).
int json_error_status(std::error_code ec) noexcept;

}  // namespace goro::http
