"""``trex explain``: compile a model with trex and print, per graph, what matched, what nearly matched
and why not, the fused ops of the forward/backward graphs, and where the dumps went.

    trex explain --example rms_norm            # a built-in example: the pattern's own eager chains
    trex explain --example all --backward      # every registered pattern, forward and backward
    trex explain --example block --backward    # a DeepSeek-V4-style block (trex/compiler/examples.py)
    trex explain my_model.py:make --dump-dir /tmp/trex

``FILE.py:FACTORY`` names a function returning ``(model_or_callable, example_inputs)``; inputs are a
tuple/list of positional arguments. Exit status 0 when every graph compiled, 1 when a graph fell back.
"""
from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from typing import Any, Callable

import torch

from . import logs, registry

_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def builtin_examples(dtype: torch.dtype = torch.float32) -> dict[str, Callable[[], tuple[Callable, tuple]]]:
    """One example per registered pattern (its chains applied to its example inputs), ``all``, and the
    DeepSeek-V4-style ``block`` / ``block-alternate`` of trex/compiler/examples.py."""
    from .pattern import Chain

    def make(pattern) -> tuple[Callable, tuple]:
        # every chain gets its own example tensors, so the chains stay separate graph regions
        chains = [c if isinstance(c, Chain) else Chain(c) for c in pattern.chains]
        per_chain = [pattern.example_inputs(dtype) for _ in chains]
        sizes = [len(e) for e in per_chain]

        def run(*tensors):
            outs, start = [], 0
            for chain, examples, size in zip(chains, per_chain, sizes):
                env = dict(zip(examples, tensors[start:start + size]))
                start += size
                params = inspect.signature(chain.fn).parameters.values()
                args = [env[p.name] for p in params if p.kind != p.KEYWORD_ONLY]
                scalars = {p.name: 1e-6 if "eps" in p.name else 7.0 for p in params if p.kind == p.KEYWORD_ONLY}
                out = chain.fn(*args, **scalars)
                outs.extend(out if isinstance(out, tuple) else (out,))
            return tuple(outs)

        return run, tuple(t for examples in per_chain for t in examples.values())

    examples = {name: (lambda p=p: make(p)) for name, p in registry.patterns().items()}
    per_pattern = list(examples.values())

    def everything():
        parts = [f() for f in per_pattern]

        def run(*tensors):
            outs, i = [], 0
            for fn, inputs in parts:
                outs.extend(fn(*tensors[i:i + len(inputs)]))
                i += len(inputs)
            return tuple(outs)

        return run, tuple(t for _, inputs in parts for t in inputs)

    examples["all"] = everything

    def block(spelling: str):
        from .examples import SPELLINGS, Config, make_streams, rope_table

        cfg = Config()
        model = SPELLINGS[spelling](cfg).cast(dtype)
        return model, (make_streams(2, 5, cfg, dtype), rope_table(5, cfg.rope_dim))

    examples["block"] = lambda: block("reference")
    examples["block-alternate"] = lambda: block("alternate")
    return examples


def _load_factory(spec: str) -> Callable[[], tuple[Any, tuple]]:
    path, _, name = spec.partition(":")
    if not name:
        raise SystemExit(f"trex explain: {spec!r} must be FILE.py:FACTORY (a function returning (model, inputs))")
    module_spec = importlib.util.spec_from_file_location("trex_explain_target", path)
    if module_spec is None or module_spec.loader is None:
        raise SystemExit(f"trex explain: cannot load {path!r}")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    if not hasattr(module, name):
        raise SystemExit(f"trex explain: {path} has no function {name!r}")
    return getattr(module, name)


def _fused_ops(gm) -> str:
    from .testing import trex_op_counts

    counts = trex_op_counts(gm)
    return ", ".join(f"{k} x{v}" for k, v in sorted(counts.items())) or "none"


def explain(fn: Any, inputs: tuple, *, options: dict, backward: bool, dynamic: bool | None,
            out=None) -> int:
    out = out if out is not None else sys.stdout
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="trex", options=options, dynamic=dynamic)
    inputs = tuple(t.detach().requires_grad_(backward and t.is_floating_point()) if isinstance(t, torch.Tensor)
                   else t for t in inputs)
    with logs.capture() as reports:
        if backward:
            result = compiled(*inputs)
            leaves = result if isinstance(result, (tuple, list)) else (result,)
            sum(o.float().sum() for o in leaves if isinstance(o, torch.Tensor) and o.requires_grad).backward()
        else:
            with torch.no_grad():
                compiled(*inputs)
    for report in reports:
        print(report.format(), file=out)
        for stage in ("forward", "backward", "inference"):
            if stage in report.compiled_graphs:
                print(f"  {stage} graph fused ops: {_fused_ops(report.compiled_graphs[stage])}", file=out)
    if not reports:
        print("no graph was compiled (nothing for Dynamo to capture?)", file=out)
        return 1
    return 1 if any(r.fallbacks for r in reports) else 0


def _bad_argument(message: str) -> None:
    print(f"trex explain: {message}", file=sys.stderr)
    raise SystemExit(2)


def _check_writable_folder(flag: str, value: str) -> None:
    """The folder can be created and written: its nearest existing ancestor is a writable folder
    (checked before anything compiles; nothing is created here)."""
    existing = Path(value).absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        what = "is not a folder" if not existing.is_dir() else "is not writable"
        _bad_argument(f"{flag} {value!r}: {existing} {what}; pass a folder you can write to")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="trex explain", description=__doc__.split("\n\n")[0])
    parser.add_argument("target", nargs="?", help="FILE.py:FACTORY returning (model, example_inputs)")
    parser.add_argument("--example", help=f"built-in example: a pattern name, 'all', 'block' or "
                                          f"'block-alternate' ({', '.join(sorted(registry.patterns()))})")
    parser.add_argument("--backward", action="store_true", help="also run backward (training graphs)")
    parser.add_argument("--dynamic", action="store_true", help="compile with dynamic=True")
    parser.add_argument("--dtype", choices=sorted(_DTYPES), default="fp32", help="dtype of built-in examples")
    parser.add_argument("--dump-dir", help="write graphs and match reports here")
    parser.add_argument("--target", dest="kernel_target", default="cpu", help="trex target (default cpu)")
    parser.add_argument("--patterns", help="comma list of patterns to enable (default: the default set)")
    args = parser.parse_args(argv)

    if (args.target is None) == (args.example is None):
        parser.error("give exactly one of FILE.py:FACTORY or --example NAME")
    import trex.compiler.backend  # noqa: F401  (registers backend="trex")

    if args.example is not None:
        examples = builtin_examples(_DTYPES[args.dtype])
        if args.example not in examples:
            parser.error(f"unknown example {args.example!r}; choose from {', '.join(sorted(examples))}")
        fn, inputs = examples[args.example]()
    else:
        fn, inputs = _load_factory(args.target)()
        inputs = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    from .targets import known_targets

    # bad names are one line and exit 2 here, not a Dynamo BackendCompilerFailed traceback later
    if args.kernel_target not in known_targets():
        _bad_argument(f"--target: unknown target {args.kernel_target!r}; valid: {', '.join(known_targets())}")
    requested = [p.strip() for p in (args.patterns or "").split(",") if p.strip()]
    unknown = [p for p in requested if p not in registry.patterns()]
    if unknown:
        _bad_argument(f"--patterns: unknown pattern(s) {', '.join(unknown)}; valid: "
                     f"{', '.join(sorted(registry.patterns()))}")
    if args.dump_dir:
        _check_writable_folder("--dump-dir", args.dump_dir)
    options: dict = {"target": args.kernel_target}
    if args.dump_dir:
        options["dump_dir"] = args.dump_dir
    if requested:
        options["patterns"] = requested
    elif args.example in registry.patterns() and not registry.patterns()[args.example].enabled_by_default:
        # an opt-in pattern's own example runs with that pattern switched on
        options["patterns"] = [n for n, p in registry.patterns().items()
                               if p.enabled_by_default or n == args.example]
    return explain(fn, inputs, options=options, backward=args.backward, dynamic=True if args.dynamic else None)


if __name__ == "__main__":
    raise SystemExit(main())
