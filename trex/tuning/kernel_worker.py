"""The kernel worker (trex.tuning.sandbox): runs one candidate library's launches and hands back data.

Started as `python -I /abs/path/trex/tuning/kernel_worker.py FD` by sandbox.run: isolated mode, so
neither the working directory nor $PYTHONPATH is on sys.path; the trex package is the one next to this
file. Reads the request (JSON) from stdin, checks the library's SHA-256 *before* loading it, runs every
launch, writes the buffers and counters to result.npz in its I/O directory and then one frame
`TREX-RESULT <nonce> <sha256 of result.npz>` to FD. It never judges anything.
"""
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# buffers here are numpy arrays; the emulator's runner imports torch lazily for tensor arguments, which
# would cost the worker seconds to import and to tear down: make that import fail fast (it is optional there)
sys.modules["torch"] = None


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main() -> None:
    channel = int(sys.argv[1])
    req = json.loads(sys.stdin.read())
    import numpy as np

    from trex.codegen_ascendc.emulator.runner import EmulatorError, KernelLibrary
    from trex.codegen_ascendc.emulator.signature import parse_kernel_signatures

    io = req["io"]
    meta: dict = {"launches": []}
    arrays: dict = {}
    if _sha256(req["library"]) != req["sha256"]:
        meta["fatal"] = f"the library {req['library']} is not the one that was built (sha256 mismatch)"
    else:
        lib = KernelLibrary(path=req["library"], kernels=parse_kernel_signatures(req["source"]))
        with np.load(os.path.join(io, "request.npz"), allow_pickle=False) as z:
            for i, launch in enumerate(req["launches"]):
                args = [np.array(z[f"l{i}_a{j}"]) if present else None for j, present in enumerate(launch["args"])]
                try:
                    counters = lib.launch(req["kernel"], launch["cores"], *args, check_sync=launch["check_sync"])
                except (EmulatorError, ValueError, TypeError) as e:
                    meta["launches"].append({"error": f"{type(e).__name__}: {e}"[-2000:]})
                    continue
                meta["launches"].append({"counters": counters})
                arrays.update({f"l{i}_a{j}": a for j, a in enumerate(args) if a is not None})
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    path = os.path.join(io, "result.npz")
    np.savez(path, **arrays)
    os.write(channel, f"TREX-RESULT {req['nonce']} {_sha256(path)}\n".encode())
    os.close(channel)


if __name__ == "__main__":
    main()
