// MPI as scoped objects: the environment (init/finalize) and a communicator with typed collectives.
#pragma once

#include <phew/mpi/traffic.hpp>

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace phew::mpi {

// MPI_Init/MPI_Finalize for the life of the object. A tool makes exactly one.
// A process started without an MPI launcher (no mpirun, mpiexec or srun variables in its environment;
// PHEW_MPI_INIT forces MPI) does not initialise MPI: it is one rank, and every Comm is a one-rank
// communicator that makes no MPI call.
class Environment {
 public:
  Environment(int& argc, char**& argv);
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

 private:
  bool initialized_here_ = false;
};

// True once MPI is initialised (by an Environment or by the caller, as the MPI tests' main does).
bool running();

template <typename T>
MPI_Datatype datatype();
template <>
inline MPI_Datatype datatype<char>() {
  return MPI_CHAR;
}
template <>
inline MPI_Datatype datatype<unsigned char>() {
  return MPI_UNSIGNED_CHAR;
}
template <>
inline MPI_Datatype datatype<int>() {
  return MPI_INT;
}
template <>
inline MPI_Datatype datatype<unsigned>() {
  return MPI_UNSIGNED;
}
template <>
inline MPI_Datatype datatype<long>() {
  return MPI_LONG;
}
// Not MPI_UNSIGNED_LONG: Open MPI 4.1.2-4.1.4 (Debian 12 has 4.1.4) compares it as signed in MPI_MIN and
// MPI_MAX, so min(2001, 2^64 - 1) is 2^64 - 1 (open-mpi/ompi#10525). The 64-bit type is compared right.
static_assert(sizeof(unsigned long) == sizeof(std::uint64_t));
template <>
inline MPI_Datatype datatype<unsigned long>() {
  return MPI_UINT64_T;
}
template <>
inline MPI_Datatype datatype<long long>() {
  return MPI_LONG_LONG;
}
template <>
inline MPI_Datatype datatype<unsigned long long>() {
  return MPI_UNSIGNED_LONG_LONG;
}
template <>
inline MPI_Datatype datatype<float>() {
  return MPI_FLOAT;
}
template <>
inline MPI_Datatype datatype<double>() {
  return MPI_DOUBLE;
}

// A non-owning view of a communicator (MPI_COMM_WORLD by default) with the collectives phew uses.
// Every member function is collective over the communicator unless it says otherwise. On a one-rank
// communicator no member makes an MPI call: the collectives are copies. Each MPI call is counted
// (mpi/traffic.hpp).
class Comm {
 public:
  Comm() : Comm(MPI_COMM_WORLD) {}
  explicit Comm(MPI_Comm c);
  // MPI_COMM_SELF, made without an MPI call. Work on it (a velocity histogram's watershed, one object's
  // tree) makes none either, so it may run on threads: the tools initialise MPI without thread support.
  static Comm self() { return Comm(MPI_COMM_SELF, 0, 1); }

  MPI_Comm raw() const { return comm_; }
  int rank() const { return rank_; }  // not collective
  int size() const { return size_; }  // not collective
  bool root() const { return rank_ == 0; }

  void barrier() const;

  template <typename T>
  T sum(T v) const {
    return reduce(v, MPI_SUM);
  }
  template <typename T>
  T max(T v) const {
    return reduce(v, MPI_MAX);
  }
  template <typename T>
  T min(T v) const {
    return reduce(v, MPI_MIN);
  }
  // Element by element, the sum over ranks, in place (every rank gives as many values). Collective.
  template <typename T>
  void sum_each(std::span<T> values) const {
    if (size_ == 1) return;
    constexpr std::size_t kMaxCount = std::size_t{1} << 30;  // MPI counts are ints
    for (std::size_t at = 0; at < values.size(); at += kMaxCount) {
      const std::size_t n = std::min(kMaxCount, values.size() - at);
      count_collective(sizeof(T) * n);
      MPI_Allreduce(MPI_IN_PLACE, values.data() + at, static_cast<int>(n), datatype<T>(), MPI_SUM, comm_);
    }
  }
  bool any(bool v) const { return max<int>(v ? 1 : 0) != 0; }
  bool all(bool v) const { return min<int>(v ? 1 : 0) != 0; }

  template <typename T>
  void broadcast(T& v, int root = 0) const {
    static_assert(std::is_trivially_copyable_v<T>);
    if (size_ == 1) return;
    count_collective(rank_ == root ? sizeof(T) * others() : 0);
    MPI_Bcast(&v, sizeof(T), MPI_BYTE, root, comm_);
  }
  void broadcast(std::string& s, int root = 0) const;

  // Every rank's value, in rank order.
  template <typename T>
  std::vector<T> all_gather(const T& v) const {
    static_assert(std::is_trivially_copyable_v<T>);
    std::vector<T> out(static_cast<std::size_t>(size_));
    if (size_ == 1) {
      out[0] = v;
      return out;
    }
    count_collective(sizeof(T) * others());
    MPI_Allgather(&v, sizeof(T), MPI_BYTE, out.data(), sizeof(T), MPI_BYTE, comm_);
    return out;
  }

  // A value carried through the ranks in order, rank 0 first (`backward`: the last rank first): each
  // rank receives what the rank before it made (the first one `start`) and passes on step(received).
  // Returns what the last rank in the chain made, on every rank. A running sum carried this way adds
  // its terms in one order, the serial one, whatever the number of ranks; the ranks wait for each
  // other in turn, so carry a few values, not bulk. Collective; `step` must not throw.
  template <typename T, typename Step>
  T relay(const T& start, Step step, bool backward = false) const {
    static_assert(std::is_trivially_copyable_v<T>);
    if (size_ == 1) return step(start);
    const int before = backward ? rank_ + 1 : rank_ - 1, after = backward ? rank_ - 1 : rank_ + 1;
    const int last = backward ? 0 : size_ - 1;
    constexpr int kRelayTag = 7411;
    T in = start;
    if (before >= 0 && before < size_) MPI_Recv(&in, sizeof(T), MPI_BYTE, before, kRelayTag, comm_, MPI_STATUS_IGNORE);
    T out = step(in);
    if (after >= 0 && after < size_) {
      count_message(sizeof(T));
      MPI_Send(&out, sizeof(T), MPI_BYTE, after, kRelayTag, comm_);
    }
    broadcast(out, last);
    return out;
  }

  // The same for a few values carried in place (as many on every rank): `values` holds `start` on the
  // first rank, step(values) continues them, and every rank ends with the last rank's. Collective.
  template <typename T, typename Step>
  void relay_each(std::span<T> values, Step step, bool backward = false) const {
    static_assert(std::is_trivially_copyable_v<T>);
    if (size_ == 1) {
      step(values);
      return;
    }
    const int before = backward ? rank_ + 1 : rank_ - 1, after = backward ? rank_ - 1 : rank_ + 1;
    constexpr int kRelayTag = 7412;
    const auto bytes = static_cast<int>(values.size_bytes());
    if (before >= 0 && before < size_)
      MPI_Recv(values.data(), bytes, MPI_BYTE, before, kRelayTag, comm_, MPI_STATUS_IGNORE);
    step(values);
    if (after >= 0 && after < size_) {
      count_message(values.size_bytes());
      MPI_Send(values.data(), bytes, MPI_BYTE, after, kRelayTag, comm_);
    }
    count_collective(rank_ == (backward ? 0 : size_ - 1) ? values.size_bytes() * others() : 0);
    MPI_Bcast(values.data(), bytes, MPI_BYTE, backward ? 0 : size_ - 1, comm_);
  }

  // Concatenation of every rank's items in rank order, on every rank.
  template <typename T>
  std::vector<T> all_gatherv(std::span<const T> items) const;

  // The same on rank 0 only (the others get an empty vector): what one rank writes out, without a
  // copy of everything on every rank.
  template <typename T>
  std::vector<T> gatherv_to_root(std::span<const T> items) const;

  // Each rank sends counts[d] consecutive items of `items` to rank d (items grouped by destination,
  // in destination order); returns what it receives, grouped by source rank in rank order.
  // Order within each group is preserved, so the exchange is deterministic.
  template <typename T>
  std::vector<T> all_to_all(std::span<const T> items, std::span<const std::uint64_t> counts) const {
    std::vector<T> out;
    all_to_all(items, counts, out);
    return out;
  }
  // The same, receiving straight into `out` (any vector of T, resized to fit).
  template <typename T, typename Vector>
  void all_to_all(std::span<const T> items, std::span<const std::uint64_t> counts, Vector& out) const;

 private:
  template <typename T>
  T reduce(T v, MPI_Op op) const {
    if (size_ == 1) return v;
    T out{};
    count_collective(sizeof(T));
    MPI_Allreduce(&v, &out, 1, datatype<T>(), op, comm_);
    return out;
  }
  void all_to_all_bytes(const char* send, std::span<const std::uint64_t> send_bytes, std::vector<char>& recv) const;
  void all_gatherv_bytes(const char* send, std::uint64_t n, std::vector<char>& recv) const;
  void gatherv_to_root_bytes(const char* send, std::uint64_t n, std::vector<char>& recv) const;
  // The other ranks, as a byte multiplier for what goes to each of them.
  std::uint64_t others() const { return static_cast<std::uint64_t>(size_ - 1); }
  // Of `counts` (one per rank), the sum of those addressed to other ranks.
  template <typename Count>
  std::uint64_t to_others(std::span<const Count> counts) const {
    std::uint64_t n = 0;
    for (std::size_t r = 0; r < counts.size(); ++r)
      if (static_cast<int>(r) != rank_) n += static_cast<std::uint64_t>(counts[r]);
    return n;
  }

  Comm(MPI_Comm c, int rank, int size) : comm_(c), rank_(rank), size_(size) {}

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
};

template <typename T>
std::vector<T> Comm::all_gatherv(std::span<const T> items) const {
  static_assert(std::is_trivially_copyable_v<T>);
  if (size_ == 1) return {items.begin(), items.end()};  // no MPI call, as for the other collectives
  // Counts that fit MPI's ints: straight into the result (a big set's one copy, not three: unbind's
  // spread tree gathers 40 bytes a particle of a halo on every rank).
  const std::vector<std::uint64_t> counts = all_gather<std::uint64_t>(items.size());
  std::uint64_t total = 0;
  for (const std::uint64_t c : counts) total += c;
  if (total <= INT32_MAX) {
    const auto n = static_cast<std::size_t>(size_);
    std::vector<int> rc(n), rd(n);
    std::transform(counts.begin(), counts.end(), rc.begin(), [](std::uint64_t c) { return static_cast<int>(c); });
    std::exclusive_scan(rc.begin(), rc.end(), rd.begin(), 0);  // a pass of its own: cmake/ToolchainGuard.cmake
    std::vector<T> out(total);
    MPI_Datatype type;
    MPI_Type_contiguous(static_cast<int>(sizeof(T)), MPI_BYTE, &type);
    MPI_Type_commit(&type);
    count_collective(items.size_bytes() * others());
    MPI_Allgatherv(items.data(), static_cast<int>(items.size()), type, out.data(), rc.data(), rd.data(), type, comm_);
    MPI_Type_free(&type);
    return out;
  }
  std::vector<char> bytes;
  all_gatherv_bytes(reinterpret_cast<const char*>(items.data()), items.size_bytes(), bytes);
  std::vector<T> out(bytes.size() / sizeof(T));
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(out.data()));
  return out;
}

template <typename T>
std::vector<T> Comm::gatherv_to_root(std::span<const T> items) const {
  static_assert(std::is_trivially_copyable_v<T>);
  std::vector<char> bytes;
  gatherv_to_root_bytes(reinterpret_cast<const char*>(items.data()), items.size_bytes(), bytes);
  std::vector<T> out(bytes.size() / sizeof(T));
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(out.data()));
  return out;
}

template <typename T, typename Vector>
void Comm::all_to_all(std::span<const T> items, std::span<const std::uint64_t> counts, Vector& out) const {
  static_assert(std::is_trivially_copyable_v<T>);
  if (size_ == 1) {  // no MPI call: a one-rank communicator may be used from threads (mpi::self)
    out.resize(counts[0]);
    std::copy(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(counts[0]), out.begin());
    return;
  }
  const auto n = static_cast<std::size_t>(size_);
  std::vector<std::uint64_t> recv_counts(n);
  count_collective(sizeof(std::uint64_t) * others());
  MPI_Alltoall(counts.data(), 1, MPI_UINT64_T, recv_counts.data(), 1, MPI_UINT64_T, comm_);
  std::uint64_t total_send = 0, total_recv = 0;
  for (std::size_t r = 0; r < n; ++r) {
    total_send += counts[r];
    total_recv += recv_counts[r];
  }
  out.resize(total_recv);
  if (total_send <= INT32_MAX && total_recv <= INT32_MAX) {
    // Counts fit MPI's ints: one call with an element-sized type, straight into `out`.
    // Counts first, then their prefix sums in a separate pass: GCC 12.2's loop distribution once
    // reordered a loop that did both at once (cmake/ToolchainGuard.cmake), and every block landed at 0.
    std::vector<int> sc(n), sd(n), rc(n), rd(n);
    std::transform(counts.begin(), counts.end(), sc.begin(), [](std::uint64_t c) { return static_cast<int>(c); });
    std::transform(recv_counts.begin(), recv_counts.end(), rc.begin(),
                   [](std::uint64_t c) { return static_cast<int>(c); });
    std::exclusive_scan(sc.begin(), sc.end(), sd.begin(), 0);
    std::exclusive_scan(rc.begin(), rc.end(), rd.begin(), 0);
    MPI_Datatype type;
    MPI_Type_contiguous(static_cast<int>(sizeof(T)), MPI_BYTE, &type);
    MPI_Type_commit(&type);
    count_collective(sizeof(T) * to_others(counts));
    MPI_Alltoallv(items.data(), sc.data(), sd.data(), type, out.data(), rc.data(), rd.data(), type, comm_);
    MPI_Type_free(&type);
    return;
  }
  std::vector<std::uint64_t> send_bytes(counts.begin(), counts.end());
  for (auto& b : send_bytes) b *= sizeof(T);
  std::vector<char> bytes;
  all_to_all_bytes(reinterpret_cast<const char*>(items.data()), send_bytes, bytes);
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(out.data()));
}

// Number of ranks of `comm` on this rank's node (for memory checks).
int ranks_on_node(const Comm& comm);

// Ends every rank of the job at once with `code` (a failure only this rank knows of: the others may be
// waiting in a collective). Does not return.
[[noreturn]] void abort(const Comm& comm, int code);

}  // namespace phew::mpi
