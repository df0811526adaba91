"""Privacy-preserving data contexts, computed on the device (Cao et al. 2022).

NCCB's context extractor ("Privacy-Preserving Context Extractor") maps a client's local
data to a short vector with locality-sensitive hashing, so the server learns which
clients hold similar data without seeing any sample. Pure numpy functions:

- :class:`QuantisedLSH`: eq. (5), n coordinates of a vector quantised with random
  offsets, h_i(v') = floor((v'_i - b_i) / eta); here applied after a Gaussian random
  projection of the data summary (Johnson-Lindenstrauss), so that every coordinate
  mixes the whole summary.
- :func:`class_means`, :func:`data_summary` and :func:`image_context`: the summary of
  an image (or any feature-vector) dataset: its per-class mean feature vectors,
  concatenated and scaled to unit norm (so one quantisation step ``eta`` suits any
  dataset's pixel scale), then hashed.
- :func:`simhash`: SimHash for text, eqs. (6)-(7); :func:`hyperplane_bits` is its
  counterpart for real vectors (random-hyperplane LSH, Charikar 2002), whose bits agree
  with probability 1 - theta / pi for two vectors at angle theta.

Every client must hash with the same parameters: build the hasher once from a seed the
server broadcasts (one named random stream), never per client.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

#: Bits per context coordinate on the air (int32 / float32).
BITS_PER_CONTEXT_VALUE = 32


def class_means(features: np.ndarray, labels: np.ndarray, n_classes: int) -> np.ndarray:
    """Mean feature vector of each class in a client's data, shape ``(n_classes, F)``.

    Rows of classes the client does not hold are zero, so the summary also encodes the
    client's label distribution (label skew is what separates clients' data).
    """
    flat = np.asarray(features, dtype=float).reshape(len(features), -1)
    labels = np.asarray(labels, dtype=np.int64)
    sums = np.zeros((n_classes, flat.shape[1]))
    np.add.at(sums, labels, flat)
    counts = np.bincount(labels, minlength=n_classes)[:, None]
    return np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)


@dataclass(frozen=True)
class QuantisedLSH:
    """Random projection, then eq. (5) of Cao et al. 2022: ``h_i = floor((v'_i - b_i) / eta)``.

    Attributes
    ----------
    projection
        ``(k, input_dim)`` Gaussian matrix with N(0, 1/k) entries.
    indices
        The n coordinates ``i_1..i_n`` of the projected vector that are hashed.
    offsets
        ``b_i`` drawn uniformly in ``[0, eta)``.
    eta
        The quantisation step.
    """

    projection: np.ndarray
    indices: np.ndarray
    offsets: np.ndarray
    eta: float

    @classmethod
    def create(
        cls,
        input_dim: int,
        n_hashes: int,
        eta: float,
        rng: np.random.Generator,
        projection_dim: int | None = None,
    ) -> QuantisedLSH:
        """Draw the shared hashing parameters (n_hashes <= projection_dim)."""
        k = projection_dim if projection_dim is not None else n_hashes
        if not 1 <= n_hashes <= k:
            raise ValueError(f"need 1 <= n_hashes ({n_hashes}) <= projection_dim ({k})")
        if not eta > 0:
            raise ValueError(f"the quantisation step eta must be positive, got {eta}")
        projection = rng.normal(0.0, 1.0 / math.sqrt(k), size=(k, input_dim))
        indices = np.sort(rng.choice(k, size=n_hashes, replace=False))
        offsets = rng.uniform(0.0, eta, size=n_hashes)
        return cls(projection, indices, offsets, float(eta))

    def project(self, vectors: np.ndarray) -> np.ndarray:
        """v' = (R v)[indices], for one vector or a batch of rows."""
        return (np.asarray(vectors, dtype=float) @ self.projection.T)[..., self.indices]

    def __call__(self, vectors: np.ndarray) -> np.ndarray:
        """Integer codes h(v), shape ``(..., n_hashes)`` (eq. (5))."""
        return np.floor((self.project(vectors) - self.offsets) / self.eta).astype(np.int64)


def data_summary(features: np.ndarray, labels: np.ndarray, n_classes: int) -> np.ndarray:
    """The per-class means of a client's data, flattened and scaled to unit norm."""
    summary = class_means(features, labels, n_classes).ravel()
    norm = float(np.linalg.norm(summary))
    return summary / norm if norm > 0 else summary


def image_context(
    features: np.ndarray, labels: np.ndarray, n_classes: int, hasher: QuantisedLSH
) -> np.ndarray:
    """A client's context: the hashed summary of its data (eq. (5)), as floats.

    With the projection's N(0, 1/k) entries, a projected coordinate of the unit-norm
    summary has a standard deviation of about 1/sqrt(k); an ``eta`` of a fraction of that
    puts clients with the same label distribution in the same buckets and separates
    clients whose labels differ.
    """
    return hasher(data_summary(features, labels, n_classes)).astype(float)


def client_contexts(
    features: np.ndarray,
    labels: np.ndarray,
    client_indices: Sequence[np.ndarray],
    n_classes: int,
    hasher: QuantisedLSH,
) -> np.ndarray:
    """Contexts of every client, ``(n_clients, n_hashes)``, from a partition's indices."""
    return np.stack(
        [image_context(features[idx], labels[idx], n_classes, hasher) for idx in client_indices]
    )


def random_hyperplanes(dim: int, n_bits: int, rng: np.random.Generator) -> np.ndarray:
    """``n_bits`` random hyperplane normals in ``dim`` dimensions (standard Gaussian)."""
    return rng.normal(size=(n_bits, dim))


def hyperplane_bits(vectors: np.ndarray, planes: np.ndarray) -> np.ndarray:
    """Bit j is 1 where ``planes[j] . v > 0`` (eq. (7)'s sign), shape ``(..., n_bits)``."""
    return (np.asarray(vectors, dtype=float) @ planes.T > 0).astype(np.uint8)


def token_hash_bits(token: str, n_bits: int) -> np.ndarray:
    """A stable ``n_bits``-bit hash of a token (BLAKE2b; Python's ``hash`` is salted)."""
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=math.ceil(n_bits / 8)).digest()
    return np.unpackbits(np.frombuffer(digest, dtype=np.uint8))[:n_bits]


def simhash(
    tokens: Sequence[str], n_bits: int = 64, weights: Mapping[str, float] | None = None
) -> np.ndarray:
    """SimHash fingerprint of a text, eqs. (6)-(7) of Cao et al. 2022 (Manku et al. 2007).

    Each distinct token i (a feature) gets a positive weight w_i (its count in the text
    unless ``weights`` says otherwise) and an n-bit hash; bit j contributes +w_i if the
    hash's bit j is 1 and -w_i if it is 0 (eq. (6)); tokens missing from ``weights`` weigh
    their count. The fingerprint is the sign of each
    column sum, 1 for > 0 and 0 otherwise (eq. (7); a zero sum gives 0).
    """
    counts = Counter(tokens)
    totals = np.zeros(n_bits)
    for token, count in counts.items():
        w = float(weights.get(token, count)) if weights is not None else float(count)
        if w <= 0:
            raise ValueError(f"SimHash weights must be positive (token {token!r}: {w})")
        totals += np.where(token_hash_bits(token, n_bits) == 1, w, -w)
    return (totals > 0).astype(np.uint8)
