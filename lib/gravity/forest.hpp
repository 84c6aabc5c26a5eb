// Gravity from particles by Barnes-Hut trees, one octree per cube of a fixed division of the box (a
// "forest"). Because the cubes are fixed in space and each cube's tree is built from its particles in
// particle-ID order, a cube's tree -- and so every sum over it -- is the same whichever rank builds it:
// results do not depend on how the particles were distributed.
//
// Two uses (docs/tools/voters.md):
//  * periodic box: the short-range part of the TreePM split (long_range.hpp), -G m erfc(r/2r_s)/r,
//    summed over the 27 cubes around a point (cubes are at least the cut-off radius wide);
//  * open box: the whole Newtonian potential, the cubes' monopoles arranged in a pyramid (a top tree)
//    that is shared by every rank, so only the cubes close enough to be opened need to be held locally.
#pragma once

#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/gravity/pair_force.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/mpi/comm.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <type_traits>
#include <vector>

namespace phew::gravity {

struct Source {
  double x[3];
  double m;
  std::uint64_t id;
};

// The sources a Forest is built from, read in place from the caller's particles: the forest copies
// what it keeps, so a caller whose particles already hold positions, masses and IDs makes no list of
// Sources (voters: 40 bytes a particle, each page zeroed by the kernel on one thread). Each field is a
// column of its own (`stride` bytes from one source's to the next): records (of), or arrays (columns).
class SourceView {
 public:
  // Every record of `items`, whose type has members x, m and id as Source has (standard layout).
  template <typename Record>
  static SourceView of(std::span<const Record> items) {
    static_assert(std::is_standard_layout_v<Record>, "fields found by offsetof");
    const auto* base = reinterpret_cast<const std::byte*>(items.data());
    return SourceView({base + offsetof(Record, x), sizeof(Record)}, {base + offsetof(Record, m), sizeof(Record)},
                      {base + offsetof(Record, id), sizeof(Record)}, items.size());
  }
  // Structure of arrays: position [n][3], mass [n], id [n] (as particles::ParticleSet holds them).
  static SourceView columns(std::span<const double> position, std::span<const double> mass,
                            std::span<const std::uint64_t> id) {
    if (position.size() != 3 * mass.size() || id.size() != mass.size())
      throw core::Error::internal("SourceView: {} positions, {} masses and {} IDs", position.size() / 3, mass.size(),
                                  id.size());
    return SourceView({reinterpret_cast<const std::byte*>(position.data()), 3 * sizeof(double)},
                      {reinterpret_cast<const std::byte*>(mass.data()), sizeof(double)},
                      {reinterpret_cast<const std::byte*>(id.data()), sizeof(std::uint64_t)}, mass.size());
  }
  std::size_t size() const { return size_; }
  const double* x(std::size_t i) const { return reinterpret_cast<const double*>(x_.at(i)); }
  double m(std::size_t i) const { return load<double>(m_.at(i)); }
  std::uint64_t id(std::size_t i) const { return load<std::uint64_t>(id_.at(i)); }

 private:
  struct Column {
    const std::byte* base;
    std::size_t stride;
    const std::byte* at(std::size_t i) const { return base + i * stride; }
  };
  SourceView(Column x, Column m, Column id, std::size_t size) : x_(x), m_(m), id_(id), size_(size) {}
  template <typename T>
  static T load(const std::byte* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  }
  Column x_, m_, id_;
  std::size_t size_;
};

class Forest {
 public:
  struct Params {
    double theta =
        0.5;  // opening angle: a node of size l at distance d (to its centre of mass) is used whole when l < theta d
    int leaf_size = 8;
    int threads = 1;  // the cubes' trees are built on up to this many threads (the same trees on any number)
  };
  // `box` is split into `cubes` per axis (periodic: box.periodic; a point outside an open box belongs to
  // the nearest edge cube). This rank holds the cubes whose x-extent meets held_x = [lo, hi] (wrapped in
  // a periodic box), and `sources` are every particle of those cubes, read only while the forest is
  // made: `copied` (optional) is called once the forest has its copy of them, before it builds the
  // trees, after which they are not read again (a caller can let its own go: voters). Not collective.
  Forest(const grid::GridGeometry& box, std::array<std::int64_t, 3> cubes, std::array<double, 2> held_x,
         SourceView sources, PairForce force, Params params, const std::function<void()>& copied = {});
  Forest(const grid::GridGeometry& box, std::array<std::int64_t, 3> cubes, std::array<double, 2> held_x,
         const std::vector<Source>& sources, PairForce force, Params params)
      : Forest(box, cubes, held_x, SourceView::of(std::span<const Source>(sources)), std::move(force), params) {}
  // The same, letting the sources go once the forest is made (a big set's 40 bytes a source).
  Forest(const grid::GridGeometry& box, std::array<std::int64_t, 3> cubes, std::array<double, 2> held_x,
         std::vector<Source>&& sources, PairForce force, Params params)
      : Forest(box, cubes, held_x, SourceView::of(std::span<const Source>(sources)), std::move(force), params) {
    core::release(sources);
  }
  // Whether the cube with x-index cx meets held_x (the rule the caller distributes particles by).
  static bool cube_meets(const grid::GridGeometry& box, double cube_width, std::int64_t cx,
                         std::array<double, 2> held_x);

  std::array<double, 3> cube_size() const { return cube_size_; }
  std::array<std::int64_t, 3> cube_of(const double x[3]) const;
  std::int64_t key(const std::array<std::int64_t, 3>& c) const {
    return grid::linear_index(c[0], c[1], c[2], cubes_[1], cubes_[2]);
  }

  // Open box only: the monopoles of all cubes, each from the one rank for which owns(cube key) is true,
  // and the pyramid over them. Needs a power-of-two number of cubes per axis. Collective.
  void share_cube_moments(const mpi::Comm& comm, const std::function<bool(std::int64_t)>& owns);

  // Potential and acceleration at x: periodic, the short-range part from every source within r_cut
  // (nearest images); open, the whole force (after share_cube_moments). Not collective.
  void accumulate(const double x[3], double& phi, double acc[3]) const;

  // The same at every source of the group (a tree node of at most kGroupSize sources) that holds source
  // `source` (an index into the constructor's `sources`): one walk collects the interactions valid for
  // the whole group (nodes far enough from every point of the box around its members), then each
  // member sums them, in single precision about the box's centre (PairForce::sum_scaled: the group's
  // reach sets the scale, so the same list gives the same bits). accumulate sums in double.
  // report(source index, its position, phi, acc) is called once per member, in tree order (the
  // position is the forest's copy, next to the other members': a caller's own may be far apart). The
  // result for a source depends only on its cube's tree, not on which member asked. Not collective.
  // `wanted` (optional, [source index]): only the members it marks are summed and reported, with the
  // same bits as without it (the list is the whole group's; each member sums it alone). voters needs
  // its candidates only, and a group at a search sphere's edge holds others.
  // 128: one walk serves more members, and the box they share makes every member's criterion stricter.
  // On the 2.1 M box of bench/ (voters, θ 0.7) 32 took 1.1× the time for 99.86 % of θ 0.3's voters, 128
  // 99.94 %, 512 1.2× for 99.98 % (bench/README.md, "The tree's groups").
  static constexpr std::uint32_t kGroupSize = 128;
  void accumulate_group(std::size_t source,
                        const std::function<void(std::size_t, const double*, double, const double*)>& report,
                        std::span<const std::uint8_t> wanted = {}) const;
  // Which group a source belongs to (an index of the tree's nodes): sources of one group are computed
  // together, so threads given distinct groups never write the same source.
  std::int64_t group_of(std::size_t source) const { return group_of_[position_of_[source]]; }
  // The forest's copy of a source's position [3] and mass (the caller may let its own go once the
  // forest is made).
  const double* position(std::size_t source) const { return &pos_[3 * std::size_t{position_of_[source]}]; }
  double mass(std::size_t source) const { return mass_[position_of_[source]]; }

 private:
  static constexpr std::int64_t kEmpty = -1, kNotHeld = -2;
  struct Node {
    double com[3];
    double mass;
    double centre[3];
    double half;                // half side of the node's cube
    std::uint32_t first_child;  // the children: consecutive nodes, octants with sources only, in octant order
    std::uint32_t begin, end;   // sources, in tree order
    std::uint8_t children;      // how many; 0 for a leaf
  };
  struct Moment {  // a cube or a pyramid node, for the open-box top tree
    double mass, com[3], size;
  };
  struct Builder;  // one cube's tree
  // The trees of the cubes `filled` (keys, ascending), cube c's sources being [first[c], first[c + 1])
  // of the sources in tree order.
  void build_trees(const std::vector<std::uint32_t>& first, const std::vector<std::uint32_t>& filled, int threads);
  using Interaction = PointMass;
  // Where the interactions are summed: the box around a group's members (a single point for
  // accumulate), and its centre, which places it among the cubes.
  struct Region {
    double lo[3], hi[3];
    double centre[3];
  };
  void mark_groups(std::int64_t node);
  Region region_of(const Node& group) const;
  // The interactions valid for every point of `region`: nodes far enough from all of it used whole,
  // within r_cut of it (short range), the rest opened.
  void interactions(const Region& region, std::vector<Interaction>& list) const;
  void list_group(std::int64_t root, const double shift[3], const Region& region, std::vector<Interaction>& list) const;
  void list_pyramid(int level, std::array<std::int64_t, 3> c, const Region& region,
                    std::vector<Interaction>& list) const;

  grid::GridGeometry box_;
  std::array<std::int64_t, 3> cubes_;
  std::array<double, 3> cube_size_{};
  PairForce force_;
  Params params_;
  // Raw: each written whole before it is read, most of them on the threads, which then also take
  // their pages' first touch.
  core::RawVector<double> pos_, mass_;          // sources in tree order
  core::RawVector<std::uint32_t> index_;        // tree order -> index into the constructor's sources
  core::RawVector<std::uint32_t> position_of_;  // the inverse
  core::RawVector<std::uint32_t> group_of_;     // tree order -> the group node (accumulate_group)
  core::PageVector<Node> nodes_;
  std::vector<std::int64_t> root_;            // per cube key: its tree's root node; kEmpty, or kNotHeld
  std::vector<std::vector<Moment>> pyramid_;  // level 0: cubes; level l: (cubes / 2^l)^3
};

// The potential and acceleration at each target by direct summation over all sources, O(n m): the
// reference for tests. Not collective.
void direct_sum(const std::vector<Source>& sources, const std::vector<std::array<double, 3>>& targets,
                const PairForce& force, std::vector<double>& phi, std::vector<std::array<double, 3>>& acc);

}  // namespace phew::gravity
