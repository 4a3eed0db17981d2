"""Observability: match counters, per-graph reports, ``TREX_LOGS``.

``TREX_LOGS`` is a comma list of channels: ``matches`` (per graph: what matched, near-misses and
why), ``graphs`` (the graph before and after the passes, and the forward/backward graphs AOTAutograd
produced), ``all``. Output goes to the ``trex`` logger (stderr by default).

Tests read ``counters``: ``counters["matches"][pattern]`` and ``counters["near_misses"][pattern]``
accumulate over the process; ``capture()`` collects the reports of the compiles inside a block.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import os
import sys

log = logging.getLogger("trex")
if not log.handlers:
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(logging.Formatter("[trex] %(message)s"))
    log.addHandler(_handler)
    log.setLevel(logging.INFO)
    log.propagate = False

counters: collections.defaultdict = collections.defaultdict(collections.Counter)
CHANNELS = ("matches", "graphs")


_warned_specs: set = set()


def enabled(channel: str) -> bool:
    raw = os.environ.get("TREX_LOGS", "")
    spec = {c.strip() for c in raw.split(",") if c.strip()}
    unknown = sorted(spec - set(CHANNELS) - {"all"})
    if unknown and raw not in _warned_specs:
        _warned_specs.add(raw)
        log.warning(f"TREX_LOGS names unknown channel(s) {', '.join(unknown)}; valid: "
                    f"{', '.join(CHANNELS + ('all',))} (comma-separated)")
    return channel in spec or "all" in spec


@dataclasses.dataclass
class MatchRecord:
    pattern: str
    anchor: str
    replaced_by: list[str]
    scalars: dict


@dataclasses.dataclass
class NearMiss:
    pattern: str      # the pattern that came closest
    anchor: str       # where: the user's file:line of the chain's last op (graph.source_line)
    reason: str       # the first operation that differs, with its own file:line


@dataclasses.dataclass
class GraphReport:
    graph_id: str
    matches: list[MatchRecord] = dataclasses.field(default_factory=list)
    near_misses: list[NearMiss] = dataclasses.field(default_factory=list)
    fallbacks: list[str] = dataclasses.field(default_factory=list)
    pre_grad_graph: str = ""
    forward_graph: str = ""
    backward_graph: str = ""
    inference_graph: str = ""
    dumped: list[str] = dataclasses.field(default_factory=list)
    compiled_graphs: dict = dataclasses.field(default_factory=dict)   # stage -> fx.GraphModule
    seconds: dict = dataclasses.field(default_factory=dict)           # phase -> wall time of trex's own steps

    def match_counts(self) -> collections.Counter:
        return collections.Counter(m.pattern for m in self.matches)

    def format(self) -> str:
        lines = [f"graph {self.graph_id}:"]
        counts = self.match_counts()
        if counts:
            lines.append("  matched: " + ", ".join(f"{p} x{n}" for p, n in sorted(counts.items())))
        for m in self.matches:
            lines.append(f"    {m.pattern} at {m.anchor} -> {', '.join(m.replaced_by)} {m.scalars or ''}")
        if not self.matches:
            lines.append("  matched: nothing")
        for line in dict.fromkeys(f"  near-miss {nm.pattern} at {nm.anchor}: {nm.reason}" for nm in self.near_misses):
            lines.append(line)   # once per chain: its weighted and weight-free anchors explain alike
        for fb in self.fallbacks:
            lines.append(f"  fell back to eager: {fb}")
        for path in self.dumped:
            lines.append(f"  wrote {path}")
        return "\n".join(lines)


# torch loggers that print a traceback (log.exception) for an op that fails while trex prepares or
# fuses a graph; trex catches the failure and warns in one line, so their records go to the debug log
THIRD_PARTY_LOGGERS = ("torch._subclasses.fake_tensor", "torch.fx.experimental.proxy_tensor")


class _ToDebug(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        log.debug("%s: %s", record.name, record.getMessage(), exc_info=record.exc_info)
        return False


@contextlib.contextmanager
def third_party_tracebacks_to_debug():
    """Inside the block, tracebacks torch logs on its own go to the ``trex`` logger at DEBUG level."""
    to_debug = _ToDebug()
    loggers = [logging.getLogger(name) for name in THIRD_PARTY_LOGGERS]
    for logger in loggers:
        logger.addFilter(to_debug)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(to_debug)


_captures: list[list[GraphReport]] = []


@contextlib.contextmanager
def capture():
    """Collect the GraphReports of every graph compiled inside the block (nested blocks all see them)."""
    reports: list[GraphReport] = []
    _captures.append(reports)
    try:
        yield reports
    finally:
        _captures.remove(reports)


def publish(report: GraphReport) -> None:
    for reports in _captures:
        reports.append(report)
    for m in report.matches:
        counters["matches"][m.pattern] += 1
    for nm in report.near_misses:
        counters["near_misses"][nm.pattern] += 1
    if enabled("matches"):
        log.info(report.format())
