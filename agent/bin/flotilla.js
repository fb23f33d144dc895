#!/usr/bin/env node
// Launcher of `flotilla`, the Flotilla admin CLI: lets Node load the TypeScript sources through tsx.
import { register } from "tsx/esm/api";

register();
await import("../admin/main.ts");
