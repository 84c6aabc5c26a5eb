// build_catalogue's input read from the files: the segmentation from patches.h5, the test cells' density
// from the grid it was made from, and the particles from a snapshot when asked for (lib/io and
// lib/particles do the reading; the stage sees neither a path nor a file).
#pragma once

#include <phew/io/h5.hpp>
#include <phew/watershed/catalogue.hpp>

#include <functional>
#include <string>

namespace phew::tools {

class CatalogueFiles : public watershed::CatalogueSource {
 public:
  // Both files open on every rank; they must outlive this object. `header`: the patches' (read_patches_header).
  CatalogueFiles(const io::File& patches, const io::File& grid, model::PatchesHeader header)
      : patches_(patches), grid_(grid), header_(std::move(header)) {}

  // This rank's share of the snapshot (collective); empty: no particles.
  std::function<particles::ParticleSet()> particles_reader;

  std::string name() const override { return patches_.path(); }
  model::PatchesHeader header() const override;
  std::vector<model::PatchPeak> peaks(std::uint64_t begin, std::uint64_t count) const override;
  std::vector<model::SaddleRow> saddles(std::uint64_t begin, std::uint64_t count) const override;
  std::vector<std::int64_t> cell_cuts(int ranks) const override;
  grid::CellLabels cells(std::int64_t begin, std::int64_t end) const override;
  std::vector<double> densities(std::span<const std::int64_t> cells) const override;
  bool has_particles() const override { return static_cast<bool>(particles_reader); }
  particles::ParticleSet particles() const override { return particles_reader(); }

 private:
  const io::File& patches_;
  const io::File& grid_;
  model::PatchesHeader header_;
};

}  // namespace phew::tools
