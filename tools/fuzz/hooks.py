"""Schemathesis hooks for AtomStudio's fuzzing run (packages/server/test/schemathesis.test.ts).

The published StructureJSON schema says all JSON Schema can say; two rules of the service's
structure reading cannot be written in it. Generated bodies are repaired for exactly those two,
so that generated structures reach the operations instead of stopping at 400 INVALID_STRUCTURE:

- the occupancies of a site's species sum to at most 1;
- a lattice matrix is not singular.
"""

from __future__ import annotations

from typing import Any

import schemathesis


def _det(m: list[list[float]]) -> float:
    return (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]))


def _is_matrix(m: Any) -> bool:
    return (isinstance(m, list) and len(m) == 3
            and all(isinstance(r, list) and len(r) == 3
                    and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in r) for r in m))


def _repair(node: Any) -> Any:
    if isinstance(node, list):
        return [_repair(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _repair(v) for k, v in node.items()}
    species = out.get("species")
    if isinstance(species, list) and len(species) > 1 and all(isinstance(s, dict) for s in species):
        occus = [s.get("occu", 1) for s in species]
        if all(isinstance(o, (int, float)) and not isinstance(o, bool) and o > 0 for o in occus):
            total = sum(occus)
            if total > 1:
                out["species"] = [{**s, "occu": o / total / (1 + 1e-9)} for s, o in zip(species, occus)]
    lattice = out.get("lattice")
    if isinstance(lattice, dict) and _is_matrix(lattice.get("matrix")):
        m = lattice["matrix"]
        if abs(_det(m)) < 1e-3:
            fixed = [[float(x) + (5.0 if i == j else 0.0) for j, x in enumerate(r)] for i, r in enumerate(m)]
            if abs(_det(fixed)) < 1e-3:
                fixed = [[5.0 if i == j else 0.0 for j in range(3)] for i in range(3)]
            out["lattice"] = {**lattice, "matrix": fixed}
    return out


@schemathesis.hook
def map_body(context: Any, body: Any) -> Any:
    return _repair(body)
