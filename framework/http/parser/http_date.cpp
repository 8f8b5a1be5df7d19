#include "framework/http/parser/http_date.hpp"

#include <algorithm>

namespace goro::http::detail {

namespace {

constexpr std::string_view kDayNames = "SunMonTueWedThuFriSat";
constexpr std::string_view kMonthNames = "JanFebMarAprMayJunJulAugSepOctNovDec";

char* put_two_digits(char* out, unsigned v) noexcept {
  out[0] = static_cast<char>('0' + v / 10 % 10);
  out[1] = static_cast<char>('0' + v % 10);
  return out + 2;
}

// A fixed-position reader over the text being parsed.
class DateScanner {
 public:
  explicit DateScanner(std::string_view s) : s_(s) {}
  bool at_end() const { return pos_ == s_.size(); }
  bool literal(std::string_view lit) {
    if (s_.substr(pos_, lit.size()) != lit) return false;
    pos_ += lit.size();
    return true;
  }
  // Exactly `width` digits (a leading space counts as a zero when `pad`).
  bool digits(std::size_t width, int& out, bool pad = false) {
    if (pos_ + width > s_.size()) return false;
    out = 0;
    for (std::size_t i = 0; i < width; ++i) {
      const char c = s_[pos_ + i];
      if (c == ' ' && pad && i + 1 < width) continue;
      if (c < '0' || c > '9') return false;
      out = out * 10 + (c - '0');
    }
    pos_ += width;
    return true;
  }
  // One of the three-letter names in `table`; its index.
  bool name3(std::string_view table, int& index) {
    if (pos_ + 3 > s_.size()) return false;
    const std::size_t at = table.find(s_.substr(pos_, 3));
    if (at == std::string_view::npos || at % 3 != 0) return false;
    index = static_cast<int>(at / 3);
    pos_ += 3;
    return true;
  }
  // A full English day name ("Sunday"): the three-letter prefix plus the rest.
  bool long_day_name() {
    static constexpr std::string_view kLong[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                                 "Thursday", "Friday", "Saturday"};
    for (std::string_view d : kLong) {
      if (literal(d)) return true;
    }
    return false;
  }
  // "HH:MM:SS"
  bool clock(int& h, int& m, int& sec) {
    return digits(2, h) && literal(":") && digits(2, m) && literal(":") && digits(2, sec);
  }

 private:
  std::string_view s_;
  std::size_t pos_ = 0;
};

std::optional<std::chrono::system_clock::time_point> make_time(int year, int month, int day, int h,
                                                               int m, int sec) {
  using namespace std::chrono;
  const year_month_day ymd{std::chrono::year(year),
                           std::chrono::month(static_cast<unsigned>(month)),
                           std::chrono::day(static_cast<unsigned>(day))};
  if (!ymd.ok() || h > 23 || m > 59 || sec > 60) return std::nullopt;
  return sys_days(ymd) + hours(h) + minutes(m) + seconds(std::min(sec, 59));
}

}  // namespace

std::optional<std::chrono::system_clock::time_point> parse_http_date(
    std::string_view text) noexcept {
  int wd = 0, day = 0, month = 0, year = 0, h = 0, m = 0, sec = 0;
  {  // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
    DateScanner s(text);
    if (s.name3(kDayNames, wd) && s.literal(", ") && s.digits(2, day) && s.literal(" ") &&
        s.name3(kMonthNames, month) && s.literal(" ") && s.digits(4, year) && s.literal(" ") &&
        s.clock(h, m, sec) && s.literal(" GMT") && s.at_end()) {
      return make_time(year, month + 1, day, h, m, sec);
    }
  }
  {  // RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT"
    DateScanner s(text);
    if (s.long_day_name() && s.literal(", ") && s.digits(2, day) && s.literal("-") &&
        s.name3(kMonthNames, month) && s.literal("-") && s.digits(2, year) && s.literal(" ") &&
        s.clock(h, m, sec) && s.literal(" GMT") && s.at_end()) {
      return make_time(year + (year >= 70 ? 1900 : 2000), month + 1, day, h, m, sec);
    }
  }
  {  // asctime: "Sun Nov  6 08:49:37 1994"
    DateScanner s(text);
    if (s.name3(kDayNames, wd) && s.literal(" ") && s.name3(kMonthNames, month) && s.literal(" ") &&
        s.digits(2, day, true) && s.literal(" ") && s.clock(h, m, sec) && s.literal(" ") &&
        s.digits(4, year) && s.at_end()) {
      return make_time(year, month + 1, day, h, m, sec);
    }
  }
  return std::nullopt;
}

HttpDate format_http_date(std::chrono::system_clock::time_point t) noexcept {
  using namespace std::chrono;
  const auto day = floor<days>(t);
  const year_month_day ymd{day};
  const hh_mm_ss<seconds> time{floor<seconds>(t - day)};
  const std::size_t weekday_index = weekday{day}.c_encoding();  // Sunday is 0
  const std::size_t month_index = static_cast<unsigned>(ymd.month()) - 1;
  const unsigned year = static_cast<unsigned>(static_cast<int>(ymd.year()) % 10000 + 10000) % 10000;

  HttpDate d;
  char* p = d.bytes.data();
  p += kDayNames.substr(weekday_index * 3, 3).copy(p, 3);
  *p++ = ',';
  *p++ = ' ';
  p = put_two_digits(p, static_cast<unsigned>(ymd.day()));
  *p++ = ' ';
  p += kMonthNames.substr(month_index * 3, 3).copy(p, 3);
  *p++ = ' ';
  p = put_two_digits(p, year / 100);
  p = put_two_digits(p, year % 100);
  *p++ = ' ';
  p = put_two_digits(p, static_cast<unsigned>(time.hours().count()));
  *p++ = ':';
  p = put_two_digits(p, static_cast<unsigned>(time.minutes().count()));
  *p++ = ':';
  p = put_two_digits(p, static_cast<unsigned>(time.seconds().count()));
  std::string_view(" GMT").copy(p, 4);
  return d;
}

}  // namespace goro::http::detail
