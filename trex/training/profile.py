"""One training step's anatomy in the form of the DeepSeek-V4 paper's Figure 6: kernel families by
share of device time, launch counts, the tail of kernels under 20 us (count and share), and device
idle time, from a ``torch.profiler`` capture of the step.

On CUDA the units are the device kernels (and memcpy/memset) the step ran; on the CPU (tests, smoke
runs) they are the leaf aten / trex ops of the CPU timeline (ops with no op inside them), so the
same report is produced without a GPU. ``anatomy(prof)`` makes the JSON-able report;
``plot_anatomies`` draws several of them (eager, Inductor, trex) side by side as one PNG.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

TAIL_US = 20.0

# Kernel / op name -> family: the first rule whose pattern matches wins (order matters: an
# Inductor Triton GEMM template is "triton_tem_fused_mm...", a trex kernel is named after its fused op).
FAMILY_RULES: tuple[tuple[str, str], ...] = (
    ("comm", r"nccl|all_?reduce|all_?to_?all|all_?gather|reduce_?scatter|c10d"),
    ("optimizer", r"multi_tensor_apply|adam|_foreach_|fused_sgd|lerp_kernel"),
    ("trex fused", r"^trex::|^rows_matmul_kernel$"),      # + <fused op>_<hash> names (trex_op_names)
    ("reduction", r"log_softmax|nll_loss|cross_entropy"),     # the loss, before "softmax" below
    ("attention", r"flash|fmha|attention|sdpa|softmax"),
    ("GEMM", r"gemm|cutlass|xmma|cublas|nvjet|wgmma|_grouped_mm|grouped_mm|triton_tem_|sm90_|sm80_|"
             r"^aten::(mm|addmm|bmm|baddbmm|_grouped_mm|matmul|linear|einsum)$|splitk|ampere_.*_tn|s16816"),
    ("reduction", r"reduce|triton_red_|triton_per_|topk|sort|scan|"
                  r"::(sum|mean|norm|linalg_vector_norm|cumsum|max|min|amax|amin|argmax|argmin|prod|var|std|"
                  r"logsumexp|any|all)$"),
    ("elementwise/cast/copy", r"elementwise|vectorized|unrolled|copy|cast|_to_copy|fill|index|gather|scatter|"
                              r"cat|triton_poi_|memcpy|memset|where|clamp|mul|add|div|sub|neg|exp|silu|"
                              r"embedding|masked|arange|zero|pow|rsqrt|sqrt|softplus|relu|view_as|"
                              r"ones|empty_strided|repeat|expand|stack|split|clone|sigmoid|square|diff|full|"
                              r"scalar_tensor|polar|reciprocal|logical|bitwise|__and__|__or__|outer|maximum|minimum|"
                              r"::(le|ge|gt|lt|ne|eq)_?$|_backward$"),
)
FAMILIES = tuple(dict.fromkeys(f for f, _ in FAMILY_RULES)) + ("other",)
_COMPILED = tuple((f, re.compile(p, re.IGNORECASE)) for f, p in FAMILY_RULES)


def family(name: str, trex_kernel_names: frozenset[str] = frozenset()) -> str:
    """Family of one kernel / op name; ``trex_kernel_names``: the prefixes of trex's generated
    kernels (``trex.codegen_triton`` names a kernel ``<fused op>_<10 hex digits>``)."""
    if trex_kernel_names and _is_trex_kernel(name, trex_kernel_names):
        return "trex fused"
    for fam, pattern in _COMPILED:
        if pattern.search(name):
            return fam
    return "other"


_TREX_KERNEL = re.compile(r"^(?P<op>\w+?)_[0-9a-f]{10}(_\w+)?$")


def _is_trex_kernel(name: str, op_names: frozenset[str]) -> bool:
    m = _TREX_KERNEL.match(name)
    return bool(m) and any(m.group("op").startswith(op) for op in op_names)


def trex_op_names() -> frozenset[str]:
    """Names of trex's registered fused ops (empty where the compiler package is not importable)."""
    try:
        from trex.compiler import registry
        registry.discover()
        return frozenset(re.sub(r"\W", "_", n) for n in registry.fused_ops())
    except Exception:      # the profile still works; trex kernels then count under their own rule
        return frozenset()


@dataclass(frozen=True)
class Unit:
    """One kernel (CUDA) or leaf op (CPU): name, start and duration in us."""
    name: str
    start_us: float
    dur_us: float


def device_units(prof) -> tuple[list[Unit], str]:
    """The kernels of a profiler capture (``kind = "cuda kernels"``) or, without any, the CPU's
    leaf ops (``kind = "cpu ops"``)."""
    events = prof.events()
    kernels = [e for e in events if _is_device_event(e)]
    if kernels:
        return [Unit(e.name, float(e.time_range.start), float(e.time_range.elapsed_us())) for e in kernels], \
            "cuda kernels"
    # CPU: every aten / trex op that would launch work, timed by its self time (its own work, not
    # the ops inside it), so that nested ops are not counted twice
    ops = [e for e in events if e.name.startswith(("aten::", "trex::")) and e.name[6:] not in NO_LAUNCH_OPS]
    return [Unit(e.name, float(e.time_range.start), float(e.self_cpu_time_total)) for e in ops], "cpu ops"


# aten ops that launch no kernel on a device (metadata, views, allocation): not counted as units,
# as trex.training.model.opcount counts them apart
NO_LAUNCH_OPS = frozenset(
    "view as_strided reshape _reshape_alias expand t transpose permute unsqueeze squeeze slice select alias "
    "detach _unsafe_view unflatten flatten split split_with_sizes unbind chunk narrow lift_fresh resolve_conj "
    "resolve_neg view_as_real view_as_complex result_type empty empty_strided empty_like is_nonzero "
    "contiguous numpy_T _has_compatible_shallow_copy_type expand_as movedim swapaxes to new_empty resize_ _conj "
    "unfold".split())


# record_function ranges the profiler mirrors onto the device timeline ("Optimizer.step#AdamW.step",
# "ProfilerStep#3"): spans over kernels, not kernels
ANNOTATION = re.compile(r"#|^ProfilerStep")


def _is_device_event(e) -> bool:
    dev = getattr(e, "device_type", None)
    return (dev is not None and str(dev).endswith(("CUDA", "PrivateUse1", "MTIA")) and e.time_range.elapsed_us() >= 0
            and not ANNOTATION.search(e.name))


def busy_us(units: list[Unit]) -> float:
    """Length of the union of the units' intervals (overlapping kernels on streams count once)."""
    total, end = 0.0, float("-inf")
    for u in sorted(units, key=lambda u: u.start_us):
        s, e = u.start_us, u.start_us + u.dur_us
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


def anatomy(units: list[Unit], kind: str, wall_us: float | None = None, tail_us: float = TAIL_US,
            trex_names: frozenset[str] = frozenset(), top: int = 12) -> dict:
    """The Figure-6 report of one step from its units.

    ``wall_us``: the step's wall time (default: first start to last end of the units); idle is the
    part of it with no unit running. Shares are of the summed unit time (``device_us``)."""
    if not units:
        raise ValueError("anatomy: the capture holds no kernels or ops (was the step run inside the profiler?)")
    span = max(u.start_us + u.dur_us for u in units) - min(u.start_us for u in units)
    wall = wall_us if wall_us is not None else span
    total = sum(u.dur_us for u in units)
    fams: dict[str, dict] = {f: {"device_us": 0.0, "launches": 0, "tail_launches": 0} for f in FAMILIES}
    names: dict[str, dict] = {}
    tail_n, tail_t = 0, 0.0
    for u in units:
        f = family(u.name, trex_names)
        rec = fams[f]
        rec["device_us"] += u.dur_us
        rec["launches"] += 1
        short = u.dur_us < tail_us
        if short:
            rec["tail_launches"] += 1
            tail_n += 1
            tail_t += u.dur_us
        n = names.setdefault(u.name, {"family": f, "device_us": 0.0, "launches": 0})
        n["device_us"] += u.dur_us
        n["launches"] += 1
    for rec in fams.values():
        rec["share"] = rec["device_us"] / total if total else 0.0
    busy = busy_us(units) if kind != "cpu ops" else total      # one CPU thread: self times do not overlap
    heavy = sorted(names.items(), key=lambda kv: -kv[1]["device_us"])[:top]
    return {
        "units": kind, "launches": len(units), "device_us": total, "wall_us": wall, "span_us": span,
        "busy_us": busy, "busy_share": min(1.0, busy / wall) if wall else 0.0,
        "idle_us": max(0.0, wall - busy), "tail_threshold_us": tail_us,
        "tail": {"launches": tail_n, "launch_share": tail_n / len(units), "device_us": tail_t,
                 "device_share": tail_t / total if total else 0.0},
        "families": {f: {k: (round(v, 3) if isinstance(v, float) else v) for k, v in rec.items()}
                     for f, rec in fams.items() if rec["launches"]},
        "heaviest": [{"name": n[:160], **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}}
                     for n, r in heavy],
    }


def anatomy_from_totals(ops: dict[str, dict], wall_s: float, steps: int = 1, tail_us: float = TAIL_US) -> dict | None:
    """A reduced anatomy from per-name totals (the train loop's log.profile_steps window,
    ``{name: {device_us, cpu_us, count}}``): the kernels are the entries with device time and no CPU
    time; the tail counts the kernels whose mean duration under their name is below ``tail_us``;
    busy = summed kernel time / wall (streams overlapping would count twice). Per step. None when the
    window holds no device kernels (a CPU run)."""
    kernels = {n: r for n, r in ops.items() if r.get("device_us", 0) > 0 and not r.get("cpu_us")
               and not ANNOTATION.search(n)}
    if not kernels:
        return None
    names = trex_op_names()
    total = sum(r["device_us"] for r in kernels.values())
    fams: dict[str, dict] = {}
    tail_n = tail_t = 0.0
    for n, r in kernels.items():
        rec = fams.setdefault(family(n, names), {"device_us": 0.0, "launches": 0})
        rec["device_us"] += r["device_us"] / steps
        rec["launches"] += r["count"] / steps
        if r["device_us"] / r["count"] < tail_us:
            tail_n += r["count"] / steps
            tail_t += r["device_us"] / steps
    launches = sum(r["count"] for r in kernels.values()) / steps
    wall_us = wall_s * 1e6 / steps
    return {"launches": launches, "device_us": total / steps, "wall_us": wall_us,
            "busy_share": min(1.0, total / steps / wall_us),
            "tail": {"launches": tail_n, "launch_share": tail_n / launches, "device_share": tail_t * steps / total},
            "family_share": {f: r["device_us"] * steps / total for f, r in fams.items()},
            "family_launches": {f: r["launches"] for f, r in fams.items()}}


def profile_anatomy(prof, wall_us: float | None = None) -> dict:
    units, kind = device_units(prof)
    return anatomy(units, kind, wall_us, trex_names=trex_op_names())


FAMILY_COLORS = {"GEMM": "#1f77b4", "attention": "#9467bd", "elementwise/cast/copy": "#d62728",
                 "reduction": "#ff7f0e", "trex fused": "#2ca02c", "optimizer": "#8c564b", "comm": "#e377c2",
                 "other": "#7f7f7f"}


def _with_families(r: dict) -> dict:
    """An anatomy with per-family {device_us, launches} (anatomy()'s form); anatomy_from_totals' reduced
    form carries shares and launch counts instead, from which the same records follow."""
    if "families" in r:
        return r
    fams = {f: {"device_us": share * r["device_us"], "launches": r["family_launches"].get(f, 0)}
            for f, share in r["family_share"].items()}
    return {"units": "kernels", "tail_threshold_us": TAIL_US, **r, "families": fams}


def plot_anatomies(reports: dict[str, dict], path, title: str = "") -> str | None:
    """One PNG, one column per mode: device-time share by family (stacked, with idle as a share of
    the step's wall time), launches per family, and the sub-20-us tail. Returns None, or why no
    plot was drawn (matplotlib missing: the JSON holds every number)."""
    try:
        import matplotlib
    except ImportError:
        return "matplotlib is not installed here; plot skipped (the JSON holds every number)"
    matplotlib.use("Agg")
    import os
    from pathlib import Path

    import matplotlib.pyplot as plt

    reports = {mode: _with_families(r) for mode, r in reports.items()}
    modes = list(reports)
    fig, axes = plt.subplots(1, 3, figsize=(15, 5))
    ax_share, ax_launch, ax_tail = axes
    for i, mode in enumerate(modes):
        r = reports[mode]
        wall = r["wall_us"] or 1.0
        bottom = 0.0
        for fam in FAMILIES:
            rec = r["families"].get(fam)
            if not rec:
                continue
            # bars in the step's wall time: busy families scaled by busy/device (overlap), then idle
            h = rec["device_us"] / r["device_us"] * r["busy_share"]
            ax_share.bar(i, h, bottom=bottom, color=FAMILY_COLORS[fam], label=fam if i == 0 else None)
            ax_launch.bar(i, rec["launches"], bottom=sum(r["families"].get(f, {}).get("launches", 0)
                                                         for f in FAMILIES[:FAMILIES.index(fam)]),
                          color=FAMILY_COLORS[fam])
            bottom += h
        ax_share.bar(i, 1.0 - r["busy_share"], bottom=bottom, color="white", edgecolor="black", hatch="//",
                     label="idle" if i == 0 else None)
        ax_tail.bar(i - 0.2, r["tail"]["launch_share"], width=0.4, color="#d62728",
                    label="tail share of launches" if i == 0 else None)
        ax_tail.bar(i + 0.2, r["tail"]["device_share"], width=0.4, color="#1f77b4",
                    label="tail share of device time" if i == 0 else None)
        ax_share.text(i, 1.01, f"{r['wall_us'] / 1e3:.1f} ms", ha="center", fontsize=8)
        ax_launch.text(i, r["launches"], f"{r['launches']}", ha="center", va="bottom", fontsize=8)
    for ax, name in ((ax_share, "share of step wall time"), (ax_launch, f"launches ({reports[modes[0]]['units']})"),
                     (ax_tail, f"units < {reports[modes[0]]['tail_threshold_us']:g} us")):
        ax.set_xticks(range(len(modes)), modes)
        ax.set_title(name)
    ax_share.set_ylim(0, 1.08)
    ax_tail.set_ylim(0, 1.0)
    ax_share.legend(fontsize=7, loc="lower right")
    ax_tail.legend(fontsize=7)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)
    return None
