// write_json: nlohmann-json's compact dump as an application/json response.
#include "goro/http/json.hpp"

namespace goro::http {

Result<std::size_t> write_json(ResponseWriter& w, const nlohmann::json& value, int status) {
  w.header().set("Content-Type", "application/json");
  w.write_header(status);
  return w.write(value.dump());
}

}  // namespace goro::http
