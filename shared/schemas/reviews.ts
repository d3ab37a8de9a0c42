import { z } from 'zod';
import { RequiredText, Timestamp } from './common.js';

// Confirming a review, and who confirmed which change of a delivery note when.

export const ResolveReviewRequest = z
  .object({
    processor: RequiredText.max(200).optional().meta({
      description:
        "Required with the admin key. With a back-office token it may be left out (the token's name is taken) and must otherwise be that name.",
    }),
  })
  .meta({ id: 'ResolveReviewRequest' });

export const ReviewResolutionEntry = z
  .object({
    processor: z.string(),
    /** The token's subject; null when resolved with the admin key. */
    processor_subject: z.string().nullable(),
    authenticated_by: z.enum(['back_office_token', 'admin_key']),
    resolved_at: Timestamp,
    confirmed_change_at: Timestamp.nullable().meta({
      description: 'The latest change it confirmed (null on resolutions recorded before this was kept)',
    }),
  })
  .meta({ id: 'ReviewResolutionEntry' });

export const ReviewHistoryResponse = z
  .object({
    delivery_id: z.uuid(),
    belegnummer: z.string(),
    resolutions: z.array(ReviewResolutionEntry).meta({ description: 'Oldest first' }),
  })
  .meta({ id: 'ReviewHistoryResponse' });
export type ReviewHistoryResponse = z.infer<typeof ReviewHistoryResponse>;
