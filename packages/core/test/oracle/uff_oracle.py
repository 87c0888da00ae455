"""RDKit's UFF as the oracle for the core's UFF engine.

stdin: {"cases": [{"name", "smiles", "seed", "jitter"}], "minimize": bool, "iterations": bool}
stdout: per case the starting geometry (3D embedding from RDKit's ETKDG, then a seeded random
displacement so every term is away from its minimum), the molecule as RDKit sees it (atomic
numbers, formal charges, Kekulé bond orders), RDKit's UFF energy (kcal/mol) and gradient
(kcal/mol/Å) with its default settings, and, on request, RDKit's minimised geometry and energy
(minimised to a tight tolerance so both sides reach the same minimum), and, on request
("iterations"), RDKit's minimisation at its default tolerances from the same start: how many
iterations its BFGS takes (one trajectory snapshot per iteration), where it stops and the largest
per-atom gradient there.
"""

import json
import sys

import numpy as np
from rdkit import Chem, RDLogger
from rdkit.Chem import AllChem, rdForceFieldHelpers
from rdkit.Chem import rdtrajectory  # noqa: F401  (registers the Snapshot type MinimizeTrajectory returns)

RDLogger.DisableLog("rdApp.*")

req = json.load(sys.stdin)
out = []
for case in req["cases"]:
    mol = Chem.AddHs(Chem.MolFromSmiles(case["smiles"]))
    if AllChem.EmbedMolecule(mol, randomSeed=case.get("seed", 7)) != 0:
        raise SystemExit(f"embedding failed for {case['name']}")
    conf = mol.GetConformer()
    pos = np.array(conf.GetPositions())
    rng = np.random.default_rng(case.get("seed", 7))
    pos = pos + rng.normal(scale=case.get("jitter", 0.1), size=pos.shape)
    for i, p in enumerate(pos):
        conf.SetAtomPosition(i, p.tolist())
    if not rdForceFieldHelpers.UFFHasAllMoleculeParams(mol):
        raise SystemExit(f"RDKit cannot type {case['name']}")
    ff = rdForceFieldHelpers.UFFGetMoleculeForceField(mol)
    energy = ff.CalcEnergy()
    grad = ff.CalcGrad()
    kek = Chem.Mol(mol)
    Chem.Kekulize(kek, clearAromaticFlags=True)
    row = {
        "name": case["name"],
        "z": [a.GetAtomicNum() for a in mol.GetAtoms()],
        "formal_charges": [a.GetFormalCharge() for a in mol.GetAtoms()],
        "charge": Chem.GetFormalCharge(mol),
        "bonds": [[b.GetBeginAtomIdx(), b.GetEndAtomIdx(), int(b.GetBondTypeAsDouble())] for b in kek.GetBonds()],
        "positions": pos.reshape(-1).tolist(),
        "hybridization": [str(a.GetHybridization()) for a in mol.GetAtoms()],
        "aromatic": [a.GetIsAromatic() for a in mol.GetAtoms()],
        "energy": energy,
        "gradient": list(grad),
    }
    if req.get("iterations"):
        default_mol = Chem.Mol(mol)  # kept alive while its force field is in use
        default_ff = rdForceFieldHelpers.UFFGetMoleculeForceField(default_mol)
        default_ff.Initialize()
        more, snapshots = default_ff.MinimizeTrajectory(1, maxIts=100000)
        per_atom = np.linalg.norm(np.array(default_ff.CalcGrad()).reshape(-1, 3), axis=1)
        row["default_minimize"] = {
            "converged": more == 0,
            "iterations": len(snapshots),
            "energy": default_ff.CalcEnergy(),
            "gmax": float(per_atom.max()),
        }
    if req.get("minimize"):
        ff.Initialize()
        more = ff.Minimize(maxIts=100000, forceTol=1e-8, energyTol=1e-14)
        row["minimized"] = {
            "converged": more == 0,
            "positions": list(ff.Positions()),
            "energy": ff.CalcEnergy(),
        }
    out.append(row)
json.dump(out, sys.stdout)
