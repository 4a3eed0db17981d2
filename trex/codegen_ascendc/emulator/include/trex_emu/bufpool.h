// trex AscendC emulator: TBufPool — UB resource pools carved from a TPipe (asc-devkit docs/zh/api/SIMD-API/
// 基础API/资源管理/TBufPool/: TBufPool简介, TBufPool构造函数, InitBufPool-55, InitBuffer-56, Reset-57;
// TPipe/InitBufPool.md).
//
//  * pipe.InitBufPool(pool, len) reserves len bytes (rounded up to 32) of the pipe's UB for the pool;
//    pipe.InitBufPool(pool, len, share) and pool.InitBufPool(sub, len, share) make a pool that reuses the start
//    address of `share` (len <= share's length); pool.InitBufPool(sub, len) carves a sub-pool from the
//    pool's free space.
//  * pool.InitBuffer(que, num, len) / pool.InitBuffer(tbuf, len) hand out the pool's memory like
//    TPipe::InitBuffer (32-byte rounded, bounds-checked, the overflow message names the pool). A pool hands
//    out at most bufIDSize buffers (template argument, default 4, at most 16: the handles live in the pool's
//    buf_[bufIDSize]). A sub-pool has handles of its own and takes none of the parent's (asc-devkit
//    impl/basic_api/kernel_tbufpool_impl.h TBufPool::InitBufPool, the arch-2201 code the emulator follows; only
//    Ascend 950's dav_3510 TBufPoolExtImpl adds the sub-pool's bufIDSize to the parent's curBufSize_).
//  * pool.Reset() ends the pool's stage: its buffers stay assigned (the page: usable again after switching
//    back) but their contents are invalid — here overwritten with the UB fill byte. Every TQue buffer of the
//    pool must be free at that point (AllocTensor/FreeTensor and EnQue/DeQue paired, constraint 4), and a
//    pool may hand out buffers only while the pools sharing its memory have been Reset since they did
//    (constraint 2: switching pools needs Reset of the finished one; otherwise the two stages stomp on each
//    other's data). Not checked: using a Reset pool's buffers again while a pool sharing its memory is
//    active (the emulator tracks hand-outs, not every access).
#pragma once
#include <cstring>
#include <string>
#include <vector>

#include "trex_emu/pipe.h"

namespace trex_emu {

class BufPoolBase {
 public:
  std::string name_;
  uint8_t* begin_ = nullptr;
  uint32_t len_ = 0, used_ = 0;
  uint32_t id_limit_ = 4, ids_used_ = 0;
  bool dirty_ = false;                   // buffers handed out since the last Reset
  std::vector<BufPoolBase*> partners_;   // pools that share (part of) this pool's memory
  std::vector<QueBase*> ques_;

  void Require(const char* api) const {
    if (begin_ == nullptr)
      Fail(api, " on a TBufPool that was never given memory: call pipe.InitBufPool(pool, len) (or "
                "parent.InitBufPool(pool, len)) first");
  }
  // The pool's first `len` bytes at `at` (a fresh region, or another pool's start when sharing).
  void Place(const std::string& name, uint8_t* at, uint32_t len, uint32_t id_limit) {
    name_ = name;
    begin_ = at;
    len_ = (len + kUbAlign - 1) / kUbAlign * kUbAlign;
    used_ = 0;
    id_limit_ = id_limit;
    ids_used_ = 0;
    dirty_ = false;
    partners_.clear();
    ques_.clear();
  }
  void ShareWith(BufPoolBase& other) {
    std::vector<BufPoolBase*> group = other.partners_;
    group.push_back(&other);
    for (BufPoolBase* p : group) {
      partners_.push_back(p);
      p->partners_.push_back(this);
    }
  }
  // Hands out `bytes` (rounded to 32) for buffer `name`, using `ids` of the pool's buffer ids.
  uint8_t* Take(const std::string& name, uint32_t bytes, uint32_t ids, const char* file, int line, const char* call,
                const char* api) {
    Require(api);
    for (const BufPoolBase* p : partners_)
      if (p->dirty_)
        Fail(file, ":", line, ": ", api, "(", call, ") hands out memory of TBufPool '", name_, "' while TBufPool '",
             p->name_, "', which shares that UB, still holds buffers of its stage; call ", p->name_,
             ".Reset() first (TBufPool: switching pools needs Reset of the finished one)");
    if (ids_used_ + ids > id_limit_)
      Fail(file, ":", line, ": ", api, "(", call, ") needs ", ids, " buffer id(s) but TBufPool '", name_, "' has ",
           id_limit_ - ids_used_, " of its bufIDSize = ", id_limit_, " left; declare it with a larger bufIDSize (<= 16)");
    const uint32_t rounded = (bytes + kUbAlign - 1) / kUbAlign * kUbAlign;
    if (uint64_t{used_} + rounded > len_)
      Fail("UB overflow: ", file, ":", line, ": ", api, "(", call, ") asks for ", rounded, " B for '", name,
           "', but only ", len_ - used_, " B of the ", len_, " B TBufPool '", name_,
           "' remain; enlarge the pool (InitBufPool) or shrink the buffer");
    uint8_t* at = begin_ + used_;
    used_ += rounded;
    ids_used_ += ids;
    dirty_ = true;
    return at;
  }
  void ResetPool() {
    Require("TBufPool::Reset");
    for (const QueBase* q : ques_)
      for (size_t i = 0; i < q->state_.size(); ++i)
        if (q->state_[i] != BufState::kFree)
          Fail("TBufPool '", name_, "'.Reset(): buffer ", i, " of ", q->Describe(), " is still ",
               q->state_[i] == BufState::kQueued ? "enqueued" : "allocated",
               "; AllocTensor/FreeTensor and EnQue/DeQue must be paired before switching pools");
    std::memset(begin_, RT().ub_fill, len_);  // the stage's data is invalid after Reset
    dirty_ = false;
  }
};

}  // namespace trex_emu

namespace AscendC {

template <TPosition pos, uint32_t bufIDSize = 4>
class TBufPool : public trex_emu::BufPoolBase {
  static_assert(pos == TPosition::VECIN || pos == TPosition::VECOUT || pos == TPosition::VECCALC,
                "TBufPool: only Unified Buffer positions (VECIN/VECOUT/VECCALC) are emulated; L1 (A1/B1/C1) is not");
  static_assert(bufIDSize >= 1 && bufIDSize <= 16, "TBufPool: bufIDSize must be in [1, 16]");

 public:
  static constexpr TPosition poolPos = pos;
  static constexpr uint32_t kBufIDSize = bufIDSize;
  TBufPool() = default;

  // The InitBuffer / InitBufPool macros' form (the call site first; see trex_emu::InitSite in pipe.h).
  template <class... A>
  bool InitBufferAt(const trex_emu::InitSite* at, A&&... args) {
    return InitBufferAt(at->File(), at->Line(), at->Call(), std::forward<A>(args)...);
  }
  template <class... A>
  bool InitBufPoolAt(const trex_emu::InitSite* at, A&&... args) {
    return InitBufPoolAt(at->File(), at->Line(), at->Call(), std::forward<A>(args)...);
  }
#ifdef TREX_EMU_NO_INITBUFFER_MACRO
  template <class... A>
  bool InitBuffer(A&&... args) { return InitBufferAt("?", 0, "", std::forward<A>(args)...); }
  template <class... A>
  bool InitBufPool(A&&... args) { return InitBufPoolAt("?", 0, "", std::forward<A>(args)...); }
#endif

  template <TPosition P, int32_t D, auto M>
  bool InitBufferAt(const char* file, int line, const char* call, TQue<P, D, M>& que, uint8_t num, uint32_t len) {
    return InitQue(file, line, call, que, num, len);
  }
  template <TPosition S, TPosition D, int32_t DEPTH, auto M>
  bool InitBufferAt(const char* file, int line, const char* call, TQueBind<S, D, DEPTH, M>& que, uint8_t num,
                    uint32_t len) {
    return InitQue(file, line, call, que, num, len);
  }
  template <TPosition P>
  bool InitBufferAt(const char* file, int line, const char* call, TBuf<P>& buf, uint32_t len) {
    const std::string name = trex_emu::FirstArgName(call);
    uint8_t* at = Take(name, len, 1, file, line, call, "TBufPool::InitBuffer");
    trex_emu::Runtime& rt = trex_emu::RT();
    rt.buffers.push_back(trex_emu::BufferInfo{name, at, at + (len + 31u) / 32u * 32u, static_cast<int>(P)});
    buf.name_ = name;
    buf.bytes_ = len;
    buf.buf_ = &rt.buffers.back();
    return true;
  }
  // Sub-pools: a fresh region of this pool, or one sharing `share`'s start address.
  template <class Sub>
  bool InitBufPoolAt(const char* file, int line, const char* call, Sub& sub, uint32_t len) {
    // asc-devkit's EXTERN_IMPL_BUFPOOL befriends TPipe, TQue, TQueBind and TBuf, not TBufPool: there too only a
    // TPipe can give a user-defined pool its memory.
    static_assert(!trex_emu::IsUserPool<Sub>::value,
                  "TBufPool::InitBufPool of a user-defined (EXTERN_IMPL_BUFPOOL) pool: use TPipe::InitBufPool");
    uint8_t* at = Take(trex_emu::FirstArgName(call), len, 0, file, line, call, "TBufPool::InitBufPool");
    sub.Place(trex_emu::FirstArgName(call), at, len, Sub::kBufIDSize);
    return true;
  }
  template <class Sub, class Share>
  bool InitBufPoolAt(const char* file, int line, const char* call, Sub& sub, uint32_t len, Share& share) {
    static_assert(!trex_emu::IsUserPool<Sub>::value && !trex_emu::IsUserPool<Share>::value,
                  "TBufPool::InitBufPool with a user-defined (EXTERN_IMPL_BUFPOOL) pool is not emulated");
    Require("TBufPool::InitBufPool");
    return PlaceShared(file, line, call, sub, len, share);
  }
  void Reset() { ResetPool(); }

  // Shared by TPipe::InitBufPool and TBufPool::InitBufPool: sub reuses share's start address.
  template <class Sub, class Share>
  static bool PlaceShared(const char* file, int line, const char* call, Sub& sub, uint32_t len, Share& share) {
    share.Require("InitBufPool (the shared pool)");
    const uint32_t rounded = (len + 31u) / 32u * 32u;
    if (rounded > share.len_)
      trex_emu::Fail(file, ":", line, ": InitBufPool(", call, "): ", rounded, " B exceed the ", share.len_,
                     " B of the shared TBufPool '", share.name_, "' (the length must be <= the reused pool's)");
    sub.Place(trex_emu::FirstArgName(call), share.begin_, len, Sub::kBufIDSize);
    sub.ShareWith(share);
    return true;
  }

 private:
  template <class Q>
  bool InitQue(const char* file, int line, const char* call, Q& que, uint8_t num, uint32_t len) {
    const std::string name = trex_emu::FirstArgName(call);
    if (num == 0) trex_emu::Fail(file, ":", line, ": ", name_, ".InitBuffer(", call, "): buffer count must be >= 1");
    const uint32_t rounded = (len + 31u) / 32u * 32u;
    uint8_t* at = Take(name, num * rounded, num, file, line, call, "TBufPool::InitBuffer");
    que.Reset();
    que.name_ = name;
    que.buf_bytes_ = len;
    trex_emu::Runtime& rt = trex_emu::RT();
    for (int i = 0; i < num; ++i) {
      rt.buffers.push_back(trex_emu::BufferInfo{name + "[" + std::to_string(i) + "]", at + i * rounded,
                                                at + (i + 1) * rounded, static_cast<int>(que.position_)});
      que.bufs_.push_back(&rt.buffers.back());
      que.state_.push_back(trex_emu::BufState::kFree);
    }
    ques_.push_back(&que);
    return true;
  }
};

}  // namespace AscendC

// User-defined pools (asc-devkit include/basic_api/kernel_tpipe.h EXTERN_IMPL_BUFPOOL, 自定义TBufPool docs): a
// kernel's class gets the pool members asc-devkit's macro defines, over the TBufPoolImpl handle block below, and
// hands out the pool's memory in its own InitBuffer with InitStartBufHandle / InitBufHandle. What the emulator
// adds: TPipe::InitBufPool records the pool's region; InitBufHandle checks that the handle is one of the pool's
// BUFID_SIZE handles and that the buffer lies inside the pool (else a UB-overflow error naming the buffer and
// the InitBuffer call), and gives the queue's buffer that UB; Reset overwrites the pool's UB with the fill byte
// (the page: the pool and its buffers may not be used after Reset) before it clears the pool as asc-devkit does.
namespace AscendC {

template <uint32_t bufIDSize = 4>
struct TBufPoolImpl {
  TBufType buf_[bufIDSize] = {};
  uint32_t startAddr_ = 0;
  uint32_t maxAddr_ = 0;
  uint32_t maxLen_ = 0;
  uint8_t curBufSize_ = 0;
  uint8_t isReset_ = 0;
  std::string name_ = "<pool>";  // the emulator's: the pool's name in the InitBufPool call

  void Place(const std::string& name, uint32_t start, uint32_t len) {
    name_ = name;
    startAddr_ = maxAddr_ = start;
    maxLen_ = (len + trex_emu::kUbAlign - 1) / trex_emu::kUbAlign * trex_emu::kUbAlign;
  }
  template <class Share>
  void PlaceShared(const char* file, int line, const char* call, const std::string& name, uint32_t len,
                   const Share& share) {
    const uint32_t rounded = (len + trex_emu::kUbAlign - 1) / trex_emu::kUbAlign * trex_emu::kUbAlign;
    if (rounded > share.maxLen_)
      trex_emu::Fail(file, ":", line, ": InitBufPool(", call, "): ", rounded, " B exceed the ", share.maxLen_,
                     " B of the shared pool '", share.name_, "' (the length must be <= the reused pool's)");
    name_ = name;
    startAddr_ = maxAddr_ = share.startAddr_;
    maxLen_ = share.maxLen_;  // asc-devkit: the share's length, not len
  }
  // InitBufHandle: the buffer `buf` at handle h gets UB bytes [addr, addr + len) (len 32-byte rounded).
  uint8_t* Hand(TBufHandle h, uint32_t addr, uint32_t len, const std::string& buf, int free_evt) {
    const char* file = trex_emu::SiteFile();
    const int line = trex_emu::SiteLine();
    const char* call = trex_emu::SiteCall();
    auto* p = reinterpret_cast<TBufType*>(h);
    if (p < buf_ || p >= buf_ + bufIDSize)
      trex_emu::Fail(file, ":", line, ": InitBuffer(", call, "): the handle of '", buf, "' is not one of the ",
                     bufIDSize, " handles of pool '", name_, "' (GetBufHandle(offset) needs offset < BUFID_SIZE = ",
                     bufIDSize, ")");
    if (maxLen_ == 0)
      trex_emu::Fail(file, ":", line, ": InitBuffer(", call, ") hands out '", buf, "' from pool '", name_,
                     "', which has no memory: TPipe::InitBufPool(pool, len) first (Reset clears the pool)");
    if (addr < startAddr_ || uint64_t{addr} + len > uint64_t{startAddr_} + maxLen_)
      trex_emu::Fail("UB overflow: ", file, ":", line, ": InitBuffer(", call, ") asks for ", len, " B for '", buf,
                     "' at UB offset ", addr, ", but pool '", name_, "' spans UB [", startAddr_, ", ",
                     startAddr_ + maxLen_, ") (", maxLen_, " B); enlarge the pool (InitBufPool) or shrink the buffer");
    p->state = TBufState::FREE;
    p->freeBufEvt = free_evt < 0 ? HardEvent::MAX : static_cast<HardEvent>(free_evt);
    p->enQueEvtID = INVALID_TEVENTID;
    p->freeBufEvtID = INVALID_TEVENTID;
    p->address = addr;
    p->dataLen = len;
    p->usertag = -1;
    return trex_emu::RT().ub + addr;
  }
  // Reset / the destructor: the pool's data is invalid from here on.
  void Invalidate() {
    if (maxLen_ != 0) std::memset(trex_emu::RT().ub + startAddr_, trex_emu::RT().ub_fill, maxLen_);
  }
};

}  // namespace AscendC

// The members asc-devkit's EXTERN_IMPL_BUFPOOL defines (the variant for architectures other than 3510), with
// the same semantics: Init/ResetPool clear the pool, GetBufHandle(offset) is the handle buf_ + offset,
// Set/GetCurAddr the next free UB address, Set/GetCurBufSize the handles used; Reset clears each handle's
// pending free event (the emulator does not model event waits) and the pool.
#define EXTERN_IMPL_BUFPOOL(EXT_BUFPOOL, POSITION, BUFID_SIZE)                                             \
 public:                                                                                                   \
  static constexpr AscendC::TPosition poolPos = POSITION;                                                  \
  static constexpr int bufIDSize = BUFID_SIZE;                                                             \
  static constexpr uint32_t kBufIDSize = BUFID_SIZE;                                                       \
  static constexpr bool isTbufPool = true;                                                                 \
  static constexpr bool trexEmuUserPool = true;                                                            \
  static_assert(POSITION == AscendC::TPosition::VECIN || POSITION == AscendC::TPosition::VECOUT ||         \
                    POSITION == AscendC::TPosition::VECCALC,                                               \
                "EXTERN_IMPL_BUFPOOL: only Unified Buffer positions (VECIN/VECOUT/VECCALC) are emulated");  \
  ~EXT_BUFPOOL() { Reset(); }                                                                              \
  void Reset() {                                                                                           \
    auto ptr = this->tBufPoolImpl.buf_;                                                                    \
    for (uint8_t i = 0; i < this->tBufPoolImpl.curBufSize_ && i < bufIDSize; i++, ptr++)                  \
      ptr->freeBufEvtID = AscendC::INVALID_TEVENTID;                                                       \
    this->tBufPoolImpl.Invalidate();                                                                       \
    ResetPool();                                                                                           \
  }                                                                                                        \
  void Init() {                                                                                            \
    ResetPool();                                                                                           \
    tBufPoolImpl.isReset_ = true;                                                                          \
  }                                                                                                        \
  AscendC::TBufHandle GetBufHandle(uint8_t offset) {                                                       \
    return reinterpret_cast<AscendC::TBufHandle>(this->tBufPoolImpl.buf_ + offset);                        \
  }                                                                                                        \
  void SetCurAddr(uint32_t curAddr) { this->tBufPoolImpl.maxAddr_ = curAddr; }                             \
  uint32_t GetCurAddr() { return this->tBufPoolImpl.maxAddr_; }                                            \
  void SetCurBufSize(uint8_t curBufSize) { this->tBufPoolImpl.curBufSize_ = curBufSize; }                  \
  uint8_t GetCurBufSize() { return this->tBufPoolImpl.curBufSize_; }                                       \
                                                                                                           \
 protected:                                                                                                \
  AscendC::TBufPoolImpl<BUFID_SIZE> tBufPoolImpl;                                                          \
                                                                                                           \
 private:                                                                                                  \
  void ResetPool() {                                                                                       \
    tBufPoolImpl.curBufSize_ = 0;                                                                          \
    tBufPoolImpl.startAddr_ = 0;                                                                           \
    tBufPoolImpl.maxAddr_ = 0;                                                                             \
    tBufPoolImpl.maxLen_ = 0;                                                                              \
  }                                                                                                        \
                                                                                                           \
 private:                                                                                                  \
  friend class AscendC::TPipe;                                                                             \
  template <AscendC::TPosition src, AscendC::TPosition dst, int32_t depth, auto mask>                      \
  friend class AscendC::TQueBind;                                                                          \
  template <AscendC::TPosition bufPos, int32_t depth, auto mask>                                           \
  friend class AscendC::TQue;                                                                              \
  template <AscendC::TPosition bufPos>                                                                     \
  friend class AscendC::TBuf

#ifndef TREX_EMU_NO_INITBUFFER_MACRO
#define InitBufPool(...)                                                                                  \
  InitBufPoolAt(trex_emu::InitSite(trex_emu_site_)[trex_emu::CallText{__FILE__, __LINE__, #__VA_ARGS__}] \
                    __VA_OPT__(, ) __VA_ARGS__)
#endif
