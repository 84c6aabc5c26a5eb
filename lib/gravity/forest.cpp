#include <phew/gravity/forest.hpp>

#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/threads.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace phew::gravity {
namespace {

constexpr int kMaxDepth = 60;  // coincident particles end in a leaf, however many

}  // namespace

bool Forest::cube_meets(const grid::GridGeometry& box, double cube_width, std::int64_t cx,
                        std::array<double, 2> held_x) {
  const double lo = box.origin[0] + static_cast<double>(cx) * cube_width, hi = lo + cube_width;
  if (!box.periodic) return hi >= held_x[0] && lo <= held_x[1];
  if (held_x[1] - held_x[0] >= box.extent[0]) return true;
  // Shift the cube by whole boxes next to the interval's start.
  const double shift = std::floor((held_x[0] - lo) / box.extent[0]) * box.extent[0];
  for (int k = 0; k <= 2; ++k) {
    const double l = lo + shift + k * box.extent[0];
    if (l + cube_width >= held_x[0] && l <= held_x[1]) return true;
  }
  return false;
}

// Builds one cube's tree in place over its sources [begin, end) of pos_, mass_ and index_ (stable
// partitions into octants, which keep the ID order within each), with its own partitioning space.
struct Forest::Builder {
  Builder(Forest& f, core::PageVector<Node>& out) : forest(f), nodes(out) {}
  // Appends the tree of sources [begin, end) to the nodes, the root first, a node's children (the
  // octants with sources) consecutive, in octant order; returns the root's index among them.
  std::int64_t tree(std::uint32_t begin, std::uint32_t end) {
    if (scratch_mass.size() < end - begin) {  // partitioning space for the largest cube so far
      scratch_pos.resize(3 * (end - begin));
      scratch_mass.resize(end - begin);
      scratch_index.resize(end - begin);
      scratch_octant.resize(end - begin);
    }
    const core::RawVector<double>& pos = forest.pos_;
    std::array<double, 3> lo{}, hi{}, centre{};
    double half = 0;
    for (std::size_t d = 0; d < 3; ++d) {
      lo[d] = hi[d] = pos[3 * begin + d];
      for (std::size_t i = begin; i < end; ++i) {
        lo[d] = std::min(lo[d], pos[3 * i + d]);
        hi[d] = std::max(hi[d], pos[3 * i + d]);
      }
      centre[d] = 0.5 * (lo[d] + hi[d]);
      half = std::max(half, 0.5 * (hi[d] - lo[d]));
    }
    const auto root = static_cast<std::int64_t>(nodes.size());
    nodes.emplace_back();
    build(root, begin, end, centre, half * (1 + 1e-12) + 1e-300, 0);
    return root;
  }
  void build(std::int64_t slot, std::uint32_t begin, std::uint32_t end, std::array<double, 3> centre, double half,
             int depth);

  Forest& forest;
  core::PageVector<Node>& nodes;
  std::vector<double> scratch_pos, scratch_mass;
  std::vector<std::uint32_t> scratch_index;
  std::vector<std::uint8_t> scratch_octant;
};

Forest::Forest(const grid::GridGeometry& box, std::array<std::int64_t, 3> cubes, std::array<double, 2> held_x,
               SourceView sources, PairForce force, Params params, const std::function<void()>& copied)
    : box_(box), cubes_(cubes), force_(std::move(force)), params_(params) {
  for (std::size_t d = 0; d < 3; ++d) {
    if (cubes_[d] < 1 || (box.periodic && cubes_[d] < 3))
      throw core::Error::internal("a forest needs at least 3 cubes per axis in a periodic box, 1 otherwise");
    cube_size_[d] = box.extent[d] / static_cast<double>(cubes_[d]);
    if (box.periodic && force_.r_cut() > cube_size_[d])
      throw core::Error::internal("the cut-off radius {} is wider than a cube ({})", force_.r_cut(), cube_size_[d]);
  }
  if (sources.size() >= std::numeric_limits<std::uint32_t>::max())
    throw core::Error::input("{} particles on one rank: too many for its gravity trees (run on more ranks)",
                             sources.size());
  const auto n = static_cast<std::uint32_t>(sources.size());
  const auto n_cubes = static_cast<std::size_t>(cubes_[0] * cubes_[1] * cubes_[2]);
  const int threads = std::max(params_.threads, 1);
  // Sources by cube (a counting sort), then by particle ID within each cube: each cube's tree is then
  // independent of where it was built.
  std::vector<std::uint32_t> cube(n);
  core::parallel_for(threads, n, 1 << 16, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) cube[i] = static_cast<std::uint32_t>(key(cube_of(sources.x(i))));
  });
  std::vector<std::uint32_t> first(n_cubes + 1, 0);
  for (const std::uint32_t c : cube) ++first[c + 1];
  for (std::size_t c = 0; c < n_cubes; ++c) first[c + 1] += first[c];
  index_.resize(n);
  {
    std::vector<std::uint32_t> at(first.begin(), first.end() - 1);
    for (std::uint32_t i = 0; i < n; ++i) index_[at[cube[i]]++] = i;
  }
  core::release(cube);
  root_.assign(n_cubes, kNotHeld);
  for (std::int64_t cx = 0; cx < cubes_[0]; ++cx)
    if (cube_meets(box_, cube_size_[0], cx, held_x))
      std::fill_n(root_.begin() + cx * cubes_[1] * cubes_[2], cubes_[1] * cubes_[2], kEmpty);
  std::vector<std::uint32_t> filled;  // the cubes with sources, in key order
  for (std::size_t c = 0; c < n_cubes; ++c)
    if (first[c + 1] > first[c]) {
      if (root_[c] == kNotHeld)
        throw core::Error::internal("Forest: particles in a cube outside the held range [{}, {}]", held_x[0],
                                    held_x[1]);
      filled.push_back(static_cast<std::uint32_t>(c));
    }

  // The sources in that order, each cube's sorted by ID on the threads.
  pos_.resize(3 * static_cast<std::size_t>(n));
  mass_.resize(n);
  core::parallel_for(threads, filled.size(), 1, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t f = b; f < e; ++f) {
      const std::uint32_t lo_i = first[filled[f]], hi_i = first[filled[f] + 1];
      std::sort(index_.begin() + lo_i, index_.begin() + hi_i, [&](std::uint32_t p, std::uint32_t q) {
        const std::uint64_t id_p = sources.id(p), id_q = sources.id(q);
        return id_p != id_q ? id_p < id_q : p < q;
      });
      for (std::uint32_t k = lo_i; k < hi_i; ++k) {
        std::copy_n(sources.x(index_[k]), 3, &pos_[3 * static_cast<std::size_t>(k)]);
        mass_[k] = sources.m(index_[k]);
      }
    }
  });
  if (copied) copied();
  build_trees(first, filled, threads);
  position_of_.resize(n);
  group_of_.resize(n);
  core::parallel_for(threads, filled.size(), 16, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t f = b; f < e; ++f) {
      for (std::uint32_t k = first[filled[f]]; k < first[filled[f] + 1]; ++k) position_of_[index_[k]] = k;
      mark_groups(root_[filled[f]]);
    }
  });
}

// Each thread builds a run of consecutive cubes holding about equal numbers of sources, its nodes
// numbered from the run's first; the runs' nodes then follow one another in key order: the same nodes
// as one tree after another, on any number of threads (and never twice in memory whole).
void Forest::build_trees(const std::vector<std::uint32_t>& first, const std::vector<std::uint32_t>& filled,
                         int threads) {
  const std::size_t runs = std::min<std::size_t>(static_cast<std::size_t>(threads), filled.size());
  std::vector<std::size_t> run_first(runs + 1, filled.size());  // into `filled`
  for (std::size_t r = 0; r < runs; ++r)
    run_first[r] = static_cast<std::size_t>(
        std::lower_bound(filled.begin(), filled.end(), static_cast<std::uint64_t>(index_.size()) * r / runs,
                         [&](std::uint32_t c, std::uint64_t target) { return first[c] < target; }) -
        filled.begin());
  std::vector<core::PageVector<Node>> run_nodes(runs);
  std::vector<std::int64_t> root_in_run(filled.size());
  core::parallel_for(static_cast<int>(runs), runs, 1, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t r = b; r < e; ++r) {
      // Room for more nodes than a tree of leaves of 8 usually needs (0.45 a source on the clustered
      // bench box, 0.63 with the empty octants it once kept), mapped but not touched: a run grows into
      // it without the doubling's copy, which held the old and new nodes at once and was voters' peak.
      // The first run's room is for every run's nodes: the others join it in place.
      const std::size_t sources = r == 0 ? index_.size()
                                  : run_first[r] == run_first[r + 1]
                                      ? 0
                                      : first[filled[run_first[r + 1] - 1] + 1] - first[filled[run_first[r]]];
      run_nodes[r].reserve(64 + 3 * sources / 4);
      Builder builder(*this, run_nodes[r]);
      for (std::size_t f = run_first[r]; f < run_first[r + 1]; ++f)
        root_in_run[f] = builder.tree(first[filled[f]], first[filled[f] + 1]);
    }
  });
  std::size_t total = 0;
  for (const auto& v : run_nodes) total += v.size();
  // The first run's nodes are numbered from 0 already: they become the forest's nodes as they are (one
  // thread copies nothing), and every later run's follow, their children renumbered.
  if (total >= std::numeric_limits<std::uint32_t>::max())
    throw core::Error::input("{} gravity tree nodes on one rank: too many (run on more ranks)", total);
  if (runs > 0) nodes_ = std::move(run_nodes[0]);
  nodes_.reserve(total);
  for (std::size_t r = 0; r < runs; ++r) {
    const auto shift = static_cast<std::uint32_t>(r == 0 ? 0 : nodes_.size());
    if (r > 0) {
      for (Node node : run_nodes[r]) {
        if (node.children > 0) node.first_child += shift;
        nodes_.push_back(node);
      }
      core::release(run_nodes[r]);
    }
    for (std::size_t f = run_first[r]; f < run_first[r + 1]; ++f) root_[filled[f]] = root_in_run[f] + shift;
  }
}

std::array<std::int64_t, 3> Forest::cube_of(const double x[3]) const {
  std::array<std::int64_t, 3> c{};
  for (std::size_t d = 0; d < 3; ++d) {
    const auto i = static_cast<std::int64_t>(std::floor((x[d] - box_.origin[d]) / cube_size_[d]));
    c[d] = grid::fold_index(i, cubes_[d], box_.periodic);
  }
  return c;
}

void Forest::Builder::build(std::int64_t slot, std::uint32_t begin, std::uint32_t end, std::array<double, 3> centre,
                            double half, int depth) {
  core::RawVector<double>& pos = forest.pos_;
  core::RawVector<double>& mass = forest.mass_;
  core::RawVector<std::uint32_t>& index = forest.index_;
  Node node{};
  // Monopole, summed in the sources' order.
  double m = 0, c[3] = {0, 0, 0};
  for (std::uint32_t i = begin; i < end; ++i) {
    m += mass[i];
    for (std::size_t d = 0; d < 3; ++d) c[d] += mass[i] * pos[3 * i + d];
  }
  node.mass = m;
  for (std::size_t d = 0; d < 3; ++d) {
    node.com[d] = m > 0 ? c[d] / m : centre[d];
    node.centre[d] = centre[d];
  }
  node.half = half;
  node.first_child = 0;
  node.children = 0;
  node.begin = begin;
  node.end = end;
  if (static_cast<int>(end - begin) <= forest.params_.leaf_size || depth >= kMaxDepth) {
    nodes[static_cast<std::size_t>(slot)] = node;
    return;
  }
  // Stable partition into octants (keeps the ID order within each).
  // The scratch arrays are free again once copied back, before the children are built.
  std::array<std::uint32_t, 9> start{};
  std::vector<std::uint8_t>& octant = scratch_octant;
  for (std::uint32_t i = begin; i < end; ++i) {
    int o = 0;
    for (std::size_t d = 0; d < 3; ++d)
      if (pos[3 * i + d] >= centre[d]) o |= 1 << d;
    octant[i - begin] = static_cast<std::uint8_t>(o);
    ++start[static_cast<std::size_t>(o) + 1];
  }
  for (std::size_t o = 1; o < 9; ++o) start[o] += start[o - 1];
  std::vector<double>&p = scratch_pos, &w = scratch_mass;
  std::vector<std::uint32_t>& ix = scratch_index;
  std::array<std::uint32_t, 8> at{};
  std::copy_n(start.begin(), 8, at.begin());
  for (std::uint32_t i = begin; i < end; ++i) {
    const std::uint32_t k = at[octant[i - begin]]++;
    std::copy_n(&pos[3 * i], 3, &p[3 * k]);
    w[k] = mass[i];
    ix[k] = index[i];
  }
  const std::uint32_t n = end - begin;
  std::copy_n(p.begin(), 3 * n, pos.begin() + 3 * static_cast<std::ptrdiff_t>(begin));
  std::copy_n(w.begin(), n, mass.begin() + begin);
  std::copy_n(ix.begin(), n, index.begin() + begin);

  // The children with sources are consecutive slots in octant order, reserved before any grandchild
  // is added (an empty octant would be a node of no mass, which no walk uses).
  if (nodes.size() + 8 >= std::numeric_limits<std::uint32_t>::max())
    throw core::Error::input("more than {} gravity tree nodes in one thread's cubes: too many (run on more ranks)",
                             nodes.size());
  node.first_child = static_cast<std::uint32_t>(nodes.size());
  for (std::size_t o = 0; o < 8; ++o)
    if (start[o + 1] > start[o]) ++node.children;
  nodes[static_cast<std::size_t>(slot)] = node;
  nodes.resize(nodes.size() + node.children);
  std::int64_t child = node.first_child;
  for (std::uint32_t o = 0; o < 8; ++o) {
    if (start[o + 1] == start[o]) continue;
    std::array<double, 3> cc{};
    for (std::size_t d = 0; d < 3; ++d) cc[d] = centre[d] + ((o >> d) & 1 ? 0.5 * half : -0.5 * half);
    build(child++, begin + start[o], begin + start[o + 1], cc, 0.5 * half, depth + 1);
  }
}

void Forest::mark_groups(std::int64_t n) {
  const Node& node = nodes_[static_cast<std::size_t>(n)];
  if (node.children == 0 || node.end - node.begin <= kGroupSize) {
    std::fill(group_of_.begin() + node.begin, group_of_.begin() + node.end, static_cast<std::uint32_t>(n));
    return;
  }
  for (std::uint32_t c = 0; c < node.children; ++c) mark_groups(std::int64_t{node.first_child} + c);
}

namespace {

// Nearest distance^2 from the cube centre +- half (a point when half = 0) to the box [lo, hi].
double box_distance2(const double centre[3], double half, const double lo[3], const double hi[3]) {
  double b2 = 0;
  for (std::size_t d = 0; d < 3; ++d) {
    const double g = std::max(lo[d] - (centre[d] + half), (centre[d] - half) - hi[d]);
    if (g > 0) b2 += g * g;
  }
  return b2;
}

}  // namespace

Forest::Region Forest::region_of(const Node& group) const {
  Region r{};
  for (std::size_t d = 0; d < 3; ++d) r.lo[d] = r.hi[d] = pos_[3 * group.begin + d];
  for (std::uint32_t i = group.begin + 1; i < group.end; ++i)
    for (std::size_t d = 0; d < 3; ++d) {
      r.lo[d] = std::min(r.lo[d], pos_[3 * i + d]);
      r.hi[d] = std::max(r.hi[d], pos_[3 * i + d]);
    }
  // The centre of the members' box, which lies in their cube; the node's own centre may not (its cube
  // reaches past the particles' box, and so past the forest's cube along a thin side).
  for (std::size_t d = 0; d < 3; ++d) r.centre[d] = 0.5 * (r.lo[d] + r.hi[d]);
  return r;
}

void Forest::list_group(std::int64_t root, const double shift[3], const Region& region,
                        std::vector<Interaction>& list) const {
  const double theta2 = params_.theta * params_.theta;
  const bool cut = force_.short_range();
  std::array<std::int64_t, 8 * kMaxDepth + 8> stack;
  std::size_t top = 0;
  stack[top++] = root;
  while (top > 0) {
    const Node& node = nodes_[static_cast<std::size_t>(stack[--top])];
    if (node.mass == 0) continue;
    const double c[3] = {node.centre[0] - shift[0], node.centre[1] - shift[1], node.centre[2] - shift[2]};
    // Skip a node with no point within r_cut of any member (the gap between its cube and their box).
    if (cut && box_distance2(c, node.half, region.lo, region.hi) > force_.r_cut() * force_.r_cut()) continue;
    // Used whole when it is far enough from every point of the group, a leaf as an inner node.
    const double com[3] = {node.com[0] - shift[0], node.com[1] - shift[1], node.com[2] - shift[2]};
    const double size = 2 * node.half;
    const bool leaf = node.children == 0;
    if ((!leaf || node.end - node.begin > 1) && size * size < theta2 * box_distance2(com, 0, region.lo, region.hi)) {
      list.push_back({{com[0], com[1], com[2]}, node.mass});
    } else if (leaf) {
      for (std::uint32_t i = node.begin; i < node.end; ++i)
        list.push_back({{pos_[3 * i] - shift[0], pos_[3 * i + 1] - shift[1], pos_[3 * i + 2] - shift[2]}, mass_[i]});
    } else {
      for (std::int64_t k = std::int64_t{node.first_child} + node.children - 1; k >= node.first_child; --k)
        if (nodes_[static_cast<std::size_t>(k)].mass != 0) stack[top++] = k;  // massless sources: never pushed
    }
  }
}

void Forest::list_pyramid(int level, std::array<std::int64_t, 3> c, const Region& region,
                          std::vector<Interaction>& list) const {
  const std::int64_t side = cubes_[0] >> level;
  const Moment& m = pyramid_[static_cast<std::size_t>(level)]
                            [static_cast<std::size_t>(grid::linear_index(c[0], c[1], c[2], side, side))];
  if (m.mass == 0) return;
  if (m.size * m.size < params_.theta * params_.theta * box_distance2(m.com, 0, region.lo, region.hi)) {
    list.push_back({{m.com[0], m.com[1], m.com[2]}, m.mass});
    return;
  }
  if (level > 0) {
    for (int o = 0; o < 8; ++o)
      list_pyramid(level - 1, {2 * c[0] + (o & 1), 2 * c[1] + ((o >> 1) & 1), 2 * c[2] + ((o >> 2) & 1)}, region, list);
    return;
  }
  const std::int64_t root = root_[static_cast<std::size_t>(key(c))];
  if (root < 0)
    throw core::Error::internal("Forest: cube ({}, {}, {}) must be opened but is not held", c[0], c[1], c[2]);
  const double no_shift[3] = {0, 0, 0};
  list_group(root, no_shift, region, list);
}

void Forest::interactions(const Region& region, std::vector<Interaction>& list) const {
  if (!box_.periodic) {
    if (pyramid_.empty()) throw core::Error::internal("Forest: an open box needs share_cube_moments first");
    list_pyramid(static_cast<int>(pyramid_.size()) - 1, {0, 0, 0}, region, list);
    return;
  }
  // The 27 cubes around the group's cube hold every source within r_cut (a cube is at least r_cut
  // wide); each cube's sources are moved by whole boxes next to the group.
  const auto t = cube_of(region.centre);
  for (std::int64_t a = -1; a <= 1; ++a)
    for (std::int64_t b = -1; b <= 1; ++b)
      for (std::int64_t e = -1; e <= 1; ++e) {
        const std::array<std::int64_t, 3> q{grid::fold_index(t[0] + a, cubes_[0], true),
                                            grid::fold_index(t[1] + b, cubes_[1], true),
                                            grid::fold_index(t[2] + e, cubes_[2], true)};
        const std::int64_t root = root_[static_cast<std::size_t>(key(q))];
        if (root == kNotHeld)
          throw core::Error::internal("Forest: cube ({}, {}, {}) is needed but not held", q[0], q[1], q[2]);
        if (root == kEmpty) continue;
        // A cube folded across the box's edge is moved by exactly one box: q = t + offset - shift / extent.
        const std::int64_t unfolded[3] = {t[0] + a, t[1] + b, t[2] + e};
        double shift[3];
        for (std::size_t d = 0; d < 3; ++d)
          shift[d] = q[d] == unfolded[d] ? 0.0 : q[d] > unfolded[d] ? box_.extent[d] : -box_.extent[d];
        list_group(root, shift, region, list);
      }
}

void Forest::accumulate(const double x[3], double& phi, double acc[3]) const {
  Region point{};  // a group of one point
  for (std::size_t d = 0; d < 3; ++d) point.lo[d] = point.hi[d] = point.centre[d] = x[d];
  std::vector<Interaction> list;
  interactions(point, list);
  const double* const both[2] = {x, x};
  double p[2] = {phi, phi}, a[2][3] = {{acc[0], acc[1], acc[2]}, {acc[0], acc[1], acc[2]}};
  force_.add_to_two(list.data(), list.size(), both, p, a);
  phi = p[0];
  std::copy_n(a[0], 3, acc);
}

void Forest::accumulate_group(std::size_t source,
                              const std::function<void(std::size_t, const double*, double, const double*)>& report,
                              std::span<const std::uint8_t> wanted) const {
  if (!wanted.empty() && wanted.size() != index_.size())
    throw core::Error::internal("Forest: a mask of {} wanted sources for {} sources", wanted.size(), index_.size());
  const Node& group = nodes_[static_cast<std::size_t>(group_of_[position_of_[source]])];
  // A thread's lists, kept from group to group: a group's list grows to hundreds of entries, and a
  // fresh vector would reallocate its way there every time.
  thread_local std::vector<Interaction> list;
  thread_local std::vector<std::uint32_t> members;
  thread_local std::vector<ScaledSource> scaled;
  list.clear();
  members.clear();
  for (std::uint32_t i = group.begin; i < group.end; ++i)
    if (wanted.empty() || wanted[index_[i]] != 0) members.push_back(i);
  if (members.empty()) return;
  // The box around all the members, wanted or not, not the node's cube: every member is inside it, so
  // every member's own distance to a node used whole is at least the one tested, and fewer nodes are
  // opened. The same list whichever members are wanted, so the same bits.
  const Region region = region_of(group);
  interactions(region, list);
  // The list and the members about the region's centre, in single precision (PairForce::sum_scaled),
  // scaled by the group's own powers of two.
  double reach = force_.softening(), heaviest = 0;
  for (const Interaction& s : list) {
    heaviest = std::max(heaviest, s.m);
    for (std::size_t d = 0; d < 3; ++d) reach = std::max(reach, std::abs(s.x[d] - region.centre[d]));
  }
  for (std::size_t d = 0; d < 3; ++d)  // every member, wanted or not: the scale, and so the bits, are the group's
    reach = std::max({reach, region.hi[d] - region.centre[d], region.centre[d] - region.lo[d]});
  const auto power_of_two_above = [](double v) { return v > 0 ? std::ldexp(1.0, std::ilogb(v) + 1) : 1.0; };
  const GroupScale scale{power_of_two_above(reach), power_of_two_above(heaviest)};
  const double per_length = 1 / scale.length, per_mass = 1 / scale.mass;  // exact: powers of two
  scaled.resize(list.size());
  for (std::size_t k = 0; k < list.size(); ++k) {
    for (std::size_t d = 0; d < 3; ++d)
      scaled[k].x[d] = static_cast<float>((list[k].x[d] - region.centre[d]) * per_length);
    scaled[k].m = static_cast<float>(list[k].m * per_mass);
  }
  // Members eight at a time; the last member fills the lanes a group's last eight leave empty (each lane
  // sums alone: the lanes do not change each other's bits).
  constexpr std::size_t kLanes = PairForce::kLanes;
  const std::size_t n = members.size();
  for (std::size_t i = 0; i < n; i += kLanes) {
    float t[3][kLanes];
    for (std::size_t k = 0; k < kLanes; ++k) {
      const std::size_t at = 3 * static_cast<std::size_t>(members[std::min(i + k, n - 1)]);
      for (std::size_t d = 0; d < 3; ++d) t[d][k] = static_cast<float>((pos_[at + d] - region.centre[d]) * per_length);
    }
    double phi[kLanes], acc[kLanes][3];
    force_.sum_scaled(scaled.data(), scaled.size(), t, scale, phi, acc);
    for (std::size_t k = 0; k < kLanes && i + k < n; ++k)
      report(index_[members[i + k]], &pos_[3 * static_cast<std::size_t>(members[i + k])], phi[k], acc[k]);
  }
}

void Forest::share_cube_moments(const mpi::Comm& comm, const std::function<bool(std::int64_t)>& owns) {
  struct Record {
    std::int64_t key;
    Moment m;
  };
  std::vector<Record> mine;
  for (std::size_t k = 0; k < root_.size(); ++k) {
    if (root_[k] < 0 || !owns(static_cast<std::int64_t>(k))) continue;
    const Node& n = nodes_[static_cast<std::size_t>(root_[k])];
    mine.push_back({static_cast<std::int64_t>(k), {n.mass, {n.com[0], n.com[1], n.com[2]}, 2 * n.half}});
  }
  const std::vector<Record> all = comm.all_gatherv<Record>(mine);
  for (std::int64_t c : cubes_)
    if (c != cubes_[0] || (c & (c - 1)) != 0)
      throw core::Error::internal("the open-box top tree needs a power-of-two number of cubes, the same on every axis");
  pyramid_.assign(1, std::vector<Moment>(root_.size(), Moment{0, {0, 0, 0}, 0}));
  for (const Record& r : all) pyramid_[0][static_cast<std::size_t>(r.key)] = r.m;
  // Coarser levels: the 8 children summed in a fixed order; a node's size is its region's side.
  for (std::int64_t side = cubes_[0] / 2, level = 1; side >= 1; side /= 2, ++level) {
    std::vector<Moment> up(static_cast<std::size_t>(side * side * side));
    const std::vector<Moment>& down = pyramid_.back();
    const std::int64_t below = 2 * side;
    for (std::int64_t i = 0; i < side; ++i)
      for (std::int64_t j = 0; j < side; ++j)
        for (std::int64_t k = 0; k < side; ++k) {
          Moment m{0, {0, 0, 0}, 0};
          for (int o = 0; o < 8; ++o) {
            const Moment& c = down[static_cast<std::size_t>(
                ((2 * i + (o & 1)) * below + 2 * j + ((o >> 1) & 1)) * below + 2 * k + ((o >> 2) & 1))];
            m.mass += c.mass;
            for (std::size_t d = 0; d < 3; ++d) m.com[d] += c.mass * c.com[d];
          }
          for (std::size_t d = 0; d < 3; ++d) m.com[d] = m.mass > 0 ? m.com[d] / m.mass : 0;
          m.size = static_cast<double>(cubes_[0] / side) * std::max({cube_size_[0], cube_size_[1], cube_size_[2]});
          up[static_cast<std::size_t>(grid::linear_index(i, j, k, side, side))] = m;
        }
    pyramid_.push_back(std::move(up));
    (void)level;
  }
}

void direct_sum(const std::vector<Source>& sources, const std::vector<std::array<double, 3>>& targets,
                const PairForce& force, std::vector<double>& phi, std::vector<std::array<double, 3>>& acc) {
  phi.assign(targets.size(), 0.0);
  acc.assign(targets.size(), {0, 0, 0});
  for (std::size_t t = 0; t < targets.size(); ++t)
    for (const Source& s : sources) {
      const double r[3] = {targets[t][0] - s.x[0], targets[t][1] - s.x[1], targets[t][2] - s.x[2]};
      force.add(s.m, r, phi[t], acc[t].data());
    }
}

}  // namespace phew::gravity
