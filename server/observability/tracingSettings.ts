import { parse } from '../config.js';
import { tracingVariables } from '../config/variables.js';

export interface TracingSettings {
  serviceName: string;
}

/**
 * Whether to trace, from the standard OpenTelemetry variables: only when an OTLP endpoint is set
 * and `OTEL_TRACES_EXPORTER` is not `none`. Undefined means off, and then no OpenTelemetry module
 * is loaded at all. The exporter reads the endpoint, headers and timeout itself; here a bad value
 * stops the start with the variable's name, as the service's own settings do.
 */
export function tracingSettings(env: Record<string, string | undefined> = process.env): TracingSettings | undefined {
  const e = parse(tracingVariables, env);
  if (!(e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? e.OTEL_EXPORTER_OTLP_ENDPOINT) || e.OTEL_TRACES_EXPORTER === 'none') return undefined;
  return { serviceName: e.OTEL_SERVICE_NAME };
}
