// trex tests (written for trex): kernel-launch kernels for Pad / UnPad (adv_pad.h) with the host tiling helpers
// (adv_pad_tiling_host.h). Each block owns one [h, w] matrix: src at block * h * w, dst at block * h * outW. dst
// is first loaded from GM (poisoned by the test), so elements an API leaves alone keep the poison. The tiling is
// made in the kernel by the host functions (GetPadMaxMinTmpSize / PadTilingFunc, GetUnPadMaxMinTmpSize /
// UnPadTilingFunc) from tilingTmpBytes (~0u: GetPadMaxMinTmpSize's max) and tilingTypeSize (0: sizeof(T)).
// tmpBytes 0: the form without sharedTmpBuffer (the TPipe's stack buffer).
#include "kernel_operator.h"
#include "tiling/tiling_api.h"
using namespace AscendC;

__aicore__ inline uint32_t Al32(uint32_t bytes) { return (bytes + 31) / 32 * 32; }

template <class T>
__aicore__ inline void PadBody(GM_ADDR src, GM_ADDR dst, uint32_t h, uint32_t w, uint32_t oriW, uint32_t l,
                               uint32_t r, int32_t padValue, uint32_t tmpBytes, uint32_t tilingTmpBytes,
                               uint32_t tilingTypeSize) {
  const uint32_t outW = (w * sizeof(T) % 32 == 0) ? w : l + w + r;
  GlobalTensor<T> sGm, dGm;
  sGm.SetGlobalBuffer((__gm__ T*)src + GetBlockIdx() * h * w, h * w);
  dGm.SetGlobalBuffer((__gm__ T*)dst + GetBlockIdx() * h * outW, h * outW);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> qin;
  TQue<TPosition::VECOUT, 1> qout;
  TBuf<TPosition::VECCALC> tbuf;
  pipe.InitBuffer(qin, 1, Al32(h * w * sizeof(T)));
  pipe.InitBuffer(qout, 1, Al32(h * outW * sizeof(T)));
  if (tmpBytes) pipe.InitBuffer(tbuf, tmpBytes);
  LocalTensor<T> in = qin.AllocTensor<T>();
  LocalTensor<T> out = qout.AllocTensor<T>();
  DataCopyExtParams inP{1, static_cast<uint32_t>(h * w * sizeof(T)), 0, 0, 0};
  DataCopyExtParams outP{1, static_cast<uint32_t>(h * outW * sizeof(T)), 0, 0, 0};
  DataCopyPadExtParams<T> noPad{false, 0, 0, 0};
  DataCopyPad(in, sGm, inP, noPad);
  DataCopyPad(out, dGm, outP, noPad);
  PipeBarrier<PIPE_ALL>();
  // host side: tmp sizes and tiling
  const TensorShape shape(std::vector<int64_t>{int64_t(h), int64_t(w)});
  const TensorShape ori(std::vector<int64_t>{int64_t(h), int64_t(oriW)});
  uint32_t mx = 0, mn = 0;
  GetPadMaxMinTmpSize(shape, sizeof(T), mx, mn);
  PadTiling tiling;
  PadTilingFunc(shape, ori, tilingTmpBytes == ~0u ? mx : tilingTmpBytes, tilingTypeSize ? tilingTypeSize : sizeof(T),
                tiling);
  PadParams pp{static_cast<uint16_t>(l), static_cast<uint16_t>(r), padValue};
  if (tmpBytes) {
    LocalTensor<uint8_t> tmp = tbuf.Get<uint8_t>();
    Pad(out, in, pp, tmp, tiling);
  } else {
    Pad(out, in, pp, tiling);
  }
  PipeBarrier<PIPE_ALL>();
  DataCopyPad(dGm, out, outP);
  qin.FreeTensor(in);
  qout.FreeTensor(out);
}

template <class T>
__aicore__ inline void UnPadBody(GM_ADDR src, GM_ADDR dst, uint32_t h, uint32_t w, uint32_t l, uint32_t r,
                                 uint32_t withTmp) {
  const uint32_t outW = w > r ? w - r : 1;
  GlobalTensor<T> sGm, dGm;
  sGm.SetGlobalBuffer((__gm__ T*)src + GetBlockIdx() * h * w, h * w);
  dGm.SetGlobalBuffer((__gm__ T*)dst + GetBlockIdx() * h * outW, h * outW);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> qin;
  TQue<TPosition::VECOUT, 1> qout;
  TBuf<TPosition::VECCALC> tbuf;
  pipe.InitBuffer(qin, 1, Al32(h * w * sizeof(T)));
  pipe.InitBuffer(qout, 1, Al32(h * outW * sizeof(T)));
  pipe.InitBuffer(tbuf, 1024);
  LocalTensor<T> in = qin.AllocTensor<T>();
  LocalTensor<T> out = qout.AllocTensor<T>();
  DataCopyExtParams inP{1, static_cast<uint32_t>(h * w * sizeof(T)), 0, 0, 0};
  DataCopyExtParams outP{1, static_cast<uint32_t>(h * outW * sizeof(T)), 0, 0, 0};
  DataCopyPadExtParams<T> noPad{false, 0, 0, 0};
  DataCopyPad(in, sGm, inP, noPad);
  DataCopyPad(out, dGm, outP, noPad);
  PipeBarrier<PIPE_ALL>();
  const TensorShape shape(std::vector<int64_t>{int64_t(h), int64_t(w)});
  uint32_t mx = 7, mn = 7;
  const int platform = 0;  // (the kernel-side compile has no platform query; A2/A3 sizes)
  GetUnPadMaxMinTmpSize(platform, shape, sizeof(T), mx, mn);
  UnPadTiling tiling;
  UnPadTilingFunc(shape, mx, sizeof(T), tiling);
  UnPadParams up{static_cast<uint16_t>(l), static_cast<uint16_t>(r)};
  if (withTmp) {
    LocalTensor<uint8_t> tmp = tbuf.Get<uint8_t>();
    UnPad(out, in, up, tmp, tiling);
  } else {
    UnPad(out, in, up, tiling);
  }
  PipeBarrier<PIPE_ALL>();
  DataCopyPad(dGm, out, outP);
  qin.FreeTensor(in);
  qout.FreeTensor(out);
}

// dtype: 0 float, 1 half, 2 int16, 3 int32
extern "C" __global__ __aicore__ void pad_k(GM_ADDR src, GM_ADDR dst, uint32_t dtype, uint32_t h, uint32_t w,
                                            uint32_t oriW, uint32_t l, uint32_t r, int32_t padValue, uint32_t tmpBytes,
                                            uint32_t tilingTmpBytes, uint32_t tilingTypeSize) {
  if (dtype == 0) PadBody<float>(src, dst, h, w, oriW, l, r, padValue, tmpBytes, tilingTmpBytes, tilingTypeSize);
  if (dtype == 1) PadBody<half>(src, dst, h, w, oriW, l, r, padValue, tmpBytes, tilingTmpBytes, tilingTypeSize);
  if (dtype == 2) PadBody<int16_t>(src, dst, h, w, oriW, l, r, padValue, tmpBytes, tilingTmpBytes, tilingTypeSize);
  if (dtype == 3) PadBody<int32_t>(src, dst, h, w, oriW, l, r, padValue, tmpBytes, tilingTmpBytes, tilingTypeSize);
}

extern "C" __global__ __aicore__ void unpad_k(GM_ADDR src, GM_ADDR dst, uint32_t dtype, uint32_t h, uint32_t w,
                                              uint32_t l, uint32_t r, uint32_t withTmp) {
  if (dtype == 0) UnPadBody<float>(src, dst, h, w, l, r, withTmp);
  if (dtype == 1) UnPadBody<half>(src, dst, h, w, l, r, withTmp);
  if (dtype == 2) UnPadBody<int16_t>(src, dst, h, w, l, r, withTmp);
  if (dtype == 3) UnPadBody<int32_t>(src, dst, h, w, l, r, withTmp);
}
