#!/usr/bin/python3
"""The ADBench GMM objective in plain Python (f64), on the same inputs as
gmm.dl, and its gradient w.r.t. alphas by central differences. Prints what
gmm.dl prints for the objective and d/dalphas; with --check FILE it reads
gmm.dl's output from FILE and fails unless they agree to 1e-4 relative."""
import math
import sys

N, K, D = 100, 4, 3
TRI = D * (D - 1) // 2

alphas = [math.sin(c + 1.0) for c in range(K)]
means = [[math.cos(3 * c + j) for j in range(D)] for c in range(K)]
qdiag = [[0.3 * math.sin(2 * c + 5 * j) for j in range(D)] for c in range(K)]
ltri = [[0.2 * math.cos(7 * c + 3 * t) for t in range(TRI)] for c in range(K)]
x = [[math.sin(i * 7 + j * 3) * 1.5 for j in range(D)] for i in range(N)]
gamma, m = 1.0, 0


def logsumexp(v):
    top = max(v)
    return top + math.log(sum(math.exp(e - top) for e in v))


def log_gamma_distrib(a, p):
    return 0.25 * p * (p - 1) * math.log(math.pi) + sum(
        math.lgamma(a + 0.5 * (1 - j)) for j in range(1, p + 1))


def objective(alphas):
    slse = 0.0
    for i in range(N):
        terms = []
        for c in range(K):
            xc = [x[i][j] - means[c][j] for j in range(D)]
            # Q xc with Q lower triangular, ltri packed by column.
            qx = [math.exp(qdiag[c][j]) * xc[j] for j in range(D)]
            t = 0
            for col in range(D):
                for row in range(col + 1, D):
                    qx[row] += ltri[c][t] * xc[col]
                    t += 1
            terms.append(alphas[c] + sum(qdiag[c]) - 0.5 * sum(v * v for v in qx))
        slse += logsumexp(terms)
    n_dof = D + m + 1
    prior = sum(0.5 * gamma * gamma * (sum(math.exp(q) ** 2 for q in qdiag[c]) +
                                       sum(l * l for l in ltri[c])) - m * sum(qdiag[c])
                for c in range(K))
    cst = n_dof * D * (math.log(gamma) - 0.5 * math.log(2)) - log_gamma_distrib(0.5 * n_dof, D)
    prior -= K * cst
    return -N * D * 0.5 * math.log(2 * math.pi) + slse - N * logsumexp(alphas) + prior


def main():
    value = objective(alphas)
    grad = []
    for c in range(K):
        h = 1e-6
        up = list(alphas); up[c] += h
        down = list(alphas); down[c] -= h
        grad.append((objective(up) - objective(down)) / (2 * h))
    print("objective:", value)
    print("d/dalphas:", grad)
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        text = open(sys.argv[2]).read()
        got = float(text.split("objective:")[1].split()[0])
        got_grad = [float(v) for v in
                    text.split("d/dalphas:")[1].split("] [")[1].split("]")[0].split(",")]
        ok = abs(got - value) <= 1e-4 * abs(value) and all(
            abs(a - b) <= 1e-4 * max(1.0, abs(b)) for a, b in zip(got_grad, grad))
        print("agree:", ok)
        sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
