import type { z } from 'zod';
import type { AdminApi } from '../client-sdk/api.js';
import type * as A from '../shared/schemas/admin.js';
import type { ImportSummary } from '../shared/schemas/imports.js';

type Out<T extends z.ZodType> = z.output<T>;

/** The SDK's back-office client with the service's answers typed (the SDK leaves them to the caller). */
export type TypedAdmin = Omit<
  AdminApi,
  'beleg' | 'positionsModified' | 'deliveredBelegnummern' | 'importErp' | 'markMailSent' | 'reviews'
> & {
  beleg(belegnummer: string): Promise<Out<typeof A.DeliveryDetailsResponse>>;
  positionsModified(belegnummer: string): Promise<Out<typeof A.PositionsModifiedResponse>>;
  deliveredBelegnummern(query?: { day?: string }): Promise<Out<typeof A.DeliveredBelegnummernResponse>>;
  importErp(query?: { date?: string }): Promise<ImportSummary>;
  markMailSent(belegnummern: string[]): Promise<Out<typeof A.MarkMailSentResponse>>;
  reviews(): Promise<Out<typeof A.PendingReviewList>>;
};
