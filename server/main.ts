import { ConfigError, loadConfig } from './config.js';
import { setHeapGrowing } from './heap.js';
import { tracingSettings } from './observability/tracingSettings.js';
import { productionSummary, productionWarnings } from './productionSummary.js';

let config;
let tracing;
try {
  config = loadConfig();
  tracing = tracingSettings();
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
}

setHeapGrowing(config.heapGrowingPercent);

// Tracing patches express, pg and http as they load, so it starts first; without an exporter no OpenTelemetry module loads.
const tracer = tracing && (await import('./observability/tracing.js')).startTracing(tracing);
// Loaded after the configuration is known to be good, so a bad value fails at once.
const { startServer } = await import('./server.js');
const running = await startServer(config).catch((error: Error) => {
  // One clear line: the reason (an unreachable database after DATABASE_START_TIMEOUT_MS, a wrong password), not a stack.
  console.error(`Tourline could not start: ${error.message}`);
  process.exit(1);
});
const { logger } = running.ctx;
logger.info(`Tourline listening on ${running.url} (${running.ctx.database.kind}, auth ${config.auth.mode}, ERP ${config.erp.mode})`);
if (config.env === 'production') {
  logger.info(productionSummary(config));
  for (const warning of productionWarnings(config)) logger.warn(warning);
}
if (config.auth.mode === 'dev') logger.info(`Get a token: npm run token -- <personalnummer>   API reference: ${running.url}/docs`);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    logger.info(`${signal} received: not ready, draining for ${config.shutdown.drainMs} ms, then finishing running requests`);
    const force = setTimeout(() => process.exit(1), config.shutdown.drainMs + 15_000);
    force.unref();
    running
      .close()
      .then(() => tracer?.shutdown())
      .then(
        () => process.exit(0),
        (error) => {
          logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
  });
}
