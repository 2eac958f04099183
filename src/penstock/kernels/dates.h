// dates.h — dates as days since 1970-01-01, timestamps as integer units since the epoch.
// Civil-calendar conversions follow Howard Hinnant's public-domain algorithms.
#pragma once
#include "xpu.h"

namespace xpu {

const int64_t SECONDS_PER_DAY = 86400;

XPU_FN int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
XPU_FN int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

struct Civil {
  int64_t year;
  int32_t month;  // 1..12
  int32_t day;    // 1..31
};

XPU_FN Civil civil_from_days(int64_t z) {
  z += 719468;
  int64_t era = floor_div(z, 146097);
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  Civil c;
  c.day = (int32_t)(doy - (153 * mp + 2) / 5 + 1);
  c.month = (int32_t)(mp < 10 ? mp + 3 : mp - 9);
  c.year = yoe + era * 400 + (c.month <= 2 ? 1 : 0);
  return c;
}

XPU_FN int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  int64_t era = floor_div(y, 400);
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

XPU_FN bool is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

XPU_FN int32_t days_in_month(int64_t y, int32_t m) {
  const int32_t days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

// 0 = Sunday .. 6 = Saturday (1970-01-01 was a Thursday).
XPU_FN int32_t day_of_week(int64_t days) { return (int32_t)floor_mod(days + 4, 7); }
XPU_FN int32_t iso_day_of_week(int64_t days) { int32_t d = day_of_week(days); return d == 0 ? 7 : d; }
XPU_FN int32_t day_of_year(int64_t days) {
  Civil c = civil_from_days(days);
  return (int32_t)(days - days_from_civil(c.year, 1, 1) + 1);
}
// ISO 8601 week number: the week with the year's first Thursday is week 1.
XPU_FN int32_t iso_week(int64_t days) {
  int64_t thursday = days - (iso_day_of_week(days) - 4);
  return (day_of_year(thursday) - 1) / 7 + 1;
}

// Field of a timestamp given as (days, units within the day) with `per_second` units a second.
const int32_t PART_YEAR = 0, PART_QUARTER = 1, PART_MONTH = 2, PART_DAY = 3, PART_HOUR = 4,
              PART_MINUTE = 5, PART_SECOND = 6, PART_MILLISECOND = 7, PART_MICROSECOND = 8,
              PART_DOW = 9, PART_DOY = 10, PART_WEEK = 11, PART_ISODOW = 12;

XPU_FN int64_t time_part(int64_t ts, int64_t per_second, int32_t part) {
  int64_t per_day = per_second * SECONDS_PER_DAY;
  int64_t days = floor_div(ts, per_day);
  int64_t in_day = ts - days * per_day;
  Civil c = civil_from_days(days);
  int64_t secs = in_day / per_second;
  int64_t frac = in_day - secs * per_second;
  switch (part) {
    case PART_YEAR: return c.year;
    case PART_QUARTER: return (c.month - 1) / 3 + 1;
    case PART_MONTH: return c.month;
    case PART_DAY: return c.day;
    case PART_HOUR: return secs / 3600;
    case PART_MINUTE: return (secs / 60) % 60;
    case PART_SECOND: return secs % 60;
    case PART_MILLISECOND: return (secs % 60) * 1000 + frac * 1000 / per_second;
    case PART_MICROSECOND: return (secs % 60) * 1000000 + frac * 1000000 / per_second;
    case PART_DOW: return day_of_week(days);
    case PART_DOY: return day_of_year(days);
    case PART_WEEK: return iso_week(days);
    default: return iso_day_of_week(days);
  }
}

// Seconds (or milliseconds, microseconds) within the minute, with the fraction.
XPU_FN double time_part_fraction(int64_t ts, int64_t per_second, int32_t part) {
  int64_t in_minute = floor_mod(ts, per_second * 60);
  double seconds = (double)(in_minute / per_second) + (double)(in_minute % per_second) / (double)per_second;
  if (part == PART_MILLISECOND) return seconds * 1000.0;
  if (part == PART_MICROSECOND) return seconds * 1000000.0;
  return seconds;
}

const int32_t TRUNC_YEAR = 0, TRUNC_QUARTER = 1, TRUNC_MONTH = 2, TRUNC_WEEK = 3, TRUNC_DAY = 4,
              TRUNC_HOUR = 5, TRUNC_MINUTE = 6, TRUNC_SECOND = 7;

XPU_FN int64_t trunc_timestamp(int64_t ts, int64_t per_second, int32_t unit) {
  int64_t per_day = per_second * SECONDS_PER_DAY;
  int64_t days = floor_div(ts, per_day);
  Civil c = civil_from_days(days);
  switch (unit) {
    case TRUNC_YEAR: return days_from_civil(c.year, 1, 1) * per_day;
    case TRUNC_QUARTER: return days_from_civil(c.year, (c.month - 1) / 3 * 3 + 1, 1) * per_day;
    case TRUNC_MONTH: return days_from_civil(c.year, c.month, 1) * per_day;
    case TRUNC_WEEK: return (days - (iso_day_of_week(days) - 1)) * per_day;
    case TRUNC_DAY: return days * per_day;
    case TRUNC_HOUR: return floor_div(ts, per_second * 3600) * per_second * 3600;
    case TRUNC_MINUTE: return floor_div(ts, per_second * 60) * per_second * 60;
    default: return floor_div(ts, per_second) * per_second;
  }
}

// days + n months, clamping the day to the end of the month (PostgreSQL's rule).
XPU_FN int64_t add_months(int64_t days, int64_t months) {
  if (months == 0) return days;
  Civil c = civil_from_days(days);
  int64_t total = c.year * 12 + (c.month - 1) + months;
  int64_t y = floor_div(total, 12);
  int32_t m = (int32_t)(total - y * 12) + 1;
  int32_t d = c.day;
  int32_t last = days_in_month(y, m);
  return days_from_civil(y, m, d > last ? last : d);
}

XPU_FN int64_t timestamp_add(int64_t ts, int64_t per_second, int64_t months, int64_t micros) {
  int64_t per_day = per_second * SECONDS_PER_DAY;
  int64_t days = floor_div(ts, per_day);
  int64_t in_day = ts - days * per_day;
  days = add_months(days, months);
  int64_t delta = per_second >= 1000000 ? micros * (per_second / 1000000) : micros / (1000000 / per_second);
  return days * per_day + in_day + delta;
}

}  // namespace xpu
