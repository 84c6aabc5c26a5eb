// The HDF5 wrapper: inspecting and reading datasets and attributes (independent, any rank).
#include <phew/io/h5.hpp>

#include <phew/core/error.hpp>
#include <phew/io/h5_private.hpp>

#include <cstring>
#include <numeric>

namespace phew::io {
namespace {

using h5::Id;
using h5::native;

bool is_float(NumType t) { return t == NumType::f32 || t == NumType::f64; }

TypeInfo describe_type(hid_t type, hid_t space) {
  TypeInfo info;
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      info.cls = TypeInfo::Class::integer;
      break;
    case H5T_FLOAT:
      info.cls = TypeInfo::Class::floating;
      break;
    case H5T_STRING:
      info.cls = TypeInfo::Class::string;
      break;
    default:
      info.cls = TypeInfo::Class::other;
  }
  info.size = H5Tget_size(type);
  info.is_signed = info.cls == TypeInfo::Class::integer && H5Tget_sign(type) == H5T_SGN_2;
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank > 0) {
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    H5Sget_simple_extent_dims(space, dims.data(), nullptr);
    info.shape.assign(dims.begin(), dims.end());
  }
  return info;
}

// Refuses to read a float into an integer or a string into a number: the conversion HDF5 would do is
// almost always a sign of the wrong dataset.
void check_class(const TypeInfo& info, NumType mem, const std::string& where) {
  const bool want_float = is_float(mem);
  if (info.cls == TypeInfo::Class::floating && !want_float)
    throw core::Error::input("{}: holds {} but integers are expected", where, info.describe());
  if (info.cls != TypeInfo::Class::floating && info.cls != TypeInfo::Class::integer)
    throw core::Error::input("{}: holds {} but numbers are expected", where, info.describe());
}

}  // namespace

std::string TypeInfo::describe() const {
  std::string t;
  switch (cls) {
    case Class::integer:
      t = (is_signed ? "int" : "uint") + std::to_string(size * 8);
      break;
    case Class::floating:
      t = "float" + std::to_string(size * 8);
      break;
    case Class::string:
      t = "string";
      break;
    case Class::other:
      t = "non-numeric";
      break;
  }
  if (shape.empty()) return t + " scalar";
  std::string s = t + " [";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::uint64_t TypeInfo::elements() const {
  return std::accumulate(shape.begin(), shape.end(), std::uint64_t{1}, std::multiplies<>());
}

bool File::has(const std::string& object) const {
  // Check every prefix: H5Lexists fails on a missing intermediate group.
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = object.find('/', pos + 1);
    const std::string prefix = object.substr(0, pos);
    if (prefix.empty() || prefix == "/") continue;
    if (H5Lexists(id_, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
  }
  return true;
}

bool File::has_attribute(const std::string& object, const std::string& name) const {
  if (object != "/" && !has(object)) return false;
  return H5Aexists_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT) > 0;
}

TypeInfo File::dataset_info(const std::string& dataset) const {
  if (!has(dataset)) throw core::Error::input("{}: missing dataset {}", path_, dataset);
  Id d(H5Dopen2(id_, dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.ok()) throw core::Error::input("{}: {} is not a dataset", path_, dataset);
  Id type(H5Dget_type(d), H5Tclose);
  Id space(H5Dget_space(d), H5Sclose);
  return describe_type(type, space);
}

TypeInfo File::attribute_info(const std::string& object, const std::string& name) const {
  if (!has_attribute(object, name)) throw core::Error::input("{}: missing attribute {} of {}", path_, name, object);
  Id a(H5Aopen_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  Id type(H5Aget_type(a), H5Tclose);
  Id space(H5Aget_space(a), H5Sclose);
  return describe_type(type, space);
}

std::vector<std::string> File::list(const std::string& group) const {
  if (group != "/" && !has(group)) throw core::Error::input("{}: missing group {}", path_, group);
  Id g(H5Gopen2(id_, group.c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.ok()) throw core::Error::input("{}: {} is not a group", path_, group);
  H5G_info_t info;
  H5Gget_info(g, &info);
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t n = H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    std::string name(static_cast<std::size_t>(n), '\0');
    H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), static_cast<std::size_t>(n) + 1,
                       H5P_DEFAULT);
    names.push_back(name);
  }
  return names;
}

void File::read_raw(const std::string& dataset, std::uint64_t begin, std::uint64_t count, bool all, NumType mem,
                    void* out) const {
  const TypeInfo info = dataset_info(dataset);
  const std::string where = path_ + ": " + dataset;
  check_class(info, mem, where);
  Id d(H5Dopen2(id_, dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!info.shape.empty() && (all || (begin + count <= info.shape[0] && count > 0))) {
    // Row chunks decoded on threads, where h5_chunks.cpp can.
    const h5::ChunkIo done =
        h5::read_rows_from_chunks(d, native(mem), all ? 0 : begin, all ? info.shape[0] : count, out);
    if (done == h5::ChunkIo::failed) throw core::Error::io("{}: read failed (a damaged chunk)", where);
    if (done == h5::ChunkIo::done) return;
  }
  herr_t status;
  if (all) {
    status = H5Dread(d, native(mem), H5S_ALL, H5S_ALL, H5P_DEFAULT, out);
  } else {
    if (info.shape.empty() || begin + count > info.shape[0])
      throw core::Error::input("{}: rows {}..{} requested but it has {}", where, begin, begin + count,
                               info.shape.empty() ? 0 : info.shape[0]);
    if (count == 0) return;
    Id fspace(H5Dget_space(d), H5Sclose);
    std::vector<hsize_t> start(info.shape.size(), 0), cnt(info.shape.begin(), info.shape.end());
    start[0] = begin;
    cnt[0] = count;
    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start.data(), nullptr, cnt.data(), nullptr);
    Id mspace(H5Screate_simple(static_cast<int>(cnt.size()), cnt.data(), nullptr), H5Sclose);
    status = H5Dread(d, native(mem), mspace, fspace, H5P_DEFAULT, out);
  }
  if (status < 0) throw core::Error::io("{}: read failed", where);
}

void File::read_box_raw(const std::string& dataset, const std::array<std::uint64_t, 3>& start,
                        const std::array<std::uint64_t, 3>& count, NumType mem, void* out) const {
  const TypeInfo info = dataset_info(dataset);
  const std::string where = path_ + ": " + dataset;
  check_class(info, mem, where);
  if (info.shape.size() != 3)
    throw core::Error::input("{}: a 3-D dataset expected, it has {} dimensions", where, info.shape.size());
  for (std::size_t d = 0; d < 3; ++d)
    if (start[d] + count[d] > info.shape[d])
      throw core::Error::input("{}: cells {}..{} of axis {} requested but it has {}", where, start[d],
                               start[d] + count[d], d, info.shape[d]);
  if (count[0] * count[1] * count[2] == 0) return;
  Id d(H5Dopen2(id_, dataset.c_str(), H5P_DEFAULT), H5Dclose);
  Id fspace(H5Dget_space(d), H5Sclose);
  const std::array<hsize_t, 3> first{start[0], start[1], start[2]}, size{count[0], count[1], count[2]};
  H5Sselect_hyperslab(fspace, H5S_SELECT_SET, first.data(), nullptr, size.data(), nullptr);
  Id mspace(H5Screate_simple(3, size.data(), nullptr), H5Sclose);
  if (H5Dread(d, native(mem), mspace, fspace, H5P_DEFAULT, out) < 0) throw core::Error::io("{}: read failed", where);
}

void File::read_attribute_raw(const std::string& object, const std::string& name, NumType mem, void* out) const {
  const std::string where = path_ + ": attribute " + name + " of " + object;
  check_class(attribute_info(object, name), mem, where);
  Id a(H5Aopen_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (H5Aread(a, native(mem), out) < 0) throw core::Error::io("{}: read failed", where);
}

void File::check_scalar(const std::string& object, const std::string& name, std::size_t n) const {
  if (n != 1) throw core::Error::input("{}: attribute {} of {} has {} values, one expected", path_, name, object, n);
}

void File::throw_size_mismatch(const std::string& dataset, std::size_t have, std::uint64_t need) const {
  throw core::Error::internal("{}: reading {} values of {} into a buffer of {}", path_, need, dataset, have);
}

std::string File::read_attribute_string(const std::string& object, const std::string& name) const {
  const TypeInfo info = attribute_info(object, name);
  const std::string where = path_ + ": attribute " + name + " of " + object;
  if (info.cls != TypeInfo::Class::string)
    throw core::Error::input("{}: holds {}, a string expected", where, info.describe());
  Id a(H5Aopen_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  Id type(H5Aget_type(a), H5Tclose);
  if (H5Tis_variable_str(type) > 0) {
    Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem, H5T_VARIABLE);
    H5Tset_cset(mem, H5Tget_cset(type));
    char* s = nullptr;
    if (H5Aread(a, mem, &s) < 0) throw core::Error::io("{}: read failed", where);
    std::string out = s ? s : "";
    H5free_memory(s);
    return out;
  }
  std::string out(H5Tget_size(type), '\0');
  if (H5Aread(a, type, out.data()) < 0) throw core::Error::io("{}: read failed", where);
  out.resize(std::strlen(out.c_str()));  // fixed-length strings may be NUL-padded
  return out;
}

std::vector<std::string> File::read_attribute_strings(const std::string& object, const std::string& name) const {
  const TypeInfo info = attribute_info(object, name);
  const std::string where = path_ + ": attribute " + name + " of " + object;
  Id a(H5Aopen_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  Id type(H5Aget_type(a), H5Tclose);
  if (info.cls != TypeInfo::Class::string || H5Tis_variable_str(type) <= 0 || info.shape.size() != 1)
    throw core::Error::input("{}: holds {}, a list of strings expected", where, info.describe());
  Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mem, H5T_VARIABLE);
  H5Tset_cset(mem, H5Tget_cset(type));
  std::vector<char*> text(static_cast<std::size_t>(info.shape[0]), nullptr);
  if (H5Aread(a, mem, text.data()) < 0) throw core::Error::io("{}: read failed", where);
  std::vector<std::string> out;
  for (char* s : text) {
    out.emplace_back(s ? s : "");
    H5free_memory(s);
  }
  return out;
}

}  // namespace phew::io
