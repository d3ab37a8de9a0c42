import v8 from 'node:v8';

/**
 * Sets how far V8 lets old space grow past what a full collection left alive before it starts the
 * next one, in percent; 0 leaves it to V8's estimate. With thousands of sockets open, V8's own
 * choice ran a full collection every few seconds, and each marks every socket on the main thread
 * (measured in 62ebe46). V8 reads the flag at each collection.
 */
export function setHeapGrowing(percent: number) {
  if (percent > 0) v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}
