// One field's particles, ready to triangulate: selected in the field's window, rotated so that the
// line of sight is the third axis, centred, put on an integer lattice, sorted in a canonical order,
// exact duplicates merged.
//
// The canonical order and the lattice make everything downstream a function of the set of particles
// alone, never of the order in which a rank happened to hold them: the same field gives the same
// bytes on any number of ranks and threads.
#pragma once

#include <phew/grid/particle_index.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace phew::dtfe {

// A square map of side `size` and `resolution` pixels per side, centred on `center`, integrating
// along `axis` over `depth`. Particles within `margin` beyond the map's sides are triangulated too,
// so that pixels at the edge see no hull boundary. Lengths in snapshot units.
struct FieldGeometry {
  std::array<double, 3> center{0, 0, 0};
  double size = 0;
  double depth = 0;
  double margin = 0;
  int resolution = 0;
  int axis = 2;  // 0 = x, 1 = y, 2 = z

  // Half-widths of the particle window along (u, v, w): the map's axes and the line of sight.
  std::array<double, 3> half_width() const { return {size / 2 + margin, size / 2 + margin, depth / 2}; }
  double pixel_size() const { return size / resolution; }
};

// The map's axes (u, v) and the line of sight w, as snapshot axes: cyclic, so (u, v, w) is
// right-handed: axis x -> (y, z, x), y -> (z, x, y), z -> (x, y, z).
inline std::array<int, 3> view_axes(int axis) { return {(axis + 1) % 3, (axis + 2) % 3, axis}; }

struct FieldPoints {
  std::vector<std::int32_t> q;   // [n][3] (u, v, w) in quanta from the centre, |q| <= 2^29, distinct
  std::vector<double> mass;      // [n], merged for duplicates
  double scale = 0;              // snapshot length units per quantum (the same on the three axes)
  std::uint64_t n_selected = 0;  // particles (and periodic images) in the window, before merging
  // The window holds every particle of its slab (|w| < depth/2) across the line of sight, so the
  // columns outside the hull are empty (an isolated object in an open box): pixels there are 0, not
  // NaN (surface_density.hpp). Never true in a periodic box.
  bool empty_outside = false;

  std::size_t size() const { return mass.size(); }
  double total_mass() const;  // summed in canonical order
};

// The quantum for a window: isotropic (Delaunay triangulations are not invariant under anisotropic
// scaling), so that the largest half-width is 2^29 quanta.
double quantum(const FieldGeometry& g);

// Builds FieldPoints from positions relative to the field's centre, already in (u, v, w) order and
// inside the window ([-h, h) on each axis): quantises, sorts (Morton order of the lattice, then the
// coordinates, then mass) and merges exact duplicates. `rel` is [n][3]. The same bytes on any number of
// threads.
FieldPoints quantise_field(std::span<const double> rel, std::span<const double> mass, double scale, int threads = 1);

// The same from absolute positions [n][3] and masses: selects the particles (and, in a periodic box,
// their images) inside the window of `g`, and sets empty_outside when no particle of the slab lies
// outside the window across. `box` is the periodic box (0 on an axis = not periodic). For small sets
// and tests; the tool uses field_points.
FieldPoints select_field(std::span<const double> position, std::span<const double> mass, const FieldGeometry& g,
                         const std::array<double, 3>& box);

// The same from a rank's binned particles (with their periodic images in a periodic box): the window of
// `g` (half-widths along the view axes), quantised and sorted. empty_outside is left false: the index
// holds only this rank's particles, so the caller, who knows the particles' extent, decides it.
// Not collective.
FieldPoints field_points(const grid::ParticleIndex& index, const FieldGeometry& g, int threads = 1);

}  // namespace phew::dtfe
