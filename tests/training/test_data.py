"""Tokenizer, CPT packing, SFT masking, deterministic and resumable order."""
import json
import sys

import pytest
import torch

from trex.training.config import ConfigError
from trex.training.data import DataLoader, PackedDataset, SFTDataset, read_records
from trex.training.tokenizer import ByteTokenizer, load_tokenizer


def test_byte_tokenizer_roundtrip():
    tok = ByteTokenizer()
    text = "héllo, wörld ∑"
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert min(ids) >= 3 and max(ids) < tok.vocab_size
    assert len({tok.bos_id, tok.eos_id, tok.pad_id}) == 3


def test_cpt_windows_tile_the_stream(cpt_corpus):
    tok = ByteTokenizer()
    ds = PackedDataset(read_records(cpt_corpus), tok, seq_len=16)
    assert len(ds) == (len(ds.stream) - 1) // 16
    for i in range(3):
        s = ds[i]
        assert torch.equal(s.tokens, ds.stream[i * 16:(i + 1) * 16])
        assert torch.equal(s.labels, ds.stream[i * 16 + 1:(i + 1) * 16 + 1])   # next tokens
        assert s.loss_mask.sum() == 16
    assert (ds.stream == tok.bos_id).sum() == 81        # 80 JSONL documents + 1 text file


def test_sft_masks_prompt_and_padding(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"prompt": "ab", "response": "xyz"}) + "\n")
    tok = ByteTokenizer()
    s = SFTDataset(read_records([str(path)]), tok, seq_len=10)[0]
    # sequence: bos a b x y z eos pad pad pad pad ; labels = sequence[1:]
    learned = [tok.decode([int(t)]) if m else None for t, m in zip(s.labels, s.loss_mask)]
    assert learned[:2] == [None, None]                 # labels 'a', 'b' (prompt) are masked
    assert learned[2:5] == ["x", "y", "z"]
    assert s.labels[5] == tok.eos_id and s.loss_mask[5] == 1
    assert s.loss_mask[6:].sum() == 0                  # padding


def test_sft_missing_field_is_named(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"question": "a", "response": "b"}) + "\n")
    with pytest.raises(ConfigError, match=r"data\.prompt_field = 'prompt': a record has no such field "
                                          r"\(its fields: \['question', 'response'\]\)"):
        SFTDataset(read_records([str(path)]), ByteTokenizer(), seq_len=8)


def test_cpt_missing_field_is_named(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps({"body": "a document"}) + "\n")
    with pytest.raises(ConfigError, match=r"data\.text_field = 'text'.*\['body'\].*set data\.text_field"):
        PackedDataset(read_records([str(path)]), ByteTokenizer(), seq_len=4)


def test_loader_order_is_deterministic_resumable_and_rank_sliced(cpt_corpus):
    ds = PackedDataset(read_records(cpt_corpus), ByteTokenizer(), seq_len=64)
    full = DataLoader(ds, micro_batch=4, seed=5)
    batches = [full.next_batch()["tokens"] for _ in range(40)]          # crosses an epoch boundary
    assert full.consumed > len(ds)
    again = DataLoader(ds, micro_batch=4, seed=5)
    for _ in range(25):
        again.next_batch()
    resumed = DataLoader(ds, micro_batch=4, seed=5)
    resumed.load_state_dict(again.state_dict())
    for b in batches[25:]:
        assert torch.equal(resumed.next_batch()["tokens"], b)
    # two ranks with micro_batch 2 see exactly the rows of one process with micro_batch 4
    r0, r1 = (DataLoader(ds, micro_batch=2, seed=5, rank=r, world=2) for r in (0, 1))
    for b in batches[:5]:
        assert torch.equal(torch.cat([r0.next_batch()["tokens"], r1.next_batch()["tokens"]]), b)
    other_seed = DataLoader(ds, micro_batch=4, seed=6).next_batch()["tokens"]
    assert not torch.equal(other_seed, batches[0])


def test_resume_rejects_other_corpus(cpt_corpus):
    ds = PackedDataset(read_records(cpt_corpus), ByteTokenizer(), seq_len=16)
    state = DataLoader(ds, 2).state_dict()
    with pytest.raises(ValueError, match="same data.paths"):
        DataLoader(ds, 2, seed=1).load_state_dict(state)


class _UpperTokenizer(ByteTokenizer):
    def encode(self, text):
        return super().encode(text.upper())


def test_pluggable_tokenizer(monkeypatch):
    module = type(sys)("fake_tok_module")
    module.make = _UpperTokenizer
    monkeypatch.setitem(sys.modules, "fake_tok_module", module)
    tok = load_tokenizer("fake_tok_module:make")
    assert tok.decode(tok.encode("abc")) == "ABC"
    with pytest.raises(ConfigError, match="data.tokenizer = 'nope': unknown"):
        load_tokenizer("nope")
    with pytest.raises(ConfigError, match="data.tokenizer = 'fake_tok_module:absent': cannot load"):
        load_tokenizer("fake_tok_module:absent")
    module.bad = lambda: object()
    with pytest.raises(ConfigError, match="Tokenizer interface"):
        load_tokenizer("fake_tok_module:bad")

    def needs_a_file():
        raise FileNotFoundError("no tokenizer at /nowhere/tokenizer.json")
    module.needs_a_file = needs_a_file
    with pytest.raises(ConfigError, match="data.tokenizer = 'fake_tok_module:needs_a_file': the factory "
                                          "failed: no tokenizer at /nowhere"):
        load_tokenizer("fake_tok_module:needs_a_file")
