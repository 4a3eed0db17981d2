"""Official-name safetensors checkpoints: round trip, sharding, dtypes, mismatch and FP8 errors."""
import json

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from trex.training.model import Transformer, get_config
from trex.training.model.checkpoint import (INDEX_FILE, CheckpointMismatchError, QuantizedCheckpointError,
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


def test_config_json_round_trip_and_load_pretrained(tmp_path):
    from trex.training.model.checkpoint import args_from_config, config_from_args, load_pretrained

    for name in ("tiny", "flash", "pro"):
        args = get_config(name)
        restored = args_from_config(config_from_args(args))
        for field in ("dim", "n_layers", "compress_ratios", "index_topk", "route_scale", "rope_factor",
                      "original_seq_len", "moe_inter_dim", "n_hash_layers", "n_mtp_layers"):
            assert getattr(restored, field) == getattr(args, field), (name, field)
    source = _model(0)
    save_checkpoint(source, tmp_path)
    loaded = load_pretrained(tmp_path)
    tokens = torch.randint(0, 4096, (1, 16))
    with torch.no_grad():
        torch.testing.assert_close(loaded(tokens)[0], _bf16_rounded(source)(tokens)[0])


def test_release_config_keys_are_understood():
    """The Flash config.json keys as quoted in spec §7 (MTP entry included in compress_ratios)."""
    from trex.training.model.checkpoint import args_from_config

    release = {"vocab_size": 129280, "hidden_size": 4096, "moe_intermediate_size": 2048, "num_hidden_layers": 43,
               "num_attention_heads": 64, "num_key_value_heads": 1, "n_routed_experts": 256, "n_shared_experts": 1,
               "num_experts_per_tok": 6, "rms_norm_eps": 1e-6, "rope_theta": 10000, "q_lora_rank": 1024,
               "qk_rope_head_dim": 64, "head_dim": 512,
               "compress_ratios": [0, 0] + [4, 128] * 20 + [4, 0], "sliding_window": 128,
               "compress_rope_theta": 160000, "o_lora_rank": 1024, "o_groups": 8, "index_n_heads": 64,
               "index_head_dim": 128, "index_topk": 512, "num_hash_layers": 3, "hc_mult": 4, "hc_eps": 1e-6,
               "hc_sinkhorn_iters": 20, "swiglu_limit": 10.0, "routed_scaling_factor": 1.5,
               "scoring_func": "sqrtsoftplus", "topk_method": "noaux_tc", "num_nextn_predict_layers": 1,
               "rope_scaling": {"type": "yarn", "factor": 16, "original_max_position_embeddings": 65536,
                                "beta_fast": 32, "beta_slow": 1},
               "quantization_config": {"quant_method": "fp8"}}
    assert args_from_config(release) == get_config("flash")
    with pytest.raises(ValueError, match="num_key_value_heads=8"):
        args_from_config({**release, "num_key_value_heads": 8})
    with pytest.raises(ValueError, match="lacks hc_mult"):
        args_from_config({k: v for k, v in release.items() if k != "hc_mult"})


def _sharded(tmp_path):
    source = _model(0)
    save_checkpoint(source, tmp_path, max_shard_bytes=1 << 20)
    return json.loads((tmp_path / INDEX_FILE).read_text())


def _untouched_target():
    target = _model(1)
    return target, {k: v.clone() for k, v in target.state_dict().items()}


def _assert_untouched(target, before):
    after = target.state_dict()
    assert all(torch.equal(after[k], v) for k, v in before.items()), "tensors were copied before the check"


def test_flipped_tensor_bytes_are_detected_naming_the_shard_before_any_copy(tmp_path):
    from trex.training.model.checkpoint import CheckpointShardError
    index = _sharded(tmp_path)
    shard = sorted(set(index["weight_map"].values()))[-1]          # the last shard: the others load first
    data = bytearray((tmp_path / shard).read_bytes())
    end = len(data) - 8
    data[end - 64:end] = bytes(b ^ 0x55 for b in data[end - 64:end])   # tensor data, the header intact
    (tmp_path / shard).write_bytes(bytes(data))
    target, before = _untouched_target()
    with pytest.raises(CheckpointShardError, match=f"shard .*{shard}: sha256 differs"):
        load_checkpoint(target, tmp_path)
    _assert_untouched(target, before)


def test_wrong_index_entry_fails_before_any_tensor_is_copied(tmp_path):
    from trex.training.model.checkpoint import CheckpointShardError
    index = _sharded(tmp_path)
    shards = sorted(set(index["weight_map"].values()))
    name = next(n for n, s in sorted(index["weight_map"].items()) if s == shards[-1])
    index["weight_map"][name] = shards[0]                            # names the wrong shard
    (tmp_path / INDEX_FILE).write_text(json.dumps(index))
    target, before = _untouched_target()
    with pytest.raises(CheckpointShardError, match=f"shard .*{shards[0]}: the index puts 1 tensors"):
        load_checkpoint(target, tmp_path)
    _assert_untouched(target, before)


@pytest.mark.parametrize("damage", ["truncated", "missing", "garbage header"])
def test_unreadable_shards_are_named(tmp_path, damage):
    from trex.training.model.checkpoint import CheckpointShardError
    index = _sharded(tmp_path)
    shard = tmp_path / sorted(set(index["weight_map"].values()))[1]
    if damage == "truncated":
        shard.write_bytes(shard.read_bytes()[:100])
    elif damage == "missing":
        shard.unlink()
    else:                     # no recorded checksum to catch it: the header parse must name the shard
        del index["metadata"]["shards"]
        (tmp_path / INDEX_FILE).write_text(json.dumps(index))
        shard.write_bytes(b"\xff" * 64)
    target, before = _untouched_target()
    with pytest.raises(CheckpointShardError, match=f"shard {shard}"):
        load_checkpoint(target, tmp_path)
    _assert_untouched(target, before)
