import { createRequire } from 'node:module';
import compression from 'compression';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import type { AppContext } from '../context.js';
import { consolePages } from './console.js';
import { cors } from './cors.js';
import { CancellationWriteBack, CompletionWriteBack, ErpToursAnswer } from '../../shared/schemas/erp.js';
import { buildOpenApi } from './openapi.js';
import { problemHandler, sendProblem } from './problem.js';
import { forwardedWithoutTrust, refusalLimit } from './refusalLimit.js';
import { bindRoutes } from './register.js';
import { directRoutes } from './direct.js';
import { requestLog } from './requestLog.js';
import { requestMetrics } from './requestMetrics.js';
import { securityHeaders } from './securityHeaders.js';
import { answerDatabaseUnavailable } from './unavailable.js';
import type { AnyRoute } from './route.js';

const require = createRequire(import.meta.url);
/**
 * The Swagger UI's assets folder (only the folder: the package's main module loads the whole UI
 * bundle into the server). Absent where the package is not installed (the test server package
 * leaves it out); /docs then has no assets.
 */
const swaggerUiDir = (() => {
  try {
    return (require('swagger-ui-dist/absolute-path.js') as () => string)();
  } catch {
    return undefined;
  }
})();

const docsPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>Tourline API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body></html>`;
// A file rather than an inline script: the page's Content-Security-Policy runs only its own scripts.
const docsInit = `SwaggerUIBundle({ url: '/openapi.json', dom_id: '#ui', persistAuthorization: true });\n`;

/** The service's request listener: express, with the routes marked `direct` answered before it (direct.ts). */
export function createHttpApp(
  ctx: AppContext,
  routes: AnyRoute[],
  /** Pages beside the API (the development issuer's sign-in). */
  pages: RequestHandler[] = [],
): (req: IncomingMessage, res: ServerResponse) => void {
  const app = express();
  app.disable('x-powered-by');
  // Only routes marked `conditional` carry an ETag (registration sets it): hashing every other
  // answer, a push's among them, would cost each request a digest no client asks for.
  app.disable('etag');
  app.set('query parser', 'simple');
  // One spelling per route: a guard keyed on a path (the refusal limit) and the route it guards
  // can never disagree about another letter case or a trailing slash; such spellings get 404.
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  // Behind a proxy the client's address comes from X-Forwarded-For, trusting this many hops.
  app.set('trust proxy', ctx.config.trustProxyHops);
  // In front of every route, in this order; each works on Node's own request and answer too.
  const front: RequestHandler[] = [
    requestLog(ctx.logger),
    securityHeaders({ hstsMaxAgeSeconds: ctx.config.hstsMaxAgeSeconds, issuer: ctx.config.auth.issuer }),
    cors(ctx.config.corsOrigins),
    requestMetrics(ctx.metrics),
    // Brotli or gzip as Accept-Encoding asks; only compressible types (JSON, text), never images or PDFs.
    compression({ threshold: ctx.config.compressionMinBytes }),
    refusalLimit({ limit: ctx.config.auth.refusalLimit, windowMs: ctx.config.auth.refusalWindowMs }),
    ...(ctx.config.trustProxyHops === 0 ? [forwardedWithoutTrust(ctx.logger)] : []),
  ];
  const fallbacks: ErrorRequestHandler[] = [answerDatabaseUnavailable(ctx.database.health), problemHandler];
  const { router, direct } = bindRoutes(routes, ctx);
  app.use(front);

  // The ERP gateway's side of the contract (docs/erp-integration.md) is described beside the routes.
  const openApi = buildOpenApi(
    routes,
    { version: '0.1.0' },
    { input: [ErpToursAnswer], output: [CompletionWriteBack, CancellationWriteBack] },
  );
  app.get('/openapi.json', (_req, res) => {
    res.json(openApi);
  });
  app.get('/docs', (_req, res) => {
    res.type('html').send(docsPage);
  });
  app.get('/docs/init.js', (_req, res) => {
    res.type('js').send(docsInit);
  });
  if (swaggerUiDir) app.use('/docs/assets', express.static(swaggerUiDir, { index: false }));

  app.use(consolePages(ctx), ...pages);
  app.use(router);
  app.use((req, res) => sendProblem(res, 'not_found', `No route for ${req.method} ${req.path}`));
  app.use(fallbacks);
  const answerDirect = directRoutes(direct, front, fallbacks);
  return (req, res) => {
    if (!answerDirect(req, res)) app(req, res);
  };
}
