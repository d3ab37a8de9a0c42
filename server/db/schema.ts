// The database schema drizzle and drizzle-kit read, in parts under tables/.
export * from './tables/masterData.js';
export * from './tables/deliveries.js';
export * from './tables/history.js';
export * from './tables/devices.js';
