// trex tests (written for trex): kernel-launch kernel for TransData (adv_transdata.h). Each block converts its own
// tensor: src at block * srcSize, dst at block * dstSize (dst first loaded from GM, poisoned by the test). NCDHW
// tensors are in their UB layout [n][c][d][padHw]. mode: 1 NCDHW->FRACTAL_Z_3D, 2 FRACTAL_Z_3D->NCDHW,
// 3 NCDHW->NDC1HWC0, 4 NDC1HWC0->NCDHW. tmpMode: 0 the form without sharedTmpBuffer, 1 a sharedTmpBuffer of
// GetTransDataMaxMinTmpSize's size, 2 one 32 B short. bad: 1 gives the packed layout c1 + 1, 2 gives it d + 1.
#include "kernel_operator.h"
#include "tiling/tiling_api.h"
using namespace AscendC;

constexpr TransDataConfig kToFz = {DataFormat::NCDHW, DataFormat::FRACTAL_Z_3D};
constexpr TransDataConfig kFromFz = {DataFormat::FRACTAL_Z_3D, DataFormat::NCDHW};
constexpr TransDataConfig kTo6hd = {DataFormat::NCDHW, DataFormat::NDC1HWC0};
constexpr TransDataConfig kFrom6hd = {DataFormat::NDC1HWC0, DataFormat::NCDHW};

template <const TransDataConfig& cfg, class T, class U, class S>
__aicore__ inline void Call(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& tmp,
                            bool withTmp, const U& srcLayout, const S& dstLayout) {
  TransDataParams<U, S> params = {srcLayout, dstLayout};
  if (withTmp) {
    TransData<cfg>(dst, src, tmp, params);
  } else {
    TransData<cfg, T, U, S>(dst, src, params);
  }
}

template <class T>
__aicore__ inline void Body(GM_ADDR src, GM_ADDR dst, uint32_t mode, int32_t n, int32_t c, int32_t d, int32_t h,
                            int32_t w, uint32_t tmpMode, uint32_t bad) {
  const int32_t hw = h * w, padHw = (hw + 15) / 16 * 16, c1 = (c + 15) / 16, n1 = (n + 15) / 16;
  const uint32_t ncdhw = n * c * d * padHw, fz = d * c1 * hw * n1 * 16 * 16, hd6 = n * d * c1 * hw * 16;
  const uint32_t srcSize = mode == 1 || mode == 3 ? ncdhw : (mode == 2 ? fz : hd6);
  const uint32_t dstSize = mode == 2 || mode == 4 ? ncdhw : (mode == 1 ? fz : hd6);
  GlobalTensor<T> sGm, dGm;
  sGm.SetGlobalBuffer((__gm__ T*)src + GetBlockIdx() * srcSize, srcSize);
  dGm.SetGlobalBuffer((__gm__ T*)dst + GetBlockIdx() * dstSize, dstSize);
  // host side: the tmp size
  const TransDataConfig& cfg = mode == 1 ? kToFz : mode == 2 ? kFromFz : mode == 3 ? kTo6hd : kFrom6hd;
  const TensorShape nc(std::vector<int64_t>{n, c, d, h, w});
  const TensorShape fzs(std::vector<int64_t>{d, c1, h, w, n1, 16, 16});
  const TensorShape h6(std::vector<int64_t>{n, d, c1, h, w, 16});
  const TensorShape& packed = mode <= 2 ? fzs : h6;
  uint32_t mx = 0, mn = 0;
  const int platform = 0;  // (no platform query on the kernel side)
  const bool ok = mode == 1 || mode == 3 ? GetTransDataMaxMinTmpSize(platform, nc, packed, 1, cfg, mx, mn)
                                         : GetTransDataMaxMinTmpSize(platform, packed, nc, 1, cfg, mx, mn);
  if (!ok) return;
  TPipe pipe;
  TQue<TPosition::VECIN, 1> qin;
  TQue<TPosition::VECOUT, 1> qout;
  TBuf<TPosition::VECCALC> tbuf;
  pipe.InitBuffer(qin, 1, srcSize * sizeof(T));
  pipe.InitBuffer(qout, 1, dstSize * sizeof(T));
  if (tmpMode) pipe.InitBuffer(tbuf, tmpMode == 2 ? mx - 32 : mx);
  LocalTensor<T> in = qin.AllocTensor<T>();
  LocalTensor<T> out = qout.AllocTensor<T>();
  DataCopy(in, sGm, srcSize);
  DataCopy(out, dGm, dstSize);
  PipeBarrier<PIPE_ALL>();
  LocalTensor<uint8_t> tmp;
  if (tmpMode) tmp = tbuf.Get<uint8_t>();
  const int32_t pc1 = bad == 1 ? c1 + 1 : c1, pd = bad == 2 ? d + 1 : d;
  auto ncdhwLayout = MakeLayout(MakeShape(n, c, d, h, w), MakeStride());
  Layout fzLayout = MakeLayout(MakeShape(pd, pc1, h, w, n1, 16, 16), MakeStride());
  Layout hd6Layout = MakeLayout(MakeShape(n, pd, pc1, h, w, 16), MakeStride());
  if (mode == 1) Call<kToFz>(out, in, tmp, tmpMode != 0, ncdhwLayout, fzLayout);
  if (mode == 2) Call<kFromFz>(out, in, tmp, tmpMode != 0, fzLayout, ncdhwLayout);
  if (mode == 3) Call<kTo6hd>(out, in, tmp, tmpMode != 0, ncdhwLayout, hd6Layout);
  if (mode == 4) Call<kFrom6hd>(out, in, tmp, tmpMode != 0, hd6Layout, ncdhwLayout);
  PipeBarrier<PIPE_ALL>();
  DataCopy(dGm, out, dstSize);
  qin.FreeTensor(in);
  qout.FreeTensor(out);
}

// dtype: 0 half, 1 int16_t, 2 bfloat16_t
extern "C" __global__ __aicore__ void td_k(GM_ADDR src, GM_ADDR dst, uint32_t dtype, uint32_t mode, int32_t n,
                                           int32_t c, int32_t d, int32_t h, int32_t w, uint32_t tmpMode, uint32_t bad) {
  if (dtype == 0) Body<half>(src, dst, mode, n, c, d, h, w, tmpMode, bad);
  if (dtype == 1) Body<int16_t>(src, dst, mode, n, c, d, h, w, tmpMode, bad);
  if (dtype == 2) Body<bfloat16_t>(src, dst, mode, n, c, d, h, w, tmpMode, bad);
}
