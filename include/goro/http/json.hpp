// JSON responses through nlohmann-json.
#pragma once

#include <nlohmann/json.hpp>

#include "goro/http/response.hpp"

namespace goro::http {

// Sets Content-Type: application/json, writes `status` and the compact dump
// of `value`. Returns the write's result.
Result<std::size_t> write_json(ResponseWriter& w, const nlohmann::json& value, int status = 200);

}  // namespace goro::http
