// The http::errc error category (goro/http/request.hpp): the errors a body
// read or a response write reports.
#include <string>
#include <system_error>

#include "goro/http/request.hpp"

namespace goro::http {

namespace {

class HttpCategory : public std::error_category {
 public:
  const char* name() const noexcept override { return "goro.http"; }
  std::string message(int c) const override {
    switch (static_cast<errc>(c)) {
      case errc::body_too_large:
        return "http: request body too large";
      case errc::bad_request:
        return "http: malformed request body";
      case errc::content_length:
        return "http: wrote more than the declared Content-Length";
      case errc::header_written:
        return "http: response header already written";
      case errc::invalid_json:
        return "http: request body is not valid JSON";
      case errc::aborted:
        return "http: response aborted";
      case errc::handler_returned:
        return "http: request or response used after its handler returned, or off its goroutine";
    }
    return "http: unknown error";
  }
};

}  // namespace

const std::error_category& http_category() noexcept {
  static const HttpCategory category;
  return category;
}

}  // namespace goro::http
