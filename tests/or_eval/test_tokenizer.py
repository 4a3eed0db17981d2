import pytest
from hypothesis import given, strategies as st

from trex.training.or_tokenizer import (BOS, EOS, PAD, PROMPT, RESPONSE, ORTokenizer, format_prompt,
                                        from_env)


def test_digits_are_single_tokens(small_tokenizer):
    text = "profit 1234567890 and 3.14159, x[12] = 007"
    pieces = small_tokenizer.token_strings(small_tokenizer.encode(text))
    digit_pieces = [p for p in pieces if any(c.isdigit() for c in p)]
    assert digit_pieces, pieces
    assert all(len(p) == 1 and p.isdigit() for p in digit_pieces), digit_pieces
    # and all ten digits exist as tokens of their own
    for d in "0123456789":
        assert small_tokenizer.token_strings(small_tokenizer.encode(d)) == [d]


@given(st.text(max_size=200))
def test_round_trip_is_exact(small_tokenizer, text):
    assert small_tokenizer.decode(small_tokenizer.encode(text)) == text


def test_round_trip_code_whitespace(small_tokenizer):
    code = "def f(x):\n\tif x:\n        return  x ** 2   \r\n\n\n# é 東\n"
    assert small_tokenizer.decode(small_tokenizer.encode(code)) == code


def test_special_ids_distinct_and_in_vocab(small_tokenizer):
    tok = small_tokenizer
    ids = {tok.pad_id, tok.bos_id, tok.eos_id, tok.prompt_id, tok.response_id}
    assert len(ids) == 5
    assert all(0 <= i < tok.vocab_size for i in ids)
    assert tok.encode("a", add_bos=True, add_eos=True)[0] == tok.bos_id
    assert tok.encode("a", add_bos=True, add_eos=True)[-1] == tok.eos_id


def test_prompt_format_matches_training_loop_rows(small_tokenizer):
    """The training loop's SFT row is bos + encode(prompt field) + encode(response) + eos."""
    tok = small_tokenizer
    q = "Maximise 3x + 2y with x + y <= 4."
    ids = tok.encode_prompt(q)
    assert ids == [tok.bos_id] + tok.encode(format_prompt(q))
    assert ids[:2] == [tok.bos_id, tok.prompt_id] and ids[-1] == tok.response_id
    full, mask = tok.encode_sft(q, "```python\nmodel.optimize()\n```")
    assert full[:len(ids)] == ids and full[-1] == tok.eos_id
    assert mask == [0] * len(ids) + [1] * (len(full) - len(ids))


def test_save_load_identical(tmp_path, small_tokenizer, monkeypatch):
    path = small_tokenizer.save(tmp_path / "ckpt")
    assert path.name == "tokenizer.json" and path.is_file()
    assert not list((tmp_path / "ckpt").glob("*.tmp"))
    loaded = ORTokenizer.load(tmp_path / "ckpt")
    text = "Ship 250 units from plant 3 to store 17 at cost 12.5 每"
    assert loaded.encode(text) == small_tokenizer.encode(text)
    assert loaded.vocab_size == small_tokenizer.vocab_size
    assert (loaded.bos_id, loaded.eos_id, loaded.pad_id) == (small_tokenizer.bos_id, small_tokenizer.eos_id,
                                                             small_tokenizer.pad_id)
    monkeypatch.setenv("TREX_OR_TOKENIZER", str(path))
    assert from_env().encode(text) == small_tokenizer.encode(text)


def test_training_loop_protocol(small_tokenizer):
    data = pytest.importorskip("trex.training.data")
    assert isinstance(small_tokenizer, data.Tokenizer)


def test_errors_name_the_fix(tmp_path):
    with pytest.raises(ValueError, match="vocab_size"):
        ORTokenizer.train(["abc"], vocab_size=10)
    with pytest.raises(FileNotFoundError, match="tokenizer"):
        ORTokenizer.load(tmp_path)


def test_special_token_names():
    assert (PAD, BOS, EOS, PROMPT, RESPONSE) == ("<|pad|>", "<|bos|>", "<|eos|>", "<|prompt|>", "<|response|>")
