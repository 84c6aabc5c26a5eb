#include "io/table.hpp"

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
    case Unit::none: return none;
  }
  return none;
}

}  // namespace phew::io
