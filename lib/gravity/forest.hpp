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

#include <phew/core/raw_vector.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/mpi/comm.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace phew::gravity {

// A source as the pair sums see it: a particle, or a tree node's monopole.
struct PointMass {
  double x[3];
  double m;
};

// The softened pair interaction, optionally only its short-range part. Plummer softening: the potential
// of a point mass at distance r is -G m / sqrt(r^2 + eps^2) (times erfc(r / 2 r_s) for the short range,
// tabulated; zero beyond r_cut).
class PairForce {
 public:
  PairForce(double G, double softening, double r_split = 0);
  static constexpr int kTableSteps = 4096;     // linear interpolation in u = r / 2 r_s: error ~1e-8
  static constexpr double kCutInSplits = 4.5;  // r_cut = 4.5 r_s (Gadget's choice: erfc(2.25) = 1.5e-3)

  bool short_range() const { return r_split_ > 0; }
  double r_cut() const { return r_cut_; }  // infinity for the whole force
  // Adds the potential and acceleration at offset r (target - source) from mass m.
  void add(double m, const double r[3], double& phi, double acc[3]) const;
  // add() of each of the n sources in turn at two targets x[0] and x[1] (the same one twice is fine).
  // The targets share the instructions, one in each lane of a vector register: the square roots and
  // the division, whose unit bounds the pair sums, then serve two targets at once. The operations and
  // their order are add()'s, lane by lane, so the sums are the same bits as add()'s wherever the
  // compiler fuses no multiply-add into either (none in the default x86-64 build).
  void add_to_two(const PointMass* sources, std::size_t n, const double* const x[2], double phi[2],
                  double acc[2][3]) const;
  // The same at four targets: in the four lanes of an AVX register where the CPU has them (its square
  // roots and divisions then serve twice the lanes in the same time), else as two add_to_two. The same
  // bits either way: AVX's operations round as SSE2's, and no multiply-add is fused (AVX alone has none).
  void add_to_four(const PointMass* sources, std::size_t n, const double* const x[4], double phi[4],
                   double acc[4][3]) const;

 private:
  // add_to_four's AVX kernel: defined, and called, on x86-64 only.
  void add_to_four_avx(const PointMass* sources, std::size_t n, const double* const x[4], double phi[4],
                       double acc[4][3]) const;
  struct Factors {
    double phi, acc;  // erfc(u) and erfc(u) + 2u/sqrt(pi) exp(-u^2), u = r / 2 r_s
  };
  double G_, eps2_, r_split_, r_cut_, r_cut2_;
  double per_r_ = 0;            // table entries per unit of r
  std::vector<Factors> table_;  // empty for the whole force
};

inline void PairForce::add(double m, const double r[3], double& phi, double acc[3]) const {
  const double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
  if (r2 > r_cut2_) return;
  const double q2 = r2 + eps2_;
  if (q2 <= 0) return;  // a target on an unsoftened source: no self-force
  const double inv = 1 / std::sqrt(q2);
  double fp = 1, fa = 1;
  if (!table_.empty()) {
    const double t = std::sqrt(r2) * per_r_;
    const auto i = std::min(static_cast<int>(t), kTableSteps);
    const double f = t - i;
    const Factors& lo = table_[static_cast<std::size_t>(i)];
    const Factors& hi = table_[static_cast<std::size_t>(i) + 1];
    fp = lo.phi + (hi.phi - lo.phi) * f;
    fa = lo.acc + (hi.acc - lo.acc) * f;
  }
  const double gm = G_ * m * inv;
  phi -= gm * fp;
  const double s = gm * inv * inv * fa;
  for (int d = 0; d < 3; ++d) acc[d] -= s * r[d];
}

struct Source {
  double x[3];
  double m;
  std::uint64_t id;
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
  // a periodic box), and `sources` are every particle of those cubes. Not collective.
  Forest(const grid::GridGeometry& box, std::array<std::int64_t, 3> cubes, std::array<double, 2> held_x,
         std::vector<Source> sources, PairForce force, Params params);
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
  // member sums them.
  // report(source index, phi, acc) is called once per member, in tree order. The result for a source
  // depends only on its cube's tree, not on which member asked. Not collective.
  // `wanted` (optional, [source index]): only the members it marks are summed and reported, with the
  // same bits as without it (the list is the whole group's; each member sums it alone). voters needs
  // its candidates only, and a group at a search sphere's edge holds others.
  // 128: one walk serves more members, and the box they share makes every member's criterion stricter.
  // On the 2.1 M box of bench/ (voters, θ 0.7) 32 took 1.1× the time for 99.86 % of θ 0.3's voters, 128
  // 99.94 %, 512 1.2× for 99.98 % (bench/README.md, "The tree's groups").
  static constexpr std::uint32_t kGroupSize = 128;
  void accumulate_group(std::size_t source, const std::function<void(std::size_t, double, const double*)>& report,
                        std::span<const std::uint8_t> wanted = {}) const;
  // Which group a source belongs to (an index of the tree's nodes): sources of one group are computed
  // together, so threads given distinct groups never write the same source.
  std::int64_t group_of(std::size_t source) const { return group_of_[position_of_[source]]; }

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
  std::vector<double> pos_, mass_;          // sources in tree order
  std::vector<std::uint32_t> index_;        // tree order -> index into the constructor's sources
  std::vector<std::uint32_t> position_of_;  // the inverse
  std::vector<std::uint32_t> group_of_;     // tree order -> the group node (accumulate_group)
  core::PageVector<Node> nodes_;
  std::vector<std::int64_t> root_;            // per cube key: its tree's root node; kEmpty, or kNotHeld
  std::vector<std::vector<Moment>> pyramid_;  // level 0: cubes; level l: (cubes / 2^l)^3
};

// The potential and acceleration at each target by direct summation over all sources, O(n m): the
// reference for tests. Not collective.
void direct_sum(const std::vector<Source>& sources, const std::vector<std::array<double, 3>>& targets,
                const PairForce& force, std::vector<double>& phi, std::vector<std::array<double, 3>>& acc);

}  // namespace phew::gravity
