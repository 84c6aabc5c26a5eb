// Qhull backend: the Delaunay triangulation as the lower convex hull of the points lifted to the
// paraboloid (reentrant libqhull_r). Options:
//   d   Delaunay;  Qt  triangulate non-simplicial facets (cospherical points), which may leave
//   zero-volume tetrahedra: the kernel tolerates them;  Qbb  scale the lifted coordinate to the
//   range of the others (less roundoff);  Qz  add a point at infinity (helps cospherical input).
// Upper-Delaunay facets are not tetrahedra of the triangulation and are skipped; a neighbour that is
// one marks a hull face (-1).
#include <phew/core/error.hpp>
#include <phew/dtfe/predicates.hpp>
#include <phew/dtfe/triangulation.hpp>

extern "C" {
#include <libqhull_r/qhull_ra.h>
}

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace phew::dtfe::detail {
namespace {

// Qhull writes its messages to a FILE*; collect them to quote the first line in an error.
class MessageBuffer {
 public:
  MessageBuffer() { file_ = open_memstream(&text_, &size_); }
  ~MessageBuffer() {
    if (file_) std::fclose(file_);
    std::free(text_);
  }
  MessageBuffer(const MessageBuffer&) = delete;
  MessageBuffer& operator=(const MessageBuffer&) = delete;
  FILE* file() const { return file_; }
  std::string first_line() {
    if (!file_) return "";
    std::fflush(file_);
    std::string s(text_ ? text_ : "", size_);
    const auto nl = s.find('\n');
    return nl == std::string::npos ? s : s.substr(0, nl);
  }

 private:
  FILE* file_ = nullptr;
  char* text_ = nullptr;
  std::size_t size_ = 0;
};

// Frees Qhull's memory however we leave.
struct QhullRun {
  qhT qh_qh;
  qhT* qh = &qh_qh;
  explicit QhullRun(FILE* err) { qh_zero(qh, err); }
  ~QhullRun() {
    int curlong = 0, totlong = 0;
    qh_freeqhull(qh, !qh_ALL);
    qh_memfreeshort(qh, &curlong, &totlong);
  }
  QhullRun(const QhullRun&) = delete;
  QhullRun& operator=(const QhullRun&) = delete;
};

}  // namespace

Triangulation triangulate_qhull(const FieldPoints& points) {
  const std::size_t n = points.size();
  if (n > static_cast<std::size_t>(std::numeric_limits<int>::max() / 4))
    throw core::Error::input("{} points: too many for Qhull", n);
  // Lattice coordinates scaled by an exact power of two into [-1, 1].
  std::vector<coordT> xyz(3 * n);
  for (std::size_t i = 0; i < 3 * n; ++i)
    xyz[i] = std::ldexp(static_cast<double>(points.q[i]), -static_cast<int>(kQuantBits));

  MessageBuffer messages;
  QhullRun run(messages.file());
  qhT* qh = run.qh;
  char options[] = "qhull d Qt Qbb Qz";
  const int code = qh_new_qhull(qh, 3, static_cast<int>(n), xyz.data(), False, options, nullptr, messages.file());
  if (code != 0) {
    const std::string why = messages.first_line();
    if (code == qh_ERRsingular || why.find("QH6154") != std::string::npos)
      throw core::Error::input("Qhull: the field's particles are degenerate (coplanar or too few): {}", why);
    throw core::Error::internal("Qhull failed (code {}): {}", code, why);
  }

  // Number the tetrahedra (the lower-Delaunay facets); visitid is free once the hull is built.
  facetT* facet = nullptr;
  constexpr unsigned kNone = std::numeric_limits<unsigned>::max();
  unsigned count = 0;
  FORALLfacets {
    if (facet->upperdelaunay)
      facet->visitid = kNone;
    else
      facet->visitid = count++;
  }
  Triangulation tri;
  tri.tets.resize(count);
  tri.neighbours.resize(count);
  FORALLfacets {
    if (facet->upperdelaunay) continue;
    Tet& t = tri.tets[facet->visitid];
    std::int32_t* across = tri.neighbours[facet->visitid].across;
    vertexT* vertex = nullptr;
    vertexT** vertexp = nullptr;
    int k = 0;
    pointT* corner[4] = {nullptr, nullptr, nullptr, nullptr};
    FOREACHvertex_(facet->vertices) {
      if (k == 4) throw core::Error::internal("Qhull returned a non-simplicial facet despite Qt");
      corner[k] = vertex->point;
      t.vertex[k++] = static_cast<std::int32_t>(qh_pointid(qh, vertex->point));
    }
    if (k != 4) throw core::Error::internal("Qhull returned a facet with {} vertices", k);
    for (int j = 0; j < 4; ++j) across[j] = -1;
    // Qhull documents neighbour k as opposite vertex k for simplicial facets; we check by the
    // vertex each neighbour lacks, which costs little and does not depend on that promise.
    facetT* neighbor = nullptr;
    facetT** neighborp = nullptr;
    FOREACHneighbor_(facet) {
      if (neighbor->upperdelaunay) continue;
      int missing = -1;
      for (int j = 0; j < 4; ++j) {
        bool found = false;
        vertexT* v2 = nullptr;
        vertexT** v2p = nullptr;
        FOREACHsetelement_(vertexT, neighbor->vertices, v2) {
          if (v2->point == corner[j]) {
            found = true;
            break;
          }
        }
        (void)v2p;
        if (!found) {
          missing = j;
          break;
        }
      }
      if (missing < 0) throw core::Error::internal("Qhull: two facets with the same vertices");
      across[missing] = static_cast<std::int32_t>(neighbor->visitid);
    }
  }
  return tri;
}

}  // namespace phew::dtfe::detail
