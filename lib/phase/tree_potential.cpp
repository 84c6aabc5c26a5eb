#include "phase/tree_potential.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

namespace phew {
namespace {

struct Node {
  std::array<double, 3> centre{};  // geometric centre of the cube
  double half = 0;                 // half side
  std::array<double, 3> com{};     // centre of mass
  double mass = 0;
  int first_child = -1;            // children are 8 consecutive nodes; -1 for a leaf
  std::uint32_t begin = 0, end = 0;  // sources of a leaf (indices into the permutation)
};

class Octree {
 public:
  Octree(const std::vector<double>& pos, const std::vector<double>& mass, int leaf_size)
      : pos_(pos), mass_(mass), leaf_size_(leaf_size) {
    const std::size_t m = mass.size();
    order_.resize(m);
    std::iota(order_.begin(), order_.end(), 0u);
    std::array<double, 3> lo{}, hi{};
    for (std::size_t d = 0; d < 3; ++d) {
      lo[d] = hi[d] = m ? pos[d] : 0;
      for (std::size_t i = 0; i < m; ++i) {
        lo[d] = std::min(lo[d], pos[3 * i + d]);
        hi[d] = std::max(hi[d], pos[3 * i + d]);
      }
    }
    Node root;
    for (std::size_t d = 0; d < 3; ++d) {
      root.centre[d] = 0.5 * (lo[d] + hi[d]);
      root.half = std::max(root.half, 0.5 * (hi[d] - lo[d]));
    }
    root.half = root.half * (1 + 1e-12) + 1e-300;
    root.begin = 0;
    root.end = static_cast<std::uint32_t>(m);
    nodes_.push_back(root);
    build(0, 0);
  }

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<std::uint32_t>& order() const { return order_; }

 private:
  void build(int n, int depth) {
    Node node = nodes_[static_cast<std::size_t>(n)];
    // Monopole of the node, summed in source order.
    double m = 0, c[3] = {0, 0, 0};
    for (std::uint32_t k = node.begin; k < node.end; ++k) {
      const std::uint32_t i = order_[k];
      m += mass_[i];
      for (std::size_t d = 0; d < 3; ++d) c[d] += mass_[i] * pos_[3 * i + d];
    }
    node.mass = m;
    for (std::size_t d = 0; d < 3; ++d) node.com[d] = m > 0 ? c[d] / m : node.centre[d];
    if (static_cast<int>(node.end - node.begin) <= leaf_size_ || depth > 60) {
      nodes_[static_cast<std::size_t>(n)] = node;
      return;
    }
    // Partition the node's sources into octants (stable, so the order stays deterministic).
    std::array<std::vector<std::uint32_t>, 8> oct;
    for (std::uint32_t k = node.begin; k < node.end; ++k) {
      const std::uint32_t i = order_[k];
      int o = 0;
      for (std::size_t d = 0; d < 3; ++d)
        if (pos_[3 * i + d] >= node.centre[d]) o |= 1 << d;
      oct[static_cast<std::size_t>(o)].push_back(i);
    }
    node.first_child = static_cast<int>(nodes_.size());
    std::uint32_t at = node.begin;
    for (int o = 0; o < 8; ++o) {
      Node child;
      child.half = 0.5 * node.half;
      for (std::size_t d = 0; d < 3; ++d) child.centre[d] = node.centre[d] + ((o >> d) & 1 ? child.half : -child.half);
      child.begin = at;
      for (std::uint32_t i : oct[static_cast<std::size_t>(o)]) order_[at++] = i;
      child.end = at;
      nodes_.push_back(child);
    }
    nodes_[static_cast<std::size_t>(n)] = node;
    for (int o = 0; o < 8; ++o) build(node.first_child + o, depth + 1);
  }

  const std::vector<double>& pos_;
  const std::vector<double>& mass_;
  int leaf_size_;
  std::vector<std::uint32_t> order_;
  std::vector<Node> nodes_;
};

// Softened point-mass contribution of mass m at offset r (target - source).
inline void add_point(double m, const double r[3], double eps2, double G, double& phi, double acc[3]) {
  const double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + eps2;
  if (r2 <= 0) return;
  const double inv = 1.0 / std::sqrt(r2);
  phi -= G * m * inv;
  const double f = G * m * inv * inv * inv;
  for (int d = 0; d < 3; ++d) acc[d] -= f * r[d];
}

}  // namespace

PotentialAt tree_potential(const std::vector<double>& spos, const std::vector<double>& smass,
                           const std::vector<double>& tpos, const TreeParams& p) {
  const Octree tree(spos, smass, p.leaf_size);
  const auto& nodes = tree.nodes();
  const auto& order = tree.order();
  const std::size_t n = tpos.size() / 3;
  PotentialAt out{std::vector<double>(n, 0.0), std::vector<double>(3 * n, 0.0)};
  const double eps2 = p.softening * p.softening, theta2 = p.theta * p.theta;
  std::vector<int> stack;
  for (std::size_t t = 0; t < n; ++t) {
    const double* x = &tpos[3 * t];
    double phi = 0, acc[3] = {0, 0, 0};
    stack.assign(1, 0);
    while (!stack.empty()) {
      const Node& node = nodes[static_cast<std::size_t>(stack.back())];
      stack.pop_back();
      if (node.mass == 0) continue;
      double r[3], d2 = 0;
      for (int d = 0; d < 3; ++d) {
        r[d] = x[d] - node.com[d];
        d2 += r[d] * r[d];
      }
      const double size = 2 * node.half;
      if (node.first_child >= 0 && size * size >= theta2 * d2) {
        for (int o = 7; o >= 0; --o) stack.push_back(node.first_child + o);
      } else if (node.first_child < 0) {
        for (std::uint32_t k = node.begin; k < node.end; ++k) {
          const std::uint32_t i = order[k];
          double ri[3];
          for (std::size_t d = 0; d < 3; ++d) ri[d] = x[d] - spos[3 * i + d];
          add_point(smass[i], ri, eps2, p.G, phi, acc);
        }
      } else {
        add_point(node.mass, r, eps2, p.G, phi, acc);
      }
    }
    out.potential[t] = phi;
    for (std::size_t d = 0; d < 3; ++d) out.acceleration[3 * t + d] = acc[d];
  }
  return out;
}

PotentialAt direct_potential(const std::vector<double>& spos, const std::vector<double>& smass,
                             const std::vector<double>& tpos, const TreeParams& p) {
  const std::size_t n = tpos.size() / 3;
  PotentialAt out{std::vector<double>(n, 0.0), std::vector<double>(3 * n, 0.0)};
  const double eps2 = p.softening * p.softening;
  for (std::size_t t = 0; t < n; ++t) {
    double phi = 0, acc[3] = {0, 0, 0};
    for (std::size_t i = 0; i < smass.size(); ++i) {
      double r[3];
      for (std::size_t d = 0; d < 3; ++d) r[d] = tpos[3 * t + d] - spos[3 * i + d];
      add_point(smass[i], r, eps2, p.G, phi, acc);
    }
    out.potential[t] = phi;
    for (std::size_t d = 0; d < 3; ++d) out.acceleration[3 * t + d] = acc[d];
  }
  return out;
}

}  // namespace phew
