#include "io/atomic_output.hpp"

#include "core/error.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace phew::io {
namespace {

namespace fs = std::filesystem;

// Temporary paths to unlink from a signal handler: fixed storage, no allocation in the handler.
constexpr int kSlots = 16;
constexpr int kPathMax = 4096;
std::array<std::array<char, kPathMax>, kSlots> g_paths{};
std::array<std::atomic<bool>, kSlots> g_used{};

int register_temp(const std::string& path) {
  for (int i = 0; i < kSlots; ++i) {
    bool expected = false;
    if (path.size() < kPathMax && g_used[static_cast<std::size_t>(i)].compare_exchange_strong(expected, true)) {
      std::memcpy(g_paths[static_cast<std::size_t>(i)].data(), path.c_str(), path.size() + 1);
      return i;
    }
  }
  return -1;
}

void unregister_temp(int slot) {
  if (slot >= 0) g_used[static_cast<std::size_t>(slot)] = false;
}

extern "C" void cleanup_handler(int sig) {
  for (int i = 0; i < kSlots; ++i)
    if (g_used[static_cast<std::size_t>(i)]) unlink(g_paths[static_cast<std::size_t>(i)].data());
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

std::string temp_name_for(const std::string& final_path) {
  const fs::path p(final_path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error::io("{}: output folder {} does not exist", final_path, dir.string());
  if (access(dir.c_str(), W_OK) != 0) throw Error::io("{}: output folder {} is not writable", final_path, dir.string());
  return (dir / ("." + p.filename().string() + ".partial-" + std::to_string(getpid()))).string();
}

}  // namespace

void install_cleanup_on_signals() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, cleanup_handler);
}

AtomicOutput::AtomicOutput(std::string final_path, const mpi::Comm& comm) : final_(std::move(final_path)), comm_(comm) {
  std::string error;
  if (comm.root()) {
    try {
      temp_ = temp_name_for(final_);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  comm.broadcast(error);
  if (!error.empty()) throw Error(ErrorKind::io, error);
  comm.broadcast(temp_);
  if (comm.root()) slot_ = register_temp(temp_);
}

AtomicOutput::~AtomicOutput() {
  if (!committed_ && comm_.root()) {
    std::remove(temp_.c_str());
    unregister_temp(slot_);
  }
}

void AtomicOutput::commit() {
  comm_.barrier();  // every rank has closed the file
  std::string error;
  if (comm_.root()) {
    std::error_code ec;
    fs::remove(final_ + ".json", ec);  // the old manifest must not describe the new file
    fs::rename(temp_, final_, ec);
    if (ec) error = fmt::format("{}: cannot rename the finished output into place: {}", final_, ec.message());
    unregister_temp(slot_);
  }
  comm_.broadcast(error);
  if (!error.empty()) throw Error(ErrorKind::io, error);
  committed_ = true;
}

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string temp = temp_name_for(path);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::remove(temp.c_str());
      throw Error::io("{}: cannot write", path);
    }
  }
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) {
    std::remove(temp.c_str());
    throw Error::io("{}: cannot rename into place: {}", path, ec.message());
  }
}

}  // namespace phew::io
