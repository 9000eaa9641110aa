"""The MLP training step of bench/cuda/mlp_bench.c in PyTorch on the GPU:
the same inputs (bench_cuda.h's BenchInput), the same step (loss, gradient, new
parameters = p - 0.01 * gradient, their checksum read back as a Python
float, which synchronizes), timed per call like the C drivers. Prints one
JSON line per size (one process for all: importing torch takes seconds);
{"skipped": why} when torch or its CUDA is missing.

Usage: torch_mlp.py [--device cpu] FEAT:HIDDEN:CLASSES:BATCH ...
(--device cpu: run.py --self-test checks the checksum on machines without
a GPU)."""
import argparse
import json
import os
import statistics
import time


def inputs(torch, count, seed, offset, scale, device):
    """BenchInput: offset + scale * u, u = ((i * 2654435761 + seed * 97531)
    mod 2^32 >> 8) / 2^24, exact in f32."""
    i = torch.arange(count, dtype=torch.int64, device=device)
    h = (i * 2654435761 + seed * 97531) & 0xFFFFFFFF
    u = (h >> 8).to(torch.float32) / 16777216.0
    return offset + scale * u


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="+",
                        metavar="FEAT:HIDDEN:CLASSES:BATCH")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    try:
        import torch
    except ImportError as error:
        print(json.dumps({"skipped": f"no torch ({error})"}))
        return
    if args.device == "cuda" and not torch.cuda.is_available():
        print(json.dumps({"skipped": f"torch {torch.__version__} has no CUDA "
                                     "device"}))
        return
    # Plain FP32 matmuls (no TF32), as Delta and cuBLAS compute by default.
    torch.set_float32_matmul_precision("highest")
    for sizes in args.sizes:
        feat, hidden, classes, batch = (int(size) for size in sizes.split(":"))
        print(json.dumps(measure(torch, args.device, feat, hidden, classes,
                                 batch)), flush=True)


def measure(torch, device_name, feat, hidden, classes, batch):
    """One size's JSON record."""
    device = torch.device(device_name)
    shapes = [(feat, hidden), (hidden,), (hidden, classes), (classes,)]
    params = []
    for leaf, shape in enumerate(shapes):
        count = 1
        for size in shape:
            count *= size
        params.append(inputs(torch, count, leaf + 1, -0.05, 0.1, device)
                      .reshape(shape).requires_grad_())
    xs = inputs(torch, batch * feat, 5, 0.0, 1.0, device).reshape(batch, feat)
    labels = torch.arange(batch, device=device) * 7 % classes

    def step():
        w1, b1, w2, b2 = params
        logits = torch.relu(xs @ w1 + b1) @ w2 + b2
        loss = torch.nn.functional.cross_entropy(logits, labels)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            checksum = sum((p - 0.01 * g).sum() for p, g in zip(params, grads))
        return checksum.item()

    def synchronize():
        if device_name == "cuda":
            torch.cuda.synchronize()

    min_time = float(os.environ.get("BENCH_MIN_TIME", "0.2"))
    max_time = float(os.environ.get("BENCH_MAX_TIME", "3"))
    min_reps = int(os.environ.get("BENCH_MIN_REPS", "5"))
    checksum = step()
    for _ in range(2):  # cuBLAS handles, autograd's first passes
        step()
    synchronize()
    times = []
    while ((len(times) < min_reps or sum(times) < min_time)
           and not (times and sum(times) >= max_time) and len(times) < 1000):
        start = time.perf_counter()
        step()
        synchronize()
        times.append(time.perf_counter() - start)
    name = (torch.cuda.get_device_name(0) if device_name == "cuda"
            else "cpu")
    return {"case": "mlp", "params": f"{feat}-{hidden}-{classes} batch {batch}",
            "impl": f"pytorch {device_name}",
            "median_s": statistics.median(times), "reps": len(times),
            "work": 1, "unit": "step", "checksum": checksum,
            "torch": torch.__version__, "device": name}


if __name__ == "__main__":
    main()
