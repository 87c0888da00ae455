"""pymatgen oracle for the editing and building operations.

stdin: {"files": [paths to parse with pymatgen], "cases": [{"op", "input", "args", "ours"}]}
stdout: {"parsed": {path: dict}, "results": [{"loads": bool, "error": str|None, "n": [ours, theirs],
         "formula": [ours, theirs], "reduced_formula": [...], "species_equal": bool, "labels_equal": bool,
         "max_dxyz": float, "max_dlattice": float, "has_lattice": [ours, theirs]}]}

`ours` is what the TypeScript core produced for the same operation; it must load with
Structure.from_dict / Molecule.from_dict and equal what pymatgen itself produces.
"""
import json
import sys
import warnings

import numpy as np
from pymatgen.core import Element, Molecule, Structure

warnings.simplefilter("ignore")


def load(d):
    if d.get("@class") != "Molecule":
        return Structure.from_dict(d)
    electrons = sum(sp["occu"] * Element(sp["element"]).Z for site in d["sites"] for sp in site["species"]) - d.get("charge", 0)
    if abs(electrons - round(electrons)) > 1e-8:
        # A disordered molecule with a fractional electron count: pymatgen's own as_dict output
        # fails its spin check on load, whatever spin is written, so load it without one.
        d = {k: v for k, v in d.items() if k != "spin_multiplicity"}
    return Molecule.from_dict(d)


def centre(m):
    return np.mean(m.cart_coords, axis=0) if len(m) else np.zeros(3)


def apply(op, d, args):
    if op == "merge":
        base, inc = load(d), load(args["incoming"])
        shift = np.array(args["position"]) - centre(inc)
        coords = [*base.cart_coords.tolist(), *(inc.cart_coords + shift).tolist()]
        species = [s.species for s in base] + [s.species for s in inc]
        labels = [s.label for s in base] + [s.label for s in inc]
        props = [s.properties for s in base] + [s.properties for s in inc]
        if args.get("mode", "preserve_lattice") == "preserve_lattice" and isinstance(base, Structure):
            out = Structure(base.lattice, species, coords, coords_are_cartesian=True, labels=labels)
        else:
            out = Molecule(species, coords, labels=labels, charge=base.charge + inc.charge)
        for site, p in zip(out, props):
            site.properties = dict(p)
        return out
    s = load(d)
    cart = {"coords_are_cartesian": True} if isinstance(s, Structure) else {}
    if op == "add_atom":
        s.append(args["element"], args["position"], **cart)
    elif op == "add_atoms":
        for a in args["atoms"]:
            s.append(a["element"], a["xyz"], **cart)
    elif op == "delete_atoms":
        s.remove_sites(args["indices"])
    elif op == "replace_atom":
        if isinstance(s, Structure):
            s.replace(args["index"], args["new_element"])
        else:  # Molecule has no replace(): the same semantics (position kept, label and properties new)
            i = args["index"]
            coords = s[i].coords
            s.remove_sites([i])
            s.insert(i, args["new_element"], coords)
    elif op == "move_atom":
        i = args["index"]
        vec = np.array(args["new_position"]) - s[i].coords
        if isinstance(s, Structure):
            s.translate_sites([i], vec, frac_coords=False, to_unit_cell=False)
        else:
            s.translate_sites([i], vec)
    elif op == "move_atoms":
        if isinstance(s, Structure):
            s.translate_sites(args["indices"], args["displacement"], frac_coords=False, to_unit_cell=False)
        else:
            s.translate_sites(args["indices"], args["displacement"])
    elif op == "supercell":
        s = s * args["scaling"]
    else:
        raise ValueError(op)
    return s


def periodic_delta(ours, theirs):
    """Largest Cartesian distance between corresponding sites. For periodic structures a site at
    fractional 0.0 and one at 1.0 are the same site (wrapping round-off), so the fractional
    difference is taken modulo whole lattice vectors along periodic axes before converting."""
    if len(ours) == 0:
        return 0.0
    if isinstance(theirs, Structure):
        df = ours.frac_coords - theirs.frac_coords
        pbc = np.array(theirs.lattice.pbc)
        df[:, pbc] -= np.round(df[:, pbc])
        return float(np.max(np.linalg.norm(theirs.lattice.get_cartesian_coords(df), axis=1)))
    return float(np.max(np.linalg.norm(ours.cart_coords - theirs.cart_coords, axis=1)))


def compare(case):
    res = {"loads": False, "error": None}
    try:
        theirs = apply(case["op"], case["input"], case.get("args", {}))
    except Exception as e:  # pymatgen refused: report, the test decides
        res["error"] = f"pymatgen: {e}"
        return res
    if len(theirs) == 0 and not case["ours"]["sites"]:
        # pymatgen cannot load a structure without sites (from_dict raises); both are empty.
        res.update(loads=True, n=[0, 0], has_lattice=[case["ours"]["@class"] == "Structure", isinstance(theirs, Structure)])
        res.update(formula=["", ""], reduced_formula=["", ""], species_equal=True, labels_equal=True, properties_equal=True, max_dxyz=0.0)
        return res
    try:
        ours = load(case["ours"])
        res["loads"] = True
    except Exception as e:
        res["error"] = f"from_dict: {e}"
        return res
    res["n"] = [len(ours), len(theirs)]
    res["has_lattice"] = [isinstance(ours, Structure), isinstance(theirs, Structure)]
    res["formula"] = [ours.composition.formula, theirs.composition.formula]
    res["reduced_formula"] = [ours.composition.reduced_formula, theirs.composition.reduced_formula]
    if len(ours) != len(theirs):
        return res
    res["species_equal"] = all(a.species == b.species for a, b in zip(ours, theirs))
    res["labels_equal"] = [a.label for a in ours] == [b.label for b in theirs]
    # pymatgen fills a property missing on some sites with None when it loads a dictionary.
    keys = {k for site in theirs for k in site.properties}
    filled = [{k: b.properties.get(k) for k in keys} for b in theirs]
    res["properties_equal"] = [{k: a.properties.get(k) for k in keys} for a in ours] == filled and all(
        set(a.properties) <= keys for a in ours
    )
    res["max_dxyz"] = periodic_delta(ours, theirs)
    if isinstance(ours, Structure) and isinstance(theirs, Structure):
        res["max_dlattice"] = float(np.max(np.abs(ours.lattice.matrix - theirs.lattice.matrix)))
        res["volume"] = [ours.volume, theirs.volume]
        res["density"] = [ours.density, theirs.density]
    return res


def main():
    req = json.load(sys.stdin)
    parsed = {}
    for path in req.get("files", []):
        if path.endswith((".xyz", ".pdb")) and "MOF" not in path:
            parsed[path] = Molecule.from_file(path).as_dict()
        else:
            parsed[path] = Structure.from_file(path).as_dict()
    json.dump({"parsed": parsed, "results": [compare(c) for c in req.get("cases", [])]}, sys.stdout)


if __name__ == "__main__":
    main()
