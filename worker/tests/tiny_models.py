"""Tiny, randomly initialised MACE and M3GNet models, built and saved by the tests themselves.

Pretrained models would be downloaded at run time, which cannot happen here; these files go
through exactly the worker's loading code (a model path), which is what is under test. Their
energies mean nothing physically; they are deterministic for a given seed.
"""

from __future__ import annotations

import os


def build_mace(path: str, elements=("H", "C", "N", "O", "Cu"), seed: int = 0) -> str:
    import numpy as np
    import torch
    from ase.data import atomic_numbers
    from mace import modules  # before e3nn: mace makes e3nn's constants loadable under torch>=2.6
    from e3nn import o3

    torch.manual_seed(seed)
    zs = sorted(atomic_numbers[e] for e in elements)
    model = modules.MACE(
        r_max=4.0,
        num_bessel=4,
        num_polynomial_cutoff=5,
        max_ell=1,
        interaction_cls=modules.interaction_classes["RealAgnosticResidualInteractionBlock"],
        interaction_cls_first=modules.interaction_classes["RealAgnosticResidualInteractionBlock"],
        num_interactions=2,
        num_elements=len(zs),
        hidden_irreps=o3.Irreps("8x0e + 8x1o"),
        MLP_irreps=o3.Irreps("8x0e"),
        atomic_energies=np.array([-1.0 - 0.1 * i for i in range(len(zs))]),
        avg_num_neighbors=8.0,
        atomic_numbers=zs,
        correlation=2,
        gate=torch.nn.functional.silu,
    )
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    torch.save(model, path)
    return path


def build_m3gnet(path: str, elements=("H", "C", "N", "O", "Cu", "Si"), seed: int = 0) -> str:
    import torch
    from matgl.apps.pes import Potential
    from matgl.models import M3GNet

    torch.manual_seed(seed)
    model = M3GNet(element_types=tuple(elements), is_intensive=False, nblocks=1, units=16,
                   dim_node_embedding=16, dim_edge_embedding=16, max_n=2, max_l=2)
    pot = Potential(model=model, calc_stresses=True)
    pot.save(path)
    return path
