import type { AnyRoute } from '../route.js';
import { adminCompletionRoutes } from './adminCompletion.js';
import { attachmentRoutes } from './attachments.js';
import { completionRoutes } from './completion.js';
import { adminRoutes } from './admin.js';
import { adminTourRoutes } from './adminTours.js';
import { deliveryRoutes } from './deliveries.js';
import { deviceRoutes } from './devices.js';
import { masterDataRoutes } from './masterData.js';
import { noteImageRoutes } from './noteImages.js';
import { systemRoutes } from './system.js';
import { probeRoutes } from './probes.js';
import { tourRoutes } from './tours.js';
import { adminImportRoutes } from './adminImport.js';
import { syncRoutes } from './sync.js';

/** Every public and admin route; the OpenAPI document is built from this list. */
export const apiRoutes: AnyRoute[] = [
  ...systemRoutes,
  ...probeRoutes,
  ...masterDataRoutes,
  ...tourRoutes,
  ...adminImportRoutes,
  ...completionRoutes,
  ...noteImageRoutes,
  ...attachmentRoutes,
  ...adminCompletionRoutes,
  ...adminRoutes,
  ...adminTourRoutes,
  ...deliveryRoutes,
  ...syncRoutes,
  ...deviceRoutes,
];
