"""Compile-check an AscendC kernel source against the emulator and list its kernels.

    python -m trex.codegen_ascendc.emulator my_kernel.cpp [-- extra g++ flags]

Exit status 0 when it compiles (the shared library is cached for later `compile_kernel` calls), 1 with
g++'s diagnostics otherwise, 2 when the file does not exist. Run kernels from Python with `trex.codegen_ascendc.emulator.run_kernel`.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .runner import EmulatorError, compile_kernel


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trex.codegen_ascendc.emulator", description=__doc__.splitlines()[0])
    parser.add_argument("source", help="kernel source file (#include \"kernel_operator.h\")")
    parser.add_argument("flags", nargs="*", help="extra g++ flags, after --")
    args = parser.parse_args(argv)
    if not Path(args.source).is_file():
        print(f"python -m trex.codegen_ascendc.emulator: source {args.source!r} does not exist; "
              f"pass the path of a kernel .cpp file", file=sys.stderr)
        return 2
    try:
        lib = compile_kernel(args.source, extra_flags=args.flags)
    except EmulatorError as e:
        print(e, file=sys.stderr)
        return 1
    print(f"compiled: {lib.path}")
    for sig in lib.kernels.values():
        print(f"  {sig.describe()}")
    if not lib.kernels:
        print("  (no __global__ kernels found)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
