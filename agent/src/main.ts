/**
 * Entry point of `flotilla-agent` (see cli.ts): runs the command line and sets the exit code.
 */
import { runCli } from "./cli.ts";

process.exitCode = await runCli(process.argv);
