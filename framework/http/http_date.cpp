#include "framework/http/http_date.hpp"

namespace goro::http::detail {

namespace {

constexpr std::string_view kDayNames = "SunMonTueWedThuFriSat";
constexpr std::string_view kMonthNames = "JanFebMarAprMayJunJulAugSepOctNovDec";

char* put_two_digits(char* out, unsigned v) noexcept {
  out[0] = static_cast<char>('0' + v / 10 % 10);
  out[1] = static_cast<char>('0' + v % 10);
  return out + 2;
}

}  // namespace

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
