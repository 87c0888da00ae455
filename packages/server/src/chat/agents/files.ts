/**
 * Files the service writes for an agent (decisions §9: "the agent root must be a real directory
 * owned by the service user with mode 0700; files are created without following symlinks").
 *
 * An agent runs as the service user and can leave anything in its working directory, including
 * a symlink named `structure.json` that points at `~/.bashrc`: the next run must replace that
 * link, never write through it. Every write here removes what is at the name if it is not a plain
 * directory (for directories) and then creates the file exclusively with O_NOFOLLOW, so a link
 * planted between the two steps makes the write fail instead of landing elsewhere.
 */
import { constants } from "node:fs";
import { chmod, lstat, mkdir, open, rm, unlink } from "node:fs/promises";
import { join } from "node:path";
import { AtomStudioError } from "atomstudio-core";

const unsafeRoot = (root: string, why: string) =>
  new AtomStudioError(
    "AGENT_ROOT_UNSAFE",
    `The agent root ${root} ${why}; agents do not run until it is a real directory owned by the service user with mode 0700 (ATOMSTUDIO_AGENT_ROOT)`,
    { agent_root: root },
    503,
  );

/** Create the agent root (mode 0700) when missing; refuse one that is a symlink, someone else's, or open to others. */
export const ensureAgentRoot = async (root: string): Promise<void> => {
  try {
    await mkdir(root, { recursive: true, mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw unsafeRoot(root, "cannot be created");
  }
  const st = await lstat(root);
  if (st.isSymbolicLink()) throw unsafeRoot(root, "is a symlink");
  if (!st.isDirectory()) throw unsafeRoot(root, "is not a directory");
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) throw unsafeRoot(root, `is owned by uid ${st.uid}, not the service user (${uid})`);
  if ((st.mode & 0o777) !== 0o700) throw unsafeRoot(root, `has mode ${(st.mode & 0o777).toString(8).padStart(4, "0")}`);
};

/** A directory `name` inside `dir`: whatever else is there (a symlink, a file) is removed first. */
export const privateDir = async (dir: string, name: string): Promise<string> => {
  const path = join(dir, name);
  const st = await lstat(path).catch(() => null);
  if (st && !st.isDirectory()) await rm(path, { force: true });
  await mkdir(path, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== "EEXIST") throw err;
  });
  // mkdir does not follow a final symlink, but check: the directory must be the one we made.
  const made = await lstat(path);
  if (!made.isDirectory()) throw new Error(`${path} is not a directory`);
  await chmod(path, 0o700);
  return path;
};

/** Write `text` to `dir/name` (mode 0600) without following a symlink at that name. */
export const writeNoFollow = async (dir: string, name: string, text: string): Promise<string> => {
  const path = join(dir, name);
  const st = await lstat(path).catch(() => null);
  if (st?.isDirectory()) await rm(path, { recursive: true, force: true });
  else if (st) await unlink(path);
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  const fh = await open(path, flags, 0o600);
  try {
    await fh.writeFile(text);
  } finally {
    await fh.close();
  }
  return path;
};
