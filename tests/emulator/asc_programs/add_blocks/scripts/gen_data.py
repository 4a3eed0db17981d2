import argparse
import os

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("-scenarioNum", type=int, default=1)
n = {1: 8 * 2048, 2: 3 * 1000}[p.parse_args().scenarioNum]
rng = np.random.default_rng(0)
x = rng.uniform(-2, 2, n).astype(np.float16)
y = rng.uniform(-2, 2, n).astype(np.float16)
os.makedirs("input", exist_ok=True)
os.makedirs("output", exist_ok=True)
x.tofile("input/input_x.bin")
y.tofile("input/input_y.bin")
(x + y).astype(np.float16).tofile("output/golden.bin")
