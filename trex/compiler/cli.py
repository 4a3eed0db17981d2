"""`trex` console script: a thin dispatcher over the `trex.commands` entry-point group.

Each layer registers its own sub-commands in pyproject.toml, so this module never imports a later
layer directly (DESIGN.md: data flows one way). A sub-command is `main(argv: list[str]) -> int`.
"""
from __future__ import annotations

import sys
from importlib.metadata import entry_points


def _commands() -> dict:
    return {ep.name: ep for ep in entry_points(group="trex.commands")}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = _commands()
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: trex <command> [args...]\n\ncommands:")
        for name in sorted(commands):
            print(f"  {name}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in commands:
        print(f"trex: unknown command {name!r}; run `trex --help` for the list "
              f"(if it should exist, reinstall with `pip install -e .`)", file=sys.stderr)
        return 2
    fn = commands[name].load()
    return int(fn(rest) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
