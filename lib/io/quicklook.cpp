#include <phew/io/quicklook.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

namespace phew::io {
namespace {

std::uint32_t crc32(const std::string& data, std::size_t begin) {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t n = 0; n < 256; ++n) {
      std::uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xffffffffu;
  for (std::size_t i = begin; i < data.size(); ++i)
    c = table[(c ^ static_cast<unsigned char>(data[i])) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

void put32(std::string& s, std::uint32_t v) {
  for (int k = 3; k >= 0; --k) s.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
}

void chunk(std::string& png, const char* type, const std::string& data) {
  put32(png, static_cast<std::uint32_t>(data.size()));
  const std::size_t start = png.size();
  png.append(type, 4);
  png += data;
  put32(png, crc32(png, start));
}

// "magma"-like anchors (black - purple - orange - pale yellow), interpolated linearly.
std::array<unsigned char, 3> colour(double t) {
  static const double anchor[][3] = {{0, 0, 4},      {28, 16, 68},   {79, 18, 123},   {129, 37, 129}, {181, 54, 122},
                                     {229, 80, 100}, {251, 135, 97}, {254, 194, 135}, {252, 253, 191}};
  constexpr int n = 9;
  t = std::clamp(t, 0.0, 1.0) * (n - 1);
  const int k = std::min(static_cast<int>(t), n - 2);
  const double f = t - k;
  std::array<unsigned char, 3> c{};
  for (int i = 0; i < 3; ++i)
    c[static_cast<std::size_t>(i)] =
        static_cast<unsigned char>(std::lround(anchor[k][i] * (1 - f) + anchor[k + 1][i] * f));
  return c;
}

}  // namespace

std::string quicklook_png(std::span<const double> sigma, int ng) {
  double top = 0;
  for (double v : sigma)
    if (v > top) top = v;  // NaN pixels never compare greater
  const double hi = top > 0 ? std::log10(top) : 0.0, lo = hi - 4.0;
  // Raw scanlines: filter byte 0, then RGB; row 0 at the top is the largest v.
  std::string raw;
  const auto n = static_cast<std::size_t>(ng);
  raw.reserve(n * (3 * n + 1));
  for (std::size_t r = 0; r < n; ++r) {
    raw.push_back(0);
    const std::size_t j = n - 1 - r;
    for (std::size_t i = 0; i < n; ++i) {
      const double v = sigma[i * n + j];
      // NaN: a pixel outside the triangulated hull (docs/formats.md, maps.h5), grey so it is not read as empty.
      const auto c = std::isnan(v) ? std::array<unsigned char, 3>{128, 128, 128}
                                   : colour(v > 0 ? (std::log10(v) - lo) / (hi - lo) : 0.0);
      raw.append(reinterpret_cast<const char*>(c.data()), 3);
    }
  }
  // zlib stream of stored deflate blocks (at most 65535 bytes each) and the Adler-32 of the data.
  std::string z{"\x78\x01", 2};
  for (std::size_t at = 0; at < raw.size() || at == 0;) {
    const std::size_t len = std::min<std::size_t>(65535, raw.size() - at);
    const bool last = at + len >= raw.size();
    z.push_back(last ? 1 : 0);
    z.push_back(static_cast<char>(len & 0xff));
    z.push_back(static_cast<char>(len >> 8));
    z.push_back(static_cast<char>(~len & 0xff));
    z.push_back(static_cast<char>((~len >> 8) & 0xff));
    z.append(raw, at, len);
    at += len;
    if (last) break;
  }
  std::uint32_t a = 1, b = 0;
  for (unsigned char ch : raw) {
    a = (a + ch) % 65521;
    b = (b + a) % 65521;
  }
  put32(z, (b << 16) | a);

  std::string png{"\x89PNG\r\n\x1a\n", 8};
  std::string header;
  put32(header, static_cast<std::uint32_t>(ng));
  put32(header, static_cast<std::uint32_t>(ng));
  header += std::string{"\x08\x02\x00\x00\x00", 5};  // 8 bits, RGB, deflate, no filter, no interlace
  chunk(png, "IHDR", header);
  chunk(png, "IDAT", z);
  chunk(png, "IEND", "");
  return png;
}

}  // namespace phew::io
