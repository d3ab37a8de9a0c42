import type { RequestHandler } from 'express';
import type { Metrics } from '../observability/metrics.js';

/**
 * Times every request into the latency histogram, labelled with the route template express
 * matched (`/tours/:tour_id`), never the raw path: ids would make a series per tour.
 */
export function requestMetrics(metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    const done = () => {
      res.off('finish', done);
      res.off('close', done);
      const template = (req.route as { path?: string } | undefined)?.path;
      metrics.observeRequest(req.method, template ?? 'unmatched', res.statusCode, (performance.now() - started) / 1000);
    };
    res.on('finish', done);
    res.on('close', done);
    next();
  };
}
