#include <phew/mpi/comm.hpp>

#include <phew/core/error.hpp>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <climits>
#include <numeric>

#include <sys/resource.h>

namespace phew::mpi {

namespace {

// A tool made to start MPI without mpirun (PHEW_MPI_INIT) under a file-size limit (ulimit -f): Open
// MPI's PMIx keeps the job's data in shared-memory files that the limit cuts short, and MPI_Init aborts with a page of PMIx lines
// and no word from phew. In memory instead (gds hash), and without the helper daemon's note
// that it forwards the SIGXFSZ the limit raises; phew's own writes then fail with one line (exit 4). A
// user's own settings win. Under mpirun the limit hits mpirun first, before phew runs.
void prepare_singleton_under_file_limit() {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK")) return;  // started by mpirun
  rlimit limit{};
  if (getrlimit(RLIMIT_FSIZE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  setenv("PMIX_MCA_gds", "hash", 0);
  setenv("OMPI_MCA_orte_execute_quiet", "1", 0);
}

// The variables MPI launchers give the processes they start (Open MPI's mpirun, PMIx and PMI
// launchers such as MPICH's Hydra and Slurm's srun). With none of them a tool is a single process.
bool started_by_a_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMIX_NAMESPACE", "PMI_RANK",
                        "PMI_SIZE", "PMI_FD", "PMI_ID", "MPI_LOCALNRANKS", "MPI_LOCALRANKID", "HYDRA_CONTROL_FD",
                        "SLURM_PROCID", "MV2_COMM_WORLD_RANK", "I_MPI_HYDRA_TOPOLIB"})
    if (std::getenv(v)) return true;
  return std::getenv("PHEW_MPI_INIT") != nullptr;  // to force MPI_Init, for a launcher not listed
}

// False while MPI is not initialised: a tool started without a launcher is one rank and makes no MPI
// call at all (Open MPI's singleton start-up, about 0.3 s, is the bulk of a small run).
bool mpi_running = false;

}  // namespace

bool running() {
  if (!mpi_running) {  // initialised by the caller (the MPI tests' main)? MPI_Initialized may be asked any time
    int initialized = 0;
    MPI_Initialized(&initialized);
    mpi_running = initialized != 0;
  }
  return mpi_running;
}

Environment::Environment(int& argc, char**& argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    if (!started_by_a_launcher()) return;  // one rank, without MPI
    prepare_singleton_under_file_limit();
    // Past a file-size limit a write fails with EFBIG instead of killing the process with SIGXFSZ, from
    // MPI_Init on (its shared-memory files): phew then says which file failed.
    std::signal(SIGXFSZ, SIG_IGN);
    MPI_Init(&argc, &argv);
    initialized_here_ = true;
  }
  mpi_running = true;
  // Errors are reported by phew itself; MPI's default handler would abort without a message.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

Environment::~Environment() {
  if (!initialized_here_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

Comm::Comm(MPI_Comm c) : comm_(c) {
  if (!running()) return;  // one rank (rank_ 0, size_ 1), no MPI call
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

void Comm::barrier() const {
  if (size_ == 1) return;
  count_collective();
  MPI_Barrier(comm_);
}

void Comm::broadcast(std::string& s, int root) const {
  if (size_ == 1) return;
  std::uint64_t n = s.size();
  broadcast(n, root);
  s.resize(n);
  // Large strings in chunks that fit an int count.
  for (std::uint64_t off = 0; off < n; off += INT_MAX) {
    const int chunk = static_cast<int>(std::min<std::uint64_t>(INT_MAX, n - off));
    count_collective(rank_ == root ? static_cast<std::uint64_t>(chunk) * others() : 0);
    MPI_Bcast(s.data() + off, chunk, MPI_CHAR, root, comm_);
  }
}

namespace {

// A contiguous MPI type of `block` bytes lets counts beyond 2^31 bytes travel as element counts.
constexpr std::uint64_t kBlock = 64;

}  // namespace

void Comm::all_to_all_bytes(const char* send, std::span<const std::uint64_t> send_bytes,
                            std::vector<char>& recv) const {
  if (size_ == 1) {
    recv.assign(send, send + send_bytes[0]);
    return;
  }
  const auto n = static_cast<std::size_t>(size_);
  std::vector<std::uint64_t> recv_bytes(n);
  count_collective(sizeof(std::uint64_t) * others());
  MPI_Alltoall(send_bytes.data(), 1, MPI_UINT64_T, recv_bytes.data(), 1, MPI_UINT64_T, comm_);

  // Send in two parts: whole 64-byte blocks with MPI_Alltoallv of a block type, and the remainders
  // (< 64 bytes per pair) as plain bytes. Displacements are in units of the type, so they must fit an int:
  // that bounds one exchange to 2^31 blocks = 128 GiB per rank, far above what a rank holds.
  std::vector<int> sc(n), sd(n), rc(n), rd(n), src(n), sdr(n), rcr(n), rdr(n);
  std::uint64_t total_recv = std::accumulate(recv_bytes.begin(), recv_bytes.end(), std::uint64_t{0});
  std::uint64_t total_send = std::accumulate(send_bytes.begin(), send_bytes.end(), std::uint64_t{0});
  if (total_recv / kBlock > INT_MAX || total_send / kBlock > INT_MAX)
    throw core::Error::internal("exchange of {} bytes is too large for one MPI call", std::max(total_recv, total_send));

  // Layout of the contiguous buffers: for each peer, its whole blocks then its remainder bytes.
  // Counts first, prefix sums in separate passes (see Comm::all_to_all).
  for (std::size_t d = 0; d < n; ++d) {
    sc[d] = static_cast<int>(send_bytes[d] / kBlock);
    src[d] = static_cast<int>(send_bytes[d] % kBlock);
    rc[d] = static_cast<int>(recv_bytes[d] / kBlock);
    rcr[d] = static_cast<int>(recv_bytes[d] % kBlock);
  }
  std::exclusive_scan(sc.begin(), sc.end(), sd.begin(), 0);
  std::exclusive_scan(src.begin(), src.end(), sdr.begin(), 0);
  std::exclusive_scan(rc.begin(), rc.end(), rd.begin(), 0);
  std::exclusive_scan(rcr.begin(), rcr.end(), rdr.begin(), 0);
  const std::uint64_t sblocks = std::accumulate(sc.begin(), sc.end(), std::uint64_t{0});
  const std::uint64_t rblocks = std::accumulate(rc.begin(), rc.end(), std::uint64_t{0});
  const std::uint64_t srest = std::accumulate(src.begin(), src.end(), std::uint64_t{0});
  const std::uint64_t rrest = std::accumulate(rcr.begin(), rcr.end(), std::uint64_t{0});
  std::vector<char> send_blocks, send_rest;
  send_blocks.resize(sblocks * kBlock);
  send_rest.resize(srest);
  std::uint64_t off = 0;
  for (std::size_t d = 0; d < n; ++d) {
    const std::uint64_t whole = static_cast<std::uint64_t>(sc[d]) * kBlock;
    std::copy(send + off, send + off + whole, send_blocks.data() + static_cast<std::uint64_t>(sd[d]) * kBlock);
    std::copy(send + off + whole, send + off + send_bytes[d], send_rest.data() + sdr[d]);
    off += send_bytes[d];
  }
  std::vector<char> recv_blocks(rblocks * kBlock), recv_rest(rrest);
  MPI_Datatype block_type;
  MPI_Type_contiguous(static_cast<int>(kBlock), MPI_BYTE, &block_type);
  MPI_Type_commit(&block_type);
  count_collective(kBlock * to_others(std::span<const int>(sc)));
  MPI_Alltoallv(send_blocks.data(), sc.data(), sd.data(), block_type, recv_blocks.data(), rc.data(), rd.data(),
                block_type, comm_);
  count_collective(to_others(std::span<const int>(src)));
  MPI_Alltoallv(send_rest.data(), src.data(), sdr.data(), MPI_BYTE, recv_rest.data(), rcr.data(), rdr.data(), MPI_BYTE,
                comm_);
  MPI_Type_free(&block_type);

  recv.resize(total_recv);
  off = 0;
  for (std::size_t s = 0; s < n; ++s) {
    const std::uint64_t whole = static_cast<std::uint64_t>(rc[s]) * kBlock;
    const char* b = recv_blocks.data() + static_cast<std::uint64_t>(rd[s]) * kBlock;
    std::copy(b, b + whole, recv.data() + off);
    std::copy(recv_rest.data() + rdr[s], recv_rest.data() + rdr[s] + rcr[s], recv.data() + off + whole);
    off += recv_bytes[s];
  }
}

void Comm::all_gatherv_bytes(const char* send, std::uint64_t nbytes, std::vector<char>& recv) const {
  // Implemented over all_to_all: the same bytes to every rank.
  const auto n = static_cast<std::size_t>(size_);
  std::vector<char> repeated;
  repeated.reserve(nbytes * n);
  for (std::size_t d = 0; d < n; ++d) repeated.insert(repeated.end(), send, send + nbytes);
  std::vector<std::uint64_t> counts(n, nbytes);
  all_to_all_bytes(repeated.data(), counts, recv);
}

void Comm::gatherv_to_root_bytes(const char* send, std::uint64_t nbytes, std::vector<char>& recv) const {
  // Implemented over all_to_all: rank 0 receives every rank's bytes, the others nothing.
  std::vector<std::uint64_t> counts(static_cast<std::size_t>(size_), 0);
  counts[0] = nbytes;
  all_to_all_bytes(send, counts, recv);
}

void abort(const Comm& comm, int code) {
  if (!running()) std::_Exit(code);
  MPI_Abort(comm.raw(), code);
  std::_Exit(code);  // MPI_Abort does not return; this is for the compiler and for broken MPIs
}

int ranks_on_node(const Comm& comm) {
  if (comm.size() == 1) return 1;  // no MPI call on one rank, as for the collectives
  MPI_Comm node;
  count_collective();
  MPI_Comm_split_type(comm.raw(), MPI_COMM_TYPE_SHARED, comm.rank(), MPI_INFO_NULL, &node);
  int n = 1;
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  return n;
}

}  // namespace phew::mpi
