// trex AscendC emulator, host side: C ABI the runner (emulator/op_project.py) calls. The runner
// appends `#include "trex_host/abi.h"` to the op_host translation unit.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "register/op_def_registry.h"

struct TrexTensorArg {
  int32_t dtype;
  int32_t ndim;
  int64_t dims[25];
  const void* data;
};

struct TrexTilingResult {
  uint32_t block_dim;
  uint32_t status;
  uint64_t tiling_key;
  uint64_t tiling_size;
  uint64_t workspace_bytes;
  char error[1024];
  uint32_t need_atomic;  // SetNeedAtomic(true): apply the outputs' InitValue before the launch
};

namespace trex_host {
inline const char* OptionName(ops::Option o) {
  switch (o) {
    case ops::REQUIRED: return "required";
    case ops::OPTIONAL: return "optional";
    case ops::DYNAMIC: return "dynamic";
    default: return "ignore";
  }
}

inline ops::OpDef* FindOp(const std::string& type) {
  for (ops::OpDef* op : ops::Registry())
    if (op->type == type) return op;
  return nullptr;
}

inline std::vector<gert::Tensor> Tensors(const TrexTensorArg* args, int n) {
  std::vector<gert::Tensor> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    gert::Shape s;
    for (int d = 0; d < args[i].ndim; ++d) s.AppendDim(args[i].dims[d]);
    out[i].shape = gert::StorageShape(s);
    out[i].dtype = static_cast<ge::DataType>(args[i].dtype);
    out[i].data = args[i].data;
  }
  return out;
}

// One attribute per line: "i 3", "f 0.5", "b 1", "s text", "li 3 1 2 3", "lf 2 0.5 1.5".
inline std::vector<gert::AttrValue> ParseAttrs(const char* text) {
  std::vector<gert::AttrValue> out;
  std::istringstream lines(text ? text : "");
  std::string line;
  while (std::getline(lines, line)) {
    gert::AttrValue v;
    const std::string kind = line.substr(0, line.find(' '));
    const std::string rest = line.size() > kind.size() ? line.substr(kind.size() + 1) : "";
    std::istringstream in(rest);
    if (kind == "i") in >> v.i;
    else if (kind == "f") in >> v.f;
    else if (kind == "b") { int b = 0; in >> b; v.b = b != 0; v.i = b; }
    else if (kind == "s") v.s = rest;
    else if (kind == "li") { size_t n = 0; in >> n; v.ints.values.resize(n); for (auto& x : v.ints.values) in >> x; }
    else if (kind == "lf") { size_t n = 0; in >> n; v.floats.values.resize(n); for (auto& x : v.floats.values) in >> x; }
    out.push_back(v);
  }
  return out;
}
}  // namespace trex_host

extern "C" __attribute__((visibility("default"))) const char* trex_host_ops() {
  static std::string text;
  std::ostringstream os;
  for (ops::OpDef* op : ops::Registry()) {
    os << "op " << op->type << " " << (op->aicore.tiling ? "tiling" : "no-tiling") << "\n";
    for (const auto& soc : op->aicore.socs) os << "config " << soc << "\n";
    for (const auto& p : op->inputs) {
      os << "input " << p.name << " " << trex_host::OptionName(p.param_type);
      for (size_t i = 0; i < p.dtypes.size(); ++i) os << (i ? "," : " ") << static_cast<int>(p.dtypes[i]);
      os << "\n";
    }
    for (const auto& p : op->outputs) {
      os << "output " << p.name << " " << trex_host::OptionName(p.param_type);
      for (size_t i = 0; i < p.dtypes.size(); ++i) os << (i ? "," : " ") << static_cast<int>(p.dtypes[i]);
      os << "\n";
      if (p.init_values.empty()) continue;  // "init zero" or "init list <kind value>;<kind value>..."
      os << "init " << (p.init_zero_form ? "zero " : "list ");
      if (p.init_zero_form) os << p.init_values[0].scalar_num.value_u64;
      else for (size_t i = 0; i < p.init_values.size(); ++i) os << (i ? ";" : "") << p.init_values[i].Text();
      os << "\n";
    }
    for (const auto& a : op->attrs) {
      os << "attr " << a.name << " " << a.kind << " " << trex_host::OptionName(a.attr_type) << " ";
      if (a.kind == "float") os << a.value.f;
      else if (a.kind == "bool") os << (a.value.b ? 1 : 0);
      else if (a.kind == "str") os << a.value.s;
      else if (a.kind == "list_int") { os << a.value.ints.values.size(); for (auto x : a.value.ints.values) os << " " << x; }
      else if (a.kind == "list_float") { os << a.value.floats.values.size(); for (auto x : a.value.floats.values) os << " " << x; }
      else os << a.value.i;
      os << "\n";
    }
  }
  for (const auto& kv : trex_host::ImplTilings()) os << "op " << kv.first << " tiling\n";
  text = os.str();
  return text.c_str();
}

namespace trex_host {
// Instances per IR input for the next trex_host_tiling call (a DYNAMIC input: its list's length).
inline std::vector<size_t>& InputCounts() {
  static std::vector<size_t> counts;
  return counts;
}
}  // namespace trex_host

extern "C" __attribute__((visibility("default"))) void trex_host_set_input_counts(const uint32_t* counts, int n) {
  trex_host::InputCounts().assign(counts, counts + n);
}

extern "C" __attribute__((visibility("default"))) int trex_host_tiling(
    const char* op_type, const TrexTensorArg* ins, int nin, const TrexTensorArg* outs, int nout, const char* attrs,
    uint32_t aiv_cores, uint64_t ub_bytes, uint8_t* tiling_out, uint64_t capacity, TrexTilingResult* res) {
  std::memset(res, 0, sizeof(*res));
  auto fail = [&](const std::string& msg) {
    std::snprintf(res->error, sizeof(res->error), "%s", msg.c_str());
    return 1;
  };
  ops::TilingFunc fn = nullptr;
  if (ops::OpDef* op = trex_host::FindOp(op_type)) fn = op->aicore.tiling;
  if (!fn && trex_host::ImplTilings().count(op_type)) fn = trex_host::ImplTilings()[op_type];
  if (!fn) return fail(std::string("op ") + op_type + " registers no tiling function (OP_ADD with AICore().SetTiling, or IMPL_OP_OPTILING)");
  gert::OpCall call;
  call.inputs = trex_host::Tensors(ins, nin);
  call.outputs = trex_host::Tensors(outs, nout);
  for (const auto& t : call.inputs) call.input_descs.push_back(gert::CompileTimeTensorDesc{t.dtype});
  for (const auto& t : call.outputs) call.output_descs.push_back(gert::CompileTimeTensorDesc{t.dtype});
  call.attrs.values = trex_host::ParseAttrs(attrs);
  call.platform.aiv_num = aiv_cores;
  call.platform.aic_num = aiv_cores / 2 ? aiv_cores / 2 : 1;
  call.platform.ub_size = ub_bytes;
  if (ops::OpDef* op = trex_host::FindOp(op_type)) {
    for (const std::string& soc : op->aicore.socs) {  // op_project.UB_BYTES's SoCs, first known one wins
      if (soc == "ascend910b" || soc == "ascend910_93") { call.platform.soc_910b = true; break; }
      if (soc == "ascend910" || soc == "ascend310p" || soc == "ascend310b") { call.platform.soc_910b = false; break; }
    }
  }
  call.node_name = op_type;
  size_t start = 0;
  for (size_t c : trex_host::InputCounts()) {
    call.ir_input_start.push_back(start);
    start += c;
  }
  gert::TilingContext ctx(&call);
  ge::graphStatus st;
  try {
    st = fn(&ctx);
  } catch (const std::exception& e) {
    return fail(std::string("the tiling function threw: ") + e.what());
  } catch (...) {
    return fail("the tiling function threw (SaveToBuffer into a raw tiling buffer too small for the struct?)");
  }
  res->status = st;
  res->block_dim = ctx.block_dim;
  res->tiling_key = ctx.tiling_key;
  res->need_atomic = ctx.need_atomic ? 1 : 0;
  gert::TilingData* raw = ctx.GetRawTilingData();
  res->tiling_size = raw->GetDataSize();
  uint64_t ws = 0;
  for (size_t w : ctx.workspace) ws += w;
  res->workspace_bytes = ws;

  std::memcpy(tiling_out, raw->GetData(), capacity < raw->GetCapacity() ? capacity : raw->GetCapacity());
  if (st != ge::GRAPH_SUCCESS) return fail("the tiling function returned ge::GRAPH_FAILED (status " + std::to_string(st) + ")");
  return 0;
}
