import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { FieldProblem } from './errors.js';
import type { Authenticator } from './auth/authenticate.js';
import type { BackOfficePerson } from './auth/tokens.js';
import type { Database } from './db/client.js';
import type { ChangeNotifier } from './engine/changeNotifier.js';
import type { DeviceReports } from './engine/deviceReports.js';
import type { ErpGateway } from './integrations/erp/gateway.js';
import type { DocumentStore } from './integrations/documents/store.js';
import type { PreviewService } from './integrations/previews/service.js';
import type { BackgroundWork } from './jobs/background.js';
import type { TourReader } from './queries/renderedTours.js';
import type { Metrics } from './observability/metrics.js';

/** What request handlers and jobs may use. Built once at start, passed in, never global. */
export interface AppContext {
  config: Config;
  database: Database;
  logger: Logger;
  auth: Authenticator;
  erp: ErpGateway;
  documents: DocumentStore;
  previews: PreviewService;
  /** Wakes live change readers when any instance commits changes. */
  changes: ChangeNotifier;
  /** `GET /tours/{id}`: renders a tour again only when it changed. */
  tours: TourReader;
  /** What requests leave running after their answer; stopping waits for it. */
  background: BackgroundWork;
  metrics: Metrics;
  /** Devices' health reports: the latest per device, capped in rate. */
  devices: DeviceReports;
  /** Set on SIGTERM: readiness answers 503 while requests are still served (the drain). */
  lifecycle: { draining: boolean };
  /** What "today" is: the default day of the tour list and the ERP import (tests set it). */
  clock: () => Date;
  /** What the instance must have reached once before it is ready (server/startupChecks.ts). */
  startup: { pending(): FieldProblem[] };
}

export type Actor =
  | {
      kind: 'driver';
      personalnummer: number;
      tokenExpiresAt: number;
      syncRole: boolean;
      /** Only the token is verified: the engine reads the account in its transaction (a push, see `checksAccount`). */
      accountUnread?: true;
    }
  /** The machine key (`person` absent), or a bearer token of the back-office role naming its person. */
  | { kind: 'admin'; person?: BackOfficePerson };

export type DriverActor = Extract<Actor, { kind: 'driver' }>;
