"""The search tree: modify -> verify -> profile, commit or roll back.

Root: the cost model's configuration (AscendCostModel.solve / trex.codegen_triton.tiling), compiled,
verified and profiled like any candidate (its profile is the baseline every result is compared with).
From the current checkpoint, the moves of the target's table (trex.tuning.space) are ordered by the skills
the store has for the checkpoint's regime (memory-, vector-, scalar-bound), unknown moves by the
regime's prior knob order; each child is

  * skipped as "infeasible" when the cost model says the hardware cannot hold it (the reasons are kept;
    nothing is compiled),
  * compiled, then sent to the verifier process ("rejected" when it fails, with the reason),
  * profiled; when its time beats the checkpoint's by more than `min_gain` (a strict improvement) it
    is "committed" and becomes the new checkpoint, otherwise it is "rolled_back".

When a checkpoint has no untried move left the search backtracks to its parent checkpoint (the tree is
branchable: `TuneResult.nodes` keeps every node with its parent, so any node can be resumed with
`branch_from`). Budgets: wall time, number of compiled candidates, and `patience` (consecutive
candidates without an improvement) for early stopping. Every tried move updates the skills.

A second search for a key the store already holds returns the stored entry without compiling.
"""
from __future__ import annotations

import dataclasses
import hashlib
import statistics
import time
from collections.abc import Callable

from . import space
from .store import Store, store_key
from .verify import Verifier


@dataclasses.dataclass
class Node:
    id: int
    parent: int | None
    move: str | None
    config: dict
    status: str                   # root | committed | rolled_back | rejected | infeasible | failed
    time_s: float | None = None
    regime: str | None = None
    reason: str = ""
    profile: dict | None = None

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        if self.profile:
            d["profile"] = {k: v for k, v in self.profile.items() if k != "counters"}
        return d


@dataclasses.dataclass
class Planted:
    """A candidate injected by a test or a user (a hand-written variant): a name, its configuration and a
    transform of the printed source. It goes through the same verifier and profiler as any other."""
    name: str
    config: dict
    source_transform: Callable[[str], str] | None = None


@dataclasses.dataclass
class TuneResult:
    key: str
    from_store: bool
    config: dict
    time_s: float
    baseline_config: dict
    baseline_time_s: float
    profile_label: str
    nodes: list = dataclasses.field(default_factory=list)
    stop_reason: str = ""
    compiled: int = 0
    made_with: dict = dataclasses.field(default_factory=dict)   # budgets, checks, calibration (store.answers)
    kernel_sha256: str = ""       # the printer's kernel source at `config`, as it was verified and timed
    spread: float = 0.0           # relative spread of the re-measured times the last commit stood on

    @property
    def gain(self) -> float:
        return 1.0 - self.time_s / self.baseline_time_s if self.baseline_time_s else 0.0

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["nodes"] = [n.as_dict() for n in self.nodes]
        d["gain"] = self.gain
        return d

    @classmethod
    def from_dict(cls, d: dict) -> TuneResult:
        """A result read back from `as_dict` JSON (`trex tune --json`), e.g. to branch from one of its nodes."""
        fields = {f.name for f in dataclasses.fields(cls)} - {"nodes"}
        nodes = [Node(**{k: v for k, v in n.items() if k in {f.name for f in dataclasses.fields(Node)}})
                 for n in d.get("nodes", [])]
        return cls(**{k: d[k] for k in fields if k in d}, nodes=nodes)


def make_backend(target: str, pattern: str, dtype: str, named_sizes: dict, **kw):
    fam = space.family(target)
    if fam == "ascend":
        from .ascend import AscendBackend
        return AscendBackend(target, pattern, dtype, named_sizes, **kw)
    from .cuda import CudaBackend
    return CudaBackend(target, pattern, dtype, named_sizes, **kw)


class Search:
    def __init__(self, backend, store: Store, *, max_candidates: int = 24, time_budget_s: float = 300.0,
                 patience: int = 12, min_gain: float = 1e-3, checks: int = 3, verifier: Verifier | None = None,
                 planted: list[Planted] = (), log: Callable[[str], None] | None = None, remeasure: int = 5):
        for name, value in (("max_candidates", max_candidates), ("patience", patience), ("checks", checks)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be positive (got {value!r}): a positive integer")
        if not time_budget_s > 0:
            raise ValueError(f"time_budget_s must be positive (got {time_budget_s!r})")
        self.remeasure = remeasure
        self.b, self.store = backend, store
        self.family = space.family(backend.target)
        self.max_candidates, self.time_budget_s, self.patience = max_candidates, time_budget_s, patience
        self.min_gain, self.checks = min_gain, checks
        self.verifier = verifier
        self.planted = list(planted)
        self.log = log or (lambda s: None)
        self.nodes: list[Node] = []
        self.key = store_key(backend.pattern, backend.named_sizes, backend.dtype, backend.target,
                             getattr(backend, "unit", None))

    # ------------------------------------------------------------------------------ helpers
    def _evaluate(self, parent: int | None, move: str, config: dict, transform=None) -> Node:
        """Compile, verify, profile one candidate; return its node (status decided by the caller for
        a profiled node)."""
        node = Node(len(self.nodes), parent, move, dict(config), "failed")
        self.nodes.append(node)
        why = self.b.infeasible(config)
        if why:
            node.status, node.reason = "infeasible", "; ".join(why)
            return node
        t0 = time.monotonic()
        try:
            return self._build_verify_profile(node, config, transform)
        finally:
            self._eval_s.append(time.monotonic() - t0)

    def _build_verify_profile(self, node: Node, config: dict, transform) -> Node:
        try:
            art = self.b.compile(config, transform)
        except Exception as e:  # noqa: BLE001 - a candidate that does not build is a failed node, not a failed search
            node.reason = f"compile: {type(e).__name__}: {str(e)[:500]}"
            return node
        self.compiled += 1
        if hasattr(self.b, "verify_and_profile"):
            # Ascend: the profile's launches are part of the verification (same inputs and judge)
            try:
                ans, prof = self.b.verify_and_profile(art, self.checks)
            except Exception as e:  # noqa: BLE001 - a candidate that breaks the judge is rejected, with the reason
                ans, prof = {"ok": False, "reason": f"verifier: {type(e).__name__}: {e}"}, None
            if not ans.get("ok"):
                node.status, node.reason = "rejected", ans.get("reason", "verifier said no")
                return node
        else:
            ans = self.verifier.verify({"target": self.b.target, "pattern": self.b.pattern, "dtype": self.b.dtype,
                                        "sizes": self.b.named_sizes, "scalars": self.b.scalars,
                                        "kernel": art.for_verifier(), "checks": self.checks,
                                        "opt": getattr(self.b, "opt", "-O0"), "layout": getattr(self.b, "layout", None)})
            if not ans.get("ok"):
                node.status, node.reason = "rejected", ans.get("reason", "verifier said no")
                return node
            try:
                prof = self.b.profile(art)
            except Exception as e:  # noqa: BLE001
                node.reason = f"profile: {type(e).__name__}: {str(e)[:500]}"
                return node
        self._arts[node.id] = art
        node.profile, node.time_s = prof, prof["time_s"]
        node.profile["kernel_sha256"] = hashlib.sha256(art.source.encode()).hexdigest()
        node.regime = space.regime({k: v for k, v in prof["pipes_s"].items() if k != "launch"})[0]
        node.status = "profiled"
        return node

    def _ordered_moves(self, node: Node) -> list:
        prior = space.PRIOR_KNOB_ORDER.get(node.regime, space.PRIOR_KNOB_ORDER["memory-bound"])
        # knobs the backend knows cannot change this program's kernel (trex.tuning.cuda: a flag the printed
        # source ignores, pipelining stages of a loop-free kernel) would cost a compile for nothing
        fixed = getattr(self.b, "fixed_knobs", ())
        moves = [m for m in space.moves_for(self.b.target, node.config) if m.knob not in fixed]

        def rank(m: space.Move):
            score = self.store.skill_score(self.family, node.regime or "unknown", m.name)
            # known-good moves first (highest expected gain), then untried ones in the regime's prior
            # knob order, then moves that were tried and never helped
            if score is None:
                return (1, prior.index(m.knob) if m.knob in prior else len(prior), 0.0)
            return (0 if score > 0 else 2, 0, -score)
        return sorted(moves, key=rank)

    def _out_of_budget(self, t0: float, since_gain: int) -> str:
        if self.compiled >= self.max_candidates:
            return f"candidate budget ({self.max_candidates}) used"
        elapsed = time.monotonic() - t0
        if elapsed > self.time_budget_s:
            return f"time budget ({self.time_budget_s:.0f} s) used"
        # a candidate is started only when one more of the mean duration so far still fits: a time
        # budget is then overrun by the estimate's error, not by a whole candidate (the root, which
        # pays the process's first compiles, counts only until there are children to average)
        done = self._eval_s[1:] or self._eval_s
        if done and elapsed + sum(done) / len(done) > self.time_budget_s:
            return (f"time budget ({self.time_budget_s:.0f} s) used: the next candidate "
                    f"(~{sum(done) / len(done):.1f} s) would not fit")
        if since_gain >= self.patience:
            return f"early stop: {since_gain} candidates without an improvement"
        return ""

    # --------------------------------------------------------------------------------- run
    def run(self, *, use_store: bool = True, branch_from: TuneResult | None = None, node_id: int | None = None) -> TuneResult:
        """Search (or answer from the store). branch_from/node_id: continue an earlier result's tree
        from one of its nodes (a committed checkpoint or any profiled node) instead of the root."""
        fp = self.b.program.fingerprint()
        if use_store and branch_from is None:
            hit = self.store.get(self.b.pattern, self.b.named_sizes, self.b.dtype, self.b.target, fp,
                                 getattr(self.b, "unit", None))
            why_not = self.store.why_not_answer(hit, self.made_with()) if hit is not None else "no entry"
            if why_not:
                self.log(f"{self.key}: searching ({why_not})")
            else:
                self.log(f"{self.key}: answered from the store {self.store.path}")
                return TuneResult(self.key, True, dict(hit["config"]), hit["time_s"], dict(hit["baseline"]["config"]),
                                  hit["baseline"]["time_s"], hit["profile"], stop_reason="stored",
                                  made_with=dict(hit.get("made_with", {})), kernel_sha256=hit.get("kernel_sha256", ""))
        t0 = time.monotonic()
        self.compiled = 0
        self._eval_s: list = []      # seconds of every compiled candidate (compile + verify + profile)
        self._arts: dict = {}        # node id -> its artifact (re-measured on noisy profiles)
        self._spread = 0.0
        own_verifier = self.verifier is None
        if own_verifier:
            self.verifier = Verifier()
        try:
            return self._search(t0, branch_from, node_id)
        finally:
            if own_verifier:
                self.verifier.close()
                self.verifier = None

    def _search(self, t0: float, branch_from: TuneResult | None, node_id: int | None) -> TuneResult:
        if branch_from is not None:
            self.nodes = [dataclasses.replace(n) for n in branch_from.nodes]
            root = next(n for n in self.nodes if n.status == "root")
            start = self.nodes[node_id if node_id is not None else root.id]
            if start.time_s is None:
                raise ValueError(f"branch_from node {start.id} ({start.status}) was never profiled; "
                                 f"branch from a root, committed or rolled_back node")
        else:
            config, pred = self.b.initial()
            root = self._evaluate(None, None, config)
            if root.status != "profiled":
                raise RuntimeError(f"{self.key}: the cost model's own configuration {config} failed "
                                   f"({root.status}: {root.reason}); fix the generator before tuning")
            root.status = "root"
            root.profile["predicted_time_s"] = pred["time_s"]
            self.log(f"root {config}: {root.time_s * 1e6:.3f} us ({root.regime}); model predicted {pred['time_s'] * 1e6:.3f} us")
            start = root
        best = min((n for n in self.nodes if n.status in ("root", "committed")), key=lambda n: n.time_s)
        seen = {space.config_key(n.config) for n in self.nodes}
        # the backend's start points (cuda: tilings measured best for this program), evaluated from the
        # start node like planted candidates: a faster one becomes the checkpoint the moves start from
        if branch_from is None:
            for label, cfg in getattr(self.b, "start_points", lambda: [])():
                cfg = {**start.config, **cfg}
                if space.config_key(cfg) in seen or self._out_of_budget(t0, 0):
                    continue
                seen.add(space.config_key(cfg))
                node = self._evaluate(start.id, f"start:{label}", cfg)
                self._decide(node, start, best)
                if node.status == "committed":
                    best = start = node
                self.log(f"start point {label} {cfg}: {node.status} "
                         + (f"{node.time_s * 1e6:.3f} us" if node.time_s is not None else node.reason[:200]))
        for p in self.planted:
            node = self._evaluate(start.id, f"planted:{p.name}", p.config, p.source_transform)
            if node.status == "profiled":
                start, best = self._printer_twin(node, p, start, best, seen)
            self.log(f"planted {p.name}: {node.status} {node.reason[:200]}")
        stack = [start]                 # checkpoints; the top is the current one
        pending = {start.id: self._ordered_moves(start)}
        since_gain = 0
        stop = ""
        while stack:
            stop = self._out_of_budget(t0, since_gain)
            if stop:
                break
            cur = stack[-1]
            if not pending[cur.id]:
                stack.pop()             # exhausted: roll back to the previous checkpoint and branch there
                continue
            move = pending[cur.id].pop(0)
            cfg = space.apply_move(self.b.target, cur.config, move)
            if cfg is not None and hasattr(self.b, "canonical"):
                cfg = self.b.canonical(cfg)
            if cfg is None or space.config_key(cfg) in seen:
                continue
            seen.add(space.config_key(cfg))
            node = self._evaluate(cur.id, move.name, cfg)
            self._decide(node, cur, best)
            if node.time_s is not None and cur.time_s:
                gain = 1.0 - node.time_s / cur.time_s
                self.store.record_skill(self.family, cur.regime or "unknown", move.name, max(gain, 0.0),
                                        node.status == "committed", self.b.pattern)
            self.log(f"  #{node.id} {move.name:22s} {node.status:11s} "
                     + (f"{node.time_s * 1e6:.3f} us" if node.time_s is not None else node.reason[:160]))
            if node.status == "committed":
                since_gain = 0
                if node.time_s < best.time_s:
                    best = node
                stack.append(node)
                pending[node.id] = self._ordered_moves(node)
            elif node.status != "infeasible":
                since_gain += 1
        if not stop:
            stop = "every move from every checkpoint tried"
        root = next(n for n in self.nodes if n.status == "root")
        if best is not root and self._noisy():
            # the result must stand against the cost model's choice itself, not only against its checkpoint
            kept, info = self._separated(best, root)
            best.profile["against_root"] = info
            if not kept:
                stop += (f"; the best (node #{best.id}) was not faster than the root in every one of "
                         f"{self.remeasure} interleaved re-measurements: the root is kept")
                best = root
        return TuneResult(self.key, False, dict(best.config), best.time_s, dict(root.config), root.time_s,
                          root.profile.get("label", self.b.label), self.nodes, stop, self.compiled,
                          made_with=self.made_with(), kernel_sha256=best.profile.get("kernel_sha256", ""),
                          spread=self._spread)

    def made_with(self) -> dict:
        """How an entry is made: what a later request is compared with (Store.why_not_answer)."""
        return {"max_candidates": self.max_candidates, "time_budget_s": self.time_budget_s,
                "patience": self.patience, "checks": self.checks, "profile": self.b.label}

    def _printer_twin(self, node: Node, planted: Planted, start: Node, best: Node, seen: set) -> tuple:
        """A planted variant that profiles faster is not committed itself: the store keeps a
        configuration and codegen prints its own kernel there. The printer's kernel at the variant's
        configuration is evaluated (or found in the tree) and decided like any candidate; returns the
        (checkpoint, best) after it."""
        faster = node.time_s < start.time_s * (1.0 - self.min_gain)
        node.status = "rolled_back"
        if not faster:
            node.reason = f"planted variant not faster than its checkpoint #{start.id}"
            return start, best
        cfg = self.b.canonical(planted.config) if hasattr(self.b, "canonical") else dict(planted.config)
        twin = next((n for n in self.nodes if n.time_s is not None and n.id != node.id and n.move is not None
                     and not n.move.startswith("planted:") and space.config_key(n.config) == space.config_key(cfg)),
                    None)
        if twin is None and space.config_key(cfg) == space.config_key(start.config):
            twin = start
        if twin is None:
            seen.add(space.config_key(cfg))
            twin = self._evaluate(node.id, f"printer:{planted.name}", cfg)
            self._decide(twin, start, best)
        node.reason = (f"planted variant profiled {node.time_s * 1e6:.3f} us, but the store keeps configurations and "
                       f"codegen prints its own kernel: the printer's kernel at {cfg} is node #{twin.id} "
                       f"({twin.status}" + (f", {twin.time_s * 1e6:.3f} us)" if twin.time_s is not None else ")"))
        if twin.status == "committed":
            return twin, (twin if twin.time_s < best.time_s else best)
        return start, best

    def _art_of(self, node: Node):
        """A profiled node's artifact (a node of a resumed tree: the printer's kernel at its config)."""
        if node.id not in self._arts:
            self._arts[node.id] = self.b.compile(node.config)
        return self._arts[node.id]

    def _noisy(self) -> bool:
        return not getattr(self.b, "deterministic", False) and self.remeasure > 0

    def _separated(self, challenger: Node, incumbent: Node) -> tuple[bool, dict]:
        """Re-measure challenger and incumbent `remeasure` times each, interleaved (the order alternates
        per round). A gain counts only outside the measured spread: every challenger time below every
        incumbent time, and the medians apart by more than min_gain."""
        times: dict = {"challenger": [], "incumbent": []}
        for i in range(self.remeasure):
            pair = [("challenger", challenger), ("incumbent", incumbent)]
            for role, n in (pair if i % 2 == 0 else pair[::-1]):
                times[role].append(self.b.profile(self._art_of(n))["time_s"])
        tc, ti = times["challenger"], times["incumbent"]
        mc, mi = statistics.median(tc), statistics.median(ti)
        spread = (max(tc + ti) - min(tc + ti)) / mi if mi else 0.0
        ok = max(tc) < min(ti) and mc < mi * (1.0 - self.min_gain)
        self._spread = spread
        return ok, {"challenger_s": tc, "incumbent_s": ti, "incumbent": incumbent.id, "spread": spread,
                    "separated": ok}

    def _decide(self, node: Node, checkpoint: Node, best: Node) -> None:
        """Commit a strict improvement over the checkpoint (and never anything slower than the best so
        far, so the result is never slower than the cost model's choice); roll back everything else.
        On a noisy profile (measured) the improvement must survive an interleaved re-measurement."""
        if node.status != "profiled":
            return
        improves = node.time_s < checkpoint.time_s * (1.0 - self.min_gain) and node.time_s < best.time_s
        if improves and self._noisy():
            improves, info = self._separated(node, checkpoint)
            node.profile["remeasured"] = info
            if improves:
                node.time_s = statistics.median(info["challenger_s"])
            else:
                node.reason = (f"first profile faster, but not in every one of {self.remeasure} interleaved "
                               f"re-measurements against #{checkpoint.id} (spread {info['spread']:.2%})")
        node.status = "committed" if improves else "rolled_back"


def tune(target: str, pattern: str, dtype: str, named_sizes: dict, *, store: Store | None = None,
         use_store: bool = True, save: bool = True, backend_kw: dict | None = None,
         branch_from: TuneResult | None = None, node_id: int | None = None, **search_kw) -> TuneResult:
    """Tune one (pattern, shape, dtype, target) and record the outcome in the store. branch_from /
    node_id: continue an earlier result's tree from one of its nodes (Search.run). backend_kw may name
    `program_index` (Ascend): which launch of the pattern's layout; `tune_all` tunes every one."""
    store = store or Store()
    backend = make_backend(target, pattern, dtype, named_sizes, **(backend_kw or {}))
    unit = getattr(backend, "unit", None)
    if branch_from is not None and branch_from.key != store_key(pattern, backend.named_sizes, dtype, target, unit):
        raise ValueError(f"branch_from is a result for {branch_from.key}, not for "
                         f"{store_key(pattern, backend.named_sizes, dtype, target, unit)}; resume with the same "
                         f"pattern, program, shape bucket, dtype and target")
    s = Search(backend, store, **search_kw)
    res = s.run(use_store=use_store, branch_from=branch_from, node_id=node_id)
    if not res.from_store:
        store.put({"op": pattern, "sizes": dict(backend.named_sizes), "dtype": dtype, "target": target,
                   "unit": unit, "program": backend.program.name, "fingerprint": backend.program.fingerprint(),
                   "config": res.config, "time_s": res.time_s, "profile": res.profile_label,
                   "baseline": {"config": res.baseline_config, "time_s": res.baseline_time_s},
                   "gain": res.gain, "candidates": res.compiled, "stop_reason": res.stop_reason,
                   "made_with": res.made_with, "kernel_sha256": res.kernel_sha256, "spread": res.spread})
        if save:
            store.save()
    return res


def tune_all(target: str, pattern: str, dtype: str, named_sizes: dict, *, backend_kw: dict | None = None,
             **tune_kw) -> list[TuneResult]:
    """Tune every program `target`'s layout of `pattern` launches (harness.layout_programs: mHC's Ascend
    backward runs a coefficient and an apply AIV program around the Cube's GEMMs), one search each with
    the same budgets, each candidate verified as `tune` does; one store entry per program. cuda tunes
    its layout's program only (the cuda backend has no program index)."""
    from . import harness
    fam = space.family(target)
    count = len(harness.layout_programs(pattern, dtype)) if fam == "ascend" else 1
    out = []
    for index in range(count):
        kw = dict(backend_kw or {}, **({"program_index": index} if index else {}))
        out.append(tune(target, pattern, dtype, named_sizes, backend_kw=kw, **tune_kw))
    return out


__all__ = ["Node", "Planted", "Search", "TuneResult", "make_backend", "tune", "tune_all"]
