// trex AscendC emulator: per-process runtime state (block index, UB arena, GM regions, counters,
// sync flags) and the error mechanism.
//
// Errors: every API misuse throws trex_emu::KernelError. The launch boundary (RunBlocks, used
// by ICPU_RUN_KF and by the Python runner's generated entry points) catches it: ICPU_RUN_KF
// prints the message and aborts like CANN's CPU debug mode; the Python entry returns it as an
// error string that becomes an EmulatorError exception.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace trex_emu {

class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <class... Parts>
[[noreturn]] inline void Fail(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  throw KernelError(os.str());
}

// Physical UB size of one AIV core on arch 2201 (910B/910C): 192 KB.
constexpr uint32_t kDefaultUbBytes = 192u * 1024u;
constexpr uint32_t kUbAlign = 32u;       // UB operands start 32-byte aligned
constexpr uint32_t kRepeatBytes = 256u;  // one vector repeat = 8 blocks x 32 B
constexpr uint32_t kBlockBytes = 32u;
constexpr int kMaxRepeat = 255;
constexpr int kNumEventIds = 8;

struct Counters {
  uint64_t mte2_bytes = 0, mte2_transfers = 0;  // GM -> UB
  uint64_t mte3_bytes = 0, mte3_transfers = 0;  // UB -> GM
  uint64_t ub_copy_bytes = 0, ub_copy_transfers = 0;  // UB -> UB DataCopy
  uint64_t scalar_ops = 0;                      // GetValue/SetValue on Local/GlobalTensor
  uint64_t ub_peak_bytes = 0;                   // max bytes handed out by TPipe::InitBuffer in any block
  uint64_t datacopy_truncations = 0;            // DataCopy calls whose byte count was rounded down
  uint64_t blocks_run = 0;
  std::map<std::string, uint64_t> vector_repeats;  // instruction name -> repeats
  std::map<std::string, uint64_t> vector_calls;    // instruction name -> calls
  // Device bounds (Runtime::device_bounds): what the strict checks would have refused but the NPU runs
  // without a fault, "<kind>: <where>" -> times seen (kinds: kFinding* below).
  std::map<std::string, uint64_t> findings;
};

// Finding kinds under device bounds: each is an error under strict bounds (the default).
constexpr const char* kFindingUbOverallocation = "UB over-allocation";
constexpr const char* kFindingUbBufferOverrun = "UB access past its buffer";
constexpr const char* kFindingGmOverread = "GM read past the allocation";
// TQue misuse the NPU build runs with the right pipe order as long as the buffer is not handed out again (pipe.h:
// EnQue of another queue's tensor; FreeTensor of an enqueued tensor of a depth-1 queue).
constexpr const char* kFindingQueueMisuse = "queue misuse";
// Device bounds map UB addresses up to this many times the UB size (a TPipe may hand out more than the
// UB holds; the buffers past its end are legal as long as nothing touches them).
constexpr uint32_t kUbAddressSpaceFactor = 4;

// One UB allocation (a TQue buffer or a TBuf): LocalTensors remember which one they live in so
// that every access can be bounds-checked against it.
struct BufferInfo {
  std::string name;  // e.g. "inQueueX[1]" or "tmpBuf"
  uint8_t* begin = nullptr;
  uint8_t* end = nullptr;
  int position = 0;  // TPosition as int
};

struct GmRegion {
  std::string name;
  uintptr_t begin, end;
  uint64_t guard = 0;  // poisoned bytes the launcher placed after `end` (device bounds read them)
};

// One GM access by one block, for the cross-block race check.
enum class GmKind : uint8_t { kRead, kWrite, kAtomicWrite };
struct GmAccess {
  uintptr_t begin, end;
  uint32_t block;
  GmKind kind;
  uint32_t phase;  // the block's sync epoch (SyncAll calls it had passed), an index into Runtime::clocks
  // A plain write whose bytes are known: their offset in Runtime::gm_written (kNoData: not recorded).
  uint64_t data = kNoData;
  uint32_t seq = 0;  // its index in Runtime::gm_accesses: program order within a block
  static constexpr uint64_t kNoData = ~uint64_t{0};
};

class TPipeBase;

struct Runtime {
  uint32_t block_idx = 0;
  uint32_t block_num = 1;
  uint32_t ub_bytes = kDefaultUbBytes;
  int ub_fill = 0xFF;  // byte written over UB at block start (0xFF: NaN for float/half/bf16)
  std::vector<uint8_t> ub_storage;
  uint8_t* ub = nullptr;
  std::deque<BufferInfo> buffers;  // deque: stable addresses
  TPipeBase* current_pipe = nullptr;
  std::vector<GmRegion> gm_regions;
  Counters counters;
  int flags[64][kNumEventIds] = {};  // HardEvent x event id -> pending SetFlag count
  uint8_t cmp_mask[32] = {};         // the CMPMASK special register (Compare without dst / Select mode 0)
  // Vector mask register for isSetMask=false calls: normal mode bits, or counter mode count.
  bool mask_counter_mode = false;
  uint64_t mask_bits[2] = {~uint64_t{0}, ~uint64_t{0}};
  uint64_t mask_count = 0;
  // The MAX_MIN_CNT special register that ReduceMax/ReduceMin/WholeReduceMax/WholeReduceMin set and
  // GetReduceMaxMinCount reads: value bits in the low 32 (16 for half), index in the high 32.
  uint64_t max_min_cnt = 0;
  bool max_min_set = false;  // no reduction ran yet in this block: reading the register is a misuse
  uint64_t acc_val = 0;      // ACC_VAL: the count-form ReduceSum's result bits (GetReduceRepeatSumSpr)
  bool acc_set = false;
  uint8_t task_sync_calls = 0;  // WaitPreTaskEnd (1) / SetNextTaskStart (2) called in this block
  int atomic_type = 0;  // copy.h kAtomicNone/Add/Max/Min: what UB->GM writes do (SetAtomicAdd/Max/Min)
  bool check_races = true;  // record GM accesses and report blocks that touch the same bytes
  std::vector<GmAccess> gm_accesses;
  std::vector<uint8_t> gm_written;  // the bytes of the recorded plain writes (GmAccess::data)
  bool check_sync = false;  // model AscendC's pipe synchronisation rules (sync_check.h)
  // Bounds model. Strict (false, the default): every access stays inside the buffer it was obtained from
  // and every allocation inside the UB, as CANN's CPU-debug build asserts. Device (true): only what faults
  // or corrupts on the NPU fails (UB accesses past the physical UB, GM writes outside an allocation); an
  // over-allocated TPipe, a UB operand running into a neighbouring buffer and a GM read past an argument's
  // allocation (its poisoned guard) are recorded in counters.findings, and the result decides.
  bool device_bounds = false;
  bool pad_value_set = false;  // SetPadValue: fill for DataCopyPad paddings when isPad is false
  uint64_t pad_value_bits = 0;
  uint64_t tiling_key = 0;  // TILING_KEY_IS(k): the key the op's host tiling function set
  uint64_t cycles = 0;      // GetSystemCycle(): a counter of calls, not time
  uint8_t* sys_workspace = nullptr;  // SetSysWorkspace(workspace): what GetSysWorkSpacePtr returns in this block
  uint32_t phase = 0;       // SyncAll calls the running block has passed (its sync epoch)
  // SyncAll: set by RunBlocks while blocks run as cooperating threads (launch.h); null outside a launch.
  void (*barrier)(const char* api) = nullptr;
  // Software SyncAll over a subset: yield until `ready` holds (launch.h); null outside a launch.
  void (*wait_until)(const char* api, bool (*ready)(void*), void* ctx) = nullptr;
  // Happens-before between blocks, as vector clocks: clocks[b][e][i] = how many sync epochs of block i are
  // known to precede epoch e of block b. A full barrier makes every block know every other; a SyncAll over
  // a subset only its participants.
  std::vector<std::vector<std::vector<uint32_t>>> clocks;
  // arrivals[b][sync] = the epoch in which block b arrived at that sync (a barrier, or a software
  // SyncAll generation), so the blocks leaving it can merge the arrivals' clocks.
  std::vector<std::map<uint64_t, uint32_t>> arrivals;
  bool Before(const GmAccess& a, const GmAccess& c) const {
    return c.block < clocks.size() && c.phase < clocks[c.block].size() && clocks[c.block][c.phase][a.block] > a.phase;
  }
  // Block b leaves its epoch knowing `known` (the clocks of the blocks it synchronised with).
  void Advance(uint32_t b, std::vector<uint32_t> known) {
    known[b] = static_cast<uint32_t>(clocks[b].size());
    clocks[b].push_back(std::move(known));
    if (b == block_idx) phase = static_cast<uint32_t>(clocks[b].size() - 1);
  }
  // What the others learn from block b arriving at a sync in epoch e: its clock, and that e precedes.
  std::vector<uint32_t> ArrivalClock(uint32_t b, uint32_t e) const {
    std::vector<uint32_t> v = clocks[b][e];
    v[b] = e + 1;
    return v;
  }

  // Checks can also be switched from the environment (useful with ICPU_RUN_KF host programs).
  Runtime() {
    if (const char* v = std::getenv("TREX_EMU_CHECK_SYNC")) check_sync = v[0] == '1';
    if (const char* v = std::getenv("TREX_EMU_CHECK_RACES")) check_races = v[0] != '0';
  }
  void BeginBlock(uint32_t idx, uint32_t num) {
    block_idx = idx;
    block_num = num;
    const size_t storage = size_t{UbAddressSpace()} + 64u;
    if (ub_storage.size() != storage) ub_storage.assign(storage, 0);
    // 64-byte aligned base so that UB offsets and host addresses agree on 32-byte alignment.
    uintptr_t p = reinterpret_cast<uintptr_t>(ub_storage.data());
    ub = reinterpret_cast<uint8_t*>((p + 63u) & ~uintptr_t{63});
    std::fill(ub, ub + UbAddressSpace(), static_cast<uint8_t>(ub_fill));
    buffers.clear();
    current_pipe = nullptr;
    std::fill(&flags[0][0], &flags[0][0] + sizeof(flags) / sizeof(int), 0);
    std::fill(cmp_mask, cmp_mask + sizeof(cmp_mask), 0);
    mask_counter_mode = false;
    mask_bits[0] = mask_bits[1] = ~uint64_t{0};
    max_min_cnt = 0;
    max_min_set = false;
    acc_val = 0;
    acc_set = false;
    task_sync_calls = 0;
    atomic_type = 0;
    pad_value_set = false;
    sys_workspace = nullptr;
    phase = 0;
    counters.blocks_run += 1;
  }
  void EndBlock() {
    buffers.clear();
    current_pipe = nullptr;
  }
  // Bytes of host storage behind `ub`: the UB, or under device bounds the addresses a TPipe may hand out.
  uint32_t UbAddressSpace() const { return device_bounds ? ub_bytes * kUbAddressSpaceFactor : ub_bytes; }
  uint32_t UbOffset(const void* p) const {
    return static_cast<uint32_t>(static_cast<const uint8_t*>(p) - ub);
  }
};

inline Runtime& RT() {
  static Runtime rt;
  return rt;
}

inline void NoteUbAccess(const char* api, const char* operand, const void* lo, const void* hi);  // sync_check.h
inline void EndInstr();  // sync_check.h: the current instruction is complete

// A max/min reduction's result into MAX_MIN_CNT (asc-devkit impl/basic_api/dav_c220/
// kernel_operator_vec_reduce_impl.h, GetReduceMaxMinCountImpl: value = the low 16/32 bits, index = bits 32..63).
template <class T>
inline void SetMaxMinCnt(T value, uint32_t index) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  RT().max_min_cnt = bits | (uint64_t{index} << 32);
  RT().max_min_set = true;
}

inline void NoteFinding(const char* kind, const std::string& where) { RT().counters.findings[std::string(kind) + ": " + where] += 1; }

inline std::string BlockTag() {
  std::ostringstream os;
  os << "block " << RT().block_idx << "/" << RT().block_num;
  return os.str();
}

inline void CountRepeats(const char* api, uint64_t repeats) {
  auto& c = RT().counters;
  c.vector_repeats[api] += repeats;
  c.vector_calls[api] += 1;
  EndInstr();
}

// Repeats of a count-form instruction: ceil(count * sizeof(wider type) / 256).
inline uint64_t CountFormRepeats(uint64_t count, size_t wider_size) {
  return (count * wider_size + kRepeatBytes - 1) / kRepeatBytes;
}

// `data`: the bytes a plain write stores (null where not known), kept so that blocks writing identical
// bytes to the same GM are not reported as racing (FindBlockRace).
inline void RecordGm(uintptr_t b, uintptr_t e, GmKind kind, const void* data = nullptr) {
  Runtime& rt = RT();
  if (!rt.check_races || b == e) return;
  if (kind != GmKind::kWrite) data = nullptr;
  auto& v = rt.gm_accesses;
  auto& w = rt.gm_written;
  const uint8_t* d = static_cast<const uint8_t*>(data);
  if (!v.empty()) {  // merge with the previous access when it continues it (row-by-row loops)
    GmAccess& last = v.back();
    // the last access's bytes, if any, are the tail of gm_written: appending keeps them contiguous
    const bool same_data_kind = (last.data == GmAccess::kNoData) == (d == nullptr);
    if (last.block == rt.block_idx && last.kind == kind && last.phase == rt.phase && last.end == b && same_data_kind) {
      last.end = e;
      if (d != nullptr) w.insert(w.end(), d, d + (e - b));
      return;
    }
  }
  uint64_t off = GmAccess::kNoData;
  if (d != nullptr) {
    off = w.size();
    w.insert(w.end(), d, d + (e - b));
  }
  v.push_back(GmAccess{b, e, rt.block_idx, kind, rt.phase, off, static_cast<uint32_t>(v.size())});
}

// A kernel's `static const __gm__` data (cann-ops diag_v2's assist matrix, lin_space's table) lives in the
// kernel binary's GM image on the NPU, where reading it is legal; here it is in the loaded kernel library
// (or ICPU_RUN_KF program), the object this function is compiled into.
inline bool InKernelImage(const void* p, uint64_t bytes) {
  Dl_info self{}, lo{}, hi{};
  if (dladdr(reinterpret_cast<const void*>(&InKernelImage), &self) == 0) return false;
  const char* c = static_cast<const char*>(p);
  return dladdr(c, &lo) != 0 && dladdr(c + bytes - 1, &hi) != 0 && lo.dli_fbase == self.dli_fbase &&
         hi.dli_fbase == self.dli_fbase;
}

// ---- GM bounds (only when the launcher registered the argument buffers) and access recording ----
// `data` (writes only): the source bytes the write stores, for the race check's identical-bytes rule.
inline void CheckGm(const char* api, const void* p, uint64_t bytes, bool write = false, const void* data = nullptr) {
  const auto& regions = RT().gm_regions;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (bytes == 0) return;
  RecordGm(a, a + bytes, !write ? GmKind::kRead : (RT().atomic_type ? GmKind::kAtomicWrite : GmKind::kWrite), data);
  if (regions.empty()) return;
  for (const auto& r : regions)
    if (a >= r.begin && a + bytes <= r.end) return;
  if (!write && InKernelImage(p, bytes)) return;  // a kernel's own `static const __gm__` table
  if (RT().device_bounds && !write)
    for (const auto& r : regions)
      if (a >= r.begin && a + bytes <= r.end + r.guard) {  // the NPU reads what follows; here: poison
        NoteFinding(kFindingGmOverread, std::string(api) + " of " + r.name);
        return;
      }
  std::ostringstream os;
  os << api << " touches GM bytes [0x" << std::hex << a << ", 0x" << a + bytes << std::dec << ") ("
     << bytes << " B) outside every kernel argument buffer:";
  for (const auto& r : regions) {
    os << " " << r.name << "=[0x" << std::hex << r.begin << ", 0x" << r.end << std::dec << ")";
    if (a >= r.begin && a < r.end) os << " (starts inside " << r.name << ", overruns it by " << (a + bytes - r.end) << " B)";
  }
  if (RT().device_bounds)
    os << (write ? " (device bounds: a write past an allocation corrupts its neighbour)"
                 : " (device bounds: past the poisoned guard after the allocation too)");
  Fail(os.str());
}

inline std::string DescribeGm(uintptr_t b, uintptr_t e) {
  std::ostringstream os;
  for (const auto& r : RT().gm_regions)
    if (b >= r.begin && b < r.end) {
      os << "bytes [" << (b - r.begin) << ", " << (e - r.begin) << ") of " << r.name;
      return os.str();
    }
  os << "GM bytes [0x" << std::hex << b << ", 0x" << e << ")";
  return os.str();
}

// Blocks run in parallel on the NPU. Two blocks touching the same GM bytes where at least one
// writes (atomic adds among themselves excepted) is a race the sequential emulation would hide.
// Plain writes of identical bytes are not: whichever lands last, GM holds the same bytes (cann-ops
// sasum/scasum zero their one output from every block before a SyncAll; gather and reshape write the
// whole output from every block).
inline bool SameBytesWritten(const Runtime& rt, const GmAccess& a, const GmAccess& c, uintptr_t lo, uintptr_t hi) {
  if (a.kind != GmKind::kWrite || c.kind != GmKind::kWrite) return false;
  if (a.data == GmAccess::kNoData || c.data == GmAccess::kNoData) return false;
  return std::memcmp(rt.gm_written.data() + a.data + (lo - a.begin), rt.gm_written.data() + c.data + (lo - c.begin),
                     hi - lo) == 0;
}

// A plain write `a` of bytes [lo, hi) that a later plain write of the same block covers whole: that block
// leaves the later write's bytes there, and FindBlockRace compares that write on its own, so `a` needs no
// comparison with other blocks' writes (reads still get it). A covering write holds byte lo, so it is in
// the sweep's active set or starts at lo (v[from..] with begin == lo).
inline bool SupersededInBlock(const GmAccess& a, uintptr_t lo, uintptr_t hi, const std::vector<GmAccess>& active,
                              const std::vector<GmAccess>& v, size_t from) {
  if (a.kind != GmKind::kWrite) return false;
  auto covers = [&](const GmAccess& w) {
    return w.block == a.block && w.kind == GmKind::kWrite && w.seq > a.seq && w.begin <= lo && w.end >= hi;
  };
  if (std::any_of(active.begin(), active.end(), covers)) return true;
  for (size_t j = from; j < v.size() && v[j].begin == lo; ++j)
    if (covers(v[j])) return true;
  return false;
}

inline std::string FindBlockRace() {
  const Runtime& rt = RT();
  auto rt_before = [&rt](const GmAccess& x, const GmAccess& y) { return rt.Before(x, y); };
  std::vector<GmAccess> v = rt.gm_accesses;
  std::sort(v.begin(), v.end(), [](const GmAccess& x, const GmAccess& y) { return x.begin < y.begin; });
  static const char* const kVerb[] = {"reads", "writes", "atomically adds to"};
  std::vector<GmAccess> active;
  for (size_t ci = 0; ci < v.size(); ++ci) {
    const GmAccess& cur = v[ci];
    active.erase(std::remove_if(active.begin(), active.end(), [&](const GmAccess& a) { return a.end <= cur.begin; }),
                 active.end());
    for (const GmAccess& a : active) {
      if (a.block == cur.block || rt_before(a, cur) || rt_before(cur, a)) continue;  // one block, or ordered by SyncAll
      const bool both_read = a.kind == GmKind::kRead && cur.kind == GmKind::kRead;
      const bool both_atomic = a.kind == GmKind::kAtomicWrite && cur.kind == GmKind::kAtomicWrite;
      if (both_read || both_atomic) continue;
      const uintptr_t lo = cur.begin, hi = std::min(a.end, cur.end);
      if (SameBytesWritten(rt, a, cur, lo, hi)) continue;
      if (a.kind == GmKind::kWrite && cur.kind == GmKind::kWrite &&
          (SupersededInBlock(a, lo, hi, active, v, ci) || SupersededInBlock(cur, lo, hi, active, v, ci)))
        continue;
      std::ostringstream os;
      os << "cross-block GM race: block " << a.block << " " << kVerb[static_cast<int>(a.kind)] << " and block "
         << cur.block << " " << kVerb[static_cast<int>(cur.kind)] << " " << DescribeGm(lo, hi)
         << "; blocks run in parallel on the NPU (the emulator runs them in turn and would hide this). "
            "Give each block a disjoint range, or use SetAtomicAdd for accumulation";
      return os.str();
    }
    active.push_back(cur);
  }
  return std::string();
}

// ---- UB checks ----

inline void CheckUbRange(const char* api, const char* operand, const BufferInfo* buf, const void* lo,
                         const void* hi) {
  if (buf == nullptr) Fail(api, ": ", operand, " is a LocalTensor that was never obtained from a TQue/TBuf");
  const uint8_t* l = static_cast<const uint8_t*>(lo);
  const uint8_t* h = static_cast<const uint8_t*>(hi);
  const Runtime& rt = RT();
  const bool in_buffer = l >= buf->begin && h <= buf->end;
  const bool in_ub = l >= rt.ub && h <= rt.ub + rt.ub_bytes;  // device bounds: a buffer may run past it
  if (!in_buffer || !in_ub) {
    if (rt.device_bounds && in_ub) {
      NoteFinding(kFindingUbBufferOverrun, std::string(api) + " " + operand + " past " + buf->name);
    } else if (in_buffer) {
      Fail(api, ": ", operand, " accesses UB bytes [", rt.UbOffset(l), ", ", rt.UbOffset(h), ") of its buffer ",
           buf->name, " = [", rt.UbOffset(buf->begin), ", ", rt.UbOffset(buf->end), "), past the end of the ",
           rt.ub_bytes, " B unified buffer, which faults on the NPU (the TPipe handed out more than the UB holds)");
    } else {
      Fail(api, ": ", operand, " accesses UB bytes [", rt.UbOffset(l), ", ", rt.UbOffset(h), ") outside its buffer ",
           buf->name, " = [", rt.UbOffset(buf->begin), ", ", rt.UbOffset(buf->end), ") (", buf->end - buf->begin,
           " B)", rt.device_bounds ? "; device bounds: past the end of the " : "",
           rt.device_bounds ? std::to_string(rt.ub_bytes) + " B unified buffer, which faults on the NPU" : "");
    }
  }
  if (rt.check_sync && lo != hi) NoteUbAccess(api, operand, lo, hi);
}

inline void CheckUbAlign(const char* api, const char* operand, const void* p, uint32_t align = kUbAlign) {
  const uint32_t off = RT().UbOffset(p);
  if (off % align != 0)
    Fail(api, ": ", operand, " starts at UB offset ", off, ", which is not ", align,
         "-byte aligned (AscendC requires ", align, "-byte aligned UB operands; offset the tensor by a multiple of ",
         align, " bytes)");
}

inline void CheckRepeat(const char* api, int repeat) {
  if (repeat < 0 || repeat > kMaxRepeat)
    Fail(api, ": repeatTimes=", repeat, " is outside [0, 255] (the instruction field is 8 bits; on the NPU ",
         "it would silently wrap to ", (repeat & 0xFF), "); split the call into chunks of at most 255 repeats");
}

inline void CheckCount(const char* api, int64_t count) {
  if (count < 0) Fail(api, ": count=", count, " is negative");
}

}  // namespace trex_emu
