#ifndef LOOM_CORE_CHECKED_H_
#define LOOM_CORE_CHECKED_H_

#include <cstdint>
#include <initializer_list>
#include <optional>

namespace loom {

// 64-bit integer arithmetic that reports overflow instead of wrapping. Sizes in loom (parameters,
// bytes, FLOPs per token) are products of user-given dimensions; a config with absurd values must
// produce an error, never a wrapped number.
class CheckedInt {
 public:
  constexpr CheckedInt(int64_t value = 0) : value_(value) {}  // NOLINT: implicit by design

  bool overflowed() const { return overflowed_; }
  // REQUIRES: !overflowed().
  int64_t value() const { return value_; }
  std::optional<int64_t> get() const { return overflowed_ ? std::nullopt : std::optional(value_); }

  friend CheckedInt operator+(CheckedInt a, CheckedInt b) {
    CheckedInt r;
    r.overflowed_ =
        a.overflowed_ || b.overflowed_ || __builtin_add_overflow(a.value_, b.value_, &r.value_);
    return r;
  }
  friend CheckedInt operator*(CheckedInt a, CheckedInt b) {
    CheckedInt r;
    r.overflowed_ =
        a.overflowed_ || b.overflowed_ || __builtin_mul_overflow(a.value_, b.value_, &r.value_);
    return r;
  }
  CheckedInt& operator+=(CheckedInt other) { return *this = *this + other; }
  CheckedInt& operator*=(CheckedInt other) { return *this = *this * other; }

 private:
  int64_t value_ = 0;
  bool overflowed_ = false;
};

// ceil(a / b) without the overflow of (a + b - 1) / b. REQUIRES: a >= 0, b > 0.
constexpr int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

}  // namespace loom

#endif  // LOOM_CORE_CHECKED_H_
