import type { AnyRoute } from '../route.js';
import { deliveryRoutes } from './deliveries.js';
import { masterDataRoutes } from './masterData.js';
import { systemRoutes } from './system.js';

/** Every public and admin route; the OpenAPI document is built from this list. */
export const apiRoutes: AnyRoute[] = [
  ...systemRoutes,
  ...masterDataRoutes,
  ...deliveryRoutes,
];
