"""NCCB's neural reward estimator with an upper confidence bound (Cao et al. 2022, eqs. (9)-(14)).

A small ReLU network in numpy (no torch: a few hundred parameters, CPU, seeded from the
strategy's generator), following NeuralUCB (Zhou, Li, Gu 2020), which Cao et al. 2022 builds on:

- f(x; theta) = sqrt(w) W_L relu(W_{L-1} ... relu(W_1 x)) (eq. (9)); the sqrt factor is
  sqrt of the network width w, as in NeuralUCB (Cao et al. 2022 reuses the letter m).
- Initialisation: W_l = [[W, 0], [0, W]] with W ~ N(0, 4/w) for l < L (eq. (11)) and
  W_L = (w^T, -w^T) with w ~ N(0, 2/w) (eq. (12)). W_1's blocks take half the input
  each; an odd-sized input is padded with a zero.
- Training minimises eq. (10), sum_b (f(x_b) - r_b)^2 / 2 + w lambda |theta -
  theta^0|^2 / 2, by full-batch gradient descent from the current parameters; the loss
  is divided by the number of samples (same minimiser, a step size that does not
  depend on how many rewards were seen).
- U = f(x) + gamma sqrt(g^T Z^{-1} g / w), g = grad_theta f(x) (eq. (13)); Z starts at
  lambda I and grows by g g^T / w for every played arm (eq. (14)); Z^{-1} is kept
  up to date with one Woodbury update per round (rank = arms played).
"""

from __future__ import annotations

import math

import numpy as np


class NeuralUCB:
    """The estimator f(x; theta), its gradient, the design matrix Z and the bound U."""

    def __init__(
        self,
        input_dim: int,
        width: int,
        depth: int,
        reg: float,
        gamma: float,
        rng: np.random.Generator,
    ) -> None:
        if width < 2 or width % 2:
            raise ValueError(f"the network width must be even and >= 2, got {width}")
        if depth < 2:
            raise ValueError(f"the network needs at least 2 layers, got {depth}")
        self.input_dim = input_dim
        self.width = width
        self.reg = reg
        self.gamma = gamma
        half = width // 2
        padded = input_dim + input_dim % 2
        block = rng.normal(0.0, math.sqrt(4 / width), size=(half, padded // 2))
        weights = [_block_diagonal(block)]
        for _ in range(depth - 2):
            block = rng.normal(0.0, math.sqrt(4 / width), size=(half, half))
            weights.append(_block_diagonal(block))
        last = rng.normal(0.0, math.sqrt(2 / width), size=half)
        weights.append(np.concatenate([last, -last])[None, :])
        self.weights = weights
        self.initial = [w.copy() for w in weights]
        self.n_params = sum(w.size for w in weights)
        self.z_inverse = np.eye(self.n_params) / reg

    # -- the network --------------------------------------------------------------------

    def _pad(self, x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(np.asarray(x, dtype=float))
        if x.shape[1] != self.input_dim:
            raise ValueError(f"contexts have {x.shape[1]} values, expected {self.input_dim}")
        if self.input_dim % 2:
            x = np.concatenate([x, np.zeros((len(x), 1))], axis=1)
        return x

    def _forward(self, x: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Layer inputs h_0..h_{L-1} and pre-activations a_1..a_{L-1}."""
        inputs, pre = [self._pad(x)], []
        for w in self.weights[:-1]:
            pre.append(inputs[-1] @ w.T)
            inputs.append(np.maximum(pre[-1], 0.0))
        return inputs, pre

    def predict(self, x: np.ndarray) -> np.ndarray:
        """f(x; theta) for each row of ``x`` (eq. (9))."""
        inputs, _ = self._forward(x)
        return math.sqrt(self.width) * (inputs[-1] @ self.weights[-1].T)[:, 0]

    def _deltas(self, inputs: list[np.ndarray], pre: list[np.ndarray]) -> list[np.ndarray]:
        """d f / d a_l for every layer (the last is the constant sqrt(w))."""
        n = len(inputs[0])
        deltas = [np.full((n, 1), math.sqrt(self.width))]
        for w, a in zip(self.weights[:0:-1], pre[::-1], strict=True):
            deltas.append((deltas[-1] @ w) * (a > 0))
        return deltas[::-1]

    def gradients(self, x: np.ndarray) -> np.ndarray:
        """grad_theta f(x; theta) per row, flattened as vec(W_1), ..., vec(W_L)."""
        inputs, pre = self._forward(x)
        parts = [
            np.einsum("no,ni->noi", d, h).reshape(len(h), -1)
            for d, h in zip(self._deltas(inputs, pre), inputs, strict=True)
        ]
        return np.concatenate(parts, axis=1)

    # -- the bandit ----------------------------------------------------------------------

    def bound(self, x: np.ndarray) -> np.ndarray:
        """U = f + gamma sqrt(g^T Z^{-1} g / w) per row (eq. (13))."""
        g = self.gradients(x)
        width_term = np.einsum("np,np->n", g @ self.z_inverse, g) / self.width
        return self.predict(x) + self.gamma * np.sqrt(np.maximum(width_term, 0.0))

    def add_to_design(self, x: np.ndarray) -> None:
        """Z <- Z + g g^T / w for each row's gradient (eq. (14)).

        With G the rows' gradients over sqrt(w), Woodbury's identity updates Z^{-1} in
        one step: (Z + G^T G)^{-1} = Z^{-1} - Z^{-1} G^T (I + G Z^{-1} G^T)^{-1} G Z^{-1}
        (Z^{-1} is symmetric), the same as one Sherman-Morrison step per row.
        """
        g = self.gradients(x) / math.sqrt(self.width)
        if not len(g):
            return
        zg = self.z_inverse @ g.T
        inner = np.eye(len(g)) + g @ zg
        self.z_inverse -= zg @ np.linalg.solve(inner, zg.T)

    def loss(self, x: np.ndarray, rewards: np.ndarray) -> float:
        """Eq. (10) divided by the number of samples."""
        residual = self.predict(x) - rewards
        pairs = zip(self.weights, self.initial, strict=True)
        drift = sum(float(((w - w0) ** 2).sum()) for w, w0 in pairs)
        return float((residual**2).sum() / 2 + self.width * self.reg * drift / 2) / len(x)

    def fit(self, x: np.ndarray, rewards: np.ndarray, steps: int, lr: float) -> None:
        """``steps`` of full-batch gradient descent on eq. (10) / n."""
        rewards = np.asarray(rewards, dtype=float)
        n = len(rewards)
        for _ in range(steps):
            inputs, pre = self._forward(x)
            f = math.sqrt(self.width) * (inputs[-1] @ self.weights[-1].T)[:, 0]
            residual = (f - rewards)[:, None]
            deltas = self._deltas(inputs, pre)
            for layer, (d, h) in enumerate(zip(deltas, inputs, strict=True)):
                grad = (residual * d).T @ h
                grad += self.width * self.reg * (self.weights[layer] - self.initial[layer])
                self.weights[layer] -= lr * grad / n


def _block_diagonal(block: np.ndarray) -> np.ndarray:
    rows, cols = block.shape
    out = np.zeros((2 * rows, 2 * cols))
    out[:rows, :cols] = block
    out[rows:, cols:] = block
    return out
