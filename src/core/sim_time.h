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
  static constexpr SimTime FromNanos(int64_t nanos) { return SimTime(Clamp(nanos)); }
  // Round to the nearest nanosecond, halves away from zero. A time beyond +-Forever() (146 years),
  // an infinity or NaN (a rate of 0 or garbage upstream) becomes +-Forever(): never a wrapped,
  // negative span. Callers that must reject such times compare with Forever().
  static constexpr SimTime FromMicros(double micros) { return FromNanosDouble(micros * 1e3); }
  static constexpr SimTime FromSeconds(double seconds) { return FromNanosDouble(seconds * 1e9); }
  // Just under 2^62 ns: the saturation bound. Two of them still add without overflow.
  static constexpr SimTime Forever() { return SimTime(kForever); }

  constexpr int64_t nanos() const { return nanos_; }
  constexpr double ToMicros() const { return static_cast<double>(nanos_) * 1e-3; }
  constexpr double ToSeconds() const { return static_cast<double>(nanos_) * 1e-9; }

  // Sums and differences saturate at +-Forever(), so that a chain of huge spans stays huge.
  friend constexpr SimTime operator+(SimTime a, SimTime b) {
    return SimTime(Clamp(a.nanos_ + b.nanos_));
  }
  friend constexpr SimTime operator-(SimTime a, SimTime b) {
    return SimTime(Clamp(a.nanos_ - b.nanos_));
  }
  // |count| copies of |a|, saturating. REQUIRES: count >= 0.
  friend constexpr SimTime operator*(SimTime a, int64_t count) {
    int64_t product = 0;
    if (__builtin_mul_overflow(a.nanos_, count, &product))
      return SimTime(a.nanos_ < 0 ? -kForever : kForever);
    return SimTime(Clamp(product));
  }
  constexpr SimTime& operator+=(SimTime other) { return *this = *this + other; }
  constexpr SimTime& operator-=(SimTime other) { return *this = *this - other; }
  friend constexpr auto operator<=>(SimTime a, SimTime b) = default;

  friend constexpr SimTime Max(SimTime a, SimTime b) { return a < b ? b : a; }
  friend constexpr SimTime Min(SimTime a, SimTime b) { return b < a ? b : a; }

 private:
  constexpr explicit SimTime(int64_t nanos) : nanos_(nanos) {}

  static constexpr int64_t kForever = (int64_t{1} << 62) - 1;

  // Operands are within +-kForever (every constructor clamps), so their sum cannot overflow int64.
  static constexpr int64_t Clamp(int64_t nanos) {
    return nanos > kForever ? kForever : nanos < -kForever ? -kForever : nanos;
  }

  static constexpr SimTime FromNanosDouble(double nanos) {
    if (!(nanos == nanos)) return SimTime(kForever);  // NaN
    if (nanos >= static_cast<double>(kForever)) return SimTime(kForever);
    if (nanos <= -static_cast<double>(kForever)) return SimTime(-kForever);
    return SimTime(RoundToInt64(nanos));
  }

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
