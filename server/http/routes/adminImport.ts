import { z } from 'zod';
import { berlinDate } from '../../../shared/rules/calendar.js';
import { IsoDate } from '../../../shared/schemas/common.js';
import { ImportSummary } from '../../../shared/schemas/tours.js';
import { runImport } from '../../jobs/erpImport.js';
import { route } from '../route.js';

export const adminImportRoutes = [
  route({
    method: 'post',
    path: '/admin/import-erp',
    auth: 'admin',
    tags: ['Admin'],
    summary: 'Import the ERP tours of a day now (default today, Europe/Berlin); every run is logged',
    query: z.object({ date: IsoDate.optional() }),
    response: ImportSummary,
    errors: [502],
    handler: ({ ctx, query }) => runImport(ctx, query.date ?? berlinDate(new Date()), 'manual'),
  }),
];
