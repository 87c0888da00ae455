"""`build_defect`: point defects by pymatgen-analysis-defects. Vacancies and substitutions at one
site of the input cell or one per symmetry-inequivalent site (`VacancyGenerator`,
`SubstitutionGenerator`); interstitials at the inequivalent voids of `VoronoiInterstitialGenerator`
(which keeps them at least `min_dist` from every host atom, so no guest lands on an atom). The
cell is enlarged first when asked, and the defect goes at the first image of its site."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import WorkerError
from ._build_common import (defects_module, first_image, generated, images, require_index, require_ordered, structure_in,
                            structure_out)
from ._common import check_cancel

METHOD = "build_defect"


def _site_index(host, site) -> int:
    """The index of a generator's site in the host (generators return copies of host sites)."""
    d = host.lattice.get_all_distances(host.frac_coords, [site.frac_coords])[:, 0]
    return int(np.argmin(d))


def run(params: dict[str, Any], ctx, cancel) -> dict[str, Any]:
    gen = defects_module()
    host = structure_in(params["structure"])
    kind = params["defect_type"]
    index = int(params["site_index"])
    element = params.get("substitute_element") or ""
    scaling = [int(x) for x in params["scaling"]]
    n = len(host)
    cell = host * scaling if images(scaling) > 1 else host.copy()
    out, labels, defects = [], [], []

    def emit(structure, label, info):
        out.append(structure_out(structure))
        labels.append(label)
        defects.append(info)

    if index == -1 or kind == "interstitial":
        require_ordered(host, "Finding inequivalent defect sites")
    if kind == "vacancy":
        if index == -1:
            chosen = [(_site_index(host, v.site), v.multiplicity)
                      for v in generated(lambda: gen.VacancyGenerator().generate(host), "vacancies")]
        else:
            require_index(index, n)
            chosen = [(index, None)]
        for i, mult in chosen:
            s = cell.copy()
            el = host[i].specie.symbol if host[i].is_ordered else host[i].species.elements[0].symbol
            s.remove_sites([first_image(i, scaling)])
            emit(s, f"Vacancy: {el} site {i}" + (f" (multiplicity {mult})" if mult else ""),
                 {"type": "vacancy", "site_index": i, "element": el, "multiplicity": mult,
                  "frac_coords": host[i].frac_coords.tolist()})
    elif kind == "substitution":
        if index == -1:
            mapping = {el.symbol: element for el in host.composition.elements if el.symbol != element}
            chosen = [(_site_index(host, d.site), d.multiplicity)
                      for d in generated(lambda: gen.SubstitutionGenerator().generate(host, mapping), "substitution sites")]
        else:
            require_index(index, n)
            chosen = [(index, None)]
        for i, mult in chosen:
            s = cell.copy()
            old = host[i].species.elements[0].symbol
            s.replace(first_image(i, scaling), element)
            emit(s, f"Substitution: {old}→{element} at site {i}" + (f" (multiplicity {mult})" if mult else ""),
                 {"type": "substitution", "site_index": i, "element": element, "replaced": old, "multiplicity": mult,
                  "frac_coords": host[i].frac_coords.tolist()})
    else:  # interstitial
        found = generated(lambda: gen.VoronoiInterstitialGenerator(min_dist=float(params["min_distance"])).generate(
            host, insert_species=[element]), "voids")
        check_cancel(cancel)
        if not found:
            raise WorkerError("NO_INTERSTITIAL_SITES", "No void in this structure is far enough from every host atom",
                              {"min_distance": params["min_distance"]})
        if index == -1:
            chosen = list(enumerate(found))
        else:
            if index >= len(found):
                raise WorkerError("INVALID_INDEX",
                                  f"site_index {index}: this structure has {len(found)} inequivalent interstitial sites "
                                  f"(0 to {len(found) - 1}; -1 for all)", {"field": "site_index", "value": index,
                                                                           "n_sites": len(found)})
            chosen = [(index, found[index])]
        for k, d in chosen:
            s = cell.copy()
            frac = np.mod(np.asarray(d.site.frac_coords, dtype=float), 1.0)
            # the void of the parent cell, in the first parent image of the supercell
            s.append(element, frac / np.asarray(scaling, dtype=float), coords_are_cartesian=False)
            nearest = float(s.lattice.get_all_distances(s.frac_coords[-1:], s.frac_coords[:-1]).min()) if len(s) > 1 else None
            emit(s, f"Interstitial: {element} at void {k} (multiplicity {d.multiplicity})",
                 {"type": "interstitial", "site_index": k, "element": element, "multiplicity": d.multiplicity,
                  "frac_coords": frac.tolist(), "nearest_distance": nearest})
    return {"structures": out, "labels": labels, "count": len(out), "truncated": False, "defects": defects,
            "scaling": scaling}
