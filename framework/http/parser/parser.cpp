// RequestParser's mechanism: llhttp driven one event at a time.
//
// # Pausing
// Every callback that completes something the caller must see (a body
// piece, the start of the trailers, message end) records it in State::pending
// and returns HPE_PAUSED. llhttp then stops with error_pos just past the bytes
// that event covers, parse() reports the event with that many bytes consumed,
// and llhttp_resume() makes the next call continue from the same state. So
// llhttp never runs ahead of the caller, and a paused parser holds no pointer
// into the caller's buffer.
//
// The head is the exception: on_headers_complete does not pause but marks
// the head complete, and llhttp runs on to the section's end. The section
// holds no body byte, so llhttp stops there either waiting for the body or,
// for a request without one, in on_message_complete: parse() reports kHead
// and keeps the message's end for the next call, which then needs no llhttp
// run of its own (a second llhttp_execute per bodiless request, with its
// pause and resume, was a twentieth of a pipelined request's instructions).
//
// # Sections
// Head and trailer bytes go through SectionScanner into State::section()
// (the head) or State::trailer_section() and are handed to llhttp whole
// (see section_scanner.hpp for why). A head the fast path takes or refuses
// (below) skips the scanner: the fast path copies it to section() itself.
// The sections are the arenas of the head's and the trailers' HeaderList,
// whose fields are recorded where they lie in them (add_in_place), not
// copied again. The head's views point into section(), so the trailers
// have a buffer of their own: the head stays readable until the next
// message begins, after its body and trailers too. Body bytes go to llhttp
// straight from the caller's buffer, and body pieces are views of it.
//
// # The head fast path
// llhttp walks a head a byte at a time through its state machine and calls
// back for every span: about 1,400 instructions for wrk's two-line GET, a
// fifth of a keep-alive request's user-space work. For the heads nearly
// every client sends, what llhttp, the scanner and parse_request_line()
// check comes down to byte classes and line shapes, so fast_head() checks
// them itself, in one pass, and skips all three:
//   - the request line is "GET " or "HEAD ", an origin-form target of
//     printable ASCII (ByteClass::kTarget), one space and "HTTP/1.1" or
//     "HTTP/1.0", then CRLF;
//   - each field line is a name of token bytes, ':', and a value of HTAB and
//     0x20-0x7E bytes (ByteClass::kValue), then CRLF, and a CRLF ends the
//     head. Neither class holds CR, LF or NUL, and a line starts with a
//     token byte, so these lines have no bare CR or LF and no fold: what the
//     scanner would take. The request line and the head must be within
//     their limits too (else the scanner answers 414 or 431);
//   - no field llhttp gives meaning to (Content-Length, Transfer-Encoding,
//     Connection, Proxy-Connection, Upgrade), so the message has no body and
//     asks for no upgrade, and llhttp's state between messages would not
//     change had it run. That state is always "ready for the next request"
//     when a head is parsed at all: a message after which llhttp would
//     refuse more bytes is one goro closes after too (finish_head takes
//     llhttp_should_keep_alive into head.keep_alive), so no head follows it.
// It calls the same check_field_name(), check_field() and finish_head() at
// the same points as llhttp's callbacks would (and in the same order), so a
// refusal among them is the same refusal.
//
// It runs where the head lies: on the caller's input when a head starts it
// (the usual case: a client's head arrives whole), and copies only the
// head it took or refused to section(), moving the head's views there. A
// caller that keeps its input in place for the request
// (RequestParser::borrow_input: the HTTP server's read buffer) saves that
// copy too: a head it takes stays in the input, the header list counting
// from there (HeaderList "Borrowed bytes").
// When the input ends before the head does, or a rule refuses a line
// before the rest was seen (the scanner's verdict on a later line comes
// first), it leaves the head to the scanner and runs again on the section
// the scanner completes. Any other head (a byte outside the classes, a
// body, an upgrade, another method) it leaves untouched: the headers and
// tally are cleared and the scanner and llhttp parse the head from its
// start, as if the fast path did not exist. It only ever accepts a subset
// of what they accept, with the same result:
// tests/http_parser/parser_fast_path_test.cpp tries every byte value in
// every position class against llhttp, and the http_request fuzzer
// compares the two paths on each input. The difference the two leave
// behind: llhttp's run rewrites tabs before a line's CR into spaces inside
// the section (tabs_to_spaces_before_line_ends); values are trimmed of them
// either way, so only the raw section bytes differ.
//
// # Upgrades
// llhttp ends an upgrade or CONNECT message with HPE_PAUSED_UPGRADE, just
// after on_message_complete. parse() acknowledges it with
// llhttp_resume_after_upgrade() and goes on reading HTTP: a caller that does
// switch protocols stops calling parse() and keeps the unread bytes, as Go
// leaves upgrades to a handler that hijacks the connection.
#include "framework/http/parser/parser.hpp"

#include <llhttp.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "framework/http/parser/byte_class.hpp"
#include "framework/http/parser/head_rules.hpp"
#include "framework/http/parser/request_line.hpp"
#include "framework/http/parser/section_scanner.hpp"

namespace goro::http::detail {

namespace {

enum class Phase : std::uint8_t {
  kHead,      // scanning a request head (or waiting for its first byte)
  kBody,      // llhttp reads the body straight from the caller's input
  kTrailers,  // scanning a chunked body's trailer section
  kClosed,    // a message without keep-alive has ended; nothing more is read
  kFailed,    // error is set; sticky
};

// What a callback paused llhttp to report.
enum class Pending : std::uint8_t { kNone, kBody, kTrailersStart, kMessageEnd, kError };

constexpr ParseError kAfterClose{400, "request after Connection: close"};
constexpr ParseError kLineFolding{400, "obsolete line folding in header section"};
constexpr ParseError kChunkExtensionsTooLong{400, "chunk extensions too long"};
constexpr ParseError kChunkedBodyTooLarge{413, "request body too large"};
constexpr ParseError kUnsupportedTE{501, "unsupported transfer encoding"};
constexpr ParseError kUnsupportedVersion{505, "unsupported protocol version"};
constexpr ParseError kEmptyTrailerName{400, "invalid trailer name"};
constexpr ParseError kForbiddenTrailer{400, "header field not allowed in trailers"};

// Fields that frame or route the message (RFC 9110 §6.5.1): a trailer may not
// carry them, since a recipient that merged it would re-frame or re-route a
// message already framed and routed by its head. Go forbids Content-Length,
// TE and Trailer as trailer keys; a request trailer naming any of these is
// refused (400) rather than dropped, so the smuggling attempt is visible.
// Connection and Upgrade too: llhttp applies a trailer's "Connection: close"
// to its own state (it then refused the next pipelined request with "Data
// after Connection: close" while the head said keep-alive).
bool forbidden_trailer(std::string_view name) noexcept {
  for (std::string_view f :
       {"content-length", "transfer-encoding", "host", "trailer", "te", "connection", "upgrade"}) {
    if (equal_fold(name, f)) return true;
  }
  return false;
}
constexpr ParseError kHeadNotConsumed{400, "malformed HTTP request"};

// A field value's trailing OWS may be tabs (RFC 9110 §5.6.3), and it is not
// part of the value (trim_ows drops it), but llhttp refuses a tab after a
// Content-Length's digits. Tabs that end a line become spaces, which llhttp
// takes everywhere; a section without a tab costs one memchr.
void tabs_to_spaces_before_line_ends(std::string& section) {
  char* const end = section.data() + section.size();
  for (char* p = section.data(); p < end;) {
    p = static_cast<char*>(std::memchr(p, '\t', static_cast<std::size_t>(end - p)));
    if (p == nullptr) return;
    char* q = p;
    while (q < end && (*q == '\t' || *q == ' '))
      ++q;
    if (q < end && *q == '\r') std::replace(p, q, '\t', ' ');
    p = q;
  }
}

// Joins consecutive spans of one field. Sections reach llhttp whole, so the
// pieces of a field are adjacent unless llhttp skipped bytes between them,
// which only obs-fold causes (and the scanner refuses it first).
bool extend_span(std::string_view& span, const char* at, std::size_t n) {
  if (span.empty()) {
    span = std::string_view(at, n);
    return true;
  }
  if (span.data() + span.size() != at) return false;
  span = std::string_view(span.data(), span.size() + n);
  return true;
}

ParseError from_llhttp(llhttp_errno_t err, const char* reason) {
  switch (err) {
    case HPE_INVALID_TRANSFER_ENCODING:
      return kUnsupportedTE;
    case HPE_INVALID_VERSION:
    case HPE_PAUSED_H2_UPGRADE:
      return kUnsupportedVersion;
    default:
      // llhttp's reasons are string literals ("Invalid header value char").
      return ParseError{400, reason != nullptr ? reason : "malformed HTTP request"};
  }
}

// The byte classes the fast path takes. kTarget: origin-form target bytes,
// printable ASCII (what llhttp's strict build takes in a path, query and
// fragment). kValue: field-value bytes, HTAB and printable ASCII with SP
// (llhttp also takes obs-text, 0x80-0xFF; such heads go to llhttp).
enum class ByteClass : std::uint8_t { kTarget, kValue };

// The shortest head the fast path takes: "GET / HTTP/1.0\r\n\r\n". Any
// shorter text is not one (or not yet one), and a text at least this long
// has sixteen bytes for skip_class's last load.
constexpr std::ptrdiff_t kShortestFastHead = 18;

// The first byte at or after p (p <= end) outside the class, or end. The
// text p is in has at least sixteen bytes before end.
//
// Sixteen bytes at a time where SSE2 is there (every x86-64): two signed
// compares bound the printable range (bytes 0x80-0xFF are negative), and a
// third admits HTAB in values. The last block is the text's last sixteen
// bytes, the ones before p shifted out of the mask, so no load leaves the
// text. A target or value is mostly one or two blocks: a table lookup per
// byte cost four times the instructions.
const char* skip_class(const char* p, const char* end, ByteClass c) noexcept {
#if defined(__SSE2__)
  const auto outside = [c](const char* at) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
    const bool value = c == ByteClass::kValue;
    __m128i in = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(value ? 0x1f : 0x20)),
                               _mm_cmplt_epi8(v, _mm_set1_epi8(0x7f)));
    if (value) in = _mm_or_si128(in, _mm_cmpeq_epi8(v, _mm_set1_epi8('\t')));
    return ~static_cast<unsigned>(_mm_movemask_epi8(in)) & 0xffffU;
  };
  for (; end - p >= 16; p += 16) {
    if (const unsigned m = outside(p); m != 0) return p + __builtin_ctz(m);
  }
  if (p == end) return end;
  const unsigned m = outside(end - 16) >> (16 - (end - p));
  return m != 0 ? p + __builtin_ctz(m) : end;
#else
  const auto in = [c](unsigned char b) {
    return (b >= 0x21 && b <= 0x7e) || (c == ByteClass::kValue && (b == ' ' || b == '\t'));
  };
  while (p < end && in(static_cast<unsigned char>(*p)))
    ++p;
  return p;
#endif
}

// Names llhttp parses the value of (its header states): a head with one of
// them goes to llhttp. Host, Expect and the rest are plain fields to llhttp.
bool llhttp_gives_meaning(FieldKind kind, std::string_view name) noexcept {
  switch (kind) {
    case FieldKind::kTransferEncoding:
    case FieldKind::kConnection:
    case FieldKind::kUpgrade:
      return true;
    default:
      break;
  }
  return (name.size() == 14 && equal_fold(name, "content-length")) ||
         (name.size() == 16 && equal_fold(name, "proxy-connection"));
}

}  // namespace

struct RequestParser::State {
  explicit State(HttpLimits l, HeadPath p) : limits(l), path(p) {
    llhttp_settings_init(&settings);
    settings.on_header_field = on_header_field;
    settings.on_header_field_complete = on_header_field_complete;
    settings.on_header_value = on_header_value;
    settings.on_header_value_complete = on_header_value_complete;
    settings.on_headers_complete = on_headers_complete;
    settings.on_body = on_body;
    settings.on_chunk_extension_name = on_chunk_extension;
    settings.on_chunk_extension_value = on_chunk_extension;
    settings.on_chunk_header = on_chunk_header;
    settings.on_message_complete = on_message_complete;
    init_llhttp();
  }

  void init_llhttp() {
    llhttp_init(&llhttp, HTTP_REQUEST, &settings);
    llhttp.data = this;
  }

  // Clears the previous message, keeping every buffer's capacity.
  void begin_message() {
    static_cast<RequestHeadFacts&>(head) = RequestHeadFacts{};
    head.headers.clear();
    trailers.clear();
    tally = {};
    field_name = {};
    field_value = {};
    declared_chunk_bytes = 0;
    head_complete = false;
    head_took_fast_path = false;
    fast_head_declined = false;
    ended_with_head = false;
    scanner.reset(SectionScanner::Kind::kRequestHead, limits);
    head_is_stale = false;
  }

  // The head section is complete: judge its request line before llhttp runs.
  std::optional<ParseError> start_head() {
    RequestLine line;
    std::string_view text = std::string_view(section()).substr(0, scanner.request_line_size());
    if (auto err = parse_request_line(text, line)) return err;
    head.method = line.method;
    head.target = line.target;
    head.target_form = line.form;
    head.host = line.authority;
    head.version_major = line.version_major;
    head.version_minor = line.version_minor;
    return std::nullopt;
  }

  enum class Fast : std::uint8_t { kTaken, kRefused, kToLlhttp, kUnsure };

  // The head fast path (see the file comment) over `text`: the section once
  // the scanner has judged it whole (`scanned`), or else the caller's input,
  // which may hold less or more than a head. kTaken and kRefused leave
  // text's head in section() (a copy, when text is the input) and its size
  // in `head_bytes`, kRefused the refusal in `error`. kToLlhttp: the head
  // is not one the fast path takes (the scanner and llhttp judge it);
  // kUnsure (input only): the input ends before the head does, a limit
  // passes, or a rule refuses before the rest was seen (the scanner judges
  // the head first, then the fast path again, on the section).
  Fast fast_head(std::string_view text, bool scanned) {
    const Fast unsure = scanned ? Fast::kToLlhttp : Fast::kUnsure;
    const char* const begin = text.data();
    // Past max_header_bytes the scanner answers 431.
    const char* const end = begin + std::min(text.size(), limits.max_header_bytes);
    if (end - begin < kShortestFastHead) return unsure;
    const char* p = begin;
    if (const Fast line = fast_request_line(p, end, unsure); line != Fast::kTaken) return line;
    if (const Fast fields = fast_fields(begin, p, end, scanned); fields != Fast::kTaken)
      return fields;
    // The whole head is here and well formed: what the scanner and
    // parse_request_line would take. llhttp's verdict on such a head: no
    // body, no upgrade.
    head_bytes = static_cast<std::size_t>(p - begin);
    std::optional<ParseError> err = finish_head(head, tally, LlhttpVerdict{}, limits);
    if (!scanned) {
      if (borrow && !err) {
        head.headers.borrow(begin);  // where add_in_place counted from
      } else {
        take_section(text);
      }
    }
    if (err) {
      error = *err;
      return Fast::kRefused;
    }
    return Fast::kTaken;
  }

  // fast_head()'s request line at p: "GET " or "HEAD ", an origin-form
  // target, one space and "HTTP/1.1" or "HTTP/1.0" (what
  // parse_request_line takes of such a line, with its byte checks
  // llhttp's). kTaken: the head has the line, and p is past its CRLF.
  Fast fast_request_line(const char*& p, const char* end, Fast unsure) {
    const char* const begin = p;
    std::string_view method;
    if (std::memcmp(p, "GET ", 4) == 0) {
      method = "GET";
      p += 4;
    } else if (std::memcmp(p, "HEAD ", 5) == 0) {
      method = "HEAD";
      p += 5;
    } else {
      // A blank line before the request line: the scanner skips it.
      return *p == '\r' || *p == '\n' ? unsure : Fast::kToLlhttp;
    }
    if (*p != '/') return Fast::kToLlhttp;
    const char* const target = p;
    p = skip_class(p, end, ByteClass::kTarget);
    if (end - p < 11) return unsure;  // " HTTP/1.x\r\n"
    if (std::memcmp(p, " HTTP/1.", 8) != 0 || (p[8] != '0' && p[8] != '1') || p[9] != '\r' ||
        p[10] != '\n') {
      return Fast::kToLlhttp;
    }
    if (static_cast<std::size_t>(p + 9 - begin) > limits.max_request_line) return unsure;
    // begin_message() left target_form kOrigin and version_major 1.
    head.method = method;
    head.target = std::string_view(target, static_cast<std::size_t>(p - target));
    head.version_minor = p[8] - '0';
    p += 11;
    return Fast::kTaken;
  }

  // fast_head()'s field lines from p, each a name of token bytes, ':', and
  // a value up to CRLF, then the CRLF that ends the head. kTaken: the
  // fields are in the head and the tally, and p is past the head.
  Fast fast_fields(const char* begin, const char*& p, const char* end, bool scanned) {
    const Fast unsure = scanned ? Fast::kToLlhttp : Fast::kUnsure;
    for (;;) {
      if (end - p < 2) return undo(unsure);
      if (*p == '\r') {
        if (p[1] != '\n') return undo(Fast::kToLlhttp);  // a bare CR: the scanner's 400
        p += 2;
        return Fast::kTaken;
      }
      const char* const name_begin = p;
      // Token bytes: what llhttp's strict build takes in a field name.
      while (p < end && kTokenByte[static_cast<unsigned char>(*p)])
        ++p;
      if (p == end) return undo(unsure);
      if (*p != ':' || p == name_begin) return undo(Fast::kToLlhttp);
      const std::string_view name(name_begin, static_cast<std::size_t>(p - name_begin));
      if (auto err = check_field_name(head, name, tally)) return refused(*err, scanned);
      if (llhttp_gives_meaning(tally.current, name)) return undo(Fast::kToLlhttp);
      const char* const value_begin = ++p;
      p = skip_class(p, end, ByteClass::kValue);
      if (end - p < 2) return undo(unsure);
      if (p[0] != '\r' || p[1] != '\n') return undo(Fast::kToLlhttp);
      const HeaderField field{
          name, trim_ows(std::string_view(value_begin, static_cast<std::size_t>(p - value_begin)))};
      if (auto err = check_field(head, field, tally)) return refused(*err, scanned);
      head.headers.add_in_place(begin, field.name, field.value);
      p += 2;
    }
  }

  // After fast_head() took or refused a head of the input: the section is
  // a copy of it (the header list's fields are already recorded where they
  // lie in it), and the head's views into the input (the only others it
  // makes: its method is a literal) are moved to the copy.
  void take_section(std::string_view input) {
    std::string& copy = section();  // empty: begin_message() cleared it
    copy.append(input.data(), head_bytes);
    const auto moved = [&](std::string_view& v) {
      if (v.data() != nullptr)
        v = std::string_view(copy.data() + (v.data() - input.data()), v.size());
    };
    moved(head.target);
    moved(head.host);
    moved(head.expect_value);
    // The tally's views too (FieldTally: they point where the values lie).
    moved(tally.host);
    if (tally.expect) moved(*tally.expect);
    if (tally.upgrade) moved(*tally.upgrade);
  }

  // fast_head() for parse(): true when it decided (r is the kHead or the
  // kError event), false when the scanner or llhttp is to go on.
  bool took_fast_head(std::string_view text, bool scanned, ParseResult& r) {
    const Fast fast = fast_head(text, scanned);
    fast_head_declined = fast == Fast::kToLlhttp;
    if (fast == Fast::kToLlhttp || fast == Fast::kUnsure) return false;
    if (!scanned) r.consumed += head_bytes;
    if (fast == Fast::kRefused) {
      fail(error, r);
      return true;
    }
    head_took_fast_path = true;
    head_complete = true;
    phase = Phase::kBody;
    ended_with_head = true;
    r.event = ParseEvent::kHead;
    return true;
  }

  // The fast path leaves the head to others as begin_message() left it
  // (RequestHead's defaults): a refusal the scanner reports has no method.
  Fast undo(Fast verdict) {
    head.method = {};
    head.target = {};
    head.version_minor = 1;
    head.headers.clear_fields();  // its bytes may be the section the scanner has
    tally = {};
    return verdict;
  }

  // A rule refused the head: final once the scanner has judged all of it.
  Fast refused(const ParseError& e, bool scanned) {
    if (!scanned) return undo(Fast::kUnsure);
    error = e;
    return Fast::kRefused;
  }

  void start_trailers() {
    phase = Phase::kTrailers;
    trailer_section().clear();
    scanner.reset(SectionScanner::Kind::kTrailers, limits);
  }

  void end_message() {
    phase = head.keep_alive ? Phase::kHead : Phase::kClosed;
    head_is_stale = true;
  }

  struct Ran {
    Pending event = Pending::kNone;
    std::size_t used = 0;
  };

  // Runs llhttp over `data` until it pauses for an event, fails, or takes it all.
  Ran run_llhttp(std::string_view data) {
    static constexpr char kNoBytes[1] = {0};
    // A zero-length call still lets llhttp take steps that need no input,
    // such as ending a request without a body.
    const char* base = data.empty() ? kNoBytes : data.data();
    std::size_t offset = 0;
    for (;;) {
      pending = Pending::kNone;
      llhttp_errno_t err = llhttp_execute(&llhttp, base + offset, data.size() - offset);
      if (err == HPE_OK) return {Pending::kNone, data.size()};
      const std::size_t at = static_cast<std::size_t>(llhttp_get_error_pos(&llhttp) - base);
      if (err == HPE_PAUSED) {
        llhttp_resume(&llhttp);
        return {pending, at};
      }
      if (err == HPE_PAUSED_UPGRADE) {
        llhttp_resume_after_upgrade(&llhttp);
        offset = at;
        continue;
      }
      if (error.status == 0) error = from_llhttp(err, llhttp_get_error_reason(&llhttp));
      return {Pending::kError, at};
    }
  }

  // parse() once it has begun the message if the phase is kHead. Out of
  // line: parse() is called three times a keep-alive request, and two of
  // them (the message's end after a bodiless head, the empty input at the
  // rest) it answers itself; with this inlined they paid this function's
  // frame too (~50 instructions a request).
  [[gnu::noinline]] ParseResult parse_events(std::string_view input) {
    ParseResult r;
    for (;;) {
      std::string_view rest = input.substr(r.consumed);
      switch (phase) {
        case Phase::kFailed:
          r.event = ParseEvent::kError;
          return r;
        case Phase::kClosed:
          return fail(kAfterClose, r);
        case Phase::kHead:
        case Phase::kTrailers:
          return parse_section(rest, r);
        case Phase::kBody: {
          Ran ran = run_llhttp(rest);
          r.consumed += ran.used;
          switch (ran.event) {
            case Pending::kNone:
              return r;
            case Pending::kBody:
              r.event = ParseEvent::kBody;
              r.body = body_piece;
              return r;
            case Pending::kTrailersStart:
              start_trailers();
              continue;
            case Pending::kMessageEnd:
              end_message();
              r.event = ParseEvent::kMessageEnd;
              return r;
            case Pending::kError:
              return fail(error, r);
          }
        }
      }
    }
  }

  // parse_events() in the head or trailers phase: `rest` is the input not
  // yet taken, r what parse() reports so far.
  ParseResult parse_section(std::string_view rest, ParseResult& r) {
    if (rest.empty()) return r;
    const bool fast = phase == Phase::kHead && path == HeadPath::kFastPath;
    // A head that starts this input is judged where it lies, before a byte
    // is copied (the file comment's "The head fast path").
    if (fast && scanner.at_start() && took_fast_head(rest, false, r)) return r;
    std::string& raw = phase == Phase::kHead ? section() : trailer_section();
    SectionScanner::Step step = scanner.scan(rest, raw);
    r.consumed += step.consumed;
    if (step.error.status != 0) return fail(step.error, r);
    if (!step.complete) return r;
    if (phase == Phase::kHead) {
      if (fast && !fast_head_declined && took_fast_head(section(), true, r)) return r;
      if (auto err = start_head()) return fail(*err, r);
    }
    tabs_to_spaces_before_line_ends(raw);
    Ran ran = run_llhttp(raw);
    if (ran.event == Pending::kError) return fail(error, r);
    // llhttp stops exactly at the section's end: after a head waiting for
    // its body or in on_message_complete, after trailers in
    // on_message_complete.
    if (ran.used != raw.size()) return fail(kHeadNotConsumed, r);
    if (phase == Phase::kHead) {
      if (!head_complete || (ran.event != Pending::kNone && ran.event != Pending::kMessageEnd))
        return fail(kHeadNotConsumed, r);
      phase = Phase::kBody;
      ended_with_head = ran.event == Pending::kMessageEnd;
      r.event = ParseEvent::kHead;
    } else if (ran.event == Pending::kMessageEnd) {
      end_message();
      r.event = ParseEvent::kMessageEnd;
    } else {
      return fail(kHeadNotConsumed, r);
    }
    return r;
  }

  ParseResult& fail(const ParseError& e, ParseResult& r) {
    if (phase != Phase::kFailed) error = e;
    phase = Phase::kFailed;
    r.event = ParseEvent::kError;
    r.body = {};
    return r;
  }

  // A callback's refusal: remember why and make llhttp stop with an error.
  int refuse(const ParseError& e) {
    error = e;
    return -1;
  }

  static State& of(llhttp_t* p) { return *static_cast<State*>(p->data); }

  static int on_header_field(llhttp_t* p, const char* at, std::size_t n) {
    State& s = of(p);
    return extend_span(s.field_name, at, n) ? 0 : s.refuse(kLineFolding);
  }

  static int on_header_field_complete(llhttp_t* p) {
    State& s = of(p);
    if (s.phase == Phase::kTrailers) {
      if (s.field_name.empty()) return s.refuse(kEmptyTrailerName);
      return forbidden_trailer(s.field_name) ? s.refuse(kForbiddenTrailer) : 0;
    }
    auto err = check_field_name(s.head, s.field_name, s.tally);
    return err ? s.refuse(*err) : 0;
  }

  static int on_header_value(llhttp_t* p, const char* at, std::size_t n) {
    State& s = of(p);
    return extend_span(s.field_value, at, n) ? 0 : s.refuse(kLineFolding);
  }

  static int on_header_value_complete(llhttp_t* p) {
    State& s = of(p);
    HeaderField field{s.field_name, trim_ows(s.field_value)};
    s.field_name = {};
    s.field_value = {};
    if (s.phase == Phase::kTrailers) {
      s.trailers.add_in_place(s.trailer_section().data(), field.name, field.value);
      return 0;
    }
    if (auto err = check_field(s.head, field, s.tally)) return s.refuse(*err);
    s.head.headers.add_in_place(s.section().data(), field.name, field.value);
    return 0;
  }

  static int on_headers_complete(llhttp_t* p) {
    State& s = of(p);
    LlhttpVerdict verdict;
    verdict.chunked = (p->flags & F_CHUNKED) != 0;
    verdict.has_content_length = (p->flags & F_CONTENT_LENGTH) != 0;
    verdict.content_length = p->content_length;
    verdict.upgrade = p->upgrade != 0;
    verdict.keep_alive = llhttp_should_keep_alive(p) != 0;
    if (auto err = finish_head(s.head, s.tally, verdict, s.limits)) return s.refuse(*err);
    s.chunk_extension_bytes = 0;
    s.head_complete = true;  // no pause: see "Pausing"
    return 0;
  }

  static int on_body(llhttp_t* p, const char* at, std::size_t n) {
    if (n == 0) return 0;
    State& s = of(p);
    s.body_piece = std::string_view(at, n);
    s.pending = Pending::kBody;
    return HPE_PAUSED;
  }

  static int on_chunk_extension(llhttp_t* p, const char*, std::size_t n) {
    State& s = of(p);
    s.chunk_extension_bytes += n;
    return s.chunk_extension_bytes > s.limits.max_chunk_extension_bytes
               ? s.refuse(kChunkExtensionsTooLong)
               : 0;
  }

  // Called once a chunk-size line has been read; p->content_length is the size.
  static int on_chunk_header(llhttp_t* p) {
    State& s = of(p);
    s.chunk_extension_bytes = 0;
    const std::uint64_t size = p->content_length;
    if (size == 0) {
      s.pending = Pending::kTrailersStart;
      return HPE_PAUSED;
    }
    // Refuse before any byte of the chunk is delivered; written so it cannot
    // overflow (size is bounded only by llhttp's 64-bit parse).
    if (size > s.limits.max_body_bytes - s.declared_chunk_bytes) {
      return s.refuse(kChunkedBodyTooLarge);
    }
    s.declared_chunk_bytes += size;
    return 0;
  }

  static int on_message_complete(llhttp_t* p) {
    of(p).pending = Pending::kMessageEnd;
    return HPE_PAUSED;
  }

  llhttp_t llhttp{};
  llhttp_settings_t settings{};
  HttpLimits limits;
  HeadPath path;
  SectionScanner scanner;
  Phase phase = Phase::kHead;
  // The previous message has ended but its head is still readable; the next
  // parse() in the head phase clears it first.
  bool head_is_stale = true;
  RequestHead head;
  HeaderList trailers;
  // Raw bytes of the head (head's views point here) and of a chunked
  // body's trailer section: the header lists' arenas (see "Sections").
  std::string& section() noexcept { return head.headers.bytes(); }
  std::string& trailer_section() noexcept { return trailers.bytes(); }
  FieldTally tally;
  ParseError error;
  // The field llhttp is delivering, as views into section() or
  // trailer_section().
  std::string_view field_name;
  std::string_view field_value;
  // Set by a callback right before it returns HPE_PAUSED; read by run_llhttp.
  Pending pending = Pending::kNone;
  // on_headers_complete ran for this message's head, or fast_head() took it.
  bool head_complete = false;
  bool head_took_fast_path = false;
  // fast_head() found this head is not one it takes: it does not look again
  // once the scanner has the whole head.
  bool fast_head_declined = false;
  // The bytes of the head fast_head() took or refused.
  std::size_t head_bytes = 0;
  // RequestParser::borrow_input: a head fast_head() takes from the input
  // stays there (head.headers.borrowed()), head_bytes of it.
  bool borrow = false;
  // The head's llhttp run also ended the message (no body): the parse()
  // after kHead reports kMessageEnd without running llhttp.
  bool ended_with_head = false;
  std::string_view body_piece;
  std::uint64_t declared_chunk_bytes = 0;  // sum of chunk sizes so far (<= max_body_bytes)
  std::size_t chunk_extension_bytes = 0;   // on the chunk-size line being read
};

RequestParser::RequestParser(HttpLimits limits, HeadPath path)
    : state_(std::make_unique<State>(limits, path)) {}
RequestParser::~RequestParser() = default;
RequestParser::RequestParser(RequestParser&&) noexcept = default;
RequestParser& RequestParser::operator=(RequestParser&&) noexcept = default;

const RequestHead& RequestParser::head() const noexcept {
  return state_->head;
}
const HeaderList& RequestParser::trailers() const noexcept {
  return state_->trailers;
}
const ParseError& RequestParser::error() const noexcept {
  return state_->error;
}
const HttpLimits& RequestParser::limits() const noexcept {
  return state_->limits;
}
bool RequestParser::head_took_fast_path() const noexcept {
  return state_->head_took_fast_path;
}

std::string_view RequestParser::raw_request_line() const noexcept {
  const State& s = *state_;
  if (s.head_is_stale) return {};
  std::string_view line = s.head.headers.borrowed()
                              ? std::string_view(s.head.headers.base(), s.head_bytes)
                              : s.head.headers.bytes();
  line = line.substr(0, std::min(line.find_first_of("\r\n"), std::size_t{1024}));
  return line;
}

void RequestParser::borrow_input(bool on) noexcept {
  state_->borrow = on;
}

bool RequestParser::head_borrowed() const noexcept {
  return state_->head.headers.borrowed();
}

void RequestParser::end_borrow() noexcept {
  State& s = *state_;
  if (!s.head.headers.borrowed()) return;
  // No view into the caller's bytes is left behind: the next message (or
  // release_buffers, or reset) begins from this empty head as from any.
  s.head.headers.clear();
  s.head.target = {};
  s.head.host = {};
  s.head.expect_value = {};
}

bool RequestParser::is_idle() const noexcept {
  const State& s = *state_;
  return s.phase == Phase::kHead && (s.head_is_stale || s.scanner.at_start());
}

void RequestParser::release_buffers(std::size_t keep_bytes) {
  State& s = *state_;
  if (!is_idle()) return;  // mid-message: the buffers hold it
  // The last message's head (views into its section) goes first, as the next
  // parse() would drop it.
  if (s.head_is_stale) s.begin_message();
  s.head.headers.clear_and_shrink(keep_bytes);
  s.trailers.clear_and_shrink(keep_bytes);
}

void RequestParser::reset() {
  State& s = *state_;
  s.init_llhttp();
  s.phase = Phase::kHead;
  s.head_is_stale = true;
  s.error = {};
  s.begin_message();
  s.head_is_stale = true;
}

ParseResult RequestParser::parse(std::string_view input) {
  State& s = *state_;
  // Besides the call that parses its head, a keep-alive request nearly
  // always brings two: the one after a bodiless request's kHead (see
  // "Pausing") and one on an empty input while the connection waits for
  // the next head. Both are decided here, before parse_events() and its
  // loop are entered.
  if (s.ended_with_head) {
    s.ended_with_head = false;
    s.end_message();
    return ParseResult{.event = ParseEvent::kMessageEnd};
  }
  if (s.phase == Phase::kHead) {
    if (s.head_is_stale) s.begin_message();
    if (input.empty()) return ParseResult{};
  }
  return s.parse_events(input);
}

}  // namespace goro::http::detail
