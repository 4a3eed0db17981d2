import sys

import numpy as np

out = np.fromfile(sys.argv[1], dtype=np.float16).astype(np.float32)
golden = np.fromfile(sys.argv[2], dtype=np.float16).astype(np.float32)
bad = ~np.isclose(out, golden, rtol=1e-3, atol=1e-3, equal_nan=False)
if out.shape != golden.shape or bad.any():
    print(f"test failed: {int(bad.sum())} of {golden.size} elements differ")
    sys.exit(1)
print("test pass")
