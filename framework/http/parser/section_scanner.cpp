#include "framework/http/parser/section_scanner.hpp"

namespace goro::http::detail {

namespace {

constexpr ParseError kBareCR{400, "bare CR in header section"};
constexpr ParseError kBareLF{400, "bare LF in header section"};
constexpr ParseError kObsFold{400, "obsolete line folding in header section"};
constexpr ParseError kRequestLineTooLong{414, "request line too long"};
constexpr ParseError kHeadTooLarge{431, "request header fields too large"};
constexpr ParseError kTrailersTooLarge{431, "trailer section too large"};

}  // namespace

void SectionScanner::reset(Kind kind, const HttpLimits& limits) noexcept {
  limits_ = &limits;
  kind_ = kind;
  state_ = kind == Kind::kRequestHead ? State::kLeading : State::kLineStart;
  total_bytes_ = 0;
  request_line_size_ = 0;
  byte_limit_ = limits.max_header_bytes;
}

SectionScanner::Step SectionScanner::scan(std::string_view input, std::string& section) {
  Step step;
  std::size_t i = 0;
  // Bytes [copy_from, i) are section bytes not yet appended; leading blank
  // lines advance copy_from instead so they never reach llhttp's buffer.
  std::size_t copy_from = 0;
  auto fail = [&](const ParseError& e) {
    // What arrived stays readable (RequestParser::raw_request_line).
    section.append(input.substr(copy_from, i - copy_from));
    step.consumed = i;
    step.error = e;
    return step;
  };

  for (; i < input.size(); ++i) {
    const char c = input[i];
    if (++total_bytes_ > byte_limit_) {
      return fail(kind_ == Kind::kRequestHead ? kHeadTooLarge : kTrailersTooLarge);
    }
    switch (state_) {
      case State::kLeading:
        if (c == '\r') {
          state_ = State::kLeadingCR;
        } else if (c != '\n') {
          state_ = State::kRequestLine;
          request_line_size_ = 1;
        }
        if (state_ != State::kRequestLine) copy_from = i + 1;
        break;
      case State::kLeadingCR:
        if (c != '\n') return fail(kBareCR);
        state_ = State::kLeading;
        copy_from = i + 1;
        break;
      case State::kRequestLine:
        if (c == '\r') {
          state_ = State::kRequestLineCR;
        } else if (c == '\n') {
          return fail(kBareLF);
        } else if (++request_line_size_ > limits_->max_request_line) {
          return fail(kRequestLineTooLong);
        }
        break;
      case State::kRequestLineCR:
      case State::kFieldLineCR:
        if (c != '\n') return fail(kBareCR);
        state_ = State::kLineStart;
        break;
      case State::kLineStart:
        if (c == '\r') {
          state_ = State::kFinalCR;
        } else if (c == '\n') {
          return fail(kBareLF);
        } else if (c == ' ' || c == '\t') {
          return fail(kObsFold);
        } else {
          state_ = State::kFieldLine;
        }
        break;
      case State::kFieldLine:
        if (c == '\r') {
          state_ = State::kFieldLineCR;
        } else if (c == '\n') {
          return fail(kBareLF);
        }
        break;
      case State::kFinalCR:
        if (c != '\n') return fail(kBareCR);
        ++i;
        section.append(input.substr(copy_from, i - copy_from));
        step.consumed = i;
        step.complete = true;
        return step;
    }
  }
  section.append(input.substr(copy_from, i - copy_from));
  step.consumed = i;
  return step;
}

}  // namespace goro::http::detail
