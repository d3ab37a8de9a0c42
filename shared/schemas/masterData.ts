import { z } from 'zod';
import { ErpNumber, RequiredText, Uuid } from './common.js';

export const Account = z
  .object({
    personalnummer: ErpNumber,
    name: z.string(),
    active: z.boolean(),
  })
  .meta({ id: 'Account' });
export type Account = z.infer<typeof Account>;

export const Car = z
  .object({
    id: Uuid,
    accountId: ErpNumber,
    plate: z.string(),
    active: z.boolean(),
  })
  .meta({ id: 'Car' });
export type Car = z.infer<typeof Car>;

export const CreateCarRequest = z.object({ plate: RequiredText.max(20) }).meta({ id: 'CreateCarRequest' });
export const UpdateCarRequest = z
  .object({ plate: RequiredText.max(20).optional(), active: z.boolean().optional() })
  .refine((v) => v.plate !== undefined || v.active !== undefined, 'plate or active is required')
  .meta({ id: 'UpdateCarRequest' });
export const CarResponse = z.object({ car: Car }).meta({ id: 'CarResponse' });
export const CarsList = z.object({ cars: z.array(Car) }).meta({ id: 'CarsList' });

export const PaymentMethod = z
  .object({
    id: Uuid,
    code: z.string(),
    name: z.string(),
    collectOnSite: z.boolean(),
    active: z.boolean(),
  })
  .meta({ id: 'PaymentMethod' });
export type PaymentMethod = z.infer<typeof PaymentMethod>;

export const CreatePaymentMethodRequest = z
  .object({
    code: RequiredText.max(50),
    name: RequiredText.max(200),
    collectOnSite: z.boolean().optional(),
  })
  .meta({ id: 'CreatePaymentMethodRequest' });
// Strict: the code is the ERP's key for the method and cannot change; sending it must not look accepted.
export const UpdatePaymentMethodRequest = z
  .strictObject({
    name: RequiredText.max(200).optional(),
    active: z.boolean().optional(),
    collectOnSite: z.boolean().optional(),
  })
  .meta({ id: 'UpdatePaymentMethodRequest' });
export const PaymentMethodResponse = z.object({ paymentMethod: PaymentMethod }).meta({ id: 'PaymentMethodResponse' });
export const PaymentMethodsList = z.object({ paymentMethods: z.array(PaymentMethod) }).meta({ id: 'PaymentMethodsList' });

export const ServiceKind = z.enum(['boolean', 'numeric']);
export type ServiceKind = z.infer<typeof ServiceKind>;

export const Service = z
  .object({
    id: Uuid,
    key: z.string(),
    name: z.string(),
    kind: ServiceKind,
    minValue: z.int32().nullable(),
    maxValue: z.int32().nullable(),
    sortOrder: z.int32().nullable(),
    active: z.boolean(),
  })
  .meta({ id: 'Service' });
export type Service = z.infer<typeof Service>;

export const CreateServiceRequest = z
  .object({
    key: RequiredText.max(100),
    name: RequiredText.max(200),
    kind: ServiceKind,
    minValue: z.int32().nullable().optional(),
    maxValue: z.int32().nullable().optional(),
    sortOrder: z.int32().nullable().optional(),
  })
  .meta({ id: 'CreateServiceRequest' });
export const UpdateServiceRequest = z
  .strictObject({
    name: RequiredText.max(200).optional(),
    minValue: z.int32().nullable().optional(),
    maxValue: z.int32().nullable().optional(),
    active: z.boolean().optional(),
    sortOrder: z.int32().nullable().optional(),
  })
  .meta({ id: 'UpdateServiceRequest' });
export const ServiceResponse = z.object({ service: Service }).meta({ id: 'ServiceResponse' });
export const ServicesList = z.object({ services: z.array(Service) }).meta({ id: 'ServicesList' });
