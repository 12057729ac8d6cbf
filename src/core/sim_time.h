#ifndef LOOM_CORE_SIM_TIME_H_
#define LOOM_CORE_SIM_TIME_H_

#include <compare>
#include <cstdint>
#include <string>

namespace loom {

// A point in, or a span of, simulated time: a whole number of nanoseconds. Integer time keeps the
// event order exact and every run bit-identical; doubles appear only at the edges (cost models
// produce seconds or microseconds, reports print them), through the From*/To* conversions below.
class SimTime {
 public:
  constexpr SimTime() = default;

  static constexpr SimTime Zero() { return SimTime(); }
  static constexpr SimTime FromNanos(int64_t nanos) { return SimTime(nanos); }
  // Round to the nearest nanosecond, halves away from zero.
  // REQUIRES: |micros| is finite and below 9.2e12 (the int64 range in nanoseconds).
  static constexpr SimTime FromMicros(double micros) { return SimTime(RoundToInt64(micros * 1e3)); }
  // REQUIRES: |seconds| is finite and below 9.2e9.
  static constexpr SimTime FromSeconds(double seconds) {
    return SimTime(RoundToInt64(seconds * 1e9));
  }

  constexpr int64_t nanos() const { return nanos_; }
  constexpr double ToMicros() const { return static_cast<double>(nanos_) * 1e-3; }
  constexpr double ToSeconds() const { return static_cast<double>(nanos_) * 1e-9; }

  friend constexpr SimTime operator+(SimTime a, SimTime b) { return SimTime(a.nanos_ + b.nanos_); }
  friend constexpr SimTime operator-(SimTime a, SimTime b) { return SimTime(a.nanos_ - b.nanos_); }
  constexpr SimTime& operator+=(SimTime other) {
    nanos_ += other.nanos_;
    return *this;
  }
  constexpr SimTime& operator-=(SimTime other) {
    nanos_ -= other.nanos_;
    return *this;
  }
  friend constexpr auto operator<=>(SimTime a, SimTime b) = default;

  friend constexpr SimTime Max(SimTime a, SimTime b) { return a < b ? b : a; }
  friend constexpr SimTime Min(SimTime a, SimTime b) { return b < a ? b : a; }

 private:
  constexpr explicit SimTime(int64_t nanos) : nanos_(nanos) {}

  // std::llround is not constexpr in C++20. Splitting off the whole part first keeps the
  // fraction exact (x - trunc(x) has no rounding error), so 0.49999999999999994 stays 0.
  static constexpr int64_t RoundToInt64(double x) {
    const int64_t whole = static_cast<int64_t>(x);
    const double fraction = x - static_cast<double>(whole);
    if (fraction >= 0.5) return whole + 1;
    if (fraction <= -0.5) return whole - 1;
    return whole;
  }

  int64_t nanos_ = 0;
};

// Returns |time| in microseconds with exactly three decimals ("12.345", "-0.500"): exact, since
// it is computed from the integer nanoseconds, and the same on every platform.
inline std::string FormatMicros(SimTime time) {
  const int64_t nanos = time.nanos();
  const uint64_t magnitude = nanos < 0 ? 0 - static_cast<uint64_t>(nanos) : nanos;
  const uint64_t fraction = magnitude % 1000;
  std::string text = nanos < 0 ? "-" : "";
  text += std::to_string(magnitude / 1000);
  text += '.';
  text += static_cast<char>('0' + fraction / 100);
  text += static_cast<char>('0' + fraction / 10 % 10);
  text += static_cast<char>('0' + fraction % 10);
  return text;
}

}  // namespace loom

#endif  // LOOM_CORE_SIM_TIME_H_
