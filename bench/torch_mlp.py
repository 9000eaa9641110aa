"""One SGD training step of a 784-512-10 MLP, batch 256, in PyTorch: the
reference of the mlp benchmark. Prints one JSON line like the C drivers.
Threads come from BENCH_THREADS (torch.set_num_threads); run.py pins
OPENBLAS_NUM_THREADS the same way."""
import json
import os
import statistics
import time

import torch

threads = int(os.environ.get("BENCH_THREADS", "1"))
torch.set_num_threads(threads)
torch.manual_seed(0)
w1 = (torch.rand(784, 512) * 0.1 - 0.05).requires_grad_()
b1 = (torch.rand(512) * 0.1 - 0.05).requires_grad_()
w2 = (torch.rand(512, 10) * 0.1 - 0.05).requires_grad_()
b2 = (torch.rand(10) * 0.1 - 0.05).requires_grad_()
xs = torch.rand(256, 784)
labels = torch.arange(256) % 10
params = [w1, b1, w2, b2]


def step():
    logits = torch.relu(xs @ w1 + b1) @ w2 + b2
    loss = torch.nn.functional.cross_entropy(logits, labels)
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= 0.01 * p.grad
            p.grad = None


for _ in range(5):
    step()
times = []
start_all = time.perf_counter()
while len(times) < 20 or time.perf_counter() - start_all < 0.5:
    start = time.perf_counter()
    step()
    times.append(time.perf_counter() - start)
print(json.dumps({"case": "mlp", "params": "784-512-10 batch 256 f32",
                  "impl": "pytorch-%s" % torch.__version__,
                  "median_s": statistics.median(times), "work": 1,
                  "unit": "step"}))
