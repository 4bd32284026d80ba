// Loaded before every test file (bunfig.toml): what the whole run shares.
import { afterAll } from "bun:test";
import { removeTempDirs } from "./temp.ts";

// A hook in a preload runs once, after the last file.
afterAll(removeTempDirs);
