import { z } from 'zod';
import { IsoDate } from './common.js';

// The office's view of a day: its tours with their progress.

export const AdminToursQuery = z.object({
  date: IsoDate.meta({ description: 'Tour date YYYY-MM-DD (default: today in Berlin)' }).optional(),
});

const Count = z.number().int().min(0);

export const AdminTourProgress = z
  .object({
    id: z.uuid(),
    tour_date: IsoDate,
    name: z.string().nullable(),
    driver: z.object({ personalnummer: z.number().int(), name: z.string() }),
    deliveries: z.object({ total: Count, active: Count, held: Count, canceled: Count, completed: Count }),
    lines: z.object({ total: Count, loaded: Count, removed: Count, held: Count }).meta({
      description: 'Lines of the tour: `loaded` are scanned in full (Done), `removed` removed or credited in full, `held` held',
    }),
  })
  .meta({ id: 'AdminTourProgress' });

export const AdminToursResponse = z.object({ date: IsoDate, tours: z.array(AdminTourProgress) }).meta({ id: 'AdminToursResponse' });
export type AdminToursResponse = z.infer<typeof AdminToursResponse>;
