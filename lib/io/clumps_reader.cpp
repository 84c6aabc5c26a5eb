#include "io/clumps_reader.hpp"

#include "core/error.hpp"

#include <algorithm>

namespace phew::io {

std::vector<HaloCentre> read_halo_centres(const File& f) {
  for (const char* d : {"/halos/id", "/halos/mass", "/halos/peak_position"})
    if (!f.has(d)) throw Error::input("{}: no dataset {} (is it a clumps.h5 from phew-merge?)", f.path(), d);
  const auto id = f.read<std::int64_t>("/halos/id");
  const auto mass = f.read<double>("/halos/mass");
  const auto pos = f.read<double>("/halos/peak_position");
  if (mass.size() != id.size() || pos.size() != 3 * id.size())
    throw Error::input("{}: /halos tables of different lengths", f.path());
  std::vector<HaloCentre> out(id.size());
  for (std::size_t k = 0; k < id.size(); ++k) out[k] = {id[k], mass[k], {pos[3 * k], pos[3 * k + 1], pos[3 * k + 2]}};
  std::stable_sort(out.begin(), out.end(), [](const HaloCentre& a, const HaloCentre& b) {
    return a.mass != b.mass ? a.mass > b.mass : a.id < b.id;
  });
  return out;
}

}  // namespace phew::io
