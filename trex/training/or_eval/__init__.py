"""OR post-training: BPE tokenizer, benchmark loaders, scoring rules, greedy Pass@1 evaluation,
and the CPT ablation driver (docs/or_eval.md)."""
