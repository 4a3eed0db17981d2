"""trex.training.model.opcount: per-step aten op and host-sync counts attribute ops to the model's parts,
and the sparse MoE dispatch reads the device exactly once per MoE layer (its expert row counts)."""
import torch

from trex.training.model import Transformer, lm_loss
from trex.training.model.opcount import count_step


def _step_counts(args, seq_len=32, batch=2):
    torch.manual_seed(0)
    model = Transformer(args)
    tokens = torch.randint(0, args.vocab_size, (batch, seq_len))
    labels = torch.randint(0, args.vocab_size, (batch, seq_len))

    def loss_fn(m):
        logits, mtp = m(tokens)
        return lm_loss(logits, mtp, labels)[0]
    return count_step(model, loss_fn)


def test_sparse_dispatch_has_one_host_read_per_moe_layer(tiny_args):
    args = tiny_args.replace(moe_dispatch="sparse")
    counts = _step_counts(args)
    syncs = counts.sync_sites()
    forward_reads = {site: n for (phase, why, site), n in syncs.items() if phase == "forward"}
    # one call site (the .tolist() of the counts), read once per MoE layer: no bincount
    assert len(forward_reads) == 1, syncs
    (site, n), = forward_reads.items()
    assert site.startswith("moe.py:") and site.endswith(" sparse_dispatch") and n == args.n_blocks, syncs
    assert all("tolist" in why for (_, why, _) in syncs), syncs
    assert not any(phase == "backward" for (phase, _, _) in syncs), syncs


def test_dense_dispatch_step_has_no_host_read(tiny_args):
    counts = _step_counts(tiny_args.replace(moe_dispatch="dense"))
    assert counts.sync_sites() == {}


def test_ops_are_attributed_to_model_parts_and_layers(tiny_args):
    args = tiny_args.replace(moe_dispatch="sparse")
    counts = _step_counts(args)
    parts = counts.by_part()
    for part in ("mHC (mhc_pre, Sinkhorn, hc_post, hc_head)", "MoE: routed experts", "MoE: router",
                 "attention: core (projections, RoPE, masks, softmax)", "attention: indexer (+ its compressor)",
                 "RMSNorm modules"):
        assert parts[part]["forward"] > 0, (part, parts)
    # the indexer is detached: no backward ops
    assert parts["attention: indexer (+ its compressor)"].get("backward", 0) == 0
    # almost every backward op finds the forward op that made its autograd node
    untagged = sum(n for (phase, part, _), n in counts.kernels.items()
                   if phase == "backward" and part == "embedding, head, loss, MTP projections")
    assert untagged < 0.05 * counts.total("backward")
    layers = counts.by_layer()
    assert set(layers) == {"-"} | {f"layers.{i}" for i in range(args.n_layers)} | {"mtp.0"}
    # the Sinkhorn loop alone is 6 kernels per iteration per mHC site, twice per block
    mhc = parts["mHC (mhc_pre, Sinkhorn, hc_post, hc_head)"]["forward"]
    assert mhc >= 2 * args.n_blocks * 6 * (args.hc_sinkhorn_iters - 1)
