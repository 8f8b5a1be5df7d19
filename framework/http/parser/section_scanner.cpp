#include "framework/http/parser/section_scanner.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstring>

namespace goro::http::detail {

namespace {

constexpr ParseError kBareCR{400, "bare CR in header section"};
constexpr ParseError kBareLF{400, "bare LF in header section"};
constexpr ParseError kObsFold{400, "obsolete line folding in header section"};
constexpr ParseError kRequestLineTooLong{414, "request line too long"};
constexpr ParseError kHeadTooLarge{431, "request header fields too large"};
constexpr ParseError kTrailersTooLarge{431, "trailer section too large"};

}  // namespace

// Inside a line only CR and LF mean anything: from input[i] (an ordinary
// byte, already counted), skips the ordinary bytes after it, at most
// `budget` of them (what the limits have left), in one tight loop instead of
// a pass through the state machine per byte. Counts them and returns the
// index of the last byte skipped; the caller's loop goes on from the next,
// which is a CR, an LF, the end of the input, or the byte that passes a
// limit (refused there exactly as the byte-at-a-time loop would).
//
// Sixteen bytes at a time where SSE2 is there (every x86-64): a compare with
// CR and with LF and a bit scan, a tenth of the byte loop's instructions on
// a typical header line.
std::size_t SectionScanner::skip_line(std::string_view input, std::size_t i,
                                      std::size_t budget) noexcept {
  const std::size_t end = i + 1 + std::min(budget, input.size() - i - 1);
  std::size_t j = i + 1;
#if defined(__SSE2__)
  // A load may read past `end` (the budget) while inside the input: the
  // position found is clamped to `end`. Near the input's end the load is
  // the input's last 16 bytes, the ones before j shifted out of the mask.
  // Lines are mostly shorter than 16 bytes and the last one ends near the
  // input's end: the byte loop below was most of the scanner's work.
  const __m128i cr = _mm_set1_epi8('\r');
  const __m128i lf = _mm_set1_epi8('\n');
  while (j < end && input.size() >= 16) {
    const std::size_t base = std::min(j, input.size() - 16);
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(input.data() + base));
    const auto hits = static_cast<unsigned>(_mm_movemask_epi8(
                          _mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, lf)))) >>
                      (j - base);
    if (hits != 0) {
      j = std::min(j + static_cast<std::size_t>(__builtin_ctz(hits)), end);
      break;
    }
    j = std::min(base + 16, end);
  }
#endif
  while (j < end && input[j] != '\r' && input[j] != '\n')
    ++j;
  const std::size_t skipped = j - (i + 1);
  total_bytes_ += skipped;
  if (state_ == State::kRequestLine) request_line_size_ += skipped;
  return j - 1;
}

// Blank lines before the request line (kLeading, kLeadingCR): false for a
// CR not followed by LF. The first other byte starts the request line.
bool SectionScanner::leading(char c) noexcept {
  if (state_ == State::kLeadingCR) {
    state_ = State::kLeading;
    return c == '\n';
  }
  if (c == '\r') {
    state_ = State::kLeadingCR;
  } else if (c != '\n') {
    state_ = State::kRequestLine;
    request_line_size_ = 1;
  }
  return true;
}

// A whole request head at the start of `input`, judged sixteen bytes at a
// time: its length (and its request line's in `request_line`) when the byte-at-a-time loop below
// would take exactly those bytes as a complete head without an error, else 0 and nothing changed
// (the loop then runs from the start, so every refusal, a leading blank line and a head split
// across reads stay the loop's). A client's head usually arrives whole; the loop costs a
// state-machine step per CR, LF and line start. (The heads that reach the scanner whole are
// those the parser's fast path leaves to llhttp, a POST's for one, or refuses, and every head
// of a parser built for llhttp alone.)
//
// Per block of sixteen: the CR, LF and SP/HTAB bit masks. The head is
// well formed up to its end when every LF follows a CR and every CR is
// followed by an LF (lf == cr << 1, with the previous block's last CR
// carried in), and no line after the first starts with SP or HTAB (a line
// starts after each LF). It ends at the first line that starts with CR.
// Only the bits before that end are judged: what follows is the next
// message's.
std::size_t SectionScanner::whole_head(std::string_view input,
                                       std::size_t& request_line) const noexcept {
#if defined(__SSE2__)
  const std::size_t limit = std::min(input.size(), byte_limit_);
  if (limit < 4 || input[0] == '\r' || input[0] == '\n') return 0;
  const __m128i cr_v = _mm_set1_epi8('\r');
  const __m128i lf_v = _mm_set1_epi8('\n');
  const __m128i sp_v = _mm_set1_epi8(' ');
  const __m128i ht_v = _mm_set1_epi8('\t');
  unsigned carry_cr = 0;  // the previous block ended in CR
  unsigned carry_lf = 0;  // ... in LF: its next byte starts a line
  request_line = 0;       // the first CR's index, once seen (0: not yet)
  for (std::size_t b = 0; b < limit; b += 16) {
    // The last block of a longer input is its last sixteen bytes, the ones
    // before b shifted out of the masks; a shorter input goes through a
    // zeroed copy.
    __m128i v;
    unsigned shift = 0;
    if (b + 16 <= input.size()) {
      v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(input.data() + b));
    } else if (input.size() >= 16) {
      shift = static_cast<unsigned>(b + 16 - input.size());
      v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(input.data() + input.size() - 16));
    } else {
      alignas(16) char tail[16] = {};
      std::memcpy(tail, input.data(), input.size());
      v = _mm_load_si128(reinterpret_cast<const __m128i*>(tail));
    }
    auto mask = [&](__m128i hits) {
      return static_cast<unsigned>(_mm_movemask_epi8(hits)) >> shift;
    };
    const unsigned cr = mask(_mm_cmpeq_epi8(v, cr_v));
    const unsigned lf = mask(_mm_cmpeq_epi8(v, lf_v));
    const unsigned ws = mask(_mm_or_si128(_mm_cmpeq_epi8(v, sp_v), _mm_cmpeq_epi8(v, ht_v)));
    const unsigned starts = ((lf << 1) | carry_lf) & 0xFFFF;
    // Bits of this block inside the head and the input's first `limit`.
    unsigned in = limit - b >= 16 ? 0xFFFF : (1u << (limit - b)) - 1;
    const unsigned blank = starts & cr & in;  // a line starting with CR
    std::size_t end = 0;
    if (blank != 0) {
      const auto e = static_cast<std::size_t>(__builtin_ctz(blank));
      end = b + e + 2;  // past the blank line's LF
      if (end > limit || input[b + e + 1] != '\n') return 0;
      // Bits up to and including the blank line's CR; its LF may be in
      // the next block (checked just above).
      in &= e + 1 >= 16 ? 0xFFFF : (1u << (e + 1)) - 1;
    }
    if ((lf & in) != (((cr << 1) | carry_cr) & in)) return 0;  // a bare CR or LF
    if ((starts & ws & in) != 0) return 0;                     // obs-fold
    if (request_line == 0 && (cr & in) != 0)
      request_line = b + static_cast<std::size_t>(__builtin_ctz(cr & in));
    if (end != 0) {
      if (request_line == 0 || request_line > limits_->max_request_line) return 0;
      return end;
    }
    // A CR in the block's last byte: its LF is the next block's first bit.
    carry_cr = (cr >> 15) & 1;
    carry_lf = (lf >> 15) & 1;
  }
#else
  (void)input;
  (void)request_line;
#endif
  return 0;
}

// scan() on a whole head at the start of `input` (whole_head()): true when
// it took one, then `step` says so.
bool SectionScanner::took_whole_head(std::string_view input, std::string& section, Step& step) {
  std::size_t request_line = 0;
  const std::size_t n = whole_head(input, request_line);
  if (n == 0) return false;
  section.append(input.data(), n);
  request_line_size_ = request_line;
  total_bytes_ = n;
  state_ = State::kFinalCR;
  step.consumed = n;
  step.complete = true;
  return true;
}

SectionScanner::Step SectionScanner::scan(std::string_view input, std::string& section) {
  Step step;
  if (kind_ == Kind::kRequestHead && at_start() && took_whole_head(input, section, step))
    return step;
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
      case State::kLeadingCR:
        if (!leading(c)) return fail(kBareCR);
        if (state_ != State::kRequestLine) copy_from = i + 1;
        break;
      case State::kRequestLine:
        if (c == '\r') {
          state_ = State::kRequestLineCR;
        } else if (c == '\n') {
          return fail(kBareLF);
        } else if (++request_line_size_ > limits_->max_request_line) {
          return fail(kRequestLineTooLong);
        } else {
          const std::size_t line_left = limits_->max_request_line - request_line_size_;
          i = skip_line(input, i, std::min(line_left, byte_limit_ - total_bytes_));
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
        } else {
          i = skip_line(input, i, byte_limit_ - total_bytes_);
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
