#include <phew/io/table.hpp>

namespace phew::io {

const std::string& UnitNames::of(Unit u) const {
  static const std::string none;
  switch (u) {
    case Unit::length: return length;
    case Unit::mass: return mass;
    case Unit::velocity: return velocity;
    case Unit::density: return density;
    case Unit::energy: return energy;
    case Unit::acceleration: return acceleration;
    case Unit::time: return time;
    case Unit::angular_momentum: return angular_momentum;
    case Unit::none: return none;
  }
  return none;
}

void check_labels(const File& file, const std::string& dataset, std::span<const std::int64_t> labels,
                  std::int64_t max_id) {
  for (const std::int64_t l : labels)
    if (l < 0 || l > max_id)
      throw core::Error::input("{}: {} holds the label {} (expected 0 or an ID in 1..{})", file.path(), dataset, l, max_id);
}

}  // namespace phew::io
