/**
 * The placement tasks of `/api/adsorption/place` and `/place-dual`, run in the compute pool (core
 * `placeAdsorbate`: pymatgen's add_adsorbate, exact, plus the periodic overlap check). They take
 * and return plain data, so the answer is the same in a worker thread as in process.
 */
import {
  AtomStudioError,
  closestSitePair,
  fromDict,
  type PlaceOptions,
  pairDistance,
  placeAdsorbate,
  type Structure,
  toDict,
  turnToFace,
  type Vec3,
} from "atomstudio-core";

type Dict = Record<string, unknown>;
export type Placing = Omit<PlaceOptions, "binding" | "site" | "normal" | "neighbors">;

const at = (s: Structure, i: number): Vec3 => [s.cart[3 * i] as number, s.cart[3 * i + 1] as number, s.cart[3 * i + 2] as number];

/** A molecule from any structure dictionary: a lattice, if any, is ignored for geometry. */
const asMolecule = (d: Dict): Structure => {
  const s = fromDict(d);
  return s.lattice ? s.with({ lattice: null }) : s;
};

const placed = (slabAtoms: number, r: ReturnType<typeof placeAdsorbate>) => ({
  structure: toDict(r.structure),
  lift: r.lift,
  min_distance: Number.isFinite(r.minDistance) ? r.minDistance : -1,
  binding_atom_position: r.bindingPosition,
  adsorbate_indices: Array.from({ length: r.structure.length - slabAtoms }, (_, i) => slabAtoms + i),
  neighbor_alignment: r.alignment && {
    rotation_deg: r.alignment.rotationDeg,
    in_plane_distance: r.alignment.inPlaneDistance,
    nearest_neighbor: r.alignment.nearest,
  },
});

export const placeTask = (a: {
  slab: Dict;
  adsorbate: Dict;
  binding: number[];
  site: Vec3;
  normal: Vec3;
  neighbors: Vec3[] | null;
  placing: Placing;
}) => {
  const slab = fromDict(a.slab);
  return placed(
    slab.length,
    placeAdsorbate(slab, asMolecule(a.adsorbate), {
      ...a.placing,
      binding: a.binding,
      site: a.site,
      normal: a.normal,
      neighbors: a.neighbors ?? undefined,
    }),
  );
};

export interface DualSite {
  position: Vec3;
  normal: Vec3 | null;
  site_type: string | null;
}

export const placeDualTask = (a: {
  slab: Dict;
  adsorbate1: Dict;
  adsorbate2: Dict;
  binding1: number[];
  binding2: number[];
  sites: DualSite[];
  target: number;
  tolerance: number;
  /** Step 3: turn adsorbate 2 to face adsorbate 1 (kept only when the clearance holds). */
  face: boolean;
  placing: Placing;
}) => {
  const slab = fromDict(a.slab);
  if (a.sites.length < 2)
    throw new AtomStudioError(
      "NO_SITE_PAIR",
      `two sites are needed, ${a.sites.length} given or found`,
      { n_sites: a.sites.length },
      400,
    );
  const pair = closestSitePair(
    slab.lattice,
    a.sites.map((s) => s.position),
    a.target,
    a.tolerance,
  );
  if (!pair)
    throw new AtomStudioError(
      "NO_SITE_PAIR",
      `no two of the ${a.sites.length} sites are ${a.target} ± ${a.tolerance} Å apart`,
      { n_sites: a.sites.length, target_distance: a.target, distance_tolerance: a.tolerance },
      400,
    );
  // a site without its own normal takes the slab's a×b normal (the top surface's)
  const slabNormal = (): Vec3 => {
    if (!slab.lattice) return [0, 0, 1];
    const [p, q] = slab.lattice.matrix;
    return [p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2], p[0] * q[1] - p[1] * q[0]];
  };
  const s1 = a.sites[pair.i] as DualSite;
  const s2 = a.sites[pair.j] as DualSite;
  const m1 = asMolecule(a.adsorbate1);
  const m2 = asMolecule(a.adsorbate2);
  const first = placeAdsorbate(slab, m1, {
    ...a.placing,
    heightOffset: 0,
    binding: a.binding1,
    site: s1.position,
    normal: s1.normal ?? slabNormal(),
  });
  const second = placeAdsorbate(first.structure, m2, {
    ...a.placing,
    heightOffset: 0,
    binding: a.binding2,
    site: s2.position,
    normal: s2.normal ?? slabNormal(),
  });
  const n = slab.length;
  // adsorbate 2's first binding atom looks at adsorbate 1's (README: "which way adsorbate 2 faces")
  const turn = a.face
    ? turnToFace(second.structure, {
        moving: n + m1.length,
        pointer: n + m1.length + (a.binding2[0] as number),
        axis: second.bindingPosition,
        normal: s2.normal ?? slabNormal(),
        target: at(first.structure, n + (a.binding1[0] as number)),
        clearance: a.placing.clearance ?? 0,
      })
    : null;
  return {
    structure: toDict(turn?.structure ?? second.structure),
    ads2_rotation: turn
      ? { status: turn.status, angle_deg: turn.angleDeg, min_distance: turn.minDistance }
      : { status: "off" as const, angle_deg: 0, min_distance: null },
    ads1_indices: Array.from({ length: m1.length }, (_, i) => n + i),
    ads2_indices: Array.from({ length: m2.length }, (_, i) => n + m1.length + i),
    site1: { position: s1.position, type: s1.site_type, index: pair.i },
    site2: { position: s2.position, type: s2.site_type, index: pair.j },
    site_distance: pair.distance,
    binding_distance: pairDistance(slab.lattice, first.bindingPosition, second.bindingPosition),
    lift: [first.lift, second.lift],
  };
};
