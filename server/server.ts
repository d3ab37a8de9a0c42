import { documentStoreCheck, startStartupChecks } from './startupChecks.js';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import http from 'node:http';
import { pino, type Logger } from 'pino';
import { adminKeyMatcher, resolveAdminKeys } from './auth/adminKey.js';
import { createAuthenticator } from './auth/authenticate.js';
import { createDevIdentityProvider } from './auth/devIdentityProvider.js';
import { createTokenVerifier } from './auth/tokens.js';
import type { Config } from './config.js';
import type { AppContext } from './context.js';
import { openDatabase, type Database } from './db/client.js';
import { createChangeNotifier } from './engine/changeNotifier.js';
import { createHttpApp } from './http/app.js';
import { openFileLimit, watchConnectionBudget } from './http/connectionBudget.js';
import { answerUnparsableRequest } from './http/problem.js';
import { apiRoutes } from './http/routes/index.js';
import { devIdentityRoutes } from './http/routes/devIdentity.js';
import { devSignInPages } from './http/devSignInPages.js';
import { createSyncSocketServer } from './http/ws.js';
import { createErpGateway, type ErpGateway } from './integrations/erp/gateway.js';
import { createDocumentStore, type DocumentStore } from './integrations/documents/store.js';
import { createPreviewService } from './integrations/previews/service.js';
import { createBackgroundWork } from './jobs/background.js';
import { startErpWriteBackJob } from './jobs/erpWriteBack.js';
import { startChangeRetention } from './jobs/changeRetention.js';
import { startImportJobs, type ImportJobs } from './jobs/scheduler.js';
import { withDatabaseDocuments } from './integrations/documents/database.js';
import { createTourReader } from './queries/renderedTours.js';
import { createMetrics } from './observability/metrics.js';
import { createDeviceReports } from './engine/deviceReports.js';
import { loggerOptions } from './observability/requestContext.js';
import { startMetricsServer } from './http/routes/metrics.js';

/**
 * Connections the kernel has accepted for us but the event loop has not yet taken (one per turn
 * of the loop, so a busy loop takes a few dozen a second). Node's 511
 * overflowed when thousands of drivers opened connections while the loop was busy, and a
 * connection the kernel then completed by SYN cookie was reset at its first request. The kernel
 * caps it at `net.core.somaxconn`.
 */
const LISTEN_BACKLOG = 4096;

export interface RunningServer {
  url: string;
  ctx: AppContext;
  /** The first admin key (the one development generates). */
  adminKey: string;
  server: http.Server;
  /** Where `GET /metrics` answers; undefined unless METRICS_PORT is set. */
  metricsUrl?: string;
  /** The ERP import scheduler and start-up catch-up; undefined unless ERP_IMPORT_ENABLED. */
  importJobs?: ImportJobs;
  /** Turns not ready, serves on for SHUTDOWN_DRAIN_MS, closes the WebSockets in batches, stops taking requests, lets running ones finish, then closes the database. */
  close(): Promise<void>;
}

export interface StartOptions {
  logger?: Logger;
  /** Use this database instead of opening one (tests share one between two servers). */
  database?: Database;
  /** Keep the data directory free of files (tests); PGlite then runs in memory. */
  ephemeral?: boolean;
  /** Use this ERP gateway instead of the configured one (tests). */
  erp?: ErpGateway;
  /** Use this document store instead of the configured one (tests inject failing stores). */
  documents?: DocumentStore;
  /** The service's clock (`AppContext.clock`): today's tours and the ERP import's day (tests pin it). */
  now?: () => Date;
  /** The process's limit of open files, instead of the one read from the system (tests lower it). */
  openFileLimit?: number;
}

export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? pino(loggerOptions(config.logLevel));
  const dataDir = options.ephemeral ? undefined : config.dataDir;
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const database =
    options.database ??
    (await openDatabase({
      url: config.databaseUrl,
      directUrl: config.databaseDirectUrl,
      dataDir,
      poolSize: config.databasePoolSize,
      timeouts: config.databaseTimeouts,
      logger,
    }));

  const admin = resolveAdminKeys(config.auth.adminApiKeys, dataDir);
  if (admin.generated) logger.warn(`No ADMIN_API_KEY configured; generated one for this data directory: ${admin.keys[0]}`);
  else if (!config.auth.adminApiKeys) logger.info(`Admin API key (from ${dataDir}/admin-api-key): ${admin.keys[0]}`);

  let baseUrl = config.publicUrl ?? '';
  const devIssuer = () => `${baseUrl}/dev/oidc`;
  const devIdp = config.auth.mode === 'dev' ? await createDevIdentityProvider(config.auth, dataDir) : undefined;
  const verifyToken = createTokenVerifier({
    issuer: () => (devIdp ? devIssuer() : config.auth.issuer!),
    audience: config.auth.audience,
    algorithms: config.auth.algorithms,
    personalnummerClaim: config.auth.personalnummerClaim,
    syncRoleClaim: config.auth.syncRoleClaim,
    syncRole: config.auth.syncRole,
    backOfficeRoleClaim: config.auth.backOfficeRoleClaim,
    backOfficeRole: config.auth.backOfficeRole,
    nameClaim: config.auth.nameClaim,
    jwksCooldownMs: config.auth.jwksCooldownMs,
    jwksMaxAgeMs: config.auth.jwksMaxAgeMs,
    clockToleranceSeconds: config.auth.clockToleranceSeconds,
    timeoutMs: config.auth.timeoutMs,
    tokenCacheSize: config.auth.tokenCacheSize,
  });

  const documents = withDatabaseDocuments(options.documents ?? createDocumentStore(config.documents, dataDir), database.db);
  const ctx: AppContext = {
    config,
    database,
    logger,
    auth: createAuthenticator({
      db: database.db,
      verifyToken,
      adminKeyMatches: adminKeyMatcher(admin.keys),
      onFailure: (refused) => logger.warn(refused, 'token refused'),
    }),
    erp: options.erp ?? createErpGateway(config.erp, logger),
    documents,
    previews: createPreviewService(documents),
    changes: await createChangeNotifier(database, logger),
    tours: createTourReader(config.tourCacheBytes),
    background: createBackgroundWork(),
    metrics: createMetrics(),
    devices: createDeviceReports({
      maxPerAccount: config.devices.maxPerAccount,
      onWriteFailure: (err, deviceId) =>
        logger.warn({ err, deviceId }, 'a device report was not written; it is kept and written again within 30 s'),
    }),
    lifecycle: { draining: false },
    clock: options.now ?? (() => new Date()),
    startup: { pending: () => [] },
  };

  const routes = [...apiRoutes, ...(devIdp ? devIdentityRoutes(devIdp, devIssuer) : [])];
  const signInPages = devIdp
    ? [
        devSignInPages({
          idp: devIdp,
          issuer: devIssuer,
          clientId: config.auth.consoleClientId,
          keyMatches: adminKeyMatcher(admin.keys),
          base: '/dev/oidc',
          keyHint: 'Der Admin-Schlüssel steht im Start-Log oder in DATA_DIR/admin-api-key.',
          // The console of the host asked, nowhere else.
          redirectAllowed: (redirect, req) => redirect.host === req.headers.host && redirect.pathname === '/console/' && !redirect.search,
        }),
      ]
    : [];
  const app = createHttpApp(ctx, routes, signInPages);
  const server = http.createServer(app);
  server.keepAliveTimeout = 65_000;
  // Above the keep-alive timeout, so a proxy never sends a request on a connection we are about to drop.
  server.headersTimeout = 66_000;
  watchConnectionBudget(server, { fileLimit: options.openFileLimit ?? openFileLimit(), logger });
  server.on('clientError', answerUnparsableRequest);
  // While stopping, a connection goes as soon as its request is answered: a keep-alive client must
  // not hold the stop until its idle timeout.
  let stopping = false;
  const unfinished = new Set<http.ServerResponse>();
  let servedDuringDrain = 0;
  server.on('request', (_req, res: http.ServerResponse) => {
    if (ctx.lifecycle.draining) servedDuringDrain += 1;
    if (stopping && !res.headersSent) res.setHeader('Connection', 'close');
    unfinished.add(res);
    res.once('close', () => {
      unfinished.delete(res);
      if (stopping) setImmediate(() => server.closeIdleConnections());
    });
  });
  const sockets = createSyncSocketServer(ctx);
  server.on('upgrade', (req, socket, head) => sockets.handleUpgrade(req, socket, head));
  const retention = startChangeRetention({
    db: database.db,
    retentionDays: config.changeLogRetentionDays,
    eventRetentionDays: config.processedEventRetentionDays,
    deviceRetentionDays: config.devices.retentionDays,
    logger,
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: config.port, host: config.host, backlog: LISTEN_BACKLOG }, () => resolve());
  });
  const { port, address } = server.address() as AddressInfo;
  // The development issuer discovers itself through this address, so it must be one we listen on.
  const host = address === '0.0.0.0' || address === '::' ? '127.0.0.1' : address.includes(':') ? `[${address}]` : address;
  const url = `http://${host}:${port}`;
  baseUrl ||= url;
  let metricsServer: http.Server | undefined;
  let metricsUrl: string | undefined;
  if (config.metricsPort !== undefined) {
    ctx.metrics.watch({
      db: database.db,
      webSockets: () => sockets.stats(),
      pool: () => database.poolStats?.(),
      onError: (error) => logger.warn({ err: error }, 'a metric could not be read'),
    });
    metricsServer = await startMetricsServer(ctx.metrics, config.metricsPort, config.host, logger);
    metricsUrl = `http://${host}:${(metricsServer.address() as AddressInfo).port}/metrics`;
  }
  // Ready only once the document store took a write and the issuer answered (an injected store is the test's own).
  const startup = startStartupChecks(
    [
      ...(options.documents ? [] : [documentStoreCheck(config, documents)]),
      ...(config.auth.mode === 'oidc' ? [{ name: 'issuer', target: config.auth.issuer!, run: verifyToken.warm }] : []),
    ],
    logger,
  );
  ctx.startup = startup;
  await startup.first;
  const erpWriteBack = startErpWriteBackJob(ctx);
  // The catch-up runs after listen: a slow ERP must not keep the service from answering.
  const importJobs = config.erp.importEnabled ? startImportJobs(ctx, { now: ctx.clock }) : undefined;

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      ctx.lifecycle.draining = true;
      const started = performance.now();
      const webSockets = sockets.stats().clients;
      // Requests are still served while the load balancer notices /readyz failing.
      if (config.shutdown.drainMs > 0) await new Promise((resolve) => setTimeout(resolve, config.shutdown.drainMs));
      await sockets.close(config.shutdown.webSocketBatchSize);
      await new Promise<void>((resolve) => {
        stopping = true;
        for (const res of unfinished) if (!res.headersSent) res.setHeader('Connection', 'close');
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await ctx.background.settled();
      await ctx.devices.close();
      startup.stop();
      await retention.stop();
      await ctx.changes.close();
      await erpWriteBack.stop();
      await importJobs?.stop();
      if (!options.database) await database.close();
      await ctx.documents.close?.();
      await ctx.previews.close();
      if (metricsServer)
        await new Promise((resolve) => {
          metricsServer.close(resolve);
          metricsServer.closeAllConnections();
        });
      logger.info(
        { requestsDuringDrain: servedDuringDrain, webSocketsClosed: webSockets, durationMs: Math.round(performance.now() - started) },
        'Tourline stopped',
      );
    })());

  return { url, ctx, adminKey: admin.keys[0], server, metricsUrl, importJobs, close };
}
