/**
 * Run in a child process with --expose-gc and --trace-gc-verbose: sets HEAP_GROWING_PERCENT's
 * value as the service does, keeps about 40 MB alive and collects fully, so that V8 prints the
 * old-space limit it sets for the next full collection.
 */
import { setHeapGrowing } from '../../server/heap.js';

setHeapGrowing(Number(process.argv[2]));
const live = Array.from({ length: 500_000 }, (_, i) => ({ i, text: `line ${i}` }));
globalThis.gc!();
process.stdout.write(`kept ${live.length}\n`);
