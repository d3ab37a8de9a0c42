import { z } from 'zod';
import { QueryBoolean, Uuid } from '../../../shared/schemas/common.js';
import {
  CarResponse, CarsList, CreateCarRequest, CreatePaymentMethodRequest, CreateServiceRequest, PaymentMethodResponse,
  PaymentMethodsList, ServiceResponse, ServicesList, UpdateCarRequest, UpdatePaymentMethodRequest, UpdateServiceRequest,
} from '../../../shared/schemas/masterData.js';
import * as masterData from '../../engine/masterData.js';
import { route } from '../route.js';

const IncludeInactive = z.object({ includeInactive: QueryBoolean });
const IdParam = z.object({ id: Uuid });

export const masterDataRoutes = [
  route({
    method: 'get', path: '/me/cars', auth: 'bearer', tags: ['Cars'], summary: 'Cars of the logged-in account',
    query: IncludeInactive, response: CarsList,
    handler: async ({ ctx, actor, query }) => ({ cars: await masterData.listCars(ctx.database.db, actor.personalnummer, query.includeInactive) }),
  }),
  route({
    method: 'post', path: '/me/cars', auth: 'bearer', tags: ['Cars'], summary: 'Add a car (plates are unique, ignoring case and outer spaces)',
    body: CreateCarRequest, response: CarResponse,
    handler: async ({ ctx, actor, body }) => ({ car: await masterData.createCar(ctx.database.db, actor.personalnummer, body.plate) }),
  }),
  route({
    method: 'patch', path: '/me/cars/{car_id}', auth: 'bearer', tags: ['Cars'], summary: 'Change the plate or (de)activate a car',
    params: z.object({ car_id: Uuid }), body: UpdateCarRequest, response: CarResponse, errors: [404],
    handler: async ({ ctx, actor, params, body }) => ({ car: await masterData.updateCar(ctx.database.db, actor.personalnummer, params.car_id, body) }),
  }),

  route({
    method: 'get', path: '/payment-methods', auth: 'bearer', tags: ['Payment methods'], summary: 'Payment methods',
    query: IncludeInactive, response: PaymentMethodsList,
    handler: async ({ ctx, query }) => ({ paymentMethods: await masterData.listPaymentMethods(ctx.database.db, query.includeInactive) }),
  }),
  route({
    method: 'post', path: '/payment-methods', auth: 'bearer', tags: ['Payment methods'], summary: 'Create a payment method (code unique)',
    body: CreatePaymentMethodRequest, response: PaymentMethodResponse,
    handler: async ({ ctx, body }) => ({ paymentMethod: await masterData.createPaymentMethod(ctx.database.db, body) }),
  }),
  route({
    method: 'patch', path: '/payment-methods/{id}', auth: 'bearer', tags: ['Payment methods'], summary: 'Rename, (de)activate or mark on-site collection',
    params: IdParam, body: UpdatePaymentMethodRequest, response: PaymentMethodResponse, errors: [404],
    handler: async ({ ctx, params, body }) => ({ paymentMethod: await masterData.updatePaymentMethod(ctx.database.db, params.id, body) }),
  }),
  route({
    method: 'delete', path: '/payment-methods/{id}', auth: 'bearer', tags: ['Payment methods'], summary: 'Delete an unreferenced payment method',
    params: IdParam, status: 204, errors: [404, 409],
    handler: ({ ctx, params }) => masterData.deletePaymentMethod(ctx.database.db, params.id),
  }),

  route({
    method: 'get', path: '/services', auth: 'bearer', tags: ['Services'], summary: 'Services, sorted by sortOrder',
    query: IncludeInactive, response: ServicesList,
    handler: async ({ ctx, query }) => ({ services: await masterData.listServices(ctx.database.db, query.includeInactive) }),
  }),
  route({
    method: 'post', path: '/services', auth: 'bearer', tags: ['Services'], summary: 'Create a service (key unique, kind fixed)',
    body: CreateServiceRequest, response: ServiceResponse, errors: [409],
    handler: async ({ ctx, body }) => ({ service: await masterData.createService(ctx.database.db, body) }),
  }),
  route({
    method: 'patch', path: '/services/{id}', auth: 'bearer', tags: ['Services'], summary: 'Change name, limits, active flag or sort order; kind is refused',
    params: IdParam, body: UpdateServiceRequest, response: ServiceResponse, errors: [404],
    handler: async ({ ctx, params, body }) => ({ service: await masterData.updateService(ctx.database.db, params.id, body) }),
  }),
  route({
    method: 'delete', path: '/services/{id}', auth: 'bearer', tags: ['Services'], summary: 'Delete an unreferenced service',
    params: IdParam, status: 204, errors: [404, 409],
    handler: ({ ctx, params }) => masterData.deleteService(ctx.database.db, params.id),
  }),
];
