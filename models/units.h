// Strongly typed physical quantities used at every boundary of ess-sim.
//
// All quantities are stored as double in SI base units (seconds, bytes, FLOP). Byte counts up to
// 2^53 (9e15) are exact. GB means 1e9 bytes and GiB 2^30 bytes everywhere (see CONVENTIONS.md).
#pragma once

#include <compare>

namespace ess {

template <class Tag>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(double value) : value_(value) {}

  // The value in the base unit of the quantity (s, B, B/s, FLOP, FLOP/s).
  [[nodiscard]] constexpr double value() const { return value_; }

  constexpr Quantity& operator+=(Quantity other) {
    value_ += other.value_;
    return *this;
  }
  constexpr Quantity& operator-=(Quantity other) {
    value_ -= other.value_;
    return *this;
  }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity(a.value_ + b.value_); }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity(a.value_ - b.value_); }
  friend constexpr Quantity operator*(Quantity a, double s) { return Quantity(a.value_ * s); }
  friend constexpr Quantity operator*(double s, Quantity a) { return Quantity(a.value_ * s); }
  friend constexpr Quantity operator/(Quantity a, double s) { return Quantity(a.value_ / s); }
  // Ratio of two quantities of the same kind is a plain number.
  friend constexpr double operator/(Quantity a, Quantity b) { return a.value_ / b.value_; }
  friend constexpr auto operator<=>(Quantity a, Quantity b) = default;

 private:
  double value_ = 0.0;
};

struct SecondsTag {};
struct BytesTag {};
struct BytesPerSecondTag {};
struct FlopsTag {};
struct FlopsPerSecondTag {};
struct WattsTag {};

using Seconds = Quantity<SecondsTag>;
using Bytes = Quantity<BytesTag>;
using BytesPerSecond = Quantity<BytesPerSecondTag>;
using Flops = Quantity<FlopsTag>;  // a count of floating-point operations
using FlopsPerSecond = Quantity<FlopsPerSecondTag>;
using Watts = Quantity<WattsTag>;  // electrical power (the serving energy model)

constexpr Seconds operator/(Bytes b, BytesPerSecond r) { return Seconds(b.value() / r.value()); }
constexpr Seconds operator/(Flops f, FlopsPerSecond r) { return Seconds(f.value() / r.value()); }
constexpr Bytes operator*(BytesPerSecond r, Seconds t) { return Bytes(r.value() * t.value()); }
constexpr Bytes operator*(Seconds t, BytesPerSecond r) { return Bytes(r.value() * t.value()); }
constexpr BytesPerSecond operator/(Bytes b, Seconds t) { return BytesPerSecond(b.value() / t.value()); }
constexpr Flops operator*(FlopsPerSecond r, Seconds t) { return Flops(r.value() * t.value()); }

// Decimal and binary multipliers, named so that no magic constant appears inline.
inline constexpr double kKilo = 1e3;
inline constexpr double kMega = 1e6;
inline constexpr double kGiga = 1e9;
inline constexpr double kTera = 1e12;
inline constexpr double kPeta = 1e15;
inline constexpr double kKibi = 1024.0;
inline constexpr double kMebi = 1024.0 * 1024.0;
inline constexpr double kGibi = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kTebi = 1024.0 * 1024.0 * 1024.0 * 1024.0;

}  // namespace ess
