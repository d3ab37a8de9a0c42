import { z } from 'zod';
import { berlinDate } from '../../../shared/rules/calendar.js';
import { IsoDate } from '../../../shared/schemas/common.js';
import { ImportRunList, ImportRunsQuery, ImportSummary } from '../../../shared/schemas/imports.js';
import { runImport } from '../../jobs/erpImport.js';
import { importRuns } from '../../queries/importRuns.js';
import { listPage, pageCursor, pagingDescription } from '../paging.js';
import { route } from '../route.js';

const runsCursor = pageCursor('import-runs', z.tuple([z.iso.datetime(), z.uuid()]));

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
    handler: ({ ctx, query }) => runImport(ctx, query.date ?? berlinDate(ctx.clock()), 'manual'),
  }),
  route({
    method: 'get',
    path: '/admin/import-runs',
    auth: 'admin',
    tags: ['Admin'],
    summary: 'The logged ERP import runs (scheduled, start-up, retries, manual), newest first, optionally of one tour date',
    description: pagingDescription(),
    query: ImportRunsQuery,
    response: ImportRunList,
    paged: true,
    handler: async ({ ctx, query, req, res }) => {
      const entries = await listPage(runsCursor, query.date ?? '', { query, req, res }, (page) =>
        importRuns(ctx.database.db, query.date ?? null, page),
      );
      return { count: entries.length, runs: entries };
    },
  }),
];
