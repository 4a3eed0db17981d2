"""Official-name safetensors checkpoints: round trip, sharding, dtypes, mismatch and FP8 errors."""
import json

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from training.model import Transformer, get_config
from training.model.checkpoint import (INDEX_FILE, CheckpointMismatchError, QuantizedCheckpointError,
                                       load_checkpoint, save_checkpoint)


def _model(seed, **overrides):
    torch.manual_seed(seed)
    model = Transformer(get_config("tiny", **overrides))
    model.init_weights(seed=seed)
    return model


def test_round_trip_sharded_with_index(tmp_path):
    source = _model(0)
    with torch.no_grad():                      # make fp32-stored tensors non-trivial too
        for name, p in source.named_parameters():
            if "hc_" in name or "attn_sink" in name or name.endswith(".ape"):
                p.normal_()
        for m in source.moe_layers():
            if not m.hash_routed:
                m.gate.bias.normal_()
    shards = save_checkpoint(source, tmp_path, max_shard_bytes=1 << 20)
    assert len(shards) > 2
    index = json.loads((tmp_path / INDEX_FILE).read_text())
    assert set(index["weight_map"]) == set(source.state_dict())
    assert index["metadata"]["total_size"] > 0
    assert {p.name for p in shards} == set(index["weight_map"].values())
    assert shards[0].name == f"model-00001-of-{len(shards):05d}.safetensors"
    # storage dtypes of the release
    dtypes = {}
    for shard in shards:
        with safe_open(str(shard), framework="pt") as f:
            dtypes.update({n: f.get_slice(n).get_dtype() for n in f.keys()})
    assert dtypes["layers.0.hc_attn_fn"] == "F32" and dtypes["layers.1.attn.attn_sink"] == "F32"
    assert dtypes["layers.1.attn.compressor.ape"] == "F32" and dtypes["layers.1.ffn.gate.bias"] == "F32"
    assert dtypes["layers.0.ffn.gate.tid2eid"] == "I64"
    assert dtypes["embed.weight"] == "BF16" and dtypes["layers.3.ffn.experts.0.w1.weight"] == "BF16"

    target = _model(1)
    load_checkpoint(target, tmp_path)
    for name, tensor in source.state_dict().items():
        loaded = target.state_dict()[name]
        if dtypes[name] == "BF16":
            torch.testing.assert_close(loaded, tensor.bfloat16().float())
        else:
            assert torch.equal(loaded, tensor), name
    tokens = torch.randint(0, 4096, (1, 32))
    with torch.no_grad():
        torch.testing.assert_close(target(tokens)[0], _bf16_rounded(source)(tokens)[0])


def _bf16_rounded(model):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dtype == torch.float32 and not ("hc_" in name or "attn_sink" in name or name.endswith(".ape")):
                p.copy_(p.bfloat16().float())
    return model


def test_mismatch_lists_missing_unexpected_and_wrong_shape(tmp_path):
    save_checkpoint(_model(0), tmp_path)
    # one more trunk layer: layers.4.* are missing; a smaller vocabulary: wrongly shaped tensors
    other = _model(0, n_layers=5, compress_ratios=(0, 4, 16, 4, 4, 0), vocab_size=2048)
    with pytest.raises(CheckpointMismatchError) as err:
        load_checkpoint(other, tmp_path)
    e = err.value
    assert "layers.4.attn.wq_a.weight" in e.missing
    assert {n for n, _, _ in e.wrong_shape} >= {"embed.weight", "head.weight", "layers.0.ffn.gate.tid2eid"}
    # every checkpoint tensor has a place in the bigger model (the MTP block is mtp.0 in both)
    assert e.unexpected == []
    text = str(e)
    assert "missing" in text and "wrong shape" in text and "embed.weight (checkpoint [4096, 128], model [2048, 128])" in text
    fewer = _model(0, n_layers=3, compress_ratios=(0, 4, 16, 0))
    with pytest.raises(CheckpointMismatchError) as err:
        load_checkpoint(fewer, tmp_path)
    assert "layers.3.attn.wq_a.weight" in err.value.unexpected and "unexpected" in str(err.value)
    load_checkpoint(fewer, tmp_path, strict=False)          # extra tensors allowed when not strict


def test_fp8_checkpoints_are_rejected_with_a_clear_message(tmp_path):
    model = _model(0)
    tensors = {n: t.detach().bfloat16() if t.is_floating_point() else t for n, t in model.state_dict().items()}
    tensors["layers.0.attn.wq_a.weight"] = tensors["layers.0.attn.wq_a.weight"].float().to(torch.float8_e4m3fn)
    tensors["layers.0.attn.wq_a.scale"] = torch.ones(1, 1)
    save_file(tensors, str(tmp_path / "model.safetensors"))
    with pytest.raises(QuantizedCheckpointError, match=r"FP8.*layers\.0\.attn\.wq_a|layers\.0\.attn\.wq_a.*F8_E4M3"):
        load_checkpoint(model, tmp_path)


def test_missing_directory_contents_are_reported(tmp_path):
    with pytest.raises(FileNotFoundError, match="model.safetensors.index.json"):
        load_checkpoint(_model(0), tmp_path)


def test_meta_model_must_be_materialised(tmp_path):
    save_checkpoint(_model(0), tmp_path)
    with torch.device("meta"):
        meta = Transformer(get_config("tiny"))
    with pytest.raises(ValueError, match="to_empty"):
        load_checkpoint(meta, tmp_path)
    meta.to_empty(device="cpu")
    load_checkpoint(meta, tmp_path)
    assert torch.isfinite(meta(torch.randint(0, 4096, (1, 16)))[0]).all()
