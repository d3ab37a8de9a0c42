export * from './schemas/common.js';
export * from './schemas/masterData.js';
export * from './schemas/tours.js';
export * from './schemas/deliveries.js';
export * from './schemas/sync.js';
export * from './schemas/admin.js';
export * from './schemas/devices.js';
