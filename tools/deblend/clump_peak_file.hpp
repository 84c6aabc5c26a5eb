// deblend_patches' clump peak positions read from clumps.h5 (lib/io reads them in chunks; the stage
// sees no file).
#pragma once

#include <phew/io/clumps_file.hpp>
#include <phew/phasespace/deblend.hpp>

namespace phew::tools {

class ClumpPeakFile : public phasespace::ClumpPeakSource {
 public:
  explicit ClumpPeakFile(const io::File& clumps) : clumps_(clumps) {}  // must outlive this object
  std::map<std::int64_t, std::array<double, 3>> peak_positions(const std::vector<std::int64_t>& ids) const override {
    return io::read_clump_peak_positions(clumps_, ids);
  }

 private:
  const io::File& clumps_;
};

}  // namespace phew::tools
