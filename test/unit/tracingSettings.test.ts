import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../server/config.js';
import { tracingSettings } from '../../server/observability/tracingSettings.js';

describe('tracingSettings', () => {
  it('is off (no OpenTelemetry loaded) unless an OTLP endpoint is set and the exporter is not none', () => {
    expect(tracingSettings({})).toBeUndefined();
    expect(tracingSettings({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_EXPORTER: 'otlp' })).toBeUndefined();
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBeUndefined();
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
  });

  it('is on with either endpoint variable; the service name defaults to tourline', () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toEqual({ serviceName: 'tourline' });
    expect(
      tracingSettings({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://collector/v1/traces',
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_SERVICE_NAME: 'tourline-eu',
      }),
    ).toEqual({ serviceName: 'tourline-eu' });
  });

  it('refuses an endpoint that is not an http(s) URL and an exporter it does not have, naming the variable', () => {
    expect(() => tracingSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'collector:4318' })).toThrow(ConfigError);
    expect(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://collector' })).toThrow(
      'OTEL_EXPORTER_OTLP_ENDPOINT: must be an http(s) URL',
    );
    expect(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(
      'OTEL_TRACES_EXPORTER: must be otlp or none',
    );
  });
});
