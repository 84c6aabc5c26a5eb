#include <phew/manifest/fingerprint.hpp>

#include <phew/core/error.hpp>
#include <phew/core/files.hpp>

#include <fmt/format.h>
#include <xxhash.h>

#include <cstdio>
#include <memory>
#include <vector>

namespace phew::manifest {
namespace {

std::string hex(XXH128_hash_t h) { return fmt::format("xxh3-128:{:016x}{:016x}", h.high64, h.low64); }

}  // namespace

std::string fingerprint_file(const std::string& path) {
  core::check_readable_file(path);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) throw core::Error::io("{}: cannot open to fingerprint", path);
  std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> state(XXH3_createState(), XXH3_freeState);
  XXH3_128bits_reset(state.get());
  std::vector<char> buf(1 << 22);
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) XXH3_128bits_update(state.get(), buf.data(), n);
  if (std::ferror(f.get())) throw core::Error::io("{}: read error while fingerprinting", path);
  return hex(XXH3_128bits_digest(state.get()));
}

std::string fingerprint_text(const std::string& text) { return hex(XXH3_128bits(text.data(), text.size())); }

}  // namespace phew::manifest
