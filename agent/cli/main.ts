/**
 * Entry point of `flotilla`, the admin CLI (see cli.ts): runs the command line and sets the exit code.
 */
import { runAdminCli } from "./cli.ts";

process.exitCode = await runAdminCli(process.argv);
