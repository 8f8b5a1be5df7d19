// A stand-in for the connection loop: feeds a wire image to RequestParser in
// pieces, the way reads would deliver it, and records what the parser
// reported as plain values the tests can compare.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "framework/http/parser/parser.hpp"

namespace goro::http::detail::testing {

using Fields = std::vector<std::pair<std::string, std::string>>;

struct Message {
  std::string method;
  std::string target;
  TargetForm target_form = TargetForm::kOrigin;
  int version_major = 0;
  int version_minor = 0;
  std::string host;
  Fields headers;
  BodyFraming framing = BodyFraming::kNone;
  std::uint64_t content_length = 0;
  bool keep_alive = false;
  Expectation expect = Expectation::kNone;
  bool should_send_continue = false;
  bool upgrade = false;
  std::string upgrade_protocol;
  std::string body;
  Fields trailers;
  bool ended = false;

  bool operator==(const Message&) const = default;
};

struct Transcript {
  std::vector<Message> messages;
  int error_status = 0;  // 0: no error
  std::string error_reason;
  std::string unread;  // bytes the parser never took
  std::size_t body_events = 0;

  bool operator==(const Transcript& o) const {
    // body_events depends on how the input was cut; everything else must not,
    // except where an error stops the parser: what it took of the refused
    // bytes is of no use to anyone, since the connection closes.
    return messages == o.messages && error_status == o.error_status &&
           error_reason == o.error_reason && (error_status != 0 || unread == o.unread);
  }
};

struct DriveOptions {
  HttpLimits limits;
  // Stop after a message that asked for an upgrade, as a caller that switches
  // protocols would; the rest stays in `unread`.
  bool stop_at_upgrade = false;
  // Which path judges complete heads (parser.hpp HeadPath).
  HeadPath head_path = HeadPath::kFastPath;
};

// Feeds `wire` cut before each offset in `cuts` (ascending).
Transcript drive(std::string_view wire, const std::vector<std::size_t>& cuts,
                 const DriveOptions& options = {});

inline Transcript drive_whole(std::string_view wire, const DriveOptions& options = {}) {
  return drive(wire, {}, options);
}

// Every byte as its own read.
Transcript drive_bytewise(std::string_view wire, const DriveOptions& options = {});

// The status a wire image ends in when fed whole (0: accepted).
inline int status_of(std::string_view wire, const DriveOptions& options = {}) {
  return drive_whole(wire, options).error_status;
}

}  // namespace goro::http::detail::testing
