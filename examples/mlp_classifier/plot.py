#!/usr/bin/python3
"""Reads the output of mlp.dl on stdin, passes it through to stdout, and
writes the `losses:` line as an SVG line plot (loss per 10 training steps).

usage: dlc run mlp.dl | plot.py loss.svg
"""
import re
import sys


def svg(losses, width=480, height=300, margin=50):
    top = max(losses)
    n = len(losses)
    def x(i):
        return margin + (width - 2 * margin) * i / max(n - 1, 1)
    def y(v):
        return height - margin - (height - 2 * margin) * v / top
    points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(losses))
    steps = n * 10
    return f"""<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">
<rect width="100%" height="100%" fill="white"/>
<text x="{width / 2}" y="20" text-anchor="middle" font-family="sans-serif" font-size="14">MLP on three spirals: training loss</text>
<line x1="{margin}" y1="{height - margin}" x2="{width - margin}" y2="{height - margin}" stroke="black"/>
<line x1="{margin}" y1="{margin}" x2="{margin}" y2="{height - margin}" stroke="black"/>
<text x="{width / 2}" y="{height - 15}" text-anchor="middle" font-family="sans-serif" font-size="12">step (0 to {steps})</text>
<text x="{margin - 5}" y="{margin + 4}" text-anchor="end" font-family="sans-serif" font-size="11">{top:.2f}</text>
<text x="{margin - 5}" y="{height - margin + 4}" text-anchor="end" font-family="sans-serif" font-size="11">0</text>
<text x="15" y="{height / 2}" font-family="sans-serif" font-size="12" transform="rotate(-90 15 {height / 2})" text-anchor="middle">cross-entropy</text>
<polyline fill="none" stroke="steelblue" stroke-width="2" points="{points}"/>
</svg>
"""


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "loss.svg"
    losses = None
    for line in sys.stdin:
        sys.stdout.write(line)
        if line.startswith("losses:"):
            values = line.split("] [", 1)[1].rstrip().rstrip("]")
            losses = [float(v) for v in values.split(",")]
    if not losses:
        sys.exit("plot.py: no 'losses:' line in the input")
    with open(out, "w") as f:
        f.write(svg(losses))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
