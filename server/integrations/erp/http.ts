import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import { upstream } from '../../errors.js';
import type { ErpGateway } from './gateway.js';

export function createHttpErp(config: Config['erp'], logger: Logger): ErpGateway {
  void config; void logger;
  return {
    async fetchTours() { throw upstream('ERP over HTTP is not available yet'); },
    async pushCompletion() { throw upstream('ERP over HTTP is not available yet'); },
  };
}
