import { ConfigError } from '../config.js';

export interface TracingSettings {
  serviceName: string;
}

const endpointVariables = ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT'] as const;

/**
 * Whether to trace, from the standard OpenTelemetry variables: only when an OTLP endpoint is set
 * and `OTEL_TRACES_EXPORTER` is not `none`. Undefined means off, and then no OpenTelemetry module
 * is loaded at all. The exporter reads the endpoint, headers and timeout itself; here a bad URL
 * stops the start with the variable's name, as the service's own settings do.
 */
export function tracingSettings(env: Record<string, string | undefined> = process.env): TracingSettings | undefined {
  const set = (name: string) => env[name]?.trim() || undefined;
  const endpoints = endpointVariables.filter((name) => set(name));
  if (endpoints.length === 0 || set('OTEL_TRACES_EXPORTER') === 'none') return undefined;
  const problems = endpoints.filter((name) => !isHttpUrl(set(name)!)).map((name) => `  ${name}: must be an http(s) URL`);
  const exporter = set('OTEL_TRACES_EXPORTER');
  if (exporter && exporter !== 'otlp') problems.push('  OTEL_TRACES_EXPORTER: must be otlp or none');
  if (problems.length) throw new ConfigError(`Invalid configuration:\n${problems.join('\n')}`);
  return { serviceName: set('OTEL_SERVICE_NAME') ?? 'tourline' };
}

function isHttpUrl(value: string) {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}
