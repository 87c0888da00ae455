/**
 * Trajectory files as requests carry them: JSON `{content, filename?, encoding: "text" | "base64"}`
 * or frames as structure dictionaries. gzip is inflated by the core (fflate), bzip2 here by
 * `seek-bzip` (pure JavaScript, Node buffers), each with the decoded size capped as it grows.
 */
import {
  AtomStudioError,
  decodeFile,
  type EncodedFile,
  fail,
  fromDict,
  readTrajectory,
  Trajectory,
  type TrajectoryLimits,
} from "atomstudio-core";
import Bunzip from "seek-bzip";

/** Caps for every MD route, checked before work (decisions: every input capped with a coded 400). */
export const MD_LIMITS = {
  trajectory: { maxFrames: 100_000, maxAtoms: 100_000, maxAtomFrames: 20_000_000 } satisfies TrajectoryLimits,
  /** Decoded text of one trajectory file, bytes (V8 strings stop near 512 MiB anyway). */
  maxDecodedBytes: 500 * 1024 * 1024,
  /** Structure dictionaries in `frames` (they cost ~100 bytes per byte; files are the way for long runs). */
  maxFrameDicts: 2_000,
  maxBins: 10_000,
  /** Frames a clustering may compare pairwise (F² RMSDs); more need a stride. */
  maxClusterFrames: 1_000,
  /** Pairwise work of a clustering: F²/2 × selected atoms. */
  maxClusterWork: 2e9,
  maxListedHbonds: 10_000,
} as const;

const tooLarge = (max: number): AtomStudioError =>
  new AtomStudioError("PAYLOAD_TOO_LARGE", `The decompressed file is larger than ${max} bytes`, { max_bytes: max }, 413);

export const bunzip2Capped = (bytes: Uint8Array, maxBytes: number): Uint8Array => {
  const chunks: Uint8Array[] = [];
  let buf = new Uint8Array(1 << 16);
  let pos = 0;
  let total = 0;
  try {
    Bunzip.decode(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), {
      writeByte(b: number) {
        if (++total > maxBytes) throw tooLarge(maxBytes);
        if (pos === buf.length) {
          chunks.push(buf);
          buf = new Uint8Array(1 << 16);
          pos = 0;
        }
        buf[pos++] = b;
      },
    });
  } catch (e) {
    if (e instanceof AtomStudioError) throw e;
    fail("INVALID_ENCODING", `The bzip2 data is corrupt: ${(e as Error).message}`);
  }
  chunks.push(buf.subarray(0, pos));
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
};

export interface TrajectorySource {
  trajectory?: EncodedFile | undefined;
  frames?: Record<string, unknown>[] | undefined;
  format?: string | undefined;
  lammps_types?: Record<string, string> | undefined;
}

export interface LoadedTrajectory {
  trajectory: Trajectory;
  format: string;
}

/** The trajectory of a request: a file, or frames as structure dictionaries (exactly one of them). */
export const loadTrajectory = (src: TrajectorySource): LoadedTrajectory => {
  if (src.trajectory && src.frames)
    fail("AMBIGUOUS_INPUT", "Give either trajectory (a file) or frames (structure dictionaries), not both");
  if (src.frames) {
    if (src.frames.length === 0) fail("EMPTY_STRUCTURES", "frames is empty");
    if (src.frames.length > MD_LIMITS.maxFrameDicts)
      fail(
        "TOO_MANY_FRAMES",
        `${src.frames.length} frame dictionaries; at most ${MD_LIMITS.maxFrameDicts} (send a file for longer runs)`,
        {
          n_frames: src.frames.length,
          max_frames: MD_LIMITS.maxFrameDicts,
        },
      );
    return { trajectory: Trajectory.fromStructures(src.frames.map((d) => fromDict(d))), format: "frames" };
  }
  if (!src.trajectory) return fail("MISSING_TRAJECTORY", "Give trajectory ({content, filename?, encoding?}) or frames");
  const text = decodeFile(src.trajectory, { maxBytes: MD_LIMITS.maxDecodedBytes, bunzip2: bunzip2Capped });
  const parsed = readTrajectory(text, {
    ...(src.trajectory.filename ? { filename: src.trajectory.filename } : {}),
    ...(src.format ? { format: src.format } : {}),
    ...(src.lammps_types ? { lammpsTypes: src.lammps_types } : {}),
    limits: MD_LIMITS.trajectory,
  });
  return { trajectory: parsed.trajectory, format: parsed.format };
};
