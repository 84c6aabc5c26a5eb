#include <phew/io/table.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace phew::io {

const std::string& UnitNames::of(Unit u) const {
  static const std::string none;
  switch (u) {
    case Unit::length:
      return length;
    case Unit::mass:
      return mass;
    case Unit::velocity:
      return velocity;
    case Unit::density:
      return density;
    case Unit::energy:
      return energy;
    case Unit::acceleration:
      return acceleration;
    case Unit::time:
      return time;
    case Unit::angular_momentum:
      return angular_momentum;
    case Unit::none:
      return none;
  }
  return none;
}

std::string Constraint::describe() const {
  std::vector<std::string> parts;
  if (finite) parts.push_back("finite");
  if (measured) parts.push_back("finite or NaN (not measurable)");
  if (min && max && !min_open)
    parts.push_back(fmt::format("{:g} to {:g}", *min, *max));
  else {
    if (min) parts.push_back(fmt::format("{} {:g}", min_open ? ">" : ">=", *min));
    if (max) parts.push_back(fmt::format("<= {:g}", *max));
  }
  if (unique) parts.push_back("unique");
  switch (order) {
    case Order::ascending:
      parts.push_back("ascending");
      break;
    case Order::non_decreasing:
      parts.push_back("non-decreasing");
      break;
    case Order::non_increasing:
      parts.push_back("non-increasing");
      break;
    case Order::none:
      break;
  }
  if (!refers_to.empty()) parts.push_back(fmt::format("one of {}{}", refers_to, zero_is_none ? " or 0" : ""));
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

namespace {

template <typename V>
std::string shown(V v) {
  if constexpr (std::is_floating_point_v<V>)
    return fmt::format("{:g}", v);
  else
    return fmt::format("{}", v);
}

// The values a column refers to (sorted), asked once per row: 10^7 member rows against 10^5 peak IDs
// in a peaks.h5 took a binary search each, most of mergertree's reading. Integer IDs are mostly dense,
// so a bitmap over their range answers at once; a range wider than 64 bits per ID keeps the search.
template <typename V>
class IdSet {
 public:
  explicit IdSet(const std::vector<V>& sorted) : sorted_(sorted) {
    if constexpr (std::is_integral_v<V>) {
      if (sorted.empty()) return;
      const auto span = static_cast<std::uint64_t>(sorted.back()) - static_cast<std::uint64_t>(sorted.front());
      if (span / 64 > sorted.size()) return;
      lo_ = sorted.front();
      bits_.assign(span / 64 + 1, 0);
      for (const V v : sorted) {
        const auto at = static_cast<std::uint64_t>(v) - static_cast<std::uint64_t>(lo_);
        bits_[at / 64] |= std::uint64_t{1} << (at % 64);
      }
    }
  }
  bool contains(V v) const {
    if constexpr (std::is_integral_v<V>) {
      if (!bits_.empty()) {
        if (v < lo_ || v > sorted_.back()) return false;
        const auto at = static_cast<std::uint64_t>(v) - static_cast<std::uint64_t>(lo_);
        return (bits_[at / 64] >> (at % 64)) & 1u;
      }
    }
    return std::binary_search(sorted_.begin(), sorted_.end(), v);
  }

 private:
  const std::vector<V>& sorted_;
  V lo_{};
  std::vector<std::uint64_t> bits_;  // bit v - lo_ set for each ID v; empty: search sorted_
};

template <typename V>
void check_typed(const File& f, const std::string& dataset, std::uint64_t begin, std::span<const V> values, int width,
                 const Constraint& c, const V* before) {
  const auto fail = [&](std::size_t k, const std::string& why) {
    const std::uint64_t row = begin + k / static_cast<std::size_t>(width);
    throw core::Error::input("{}: {} row {} is {}: {} (expected {})", f.path(), dataset, row, shown(values[k]), why,
                             c.describe());
  };
  for (std::size_t k = 0; k < values.size(); ++k) {
    const V v = values[k];
    if constexpr (std::is_floating_point_v<V>) {
      if (std::isnan(v)) {
        if (c.finite || (!c.measured && (c.min || c.max || !c.refers_to.empty()))) fail(k, "not a number");
        continue;
      }
      if (std::isinf(v) && (c.finite || c.measured)) fail(k, "infinite");
    }
    if (c.min && (c.min_open ? !(static_cast<double>(v) > *c.min) : !(static_cast<double>(v) >= *c.min)))
      fail(k, "too small");
    if (c.max && !(static_cast<double>(v) <= *c.max)) fail(k, "too large");
  }
  if (width == 1 && c.order != Constraint::Order::none) {
    for (std::size_t k = 0; k < values.size(); ++k) {
      const V* prev = k > 0 ? &values[k - 1] : before;
      if (!prev) continue;
      const bool ok = c.order == Constraint::Order::ascending        ? *prev < values[k]
                      : c.order == Constraint::Order::non_decreasing ? !(values[k] < *prev)
                                                                     : !(*prev < values[k]);
      if (!ok) fail(k, fmt::format("out of order after {}", shown(*prev)));
    }
  }
  if (width == 1 && c.unique) {
    std::vector<V> sorted(values.begin(), values.end());
    std::sort(sorted.begin(), sorted.end());
    if (const auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end())
      fail(static_cast<std::size_t>(std::find(values.begin(), values.end(), *twice) - values.begin()), "given twice");
  }
  if (!c.refers_to.empty()) {
    std::vector<V> targets = f.read<V>(c.refers_to);
    std::sort(targets.begin(), targets.end());
    const IdSet<V> known(targets);
    for (std::size_t k = 0; k < values.size(); ++k) {
      if (c.zero_is_none && values[k] == V{0}) continue;
      if (!known.contains(values[k])) fail(k, "not one of " + c.refers_to);
    }
  }
}

}  // namespace

void check_values(const File& f, const std::string& dataset, std::uint64_t begin, std::span<const double> values,
                  int width, const Constraint& c, const double* before) {
  check_typed(f, dataset, begin, values, width, c, before);
}
void check_values(const File& f, const std::string& dataset, std::uint64_t begin, std::span<const std::int64_t> values,
                  int width, const Constraint& c, const std::int64_t* before) {
  check_typed(f, dataset, begin, values, width, c, before);
}
void check_values(const File& f, const std::string& dataset, std::uint64_t begin, std::span<const std::uint64_t> values,
                  int width, const Constraint& c, const std::uint64_t* before) {
  check_typed(f, dataset, begin, values, width, c, before);
}

void check_labels(const File& file, const std::string& dataset, std::span<const std::int64_t> labels,
                  std::int64_t max_id) {
  for (const std::int64_t l : labels)
    if (l < 0 || l > max_id)
      throw core::Error::input("{}: {} holds the label {} (expected 0 or an ID in 1..{})", file.path(), dataset, l,
                               max_id);
}

}  // namespace phew::io
