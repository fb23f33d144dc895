#!/usr/bin/env node
// Launcher of the Flotilla member-cluster agent: lets Node load the TypeScript sources through tsx.
import { register } from "tsx/esm/api";

register();
await import("../src/main.ts");
