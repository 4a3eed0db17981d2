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
//    out at most bufIDSize buffers (template argument, default 4, at most 16); a non-shared sub-pool takes
//    its bufIDSize from the parent's remaining ids, a shared one may not exceed the parent's bufIDSize.
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
    if (Sub::kBufIDSize > id_limit_ - ids_used_)
      trex_emu::Fail(file, ":", line, ": InitBufPool(", call, "): the sub-pool's bufIDSize ", Sub::kBufIDSize,
                     " exceeds the ", id_limit_ - ids_used_, " buffer ids TBufPool '", name_, "' has left");
    uint8_t* at = Take(trex_emu::FirstArgName(call), len, Sub::kBufIDSize, file, line, call, "TBufPool::InitBufPool");
    sub.Place(trex_emu::FirstArgName(call), at, len, Sub::kBufIDSize);
    return true;
  }
  template <class Sub, class Share>
  bool InitBufPoolAt(const char* file, int line, const char* call, Sub& sub, uint32_t len, Share& share) {
    Require("TBufPool::InitBufPool");
    if (Sub::kBufIDSize > id_limit_)
      trex_emu::Fail(file, ":", line, ": InitBufPool(", call, "): the shared sub-pool's bufIDSize ", Sub::kBufIDSize,
                     " exceeds TBufPool '", name_, "''s bufIDSize ", id_limit_);
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

#ifndef TREX_EMU_NO_INITBUFFER_MACRO
#define InitBufPool(...) InitBufPoolAt(__FILE__, __LINE__, #__VA_ARGS__, __VA_ARGS__)
#endif
