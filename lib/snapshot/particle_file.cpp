// phew's own particle file: /particles/{id, position, velocity, mass[, potential, acceleration]} with the
// box, time and units as attributes of /particles (docs/formats.md). One particle type (type 0).
#include <phew/core/error.hpp>
#include <phew/io/h5.hpp>
#include <phew/particles/snapshot.hpp>

namespace phew::snapshot {
using particles::Cosmology;
using particles::FieldSelection;
using particles::ParticleSet;
using particles::SnapshotInfo;
using particles::SnapshotReader;
using particles::UnitsSource;

namespace {

class ParticleFile final : public SnapshotReader {
 public:
  explicit ParticleFile(const std::string& path) {
    const io::File f = io::File::open_read(path);
    const std::string g = "/particles";
    const io::TypeInfo pos = f.dataset_info(g + "/position");
    if (pos.shape.size() != 2 || pos.shape[1] != 3)
      throw core::Error::input("{}: /particles/position is {}, expected [n][3]", path, pos.describe());
    const std::uint64_t n = pos.shape[0];
    for (const char* name : {"mass", "id"}) {
      const io::TypeInfo t = f.dataset_info(g + "/" + name);
      if (t.shape.size() != 1 || t.shape[0] != n)
        throw core::Error::input("{}: /particles/{} is {}, expected [{}]", path, name, t.describe(), n);
    }
    info_.format = "phew-particles";
    info_.files = {path};
    info_.file_counts = {{n}};
    info_.mass_table = {0.0};
    const auto box = f.read_attribute<double>(g, "box_size");
    if (box.size() != 3) throw core::Error::input("{}: /particles attribute box_size needs 3 values", path);
    info_.box_size = {box[0], box[1], box[2]};
    info_.periodic = f.read_attribute_scalar<std::int64_t>(g, "periodic") != 0;
    auto optional = [&](const char* name, double fallback) {
      return f.has_attribute(g, name) ? f.read_attribute_scalar<double>(g, name) : fallback;
    };
    info_.time = optional("time", 1.0);
    info_.redshift = optional("redshift", 0.0);
    info_.units.length_cm = optional("length_unit_cm", info_.units.length_cm);
    info_.units.mass_g = optional("mass_unit_g", info_.units.mass_g);
    info_.units.velocity_cm_per_s = optional("velocity_unit_cm_per_s", info_.units.velocity_cm_per_s);
    info_.units.h_scaled = optional("h_scaled", 0.0) != 0;
    if (f.has_attribute(g, "length_unit_cm")) info_.units.source = UnitsSource::file;
    info_.comoving = optional("comoving", 0.0) != 0;
    if (f.has_attribute(g, "omega_m") && f.has_attribute(g, "hubble_param"))
      info_.cosmology = Cosmology{optional("omega_m", 0), optional("omega_lambda", 0), optional("hubble_param", 0)};
    info_.has_velocities = f.has(g + "/velocity");
    info_.has_potential = f.has(g + "/potential");
    info_.has_acceleration = f.has(g + "/acceleration");
  }

  const SnapshotInfo& info() const override { return info_; }

  void read(int, int, std::uint64_t offset, std::uint64_t count, const FieldSelection& fields,
            ParticleSet& out) const override {
    const io::File f = io::File::open_read(info_.files.front());
    auto append = [&](auto& dst, const char* name) {
      using T = typename std::decay_t<decltype(dst)>::value_type;
      const auto v = f.read_rows<T>(std::string("/particles/") + name, offset, count);
      dst.insert(dst.end(), v.begin(), v.end());
    };
    if (fields.positions) append(out.position, "position");
    append(out.mass, "mass");
    if (fields.ids) append(out.id, "id");
    if (fields.velocities) append(out.velocity, "velocity");  // peculiar velocities already
    if (fields.potential) append(out.potential, "potential");
    if (fields.acceleration) append(out.acceleration, "acceleration");
  }

 private:
  SnapshotInfo info_;
};

}  // namespace

std::unique_ptr<SnapshotReader> open_particle_file(const std::string& file) {
  return std::make_unique<ParticleFile>(file);
}

}  // namespace phew::snapshot
