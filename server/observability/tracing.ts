import type { IncomingMessage, ServerResponse } from 'node:http';
import { register } from 'node:module';
import type { Span } from '@opentelemetry/api';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { credentialParams } from './redact.js';
import type { TracingSettings } from './tracingSettings.js';

/**
 * Starts OpenTelemetry tracing: server spans for incoming HTTP requests (named by route template,
 * with the request id), client spans for outgoing calls (node:http for S3, fetch for the ERP, the
 * identity provider and the HTTP document store) and a span per PostgreSQL query, sent in batches
 * over OTLP/HTTP to the endpoint the standard variables name. Must run before express, pg and the
 * AWS SDK are imported: the instrumentations patch modules as they load.
 */
export function startTracing(settings: TracingSettings) {
  // ESM imports (pg from our modules) reach the instrumentations only through this loader hook.
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        applyCustomAttributesOnSpan: nameServerSpan,
        redactedQueryParams: spelledCredentialParams,
        redactedQueryParamsServer: spelledCredentialParams,
      }),
      new UndiciInstrumentation(),
      new PgInstrumentation(),
    ],
  });
  /** Sends the spans still buffered; called last on shutdown. */
  return { shutdown: () => provider.shutdown() };
}

/** Express sets `req.route` once a route matched (the latency metric reads it too); requestLog set the id header. */
function nameServerSpan(span: Span, request: unknown, response: unknown) {
  if (!('setHeader' in (response as object))) return; // a client span: an outgoing call
  const route = (request as IncomingMessage & { route?: { path?: unknown } }).route?.path;
  if (typeof route === 'string') {
    span.setAttribute('http.route', route);
    span.updateName(`${(request as IncomingMessage).method} ${route}`);
  }
  const requestId = (response as ServerResponse).getHeader('x-request-id');
  if (typeof requestId === 'string') span.setAttribute('tourline.request_id', requestId);
}

const spellCapitalised = (name: string) => name.replace(/(^|[-_])(\w)/g, (_all, gap: string, letter: string) => gap + letter.toUpperCase());
/** OpenTelemetry compares names as written: each credential's name in the spellings clients send. */
const spelledCredentialParams = credentialParams.flatMap((name) => [name, name.toUpperCase(), spellCapitalised(name)]);
